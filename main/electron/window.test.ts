import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import pino from 'pino';
import { beforeEach, describe, expect, it, vi } from 'vitest';
import type { FakeBrowserWindow } from '../../test/electron/electron-mock.js';

// Electron is mocked: its binary cannot be downloaded here (see electron-mock.ts).
vi.mock('electron', () => import('../../test/electron/electron-mock.js').then((m) => m.electronModule));
const { electron, fake } = await import('../../test/electron/electron-mock.js');
const { createMainWindow, CSP, hardenSession, isOwnPage, windowPaths } = await import('./window.js');
const { applyStartAtLogin, argvForSecondStart, autostartEntry, autostartFile, startedAtLogin } =
  await import('./login-item.js');

const paths = windowPaths('/opt/dms/resources/app.asar', '/opt/dms/resources/app.asar/dist/main/electron');

beforeEach(() => fake.reset());

describe('window', () => {
  it('is sandboxed, isolated, without Node, with our preload and page, and fits a 1366x768 screen', async () => {
    expect(paths).toEqual({
      preload: path.join('/opt/dms/resources/app.asar/dist/main/electron', 'preload.cjs'),
      indexHtml: path.join('/opt/dms/resources/app.asar', 'renderer', 'dist', 'index.html'),
    });
    const win = createMainWindow({ paths, show: true, devTools: false }) as unknown as InstanceType<
      typeof FakeBrowserWindow
    >;
    const o = win.options;
    expect(o.webPreferences).toMatchObject({
      preload: paths.preload,
      contextIsolation: true,
      sandbox: true,
      nodeIntegration: false,
      webSecurity: true,
      webviewTag: false,
      devTools: false,
    });
    expect(o.width).toBeLessThanOrEqual(1366);
    expect(o.height).toBeLessThanOrEqual(768 - 48); // a task bar
    expect(o.show).toBe(false); // shown when painted, not as a white flash
    expect(win.loaded).toBe(paths.indexHtml);
    await new Promise((r) => setImmediate(r));
    expect(win.visible).toBe(true);
  });

  it('stays hidden when started at login', async () => {
    const win = createMainWindow({ paths, show: false, devTools: false }) as unknown as InstanceType<
      typeof FakeBrowserWindow
    >;
    await new Promise((r) => setImmediate(r));
    expect(win.visible).toBe(false);
  });

  it('navigates nowhere but its own page, opens no windows, attaches no webviews', () => {
    const win = createMainWindow({ paths, show: true, devTools: false }) as unknown as InstanceType<
      typeof FakeBrowserWindow
    >;
    const wc = win.webContents;
    const attempt = (event: string, url: string) => {
      const e = { url, defaultPrevented: false, preventDefault: () => (e.defaultPrevented = true) };
      wc.emit(event, e, url);
      return e.defaultPrevented;
    };
    expect(attempt('will-navigate', 'https://evil.example/')).toBe(true);
    expect(attempt('will-navigate', pathToFileURL('/etc/passwd').href)).toBe(true);
    expect(attempt('will-redirect', 'http://127.0.0.1:8080/')).toBe(true);
    expect(attempt('will-navigate', `${pathToFileURL(paths.indexHtml).href}#/settings`)).toBe(false);
    expect(wc.windowOpenHandler!({ url: 'https://evil.example/' })).toEqual({ action: 'deny' });
    expect(attempt('will-attach-webview', 'about:blank')).toBe(true);
  });

  it('recognises its own page only', () => {
    const own = pathToFileURL(paths.indexHtml).href;
    expect(isOwnPage(own, paths.indexHtml)).toBe(true);
    expect(isOwnPage(`${own}?x=1#/queue`, paths.indexHtml)).toBe(true);
    expect(isOwnPage(own.replace('index.html', 'other.html'), paths.indexHtml)).toBe(false);
    expect(isOwnPage('https://opt/dms/resources/app.asar/renderer/dist/index.html', paths.indexHtml)).toBe(
      false,
    );
    expect(isOwnPage('not a url', paths.indexHtml)).toBe(false);
  });

  it('the session grants no permission and sends the CSP header on every response', () => {
    const ses = electron.session.defaultSession;
    hardenSession(ses as never);
    const request = ses.setPermissionRequestHandler.mock.calls[0]![0] as (...a: unknown[]) => void;
    const answer = vi.fn();
    request({}, 'media', answer, {});
    expect(answer).toHaveBeenCalledWith(false);
    const check = ses.setPermissionCheckHandler.mock.calls[0]![0] as (...a: unknown[]) => boolean;
    expect(check({}, 'notifications', 'file://', {})).toBe(false);
    const onHeaders = ses.webRequest.onHeadersReceived.mock.calls[0]![0] as (
      d: unknown,
      cb: (r: unknown) => void,
    ) => void;
    const cb = vi.fn();
    onHeaders({ responseHeaders: { 'Content-Type': ['text/html'] } }, cb);
    expect(cb).toHaveBeenCalledWith({
      responseHeaders: { 'Content-Type': ['text/html'], 'Content-Security-Policy': [CSP] },
    });
    expect(CSP).toBe(
      "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; font-src 'self'; connect-src 'none'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'",
    );
  });

  it("the header CSP is the renderer page's meta CSP", () => {
    const html = fs.readFileSync(path.resolve('renderer/index.html'), 'utf8');
    const meta = /http-equiv="Content-Security-Policy"\s+content="([^"]+)"/.exec(html)?.[1];
    expect(meta).toBe(CSP);
  });
});

