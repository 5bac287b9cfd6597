import { describe, expect, it } from 'vitest';
import { aboutDuration, laneEtas, lanesLine } from './lanes.js';

const MiB = 1024 * 1024;

describe('lanes as the crew reads them', () => {
  it('says durations as a person would, by hand', () => {
    const table: Array<[number, string]> = [
      [20, 'less than a minute'],
      [60, 'about 1 min'],
      [89, 'about 1 min'],
      [90, 'about 2 min'],
      [59 * 60, 'about 59 min'],
      [60 * 60, 'about 1 h'],
      [130 * 60, 'about 2 h 10 min'],
      [176 * 60, 'about 3 h'],
      [4 * 3600 + 54 * 60, 'about 4 h 50 min'],
      [5 * 3600 + 31 * 60, 'about 6 h'],
      [9 * 3600 + 10 * 60, 'about 9 h'],
    ];
    expect(table.map(([s]) => aboutDuration(s))).toEqual(table.map(([, w]) => w));
  });

  it("puts each lane behind those before it: the issue's own line at 1 MiB/s", () => {
    const etas = laneEtas(
      [
        { lane: 'videos', files: 12, bytes: 24_600 * MiB },
        { lane: 'first', files: 9, bytes: 60 * MiB },
        { lane: 'photos', files: 2_100, bytes: 7_740 * MiB },
        { lane: 'previews', files: 0, bytes: 0 },
      ],
      MiB,
    );
    expect(etas.map((e) => [e.lane, e.seconds])).toEqual([
      ['first', 60],
      ['photos', 7_800],
      ['videos', 32_400],
    ]);
    expect(lanesLine(etas)).toBe(
      'RTK files and logs: in the workspace in about 1 min; photos: about 2 h 10 min; videos: about 9 h',
    );
  });

  it('without a rate says what is left, and nothing when nothing is', () => {
    const etas = laneEtas([{ lane: 'photos', files: 212, bytes: 3.4 * 1024 * MiB }], 0);
    expect(lanesLine(etas)).toBe('photos: 212 files, 3.4 GB left');
    expect(lanesLine(laneEtas([], MiB))).toBe('');
  });
});
