import { describe, expect, it } from 'vitest';
import { matchWayline, normaliseName } from './match.js';

const list = [
  { id: 'a', name: 'Waypoint1' },
  { id: 'b', name: 'Solar farm north' },
  { id: 'c', name: 'waypoint 1' },
  { id: 'd', name: 'Bridge-A' },
  { id: 'e', name: 'bridge a' },
];

describe('matchWayline', () => {
  it('prefers the exact name', () => {
    expect(matchWayline('Waypoint1', list)).toEqual({
      waylineId: 'a',
      waylineName: 'Waypoint1',
      how: 'exact',
    });
  });
  it('falls back to a name equal but for case, spaces, underscores and dashes', () => {
    expect(matchWayline('Solar_Farm_North', list)).toEqual({
      waylineId: 'b',
      waylineName: 'Solar farm north',
      how: 'normalised',
    });
  });
  it('does not guess between two normalised candidates', () => {
    expect(matchWayline('BRIDGE_A', list)).toBeNull();
  });
  it('returns null for an unknown mission and ignores items without id or name', () => {
    expect(matchWayline('Nowhere', [...list, { name: 'Nowhere' }])).toBeNull();
  });
  it('normalises Unicode forms so a Cyrillic name typed on macOS still matches', () => {
    expect(normaliseName('Мост_Й')).toBe(normaliseName('мост й'.normalize('NFD')));
  });
});
