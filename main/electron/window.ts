/**
 * The window: our own page from disk in a sandboxed renderer with no Node,
 * talking only through the preload's bridge. It can navigate nowhere, open
 * nothing, ask for no permission, and loads nothing but its own files (CSP).
 */
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { BrowserWindow, type NativeImage, type Session } from 'electron';

/** Same policy as the page's meta tag; sent as a header too, the stronger delivery where it applies. */
export const CSP =
  "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; font-src 'self'; " +
  "connect-src 'none'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'";

export interface WindowPaths {
  /** dist/main/electron/preload.cjs, next to the compiled main.js. */
  preload: string;
  /** renderer/dist/index.html (built by Vite), relative to the app root (the asar in a package). */
  indexHtml: string;
}

export function windowPaths(appRoot: string, compiledDir: string): WindowPaths {
  return {
    preload: path.join(compiledDir, 'preload.cjs'),
    indexHtml: path.join(appRoot, 'renderer', 'dist', 'index.html'),
  };
}

/** The window's own document, whatever its #route or ?query: the only place it may be. */
export function isOwnPage(url: string, indexHtml: string): boolean {
  try {
    const u = new URL(url);
    const own = pathToFileURL(indexHtml);
    return (
      u.protocol === 'file:' &&
      u.host === own.host &&
      decodeURIComponent(u.pathname) === decodeURIComponent(own.pathname)
    );
  } catch {
    return false;
  }
}

/** Session-wide: no permission is ever granted (no camera, notifications from the page, etc.), CSP on every response. */
export function hardenSession(ses: Session): void {
  ses.setPermissionRequestHandler((_wc, _permission, callback) => callback(false));
  ses.setPermissionCheckHandler(() => false);
  ses.webRequest.onHeadersReceived((details, callback) => {
    callback({ responseHeaders: { ...details.responseHeaders, 'Content-Security-Policy': [CSP] } });
  });
}

export interface WindowOptions {
  paths: WindowPaths;
  icon?: NativeImage;
  /** false when started at login: the app lives in the tray until opened. */
  show: boolean;
  devTools: boolean;
  onLoadFailed?: (err: Error) => void;
}

export function createMainWindow(o: WindowOptions): BrowserWindow {
  const win = new BrowserWindow({
    title: 'Drone Media Sync',
    // Fits a 1366x768 laptop with its task bar.
    width: 1120,
    height: 680,
    minWidth: 860,
    minHeight: 540,
    show: false,
    backgroundColor: '#ffffff',
    ...(o.icon ? { icon: o.icon } : {}),
    webPreferences: {
      preload: o.paths.preload,
      contextIsolation: true,
      sandbox: true,
      nodeIntegration: false,
      nodeIntegrationInWorker: false,
      nodeIntegrationInSubFrames: false,
      webSecurity: true,
      allowRunningInsecureContent: false,
      webviewTag: false,
      spellcheck: false,
      devTools: o.devTools,
    },
  });
  // No File/Edit/View menu on Windows/Linux: nothing in it the window needs (reload would lose form input).
  if (process.platform !== 'darwin') win.removeMenu();
  const wc = win.webContents;
  wc.setWindowOpenHandler(() => ({ action: 'deny' }));
  const stayHome = (e: { url: string; preventDefault(): void }) => {
    if (!isOwnPage(e.url, o.paths.indexHtml)) e.preventDefault();
  };
  wc.on('will-navigate', stayHome);
  wc.on('will-redirect', stayHome);
  wc.on('will-attach-webview', (e) => e.preventDefault());
  win.once('ready-to-show', () => {
    if (o.show) win.show();
  });
  win.loadFile(o.paths.indexHtml).catch((err: unknown) => o.onLoadFailed?.(err as Error));
  return win;
}
