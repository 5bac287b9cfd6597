/**
 * The desktop app starts itself once more when its main process lacks the
 * agent's V8 flags (v8-relaunch.ts). Electron cannot run here: the decision
 * is checked on the arguments Electron would give, and the second start is a
 * real process (a shell script standing in for the app) that writes down
 * its arguments and environment.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import v8 from 'node:v8';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { type StandInApp, standInApp } from '../../test/electron/stand-in-app.js';
import { AGENT_V8_FLAGS } from '../core/node-flags.js';
import { JS_FLAGS_ARG, missingV8Flags, RELAUNCHED_ENV, startWithV8Flags, v8Relaunch } from './v8-relaunch.js';

const ALL = AGENT_V8_FLAGS.join(' ');
const base = { env: {}, packaged: true, execPath: '/opt/Drone Media Sync/drone-media-sync' };

describe('whether and how to start again', () => {
  it('started with the flags (desktop entry, login item, npm start): no second start', () => {
    expect(v8Relaunch({ ...base, argv: ['/opt/x', '--hidden'], jsFlags: ALL })).toBeNull();
    expect(missingV8Flags(ALL)).toEqual([]);
  });

  it('started without them: the same executable and arguments, the flags first', () => {
    expect(v8Relaunch({ ...base, argv: [base.execPath, '--hidden'], jsFlags: '' })).toEqual({
      file: base.execPath,
      args: [JS_FLAGS_ARG, '--hidden'],
    });
  });

  it("keeps the user's own V8 flags and values, and names one --js-flags only", () => {
    const plan = v8Relaunch({
      ...base,
      argv: [base.execPath, '--js-flags=--expose-gc --max_semi_space_size=16', '--hidden'],
      jsFlags: '--expose-gc --max_semi_space_size=16',
    });
    expect(plan?.args).toEqual([
      '--js-flags=--heap-growing-percent=100 --expose-gc --max_semi_space_size=16',
      '--hidden',
    ]);
  });

  it('an AppImage starts again from the AppImage file, not from its mount; a checkout inside one does not', () => {
    const env = { APPIMAGE: '/home/crew/Apps/dms.AppImage' };
    const mounted = '/tmp/.mount_dmsXyZ/drone-media-sync';
    expect(v8Relaunch({ ...base, env, execPath: mounted, argv: [mounted], jsFlags: '' })?.file).toBe(
      env.APPIMAGE,
    );
    const dev = v8Relaunch({
      ...base,
      env,
      packaged: false,
      execPath: '/repo/electron',
      argv: ['/repo/electron', '.'],
      jsFlags: '',
    });
    expect(dev).toEqual({ file: '/repo/electron', args: [JS_FLAGS_ARG, '.'] });
  });

  it('the second start never starts a third', () => {
    expect(
      v8Relaunch({ ...base, env: { [RELAUNCHED_ENV]: '1' }, argv: [base.execPath], jsFlags: '' }),
    ).toBeNull();
  });
});

describe('starting again (a real second process)', () => {
  const dirs: string[] = [];
  afterEach(() => {
    vi.restoreAllMocks();
    for (const d of dirs.splice(0)) fs.rmSync(d, { recursive: true, force: true });
  });

  function standIn(): StandInApp {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'dms-v8-'));
    dirs.push(dir);
    return standInApp(dir);
  }

  it('starts the app again with the flags and the guard, and tells this process to exit', async () => {
    const stand = standIn();
    const env: NodeJS.ProcessEnv = { PATH: process.env.PATH };
    const setFlags = vi.spyOn(v8, 'setFlagsFromString');
    const exit = await startWithV8Flags({
      argv: [stand.app, '--hidden'],
      jsFlags: '',
      packaged: false,
      env,
      execPath: stand.app,
    });
    expect(exit).toBe(true);
    expect(await stand.started()).toEqual(['1', JS_FLAGS_ARG, '--hidden']);
    expect(setFlags).not.toHaveBeenCalled();
  });

  it('the second start, still without them, goes on and sets at run time what V8 still takes', async () => {
    const env: NodeJS.ProcessEnv = { [RELAUNCHED_ENV]: '1' };
    const said: string[] = [];
    const setFlags = vi.spyOn(v8, 'setFlagsFromString').mockImplementation(() => undefined);
    const exit = await startWithV8Flags({
      argv: ['/x'],
      jsFlags: '',
      packaged: false,
      env,
      say: (l) => said.push(l),
    });
    expect(exit).toBe(false);
    expect(setFlags).toHaveBeenCalledWith(ALL);
    expect(env[RELAUNCHED_ENV]).toBeUndefined(); // not passed on to what the app starts
    expect(said.join('\n')).toMatch(/started again but V8 still lacks/);
  });

  it('an app that cannot be started again goes on in this process and says why', async () => {
    const said: string[] = [];
    const setFlags = vi.spyOn(v8, 'setFlagsFromString').mockImplementation(() => undefined);
    const exit = await startWithV8Flags({
      argv: ['/gone/app'],
      jsFlags: '--expose-gc',
      packaged: false,
      env: {},
      execPath: path.join(os.tmpdir(), 'dms-no-such-app', 'app'),
      say: (l) => said.push(l),
    });
    expect(exit).toBe(false);
    expect(said.join('\n')).toMatch(
      /could not start again with its memory settings \(.*ENOENT.*\); going on without them/,
    );
    expect(setFlags).toHaveBeenCalledWith(ALL);
  });

  it('started with them: nothing is started and nothing is set', async () => {
    const setFlags = vi.spyOn(v8, 'setFlagsFromString');
    expect(await startWithV8Flags({ argv: ['/x'], jsFlags: ALL, packaged: true, env: {} })).toBe(false);
    expect(setFlags).not.toHaveBeenCalled();
  });
});
