import { describe, expect, it, vi } from 'vitest';
import type * as Mock from '../../test/electron/electron-mock.js';

// Electron is mocked: its binary cannot be downloaded here (see electron-mock.ts).
vi.mock('electron', () => import('../../test/electron/electron-mock.js').then((m) => m.electronModule));
const { runApp } = vi.hoisted(() => ({ runApp: vi.fn(() => Promise.resolve()) }));
vi.mock('./app.js', () => ({ runApp }));

/** A fresh entry module (it runs at import). The mocked 'electron' survives resetModules, so it is taken from there. */
async function launch(lock: boolean) {
  vi.resetModules();
  const m = (await import('electron')) as unknown as typeof Mock.electronModule;
  m.__fake.reset();
  m.__fake.lock = lock;
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
});
