/**
 * The window driven by the real main process logic: the AppController (real
 * queue, real card monitor on a temporary mount root, the real reference
 * service or the sample-server stand-in over HTTP) answers every request
 * through the real IPC dispatch (main/electron/ipc.ts: the contract's zod
 * schemas, the handlers, failures as Results), and its pushes reach the page
 * as they would through the preload. Only Electron itself is left out: the
 * test file mocks the `electron` module (its binary cannot run here), and
 * the folder dialog answers what the test chose.
 *
 * Use in a test file that mocks electron first:
 *   vi.mock('electron', () => import('../electron/electron-mock.js').then((m) => m.electronModule));
 */
import { pathToFileURL } from 'node:url';
import type { WebContents } from 'electron';
import type { AppController } from '../../main/electron/controller.js';
import { createHandlers, dispatch, type FolderPurpose } from '../../main/electron/ipc.js';
import { silentLogger } from '../../main/core/log.js';
import { CHANNEL_NAMES, type Channel } from '../../main/shared/ipc.js';
import { openPage, type Opened, type Ui } from './browser.js';

export interface RealWindow extends Opened {
  /** What the next "Add folder…" / "Add destination…" dialog answers (null: cancelled). */
  pickFolder: { next: string | null; asked: FolderPurpose[] };
  /** Every request the window made, in order (channel and payload, as main received them). */
  calls: Array<{ channel: string; request: unknown }>;
}

export async function openRealWindow(ui: Ui, controller: AppController): Promise<RealWindow> {
  const opened = await openPage(ui);
  const { page } = opened;
  const pickFolder: RealWindow['pickFolder'] = { next: null, asked: [] };
  const calls: RealWindow['calls'] = [];
  const handlers = createHandlers(controller, {
    pickFolder: (purpose) => {
      pickFolder.asked.push(purpose);
      return Promise.resolve(pickFolder.next);
    },
    openLogFolder: () => Promise.resolve(),
    openHelp: () => Promise.resolve(),
  });
  // The sender check passes as it does for the app's own window: its webContents, top frame, index.html.
  const indexHtml = '/app/renderer/dist/index.html';
  const sender = {} as WebContents;
  const event = { sender, senderFrame: { parent: null, url: pathToFileURL(indexHtml).href } } as never;
  const trusted = { webContents: () => sender, indexHtml };
  await page.exposeFunction('__dmsInvoke', (channel: Channel, payload: unknown) => {
    calls.push({ channel, request: payload });
    return dispatch(channel, event, payload, { handlers, trusted, log: silentLogger });
  });
  // The preload's shape: one function per channel, and on() for pushes.
  await page.addInitScript((channels: string[]) => {
    const w = window as unknown as {
      __dmsInvoke: (c: string, p: unknown) => Promise<unknown>;
      __dmsPush: (c: string, p: unknown) => void;
      dms: unknown;
    };
    const listeners = new Map<string, Set<(p: unknown) => void>>();
    const bridge: Record<string, unknown> = {};
    for (const c of channels) bridge[c] = (request?: unknown) => w.__dmsInvoke(c, request);
    bridge.on = (c: string, l: (p: unknown) => void) => {
      const set = listeners.get(c) ?? new Set();
      set.add(l);
      listeners.set(c, set);
      return () => set.delete(l);
    };
    w.__dmsPush = (c, p) => {
      for (const l of [...(listeners.get(c) ?? [])]) l(p);
    };
    w.dms = Object.freeze(bridge);
  }, CHANNEL_NAMES);
  controller.on('push', (m) => {
    page
      .evaluate(
        ([c, p]) => (window as unknown as { __dmsPush: (c: string, p: unknown) => void }).__dmsPush(c, p),
        [m.channel, m.payload] as const,
      )
      .catch(() => undefined); // the page is closing
  });
  await page.goto(ui.baseUrl);
  await page.locator('.topbar').waitFor();
  return { ...opened, pickFolder, calls };
}
