import fs from 'node:fs';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { CHANNEL_NAMES } from '../../main/shared/ipc.js';
import { tempDir } from '../support/harness.js';
import { insertCard, until } from './helpers.js';

// The whole desktop process, minus Electron itself (mocked: its binary cannot
// be downloaded here): runApp() with the real controller, local service,
// queue, log file and card monitor on a temporary mount root.
vi.mock('electron', () => import('./electron-mock.js').then((m) => m.electronModule));
const { electron, fake, FakeBrowserWindow, FakeNotification, FakeTray } = await import('./electron-mock.js');

let root: string;
const savedEnv = process.env.DMS_STATE_DIR;
const listenersBefore = {
  uncaught: process.listeners('uncaughtException'),
  rejection: process.listeners('unhandledRejection'),
};
beforeAll(() => {
  root = tempDir('dms-app-');
  fake.reset();
  process.env.DMS_STATE_DIR = path.join(root, 'state');
  fs.mkdirSync(path.join(root, 'state'), { recursive: true });
  fs.mkdirSync(path.join(root, 'mnt'));
  fs.writeFileSync(
    path.join(root, 'state', 'config.json'),
    // The built-in local service, as the user chose it (without a choice the app waits for a sign-in).
    JSON.stringify({ useLocalService: true, mountRoots: [path.join(root, 'mnt')] }),
  );
  fake.paths.logs = path.join(root, 'logs');
  fake.appPath = path.join(root, 'app');
});
afterAll(() => {
  if (savedEnv === undefined) delete process.env.DMS_STATE_DIR;
  else process.env.DMS_STATE_DIR = savedEnv;
  for (const l of process.listeners('uncaughtException'))
    if (!listenersBefore.uncaught.includes(l)) process.off('uncaughtException', l);
  for (const l of process.listeners('unhandledRejection'))
    if (!listenersBefore.rejection.includes(l)) process.off('unhandledRejection', l);
  fs.rmSync(root, { recursive: true, force: true });
});

describe('the desktop app process (runApp)', () => {
  it('starts window, IPC, tray and agent; hides on close; notifies a card; quits cleanly', async () => {
    const { runApp } = await import('../../main/electron/app.js');
    await runApp();

    // Window: our page, hardened.
    const win = FakeBrowserWindow.instances[0]!;
    const indexHtml = path.join(root, 'app', 'renderer', 'dist', 'index.html');
    expect(win.loaded).toBe(indexHtml);
    expect(win.options.webPreferences).toMatchObject({
      sandbox: true,
      contextIsolation: true,
      nodeIntegration: false,
    });
    expect(win.options.webPreferences?.preload).toMatch(/main[/\\]electron[/\\]preload\.cjs$/);
    expect(electron.session.defaultSession.webRequest.onHeadersReceived).toHaveBeenCalled();

    // IPC: every channel, answered for our page.
    expect([...fake.ipcHandlers.keys()].sort()).toEqual([...CHANNEL_NAMES].sort());
    const event = {
      sender: win.webContents,
      senderFrame: { url: pathToFileURL(indexHtml).href, parent: null },
    };
    const state = (await fake.ipcHandlers.get('app:get-state')!(event, undefined)) as {
      ok: boolean;
      value: { serverLabel: string };
    };
    expect(state).toMatchObject({
      ok: true,
      value: { serverLabel: 'the built-in local service', engine: 'idle' },
    });

    // Tray: idle, with the menu.
    const tray = FakeTray.instances[0]!;
    expect(tray.tooltip).toBe('Drone Media Sync: all synced');
    expect(tray.menu!.template.map((i: { label?: string }) => i.label).filter(Boolean)).toContain(
      'Quit Drone Media Sync',
    );

    // Closing the window hides it; the agent keeps running. A second launch shows it again.
    win.close();
    expect(win.destroyed).toBe(false);
    expect(win.visible).toBe(false);
    electron.app.emit('second-instance');
    expect(win.visible).toBe(true);

    // A card: pushes reach the window, the tray follows, one notice for the card and one summary.
    insertCard(path.join(root, 'mnt', 'DJI_CARD'));
    await until("the card's verdict", () =>
      FakeNotification.shown.some((n) => n.title === 'DJI_CARD: safe to format'),
    );
    expect(FakeNotification.shown.map((n) => n.title)).toEqual([
      'Card DJI_CARD detected',
      'Sync finished',
      'DJI_CARD: safe to format',
    ]);
    expect(FakeNotification.shown[0]!.body).toContain('wayline “Waypoint1”');
    const sent = new Set(win.webContents.send.mock.calls.map((c: unknown[]) => c[0]));
    expect(sent).toEqual(new Set(['push:state', 'push:progress', 'push:queue-changed']));
    // Idle again, saying the card's verdict.
    await until('tray idle again', () =>
      /^Drone Media Sync: DJI_CARD: 4 files verified in the built-in workspace on this laptop, \/.+\/local-service — safe to format$/.test(
        tray.tooltip,
      ),
    );

    // Not a packaged app: start at login is left alone.
    expect(electron.app.setLoginItemSettings).not.toHaveBeenCalled();

    // The log file is written.
    const logs = fs.readdirSync(path.join(root, 'logs'));
    expect(logs.some((f) => f.endsWith('.log'))).toBe(true);

    // Quit: the agent stops, then the process exits.
    electron.app.quit();
    await until('exit', () => electron.app.exit.mock.calls.length > 0);
    expect(tray.destroyed).toBe(true);
    const log = logs.map((f) => fs.readFileSync(path.join(root, 'logs', f), 'utf8')).join('');
    expect(log).toContain('quitting: stopping the agent');
  });
});
