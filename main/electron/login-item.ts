/**
 * Start at login, so a crew's laptop syncs cards without anyone opening the
 * app. Windows and macOS use Electron's login items; Electron has none on
 * Linux, where the XDG autostart folder is the standard way. Started that
 * way the app stays in the tray (no window). Either way it is started with
 * the agent's V8 flags (JS_FLAGS_ARG), so it need not start itself again.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { app } from 'electron';
import type { Logger } from '../core/log.js';
import { JS_FLAGS_ARG } from './v8-relaunch.js';

export const HIDDEN_ARG = '--hidden';
const DESKTOP_FILE = 'drone-media-sync.desktop';

/** Quoting of the Exec key (Desktop Entry spec): reserved characters inside double quotes. */
function execQuote(arg: string): string {
  return /[\s"'\\$`]/.test(arg) ? `"${arg.replace(/(["`$\\])/g, '\\$1')}"` : arg;
}

export function autostartEntry(executable: string): string {
  return [
    '[Desktop Entry]',
    'Type=Application',
    'Name=Drone Media Sync',
    'Comment=Uploads drone media from SD cards',
    `Exec=${execQuote(executable)} ${execQuote(JS_FLAGS_ARG)} ${HIDDEN_ARG}`,
    'Terminal=false',
    'X-GNOME-Autostart-enabled=true',
    '',
  ].join('\n');
}

export function autostartFile(env: NodeJS.ProcessEnv = process.env, home = os.homedir()): string {
  return path.join(env.XDG_CONFIG_HOME ?? path.join(home, '.config'), 'autostart', DESKTOP_FILE);
}

export interface LoginItemOptions {
  enabled: boolean;
  platform?: NodeJS.Platform;
  env?: NodeJS.ProcessEnv;
  log: Logger;
}

export function applyStartAtLogin(o: LoginItemOptions): void {
  const platform = o.platform ?? process.platform;
  const env = o.env ?? process.env;
  if (!app.isPackaged) {
    // `electron .` in a checkout would register the bare Electron binary.
    o.log.info({ enabled: o.enabled }, 'start at login not changed: not a packaged app');
    return;
  }
  if (platform === 'linux') {
    const file = autostartFile(env);
    if (o.enabled) {
      // An AppImage runs from a temporary mount: the AppImage file itself is what must start.
      fs.mkdirSync(path.dirname(file), { recursive: true });
      fs.writeFileSync(file, autostartEntry(env.APPIMAGE ?? process.execPath));
    } else fs.rmSync(file, { force: true });
  } else {
    app.setLoginItemSettings({
      openAtLogin: o.enabled,
      // Windows joins these with spaces as they are: an argument with a space is quoted here.
      ...(platform === 'win32' ? { args: [`"${JS_FLAGS_ARG}"`, HIDDEN_ARG] } : {}),
    });
  }
  o.log.info({ enabled: o.enabled }, 'start at login applied');
}

export function startedAtLogin(
  argv: readonly string[],
  platform: NodeJS.Platform = process.platform,
): boolean {
  if (argv.includes(HIDDEN_ARG)) return true;
  return platform === 'darwin' && app.getLoginItemSettings().wasOpenedAtLogin;
}

/**
 * The arguments a second start of this process gets (v8-relaunch.ts): macOS
 * tells only the first start that it was opened at login, so the second is
 * told by --hidden, and stays in the tray as the first would have.
 */
export function argvForSecondStart(
  argv: readonly string[],
  platform: NodeJS.Platform = process.platform,
): readonly string[] {
  return !argv.includes(HIDDEN_ARG) && startedAtLogin(argv, platform) ? [...argv, HIDDEN_ARG] : argv;
}
