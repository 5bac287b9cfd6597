/**
 * The tray: the app's only face while the window is closed. One icon per
 * state, a tooltip with the percentage, and a menu whose first line says
 * what is happening right now. The view and the menu are pure functions of
 * the app state (tested without Electron); AppTray only applies them.
 */
import { Menu, nativeImage, Tray, type MenuItemConstructorOptions, type NativeImage } from 'electron';
import type { AppStateView } from '../shared/ipc.js';
import { resumable } from '../shared/states.js';
import { iconPng, ICON_NAMES, type IconName } from './icon-art.js';
import { formatBytes } from './notifications.js';

export interface TrayView {
  icon: IconName;
  tooltip: string;
  activityLine: string;
  /** A card's advisory line (issue 32: flights to look at before leaving); absent when none. */
  advisory?: string;
}

export interface TrayActions {
  open(): void;
  pause(): void;
  resume(): void;
  syncNow(): void;
  openLogs(): void;
  quit(): void;
}

const APP = 'Drone Media Sync';

/** "~4 min", "~1 h 20 min", "less than a minute". */
export function formatEta(seconds: number | null): string | null {
  if (seconds === null || !Number.isFinite(seconds)) return null;
  if (seconds < 60) return 'less than a minute';
  const min = Math.round(seconds / 60);
  if (min < 60) return `~${min} min`;
  const h = Math.floor(min / 60);
  return `~${h} h${min % 60 ? ` ${min % 60} min` : ''}`;
}

const files = (n: number) => `${n} file${n === 1 ? '' : 's'}`;

/**
 * The view, plus the cards' advisory line (a flight's photos that look
 * unusable) under it in the tooltip and as a line of the menu. It never
 * changes the icon nor the verdict said: a card safe to format stays so.
 */
export function trayView(s: AppStateView): TrayView {
  const view = stateView(s);
  const advised = s.cards.filter((c) => c.advisory);
  const first = advised[0];
  if (!first?.advisory) return view;
  const more =
    advised.length > 1 ? ` (and ${advised.length - 1} more card${advised.length > 2 ? 's' : ''})` : '';
  const advisory = `${first.label}: ${first.advisory}${more}`;
  return { ...view, tooltip: `${view.tooltip}\n${advisory}`, advisory };
}

/**
 * Which icon: what the user must do first, then what the engine is doing.
 * Failed files show red only once the engine is otherwise idle, so a big
 * upload still shows its progress.
 */
function stateView(s: AppStateView): TrayView {
  const p = s.progress;
  const remaining = Math.max(0, p.filesTotal - p.filesDone - p.filesFailed);
  const percent = p.bytesTotal > 0 ? Math.min(100, Math.floor((p.bytesDone / p.bytesTotal) * 100)) : 0;
  const attention = (activityLine: string): TrayView => ({
    icon: 'attention',
    tooltip: `${APP}: ${activityLine}`,
    activityLine,
  });

  if (s.engine === 'halted')
    return attention(
      s.halt?.reason === 'disk-full'
        ? 'Disk full: free space, then Resume'
        : 'Stopped: the queue cannot be written',
    );
  if (s.engine === 'auth-required') return attention('Sign in needed');
  // Any other sentence without failed files is a problem of its own (the engine could not start).
  if (s.attention && s.failedCount === 0) return attention(s.attention);
  if (s.engine === 'paused') {
    const line = remaining > 0 ? `Paused: ${files(remaining)} waiting` : 'Paused';
    return { icon: 'paused', tooltip: `${APP}: ${line}`, activityLine: line };
  }
  if (s.engine === 'offline') {
    const line = 'Server unreachable, retrying by itself';
    const tail = remaining > 0 ? ` (${files(remaining)} waiting)` : '';
    return { icon: 'offline', tooltip: `${APP}: ${line}${tail}`, activityLine: `${line}${tail}` };
  }
  if (s.engine === 'syncing') {
    if (p.filesTotal === 0) return { icon: 'syncing', tooltip: `${APP}: syncing`, activityLine: 'Syncing…' };
    const eta = formatEta(p.etaSeconds);
    // Files left, never a file number: "37 of 212" beside "34 done" reads as a contradiction.
    const upload =
      remaining === 0
        ? `finishing ${files(p.filesTotal)}`
        : `uploading ${files(remaining)} (${formatBytes(Math.max(0, p.bytesTotal - p.bytesDone))} left${eta ? `, ${eta}` : ''})`;
    // A card whose copies are verified may come out now: said first, while the upload goes on.
    const freed = s.cards.find((c) => c.local?.safe && !c.workspace?.safe);
    const line = freed
      ? `${freed.label} is locally safe; ${upload}`
      : `${upload.charAt(0).toUpperCase()}${upload.slice(1)}`;
    return { icon: 'syncing', tooltip: `${APP}: uploading, ${percent}%`, activityLine: line };
  }
  if (s.failedCount > 0) return attention(`${files(s.failedCount)} need attention`);
  // The cards' verdicts: a card not safe to format needs a look; safe ones are said.
  const verdicts = s.cards.flatMap((c) => (c.headline ? [c.headline] : []));
  const unsafe = verdicts.find((v) => !v.safe);
  if (unsafe) return attention(unsafe.message);
  if (verdicts.length > 0) {
    const line =
      verdicts.length === 1 ? (verdicts[0]?.message ?? '') : `${verdicts.length} cards safe to format`;
    return { icon: 'idle', tooltip: `${APP}: ${line}`, activityLine: line };
  }
  return { icon: 'idle', tooltip: `${APP}: all synced`, activityLine: 'All files are synced' };
}

