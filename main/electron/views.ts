/**
 * Engine data -> the plain views of the IPC contract. Pure functions: what
 * the window sees is decided here, and nothing secret is ever copied over
 * (rows carry no tokens; errors are reduced to kind + plain sentence).
 */
import type { Wayline, WaylineQuery } from '../core/api/types.js';
import { plainMessage, QueueWriteError, storedPlain } from '../core/errors.js';
import { flightFolderOf } from '../core/media/flight-folder.js';
import type { HistoryEntry } from '../core/queue/history.js';
import type { QueueRow } from '../core/queue/queue.js';
import { cardSource } from '../core/sources/source.js';
import type { SyncEngine } from '../core/sync/engine.js';
import type { ProgressSnapshot } from '../core/sync/progress.js';
import type { CardVerdicts } from './card-ledger.js';
import type {
  AccountView,
  AppStateView,
  HistoryEntryView,
  ProgressView,
  QueueItemView,
  WaylinePageView,
  WaylineQueryView,
  WaylineView,
} from '../shared/ipc.js';

export const NO_PROGRESS: ProgressView = {
  filesTotal: 0,
  filesDone: 0,
  filesFailed: 0,
  bytesTotal: 0,
  bytesDone: 0,
  bytesSent: 0,
  rate: 0,
  etaSeconds: null,
  currentSource: null,
  lanes: [],
};

export function progressView(p: ProgressSnapshot): ProgressView {
  return {
    filesTotal: p.filesTotal,
    filesDone: p.filesDone,
    filesFailed: p.filesFailed,
    bytesTotal: p.bytesTotal,
    bytesDone: p.bytesDone,
    bytesSent: p.bytesSent,
    rate: p.rate,
    etaSeconds: p.etaSeconds,
    currentSource: p.currentSource,
    lanes: p.lanes ?? [],
  };
}

/** The queue stores kind + technical message; the window shows the plain sentence for that kind. */
export function errorView(kind: string | null, message: string | null): QueueItemView['error'] {
  if (kind === null) return null;
  // The words the CLI's status and the card's verdict say for the same stored error (its socket code, its HTTP status).
  return { kind, plain: storedPlain(kind, message) };
}

export function queueItemView(row: QueueRow, sourceLabel: string): QueueItemView {
  const name = row.relPath.split(/[\\/]/).pop() ?? row.relPath;
  return {
    id: row.id,
    name,
    relPath: row.relPath,
    source: sourceLabel,
    size: row.size,
    state: row.state,
    outcome: row.state === 'done' ? row.outcome : null,
    // bytes_sent counts every attempt, so it can pass the size after a restarted upload.
    progress: row.state === 'uploading' && row.size > 0 ? Math.min(1, row.bytesSent / row.size) : null,
    error: errorView(row.errorKind, row.errorMessage),
  };
}

/**
 * The history as the window lists it. Its counts come from the files' events
 * of each sync, but "failed" is what the crew acts on, so it is the queue's
 * word now: the files of that card's flight folder that need the user
 * (failed in an earlier sync and still failed, or failed again after a
 * retry, count once; a retried file that got through no longer counts). It
 * goes on the newest sync of each card and folder; older ones say null.
 */
export function historyViews(
  entries: readonly HistoryEntry[],
  failedRows: readonly QueueRow[],
): HistoryEntryView[] {
  const key = (sourceId: string, folder: string) => `${sourceId}\u0000${folder}`;
  const failedNow = new Map<string, number>();
  for (const r of failedRows) {
    const k = key(r.sourceId, flightFolderOf(r.relPath).path);
    failedNow.set(k, (failedNow.get(k) ?? 0) + 1);
  }
  const seen = new Set<string>();
  return entries.map((e) => {
    const k = key(e.sourceId, e.folder);
    const newest = !seen.has(k);
    seen.add(k);
    return historyView(e, newest ? (failedNow.get(k) ?? 0) : null);
  });
}

function historyView(e: HistoryEntry, failed: number | null): HistoryEntryView {
  return {
    id: e.id,
    sourceId: e.sourceId,
    label: e.label,
    folder: e.folder,
    startedAt: e.startedAt,
    finishedAt: e.finishedAt,
    files: e.files,
    bytes: e.bytes,
    fastUploaded: e.fastUploaded,
    failed,
    wayline: e.wayline
      ? { waylineId: e.wayline.waylineId, waylineName: e.wayline.waylineName, how: e.wayline.how }
      : null,
  };
}

