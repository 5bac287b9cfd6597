/**
 * The main-process end of the IPC contract (main/shared/ipc.ts). Every
 * request is checked in the same order: from our window's own page, shaped
 * as the contract says, then handled; every answer is a Result, so nothing
 * is thrown into the renderer. Payloads are never logged (a login carries a password).
 */
import {
  dialog,
  ipcMain,
  shell,
  type BrowserWindow,
  type IpcMainInvokeEvent,
  type WebContents,
} from 'electron';
import type { z } from 'zod';
import type { Logger } from '../core/log.js';
import { CHANNEL_NAMES, Channels, type Channel, type ResponseOf, type Result } from '../shared/ipc.js';
import type { AppController } from './controller.js';
import { toFailure, UserError } from './failures.js';
import { fieldErrorsFromIssues } from './settings.js';
import { isOwnPage } from './window.js';

/**
 * The only pages "Help" opens: the renderer names a topic, never a URL.
 * Placeholders until the project has its public pages.
 */
export const HELP_URLS: Readonly<Record<'docs' | 'support', string>> = Object.freeze({
  docs: 'https://dronemediasync.invalid/docs',
  support: 'https://dronemediasync.invalid/support',
});

type RequestOf<C extends Channel> = z.output<(typeof Channels)[C]['request']>;
type Answer<C extends Channel> = ResponseOf<C> | Promise<ResponseOf<C>>;
export type Handlers = { [C in Channel]: (request: RequestOf<C>) => Answer<C> };

export type ControllerApi = Pick<
  AppController,
  | 'state'
  | 'queueList'
  | 'retry'
  | 'pause'
  | 'resume'
  | 'syncNow'
  | 'history'
  | 'setWayline'
  | 'waylines'
  | 'settings'
  | 'saveSettings'
  | 'forgetDestination'
  | 'targets'
  | 'forgetTarget'
  | 'linkAnswer'
  | 'linkPin'
  | 'login'
  | 'setToken'
  | 'signOut'
  | 'testConnection'
  | 'flights'
  | 'flight'
  | 'acceptFlight'
  | 'mapTile'
>;

export type FolderPurpose = 'watch' | 'destination';

export interface ShellActions {
  pickFolder(purpose: FolderPurpose): Promise<string | null>;
  openLogFolder(): Promise<void>;
  openHelp(topic: keyof typeof HELP_URLS): Promise<void>;
}

export function createHandlers(c: ControllerApi, s: ShellActions): Handlers {
  return {
    'app:get-state': () => c.state(),
    'queue:list': (r) => c.queueList(r.filter, r.limit),
    'queue:retry': (r) => c.retry(r),
    'sync:pause': () => c.pause(),
    'sync:resume': () => c.resume(),
    'sync:now': () => c.syncNow(),
    'history:list': (r) => c.history(r.limit),
    'history:set-wayline': (r) => c.setWayline(r.folder, r.waylineId),
    'waylines:list': (r) => c.waylines(r),
    'settings:get': () => c.settings(),
    'settings:save': (r) => c.saveSettings(r),
    'copies:forget': (r) => c.forgetDestination(r.path),
    'targets:list': () => c.targets(),
    'targets:forget': (r) => c.forgetTarget(r.key),
    'link:answer': (r) => c.linkAnswer(r.answer),
    'link:pin': (r) => c.linkPin(r.pin),
    'auth:login': (r) => c.login(r.serverUrl, r.username, r.password),
    'auth:set-token': (r) => c.setToken(r.serverUrl, r.workspaceId, r.token),
    'auth:sign-out': () => c.signOut(),
    'auth:test-connection': (r) => c.testConnection(r.serverUrl, r.workspaceId),
    'flights:list': (r) => c.flights(r.cardId),
    'flights:get': (r) => c.flight(r.cardId, r.folder, r.part),
    'flights:accept': (r) => c.acceptFlight(r.cardId, r.folder),
    'map:tile': (r) => c.mapTile(r.z, r.x, r.y),
    'dialog:pick-folder': (r) => s.pickFolder(r && 'purpose' in r ? r.purpose : 'watch'),
    'shell:open-log-folder': async () => {
      await s.openLogFolder();
      return null;
    },
    'shell:open-help': async (r) => {
      await s.openHelp(r.topic);
      return null;
    },
  };
}

