import { describe, expect, it } from 'vitest';
import { defaultConfig } from '../core/config.js';
import type { SettingsView } from '../shared/ipc.js';
import {
  applySettings,
  destinationsProblem,
  needsRestart,
  toSettingsView,
  type FolderProbe,
} from './settings.js';

// The disk as a table: which folders are there, and which may be written to.
const disk = (there: string[], writable: string[] = there): FolderProbe => ({
  exists: (p) => there.includes(p),
  writable: (p) => writable.includes(p),
});

const view = (more: Partial<SettingsView> = {}): SettingsView => ({
  ...toSettingsView({ ...defaultConfig(), useLocalService: true }),
  ...more,
});

describe('local destinations in the settings', () => {
  it('round-trip: config.json -> the window -> config.json (archive keeps no keep days)', () => {
    const out = applySettings(
      defaultConfig(),
      view({
        destinations: [
          { path: '/media/SSD', label: ' SSD ', role: 'archive', keepDays: 7 },
          { path: '/media/T7', label: '', role: 'staging', keepDays: 14 },
        ],
      }),
      disk(['/media/SSD', '/media/T7']),
    );
    expect(out).toMatchObject({ ok: true });
    if (!out.ok) return;
    expect(out.config.destinations).toEqual([
      { path: '/media/SSD', label: 'SSD', role: 'archive' },
      { path: '/media/T7', role: 'staging', keepDays: 14 },
    ]);
    expect(toSettingsView(out.config).destinations).toEqual([
      { path: '/media/SSD', label: 'SSD', role: 'archive', keepDays: null },
      { path: '/media/T7', label: '', role: 'staging', keepDays: 14 },
    ]);
    // A new destination rebuilds the agent: the engine lays out its copy lane at start.
    expect(needsRestart(defaultConfig(), out.config)).toBe(true);
  });

  it('refuses, naming the destination: not there, not writable, staging without keep days, twice, not a full path', () => {
    const none: never[] = [];
    const one = (d: Partial<SettingsView['destinations'][number]>, probe = disk(['/media/SSD'])) =>
      destinationsProblem(
        none,
        [{ path: '/media/SSD', label: 'SSD', role: 'archive', keepDays: null, ...d }],
        probe,
      );
    expect(one({})).toBeNull();
    expect(one({ path: '/media/T7' })).toBe(
      'The folder /media/T7 does not exist (or is not a folder): plug in the drive, or choose another folder.',
    );
    expect(one({}, disk(['/media/SSD'], []))).toBe(
      'The folder /media/SSD cannot be written to: choose a folder on a drive you can write to.',
    );
    expect(one({ role: 'staging' })).toBe(
      'SSD: a staging destination needs the days its copies are kept once they are in the workspace (0 or more).',
    );
    expect(one({ path: 'SSD' })).toBe('"SSD" is not a full path; choose the folder with Add destination.');
    expect(
      destinationsProblem(
        none,
        [
          { path: '/media/SSD', label: 'A', role: 'archive', keepDays: null },
          { path: '/media/SSD/', label: 'B', role: 'archive', keepDays: null },
        ],
        disk(['/media/SSD', '/media/SSD/']),
      ),
    ).toBe('/media/SSD/ is in the list twice.');
    const refused = applySettings(
      defaultConfig(),
      view({ destinations: [{ path: '/media/T7', label: 'T7', role: 'archive', keepDays: null }] }),
      disk([]),
    );
    expect(refused).toEqual({
      ok: false,
      fields: {
        destinations:
          'The folder /media/T7 does not exist (or is not a folder): plug in the drive, or choose another folder.',
      },
    });
  });

  it('a destination already in the settings is kept while its drive is unplugged (other settings still save)', () => {
    const current = { ...defaultConfig(), destinations: [{ path: '/media/T7', role: 'archive' as const }] };
    const out = applySettings(current, view({ ...toSettingsView(current), filesConcurrency: 5 }), disk([]));
    expect(out).toMatchObject({
      ok: true,
      config: { destinations: [{ path: '/media/T7', role: 'archive' }] },
    });
  });
});

describe('the minimum flight height (issue 32)', () => {
  it('set, kept when a window that does not know it saves, cleared by null; config.json <-> the window', () => {
    const base = { ...defaultConfig(), useLocalService: true };
    const set = applySettings(base, view({ flightMinHeightM: 30 }));
    expect(set).toMatchObject({ ok: true, config: { flightMinHeightM: 30 } });
    if (!set.ok) return;
    expect(toSettingsView(set.config).flightMinHeightM).toBe(30);
    const { flightMinHeightM: _dropped, ...older } = view();
    expect(applySettings(set.config, older)).toMatchObject({ ok: true, config: { flightMinHeightM: 30 } });
    const cleared = applySettings(set.config, view({ flightMinHeightM: null }));
    expect(cleared.ok && cleared.config.flightMinHeightM).toBeUndefined();
    expect(applySettings(base, view({ flightMinHeightM: -1 }))).toEqual({
      ok: false,
      fields: {
        flightMinHeightM:
          'The minimum flight height is a number of metres from 0 to 1000, or empty (no minimum).',
      },
    });
  });
});