export function trayMenuTemplate(
  view: TrayView,
  s: AppStateView,
  a: TrayActions,
): MenuItemConstructorOptions[] {
  const paused = resumable(s.engine);
  return [
    { id: 'activity', label: view.activityLine, enabled: false },
    ...(view.advisory
      ? [{ id: 'advisory', label: view.advisory, enabled: false } satisfies MenuItemConstructorOptions]
      : []),
    { type: 'separator' },
    { id: 'open', label: `Open ${APP}`, click: () => a.open() },
    paused
      ? { id: 'resume', label: 'Resume syncing', click: () => a.resume() }
      : { id: 'pause', label: 'Pause syncing', click: () => a.pause() },
    { id: 'sync-now', label: 'Sync now', click: () => a.syncNow() },
    { type: 'separator' },
    { id: 'logs', label: 'Open log folder', click: () => a.openLogs() },
    { type: 'separator' },
    { id: 'quit', label: `Quit ${APP}`, click: () => a.quit() },
  ];
}

/**
 * Windows and macOS draw tray icons at 16 pt (32 px on HiDPI); Linux
 * panels (22–24 px) get the 32 px image and scale it down.
 */
function trayImage(name: IconName, platform: NodeJS.Platform): NativeImage {
  if (platform === 'linux') return nativeImage.createFromBuffer(iconPng(name, 32));
  const img = nativeImage.createFromBuffer(iconPng(name, 16), { scaleFactor: 1 });
  img.addRepresentation({ scaleFactor: 2, buffer: iconPng(name, 32) });
  return img;
}

export class AppTray {
  private readonly tray: Tray;
  private readonly images: Map<IconName, NativeImage>;
  private shown: { icon: IconName; tooltip: string; menuKey: string } | null = null;

  constructor(
    private readonly actions: TrayActions,
    platform: NodeJS.Platform = process.platform,
  ) {
    this.images = new Map(ICON_NAMES.map((n) => [n, trayImage(n, platform)]));
    this.tray = new Tray(this.image('idle'));
    // Windows: a click opens the window (the menu is on right-click). Linux app indicators only show the menu.
    this.tray.on('click', () => actions.open());
  }

  update(s: AppStateView): void {
    const view = trayView(s);
    const menuKey = `${view.activityLine}|${view.advisory ?? ''}|${resumable(s.engine)}`;
    if (this.shown?.icon !== view.icon) this.tray.setImage(this.image(view.icon));
    if (this.shown?.tooltip !== view.tooltip) this.tray.setToolTip(view.tooltip);
    // Linux app indicators only take a new menu, not changed items; rebuilt only when its text changes.
    if (this.shown?.menuKey !== menuKey) {
      this.tray.setContextMenu(Menu.buildFromTemplate(trayMenuTemplate(view, s, this.actions)));
    }
    this.shown = { icon: view.icon, tooltip: view.tooltip, menuKey };
  }

  destroy(): void {
    this.tray.destroy();
  }

  private image(name: IconName): NativeImage {
    const img = this.images.get(name);
    if (!img) throw new Error(`no tray icon ${name}`);
    return img;
  }
}