/** Our window, and the page it must be showing, for the sender check. */
export interface TrustedWindow {
  webContents(): WebContents | null;
  indexHtml: string;
}

/** Our window's webContents, its top frame (no iframe), showing our own file. */
export function isTrustedSender(
  event: Pick<IpcMainInvokeEvent, 'sender' | 'senderFrame'>,
  trusted: TrustedWindow,
): boolean {
  const wc = trusted.webContents();
  if (!wc || event.sender !== wc) return false;
  const frame = event.senderFrame;
  if (!frame || frame.parent !== null) return false;
  return isOwnPage(frame.url, trusted.indexHtml);
}

const FORBIDDEN: Result<never> = {
  ok: false,
  error: { kind: 'forbidden', message: 'This request did not come from the Drone Media Sync window.' },
};

export async function dispatch<C extends Channel>(
  channel: C,
  event: Pick<IpcMainInvokeEvent, 'sender' | 'senderFrame'>,
  payload: unknown,
  o: { handlers: Handlers; trusted: TrustedWindow; log: Logger },
): Promise<Result<ResponseOf<C>>> {
  if (!isTrustedSender(event, o.trusted)) {
    o.log.warn({ channel, url: event.senderFrame?.url ?? null }, 'IPC refused: not our window');
    return FORBIDDEN;
  }
  const schema: z.ZodType<RequestOf<C>> = Channels[channel].request as unknown as z.ZodType<RequestOf<C>>;
  const parsed = schema.safeParse(payload);
  if (!parsed.success) {
    // Paths and codes only: the values may be a password.
    const where = parsed.error.issues.map((i) => `${i.path.join('.') || 'request'} (${i.code})`).join(', ');
    o.log.warn({ channel, issues: where }, 'IPC refused: invalid request');
    const fields = channel === 'settings:save' ? { fields: fieldErrorsFromIssues(parsed.error.issues) } : {};
    const message =
      channel === 'settings:save' ? 'Some settings need fixing.' : `The request was not valid: ${where}.`;
    return { ok: false, error: { kind: 'invalid-input', message, ...fields } };
  }
  try {
    const handler = o.handlers[channel] as (r: RequestOf<C>) => Answer<C>;
    return { ok: true, value: await handler(parsed.data) };
  } catch (err) {
    const failure = toFailure(err);
    const level = failure.error.kind === 'internal' ? 'error' : 'info';
    o.log[level](
      { channel, kind: failure.error.kind, err: err instanceof Error ? err.message : String(err) },
      'IPC request failed',
    );
    return failure;
  }
}

/** One handler per contract channel; returns a function that removes them all. */
export function registerIpc(o: { handlers: Handlers; trusted: TrustedWindow; log: Logger }): () => void {
  for (const channel of CHANNEL_NAMES) {
    ipcMain.handle(channel, (event: IpcMainInvokeEvent, payload: unknown) =>
      dispatch(channel, event, payload, o),
    );
  }
  return () => {
    for (const channel of CHANNEL_NAMES) ipcMain.removeHandler(channel);
  };
}

/** The three requests answered by Electron itself. */
export function electronShellActions(o: { window(): BrowserWindow | null; logDir: string }): ShellActions {
  return {
    async pickFolder(purpose) {
      const options: Electron.OpenDialogOptions = {
        title:
          purpose === 'destination'
            ? 'Choose a folder to copy each card to (on a drive of its own)'
            : 'Choose a folder to watch',
        properties: ['openDirectory', 'createDirectory'],
      };
      const win = o.window();
      const r = win ? await dialog.showOpenDialog(win, options) : await dialog.showOpenDialog(options);
      return r.canceled ? null : (r.filePaths[0] ?? null);
    },
    async openLogFolder() {
      const problem = await shell.openPath(o.logDir);
      if (problem)
        throw new UserError('unavailable', `The log folder (${o.logDir}) could not be opened: ${problem}`);
    },
    async openHelp(topic) {
      // The zod enum already limits topics; the own-property check keeps prototype keys out too.
      if (!Object.hasOwn(HELP_URLS, topic))
        throw new UserError('invalid-input', 'There is no help page of that name.');
      await shell.openExternal(HELP_URLS[topic]);
    },
  };
}