describe('start at login', () => {
  it('writes an XDG autostart entry on Linux (packaged apps only), starting hidden', () => {
    const home = fs.mkdtempSync(path.join(os.tmpdir(), 'dms-autostart-'));
    const env = {
      XDG_CONFIG_HOME: path.join(home, 'cfg'),
      APPIMAGE: '/home/crew/Apps/Drone Media Sync.AppImage',
    };
    const log = pino({ level: 'silent' });
    applyStartAtLogin({ enabled: true, platform: 'linux', env, log });
    expect(fs.existsSync(autostartFile(env))).toBe(false); // `electron .` in a checkout: never registered
    fake.packaged = true;
    applyStartAtLogin({ enabled: true, platform: 'linux', env, log });
    const entry = fs.readFileSync(autostartFile(env), 'utf8');
    expect(entry).toContain(
      'Exec="/home/crew/Apps/Drone Media Sync.AppImage" "--js-flags=--max-semi-space-size=8 --heap-growing-percent=100" --hidden\n',
    );
    expect(entry).toBe(autostartEntry(env.APPIMAGE));
    applyStartAtLogin({ enabled: false, platform: 'linux', env, log });
    expect(fs.existsSync(autostartFile(env))).toBe(false);
    fs.rmSync(home, { recursive: true, force: true });
  });

  it('uses login items on Windows (with the V8 flags, quoted, and --hidden) and macOS', () => {
    fake.packaged = true;
    const log = pino({ level: 'silent' });
    applyStartAtLogin({ enabled: true, platform: 'win32', log });
    expect(electron.app.setLoginItemSettings).toHaveBeenLastCalledWith({
      openAtLogin: true,
      args: ['"--js-flags=--max-semi-space-size=8 --heap-growing-percent=100"', '--hidden'],
    });
    applyStartAtLogin({ enabled: false, platform: 'darwin', log });
    expect(electron.app.setLoginItemSettings).toHaveBeenLastCalledWith({ openAtLogin: false });
    expect(startedAtLogin(['/opt/app', '--hidden'], 'linux')).toBe(true);
    expect(startedAtLogin(['/opt/app'], 'linux')).toBe(false);
  });

  it('a start at login that starts itself again (V8 flags) tells the second start with --hidden', () => {
    expect(argvForSecondStart(['/opt/app', '--hidden'], 'linux')).toEqual(['/opt/app', '--hidden']);
    expect(argvForSecondStart(['/opt/app'], 'linux')).toEqual(['/opt/app']);
    vi.mocked(electron.app.getLoginItemSettings).mockReturnValueOnce({ wasOpenedAtLogin: true });
    expect(argvForSecondStart(['/Applications/D.app/Contents/MacOS/D'], 'darwin')).toEqual([
      '/Applications/D.app/Contents/MacOS/D',
      '--hidden',
    ]);
    expect(argvForSecondStart(['/Applications/D.app/Contents/MacOS/D'], 'darwin')).toEqual([
      '/Applications/D.app/Contents/MacOS/D',
    ]);
  });
});
