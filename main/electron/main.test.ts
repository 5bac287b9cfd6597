import { describe, expect, it, vi } from 'vitest';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type * as Mock from '../../test/electron/electron-mock.js';
import { standInApp } from '../../test/electron/stand-in-app.js';
import { AGENT_V8_FLAGS } from '../core/node-flags.js';

// Electron is mocked: its binary cannot be downloaded here (see electron-mock.ts).
vi.mock('electron', () => import('../../test/electron/electron-mock.js').then((m) => m.electronModule));
const { runApp } = vi.hoisted(() => ({ runApp: vi.fn(() => Promise.resolve()) }));
vi.mock('./app.js', () => ({ runApp }));

/**
 * A fresh entry module (it runs at import). The mocked 'electron' survives resetModules, so it is taken from there.
 * Started as the app's launchers start it, with the agent's V8 flags, unless `jsFlags` says otherwise.
 */
async function launch(lock: boolean, jsFlags = AGENT_V8_FLAGS.join(' ')) {
  vi.resetModules();
  const m = (await import('electron')) as unknown as typeof Mock.electronModule;
  m.__fake.reset();
  m.__fake.lock = lock;
  if (jsFlags) m.__fake.switches.set('js-flags', jsFlags);
  vi.clearAllMocks();
  await import('./main.js');
  return m;
}

describe('entry (main.ts)', () => {
  it('a second launch quits at once (the first instance shows its window)', async () => {
    const electron = await launch(false);
    expect(electron.app.quit).toHaveBeenCalledOnce();
    expect(runApp).not.toHaveBeenCalled();
  });

  it('the first launch sets the AppUserModelId and runs the app', async () => {
    const electron = await launch(true);
    expect(electron.app.setAppUserModelId).toHaveBeenCalledWith('com.dronemediasync.app');
    expect(runApp).toHaveBeenCalledOnce();
    expect(electron.app.quit).not.toHaveBeenCalled();
  });

  it('does not wait for the app at top level (Electron emits ready only after the entry module finished)', async () => {
    runApp.mockImplementationOnce(() => new Promise<void>(() => undefined)); // "waits for ready" forever
    const loaded = launch(true).then(() => 'loaded');
    const timeout = new Promise((r) => setTimeout(() => r('hung'), 2000));
    expect(await Promise.race([loaded, timeout])).toBe('loaded');
  });

  it('a start failure is reported and exits with an error', async () => {
    runApp.mockImplementationOnce(() => Promise.reject(new Error('boom')));
    const stderr = vi.spyOn(process.stderr, 'write').mockImplementation(() => true);
    const electron = await launch(true);
    await new Promise((r) => setImmediate(r));
    expect(electron.app.exit).toHaveBeenCalledWith(1);
    expect(String(stderr.mock.calls[0]?.[0])).toContain('could not start: Error: boom');
    stderr.mockRestore();
  });

  it('started without the V8 flags (an AppImage double-clicked), it starts the AppImage again with them and exits', async () => {
    // A real process stands in for the AppImage file: it writes down how it was started.
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'dms-relaunch-'));
    const stand = standInApp(dir, 'Drone Media Sync.AppImage');
    const saved = process.env.APPIMAGE;
    process.env.APPIMAGE = stand.app;
    try {
      vi.resetModules();
      const m = (await import('electron')) as unknown as typeof Mock.electronModule;
      m.__fake.reset();
      m.__fake.packaged = true;
      vi.clearAllMocks();
      await import('./main.js');
      expect(m.app.exit).toHaveBeenCalledWith(0);
      expect(m.app.requestSingleInstanceLock).not.toHaveBeenCalled(); // the second start takes it
      expect(runApp).not.toHaveBeenCalled();
      const [relaunched, ...args] = await stand.started();
      expect(relaunched).toBe('1');
      expect(args).toEqual([`--js-flags=${AGENT_V8_FLAGS.join(' ')}`, ...process.argv.slice(1)]);
      expect(process.env.DMS_V8_RELAUNCHED).toBeUndefined();
    } finally {
      if (saved === undefined) delete process.env.APPIMAGE;
      else process.env.APPIMAGE = saved;
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });
});
