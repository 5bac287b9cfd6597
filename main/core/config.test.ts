import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { expect, it } from 'vitest';
import {
  commandLinePath,
  configSchema,
  defaultConfig,
  expandHome,
  loadConfig,
  parseConfig,
} from './config.js';

// A run without a settings file takes the defaults without loading zod (issue 33): they are
// written out in config.ts, and must stay what the schema makes of an empty file.
it('the written-out defaults are what the schema makes of empty settings', () => {
  expect(defaultConfig()).toEqual(configSchema().parse({}));
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'dms-config-'));
  try {
    const empty = path.join(dir, 'config.json');
    fs.writeFileSync(empty, '{}');
    expect(loadConfig(path.join(dir, 'missing.json'))).toEqual(loadConfig(empty));
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
});

it('each missing settings file gets its own defaults, not one shared object', () => {
  const a = defaultConfig();
  a.include.push('RAW');
  a.concurrency.files = 9;
  expect(defaultConfig().include).not.toContain('RAW');
  expect(defaultConfig().concurrency.files).toBe(3);
});

// The README writes `~/DroneCopies`; crews copy it into config.json, where no shell expands it.
it('paths in the settings: `~` is the home folder; a relative path is refused, naming the setting', () => {
  const home = os.homedir();
  const config = parseConfig({
    destinations: [{ path: '~/DroneCopies' }, { path: ' /media/pilot/T7_BACKUP ' }],
    watchedFolders: ['~/Flights', '~'],
    mountRoots: ['/media/pilot'],
    caFile: '~/certs/office-ca.pem',
  });
  expect(config.destinations.map((d) => d.path)).toEqual([
    path.join(home, 'DroneCopies'),
    '/media/pilot/T7_BACKUP',
  ]);
  expect(config.watchedFolders).toEqual([path.join(home, 'Flights'), home]);
  expect(config.mountRoots).toEqual(['/media/pilot']);
  expect(config.caFile).toBe(path.join(home, 'certs/office-ca.pem'));
  // Only a leading `~` alone or before a separator is the home folder.
  expect(expandHome('~pilot/x')).toBe('~pilot/x');
  expect(expandHome('/data/~/x')).toBe('/data/~/x');
  expect(expandHome('~\\DroneCopies', 'C:\\Users\\pilot')).toBe(
    path.join('C:\\Users\\pilot', '\\DroneCopies'),
  );

  const refused = (settings: unknown) => {
    try {
      parseConfig(settings);
    } catch (err) {
      return (err as Error).message;
    }
    return 'accepted';
  };
  expect(refused({ destinations: [{ path: 'DroneCopies' }] })).toBe(
    'The settings are not valid: destinations.0.path must be a full path, like ~/DroneCopies or /media/pilot/T7_BACKUP (a relative one would depend on the folder the app is started in).',
  );
  expect(refused({ watchedFolders: ['./Flights'] })).toMatch(
    /^The settings are not valid: watchedFolders\.0 must be a full path, like ~\/Flights /,
  );
  expect(refused({ mountRoots: ['media'] })).toMatch(
    /mountRoots\.0 must be a full path, like \/media\/pilot /,
  );
  expect(refused({ caFile: 'ca.pem' })).toMatch(/caFile must be a full path/);
  expect(refused({ destinations: [{ path: '  ' }] })).toMatch(/destinations\.0\.path is required/);
});

it('one folder named twice (the settings and --copy-to, a trailing slash) is one destination, as first named', () => {
  const home = os.homedir();
  const config = parseConfig({
    destinations: [
      { path: '~/DroneCopies', label: 'LAPTOP_COPIES', role: 'staging', keepDays: 7 },
      { path: '/media/pilot/T7_BACKUP' },
      { path: `${home}/DroneCopies/` },
      { path: '/media/pilot/T7_BACKUP/../T7_BACKUP' },
    ],
  });
  expect(config.destinations).toEqual([
    { path: path.join(home, 'DroneCopies'), label: 'LAPTOP_COPIES', role: 'staging', keepDays: 7 },
    { path: '/media/pilot/T7_BACKUP', role: 'archive' },
  ]);
});

it('a settings file that is not valid says which file, what is wrong and what to do', () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'dms-config-'));
  try {
    const file = path.join(dir, 'config.json');
    fs.writeFileSync(file, JSON.stringify({ destinations: [{ path: 'DroneCopies' }] }));
    expect(() => loadConfig(file)).toThrow(
      `The settings in ${file} are not valid: destinations.0.path must be a full path, like ~/DroneCopies or /media/pilot/T7_BACKUP (a relative one would depend on the folder the app is started in). Fix them in that file, then run again.`,
    );
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
});

it('a path on the command line: `~` expanded when quoted, a relative one taken from the current folder', () => {
  expect(commandLinePath('~/DroneCopies')).toBe(path.join(os.homedir(), 'DroneCopies'));
  expect(commandLinePath('DroneCopies')).toBe(path.resolve('DroneCopies'));
  expect(commandLinePath('/media/pilot/T7_BACKUP/')).toBe('/media/pilot/T7_BACKUP');
});

it('a settings file saved with a byte-order mark (Windows Notepad) is read as the JSON it is', () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'dms-config-'));
  try {
    const file = path.join(dir, 'config.json');
    fs.writeFileSync(file, '\uFEFF' + JSON.stringify({ destinations: [{ path: '/media/pilot/T7_BACKUP' }] }));
    expect(loadConfig(file).destinations.map((d) => d.path)).toEqual(['/media/pilot/T7_BACKUP']);
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
});
