/**
 * Wires the pieces together: log file, secret store, controller (the
 * agent), IPC, window, tray, notifications, start at login. Closing the
 * window only hides it: the agent keeps syncing in the tray until Quit,
 * which stops it cleanly (uploads keep their recorded parts) before exiting.
 */
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { app, nativeImage, Notification, safeStorage, session, shell, type BrowserWindow } from 'electron';
import type { Logger } from '../core/log.js';
import { defaultStateDir } from '../core/paths.js';
import { createAppLogger } from './app-log.js';
import { AppController } from './controller.js';
import { iconPng, type IconName } from './icon-art.js';
import { createHandlers, electronShellActions, registerIpc } from './ipc.js';
import { applyStartAtLogin, startedAtLogin } from './login-item.js';
import { NotificationPolicy, type Notice } from './notifications.js';
import { SafeTokenStore } from './secrets.js';
import { atMostEvery } from '../shared/at-most-every.js';
import { AppTray } from './tray.js';
import { createMainWindow, hardenSession, windowPaths } from './window.js';

/** Longest wait for the agent to stop on Quit before exiting anyway (the queue is crash-safe). */
const STOP_TIMEOUT_MS = 10_000;

const NOTICE_ICONS: Record<Notice['kind'], IconName> = {
  card: 'syncing',
  synced: 'idle',
  problem: 'attention',
  'sign-in': 'attention',
  halted: 'attention',
  safe: 'idle',
  'locally-safe': 'idle',
  link: 'attention',
};

export async function runApp(): Promise<void> {
  const compiledDir = path.dirname(fileURLToPath(import.meta.url));
  let win: BrowserWindow | null = null;
  let quitting = false;

  // A tray app: no open window is no reason to quit.
  app.on('window-all-closed', () => undefined);
  // A second launch while this one is still starting is remembered, not lost.
  let showRequested = false;
  let openWindow = () => {
    showRequested = true;
  };
  app.on('second-instance', () => openWindow());
  app.on('activate', () => openWindow());
  await app.whenReady();

  const logDir = app.getPath('logs');
  const { logger: log, flush } = await createAppLogger(logDir);
  process.on('uncaughtException', (err) =>
    log.error({ err: err.message, stack: err.stack }, 'uncaught exception'),
  );
  process.on('unhandledRejection', (err) => log.error({ err: String(err) }, 'unhandled rejection'));
  log.info({ version: app.getVersion(), platform: process.platform, packaged: app.isPackaged }, 'starting');

  const stateDir = defaultStateDir(); // shared with the CLI: same config.json, queue and sign-in
  const controller = new AppController({
    stateDir,
    secrets: new SafeTokenStore({ stateDir, safeStorage, logger: log }),
    logger: log,
    // Written all the time (the browser's profile, the log file): a watched home folder holds them.
    ownFolders: [
      { path: app.getPath('userData'), what: "the desktop app's browser data" },
      { path: logDir, what: 'its log files' },
    ],
  });
  const paths = windowPaths(app.getAppPath(), compiledDir);
  hardenSession(session.defaultSession);

  openWindow = () => {
    if (!win || win.isDestroyed()) win = makeWindow(true);
    else {
      if (win.isMinimized()) win.restore();
      win.show();
      win.focus();
    }
    app.dock?.show().catch(() => undefined);
  };
  const makeWindow = (show: boolean) => {
    const w = createMainWindow({
      paths,
      show,
      devTools: !app.isPackaged,
      icon: nativeImage.createFromBuffer(iconPng('idle', 32)),
      onLoadFailed: (err) =>
        log.error({ err: err.message, page: paths.indexHtml }, 'window page did not load'),
    });
    w.on('close', (e) => {
      if (quitting) return;
      e.preventDefault();
      w.hide();
      app.dock?.hide(); // macOS: a tray app without a window has no Dock icon
    });
    w.webContents.on('render-process-gone', (_e, d) =>
      log.error({ reason: d.reason }, 'window renderer gone'),
    );
    return w;
  };

  registerIpc({
    handlers: createHandlers(controller, electronShellActions({ window: () => win, logDir })),
    trusted: {
      webContents: () => (win && !win.isDestroyed() ? win.webContents : null),
      indexHtml: paths.indexHtml,
    },
    log,
  });

  const tray = new AppTray({
    open: openWindow,
    pause: () => attempt(log, 'pause', () => controller.pause()),
    resume: () => attempt(log, 'resume', () => controller.resume()),
    syncNow: () => attempt(log, 'sync now', () => controller.syncNow()),
    openLogs: () => attempt(log, 'open log folder', () => shell.openPath(logDir)),
    quit: () => app.quit(),
  });
  const updateTray = atMostEvery(() => tray.update(controller.state()), 1000);
  controller.on('push', (m) => {
    if (win && !win.isDestroyed()) win.webContents.send(m.channel, m.payload);
    if (m.channel !== 'push:queue-changed') updateTray();
  });

  const policy = new NotificationPolicy();
  let noticeTimer: NodeJS.Timeout | null = null;
  const notify = (notices: Notice[]) => {
    if (!Notification.isSupported()) return;
    for (const n of notices) {
      const icon = nativeImage.createFromBuffer(iconPng(NOTICE_ICONS[n.kind], 32));
      const shown = new Notification({ title: n.title, body: n.body, icon, silent: n.kind === 'synced' });
      shown.on('click', openWindow);
      shown.show();
    }
  };
  controller.on('activity', (a) => {
    notify(policy.handle(a));
    if (noticeTimer) clearTimeout(noticeTimer);
    const due = policy.dueAt;
    if (due !== null)
      noticeTimer = setTimeout(() => notify(policy.flushDue()), Math.max(0, due - Date.now()));
  });

  // On by default (the setting's default), but only once there is something configured to sync.
  controller.on('config', (config, { configured }) =>
    attempt(log, 'start at login', () =>
      applyStartAtLogin({ enabled: configured && config.startAtLogin, log }),
    ),
  );

  let stopping = false;
  app.on('before-quit', (e) => {
    quitting = true;
    if (stopping) return;
    e.preventDefault();
    stopping = true;
    log.info('quitting: stopping the agent');
    let exited = false;
    const done = () => {
      if (exited) return;
      exited = true;
      tray.destroy();
      flush();
      app.exit(0);
    };
    setTimeout(done, STOP_TIMEOUT_MS).unref();
    controller
      .stop()
      .catch((err: unknown) => log.error({ err: String(err) }, 'agent did not stop cleanly'))
      .finally(done);
  });

  if (!startedAtLogin(process.argv) || showRequested) win = makeWindow(true);
  await controller.start();
  tray.update(controller.state());
  log.info({ stateDir, window: win !== null }, 'ready');
}

/** Tray clicks have nobody to show an error to: it goes to the log. */
function attempt(log: Logger, what: string, fn: () => unknown): void {
  try {
    const r = fn();
    if (r instanceof Promise) r.catch((err: unknown) => log.warn({ err: String(err) }, `${what} failed`));
  } catch (err) {
    log.warn({ err: String(err) }, `${what} failed`);
  }
}