/** The window's camelCase query -> the server's wire names (repeated arrays are the client's job). */
export function waylineQuery(q: WaylineQueryView): WaylineQuery {
  return {
    order_by: q.orderBy,
    page: q.page,
    page_size: q.pageSize,
    ...(q.favorited === undefined ? {} : { favorited: q.favorited }),
    ...(q.templateTypes?.length ? { template_type: q.templateTypes } : {}),
    ...(q.actionType === undefined ? {} : { action_type: q.actionType }),
    ...(q.droneModelKeys?.length ? { drone_model_keys: q.droneModelKeys } : {}),
    ...(q.payloadModelKeys?.length ? { payload_model_key: q.payloadModelKeys } : {}),
  };
}

const num = (v: unknown): number | null => (typeof v === 'number' && Number.isFinite(v) ? v : null);

/** Servers add and omit fields; only what the window shows is copied, with safe defaults. */
export function waylineView(w: Wayline): WaylineView | null {
  if (typeof w.id !== 'string' || w.id === '') return null;
  const lat = num(w.start_wayline_point?.start_latitude);
  const lng = num(w.start_wayline_point?.start_lontitude);
  return {
    id: w.id,
    name: typeof w.name === 'string' ? w.name : w.id,
    droneModelKey: typeof w.drone_model_key === 'string' ? w.drone_model_key : null,
    payloadModelKeys: Array.isArray(w.payload_model_keys)
      ? w.payload_model_keys.filter((k) => typeof k === 'string')
      : [],
    templateTypes: Array.isArray(w.template_types)
      ? w.template_types.filter((t) => typeof t === 'number')
      : [],
    favorited: w.favorited === true,
    actionType: num(w.action_type),
    updateTime: num(w.update_time),
    userName: typeof w.user_name === 'string' ? w.user_name : null,
    start: lat !== null && lng !== null ? { lat, lng } : null,
  };
}

export function waylinePageView(
  list: readonly Wayline[],
  pagination: { page: number; page_size: number; total: number },
): WaylinePageView {
  return {
    list: list.map(waylineView).filter((w): w is WaylineView => w !== null),
    page: pagination.page,
    pageSize: pagination.page_size,
    total: pagination.total,
  };
}

export interface AppStateInput {
  engine: Pick<SyncEngine, 'state' | 'error' | 'progress'> | null;
  signedIn: boolean;
  serverLabel: string;
  account: AccountView;
  /** Why there is no engine, when there is none (not signed in: "Sign in to upload: ..."). */
  startError: string | null;
  failedCount: number;
  waitingForCard?: number;
  hasFiles?: boolean;
  destinations?: readonly string[];
  progress: ProgressView | null;
  /** Inserted cards; `files`: counted and waiting for a sign-in (no server chosen yet). */
  cards: ReadonlyArray<{ id: string; label: string; root: string; files?: number }>;
  /** Each card's verdicts, by source id. */
  verdicts?: (sourceId: string) => CardVerdicts;
}

const NO_VERDICTS: CardVerdicts = { headline: null, local: null, workspace: null, stopped: [], created: [] };

/**
 * The window's state. The engine's run state is shown as it is (a
 * connection without a sign-in starts the engine in 'auth-required'); only
 * without an engine at all (no sign-in yet, or it could not start) does this
 * say why. Then the one sentence that needs the user, most urgent first.
 */
export function appStateView(i: AppStateInput): AppStateView {
  const e = i.engine;
  const engine = e?.state ?? (i.signedIn ? 'offline' : 'auth-required');
  let attention: string | null = null;
  const halt =
    e?.state === 'halted' && e.error instanceof QueueWriteError
      ? { reason: e.error.reason, message: e.error.message }
      : null;
  if (!e) attention = i.startError ?? 'The sync engine is not running.';
  else if (halt) attention = halt.message;
  else if (engine === 'auth-required') {
    attention = e.error ? plainMessage(e.error) : 'Sign in again to continue uploading.';
  } else if (i.failedCount > 0) {
    const files = i.failedCount === 1 ? '1 file' : `${i.failedCount} files`;
    attention = `${files} could not be uploaded. Open the problems list to see why, then choose Retry.`;
  }
  return {
    engine,
    attention,
    halt,
    failedCount: i.failedCount,
    waitingForCard: i.waitingForCard ?? 0,
    progress: i.progress ?? (e ? progressView(e.progress.snapshot()) : NO_PROGRESS),
    serverLabel: i.serverLabel,
    signedIn: i.signedIn,
    account: i.account,
    hasFiles: i.hasFiles ?? false,
    destinations: [...(i.destinations ?? [])],
    cards: i.cards.map((c) => ({
      id: c.id,
      label: c.label,
      root: c.root,
      waitingForSignIn: c.files ?? null,
      ...(i.verdicts?.(cardSource(c).sourceId) ?? NO_VERDICTS),
    })),
  };
}
