/**
 * The one table of how a file's state moves. Pure: given a row and what just
 * happened to it (a step's outcome, a failure's disposition, the crew's
 * retry, the card coming back), the next row; an outcome that cannot happen
 * in the row's state is refused (IllegalTransition). The store (queue.ts)
 * is the only writer: it applies these in one transaction that checks the
 * from-state in SQL, so a row that moved on meanwhile (its card pulled) is
 * never written over.
 *
 * The "part log" of an upload in progress (object key, multipart upload id,
 * acknowledged parts) is written mid-upload, through the same table.
 */
import type { DmsError } from '../errors.js';
import type { MrkParseResult } from '../media/mrk.js';
import type { CopyOutcome } from './copies.js';
import type { FileInfo } from './file-info.js';
import type {
  CheckedRow,
  DoneRow,
  HashedRow,
  Identity,
  ParkedRow,
  QueueRow,
  UploadedRow,
  Verification,
  WorkingRow,
} from './rows.js';
import { isWorking, type FileState } from './states.js';

/** What a step (or the crew, or a failure's disposition) did to a file. */
export type Change =
  // ---- steps ----
  /** discovered -> hashed: content fingerprint and what the requests say about the file. */
  | {
      type: 'hashed';
      fingerprint: string;
      tinyFingerprint: string;
      info: FileInfo;
      /** An exposure log (MRK), parsed: kept for the flight's report, also once the card is gone. */
      mrk?: MrkParseResult;
      /** Its local copies, written by the same read and read back: verified, or failed with the reason. */
      copies?: CopyOutcome[];
    }
  /** hashed -> fast-upload-checked without asking (RTK files: fast-upload is about media). */
  | { type: 'check-skipped' }
  /** hashed -> fast-upload-checked: the server does not know the content. */
  | { type: 'not-known' }
  /**
   * The server holds the content (fast-upload "known", also asked for a row
   * that waited for a twin): done. Acknowledged by a callback when ours may
   * have been recorded with its answer lost, else by fast-upload.
   */
  | { type: 'known'; verified: Verification }
  /** The part log: the object is being written under this key. */
  | { type: 'upload-begun'; objectKey: string }
  | { type: 'multipart-started'; objectKey: string; uploadId: string; partSize: number }
  /** The stored multipart upload turned out unusable (the bucket forgot it): start a new one. */
  | { type: 'multipart-reset' }
  /** The key is under another prefix than the server's now: forget it, upload afresh. */
  | { type: 'upload-reset' }
  /** The object is complete in the bucket (`bytesSent` of it by this run), checked as the store accepted it. */
  | { type: 'uploaded'; objectKey: string; bytesSent: number; verified: Verification | null }
  /** Written just before a callback goes out: lost answer or crash, the next try asks first. */
  | { type: 'callback-sent' }
  /**
   * The callback was acknowledged (or, asked after a lost answer, the server
   * holds the file); `serverKey` when the server says it recorded another
   * object key than the one uploaded.
   */
  | { type: 'recorded'; serverKey?: string }
  /** RTK/PPK files (no callback): the object was checked in the bucket. */
  | { type: 'stored'; verified: Verification }
  /** A done file looked at again in the bucket. */
  | { type: 'verified'; verified: Verification }
  // ---- failures (see disposition.ts) ----
  /** Try again later, counted as an attempt; a callback refused before it was acted on clears its flag. */
  | { type: 'retry'; error: DmsError; at: number; callbackSettled: boolean }
  /** Put aside until `at` without counting a failure (a twin on its way, a callback settling). */
  | { type: 'defer'; at: number; message: string | null }
  /** Needs the crew; kept with its reason until retried. */
  | { type: 'failed'; error: DmsError; callbackSettled: boolean }
  /** The card (or folder) went away: wait for it, keeping what was reached. */
  | { type: 'parked'; message: string }
  // ---- the crew and the sources ----
  /** The card is back: continue where the file was. */
  | { type: 'resumed' }
  /** The crew's retry: back in line where it failed. */
  | { type: 'retried' }
  /** The twin it waited for finished: due now. */
  | { type: 'woken' }
  /**
   * A new one-shot run (`sync`) starts: the file gets its full count of tries
   * again, due now. A callback whose answer was lost keeps its settle wait
   * (asking before posting again must not come early).
   */
  | { type: 'fresh-tries' };

export type ChangeType = Change['type'];

/** Every change, for the table test. */
export const CHANGE_TYPES: readonly ChangeType[] = [
  'hashed',
  'check-skipped',
  'not-known',
  'known',
  'upload-begun',
  'multipart-started',
  'multipart-reset',
  'upload-reset',
  'uploaded',
  'callback-sent',
  'recorded',
  'stored',
  'verified',
  'retry',
  'defer',
  'failed',
  'parked',
  'resumed',
  'retried',
  'woken',
  'fresh-tries',
];

/** An outcome that cannot happen in the row's state: a bug, or a row that moved on meanwhile. */
export class IllegalTransition extends Error {
  constructor(
    readonly from: FileState,
    readonly change: ChangeType,
    readonly id: number,
  ) {
    super(`File ${id}: '${change}' cannot happen in state '${from}'.`);
    this.name = 'IllegalTransition';
  }
}

/** The states each change may start from. */
export const ALLOWED_FROM: Readonly<Record<ChangeType, readonly FileState[]>> = {
  hashed: ['discovered'],
  'check-skipped': ['hashed'],
  'not-known': ['hashed'],
  known: ['hashed', 'fast-upload-checked', 'uploading', 'uploaded'],
  'upload-begun': ['fast-upload-checked', 'uploading'],
  'multipart-started': ['fast-upload-checked', 'uploading'],
  'multipart-reset': ['uploading'],
  'upload-reset': ['fast-upload-checked', 'uploading'],
  uploaded: ['fast-upload-checked', 'uploading'],
  'callback-sent': ['uploaded'],
  recorded: ['uploaded'],
  stored: ['uploaded'],
  verified: ['done'],
  retry: ['discovered', 'hashed', 'fast-upload-checked', 'uploading', 'uploaded'],
  defer: ['discovered', 'hashed', 'fast-upload-checked', 'uploading', 'uploaded'],
  failed: ['discovered', 'hashed', 'fast-upload-checked', 'uploading', 'uploaded', 'failed'],
  parked: ['discovered', 'hashed', 'fast-upload-checked', 'uploading', 'uploaded'],
  resumed: ['waiting-for-source'],
  retried: ['failed'],
  woken: ['discovered', 'hashed', 'fast-upload-checked', 'uploading', 'uploaded'],
  'fresh-tries': ['discovered', 'hashed', 'fast-upload-checked', 'uploading', 'uploaded'],
};

/** Changes after which the part log's parts are of no use any more. */
export const CLEARS_PARTS: ReadonlySet<ChangeType> = new Set<ChangeType>([
  'known',
  'multipart-started',
  'multipart-reset',
  'upload-reset',
  'uploaded',
  'recorded',
  'stored',
]);

/**
 * Changes whose record may wait for the store's next commit (it commits
 * them with the next change that may not wait, or within COMMIT_WAIT_MS):
 * a crash that loses one leaves the row where it was, and the engine does
 * that step again, which sends no byte and posts no callback twice: the
 * file is read and hashed again ('hashed'), the server asked again
 * ('check-skipped', 'not-known', 'known'), the callback's outcome asked
 * before any post ('recorded': 'callback-sent' was committed before the
 * callback went), the object looked at again ('stored', and a done file's
 * look in the bucket, 'verified': a card's 10,000 looks share a few commits,
 * not one each, and its verdict commits them before it reads). Every other change
 * is committed before the engine acts on it: 'upload-begun' and the
 * multipart changes before bytes go, 'uploaded' before the callback (a lost
 * one would send the file again; but see mayWait: a single PUT's), 'callback-sent'
 * before the callback is posted, a failure or a retry before its wait.
 */
export const MAY_WAIT: ReadonlySet<ChangeType> = new Set<ChangeType>([
  'hashed',
  'check-skipped',
  'not-known',
  'known',
  'recorded',
  'stored',
  'verified',
]);

/**
 * Whether `change` to a row in `from` clears its part log. Parts are
 * recorded only while a multipart upload is under way ('uploading'), and
 * every way out of it clears them: from any other state there are none, and
 * the DELETE (a savepoint and a statement, twice per small file) is skipped.
 */
export function clearsParts(from: FileState, change: ChangeType): boolean {
  return CLEARS_PARTS.has(change) && from === 'uploading';
}

/**
 * Whether the record of `change` to a row in `from` may wait for the next
 * commit: the changes of MAY_WAIT, and 'uploaded' straight from
 * 'fast-upload-checked' (one PUT of bytes kept from the hash step, with no
 * 'upload-begun' recorded): a crash that loses it sends the file again, as a
 * crash during that PUT does, and 'callback-sent' commits it before the
 * callback is posted (the timer, within COMMIT_WAIT_MS, if the callback
 * waits). From 'uploading' (a multipart upload, or a PUT the store knew of)
 * it is committed at once: a lost one would send a big file again.
 */
export function mayWait(from: FileState, change: ChangeType): boolean {
  return MAY_WAIT.has(change) || (change === 'uploaded' && from === 'fast-upload-checked');
}

/** Whether `change` may happen to a row in `state`. */
export function allowed(state: FileState, change: ChangeType): boolean {
  return ALLOWED_FROM[change].includes(state);
}

/** The identity a row in these states must have (the parser guarantees it). */
function identity(row: HashedRow | CheckedRow | UploadedRow): Identity {
  return { fingerprint: row.fingerprint, tinyFingerprint: row.tinyFingerprint, info: row.info };
}

const NO_UPLOAD = { objectKey: null, multipart: null, callbackUnknown: false } as const;

/**
 * The next row. `now` dates a done row. Refuses (IllegalTransition) what the
 * table does not allow; the store also checks the from-state in SQL.
 */
export function transition(row: QueueRow, change: Change, now: number): QueueRow {
  if (!allowed(row.state, change.type)) throw new IllegalTransition(row.state, change.type, row.id);
  switch (change.type) {
    case 'hashed': {
      const r = row as Extract<QueueRow, { state: 'discovered' }>;
      return {
        ...r,
        state: 'hashed',
        fingerprint: change.fingerprint,
        tinyFingerprint: change.tinyFingerprint,
        info: change.info,
      };
    }
    case 'check-skipped':
    case 'not-known': {
      const r = row as HashedRow;
      return { ...r, ...NO_UPLOAD, state: 'fast-upload-checked' };
    }
    case 'known': {
      const r = row as HashedRow | CheckedRow | UploadedRow;
      const callbackMayBeRecorded = 'callbackUnknown' in r && r.callbackUnknown;
      return done(r, callbackMayBeRecorded ? 'uploaded' : 'fast-uploaded', now, {
        objectKey: 'objectKey' in r ? r.objectKey : null,
        verified: change.verified,
      });
    }
    case 'upload-begun': {
      const r = row as CheckedRow;
      // A new key never keeps the multipart upload of another key.
      const multipart = r.objectKey === change.objectKey ? r.multipart : null;
      return { ...r, state: 'uploading', objectKey: change.objectKey, multipart };
    }
    case 'multipart-started': {
      const r = row as CheckedRow;
      return {
        ...r,
        state: 'uploading',
        objectKey: change.objectKey,
        multipart: { uploadId: change.uploadId, partSize: change.partSize },
      };
    }
    case 'multipart-reset': {
      const r = row as CheckedRow;
      return { ...r, multipart: null };
    }
    case 'upload-reset': {
      const r = row as CheckedRow;
      return { ...r, ...NO_UPLOAD, state: 'fast-upload-checked' };
    }
    case 'uploaded': {
      const r = row as CheckedRow;
      const next: UploadedRow = {
        ...r,
        state: 'uploaded',
        objectKey: change.objectKey,
        multipart: null,
        bytesSent: r.bytesSent + change.bytesSent,
        verified: change.verified,
      };
      return next;
    }
    case 'callback-sent': {
      const r = row as UploadedRow;
      return { ...r, callbackUnknown: true };
    }
    case 'recorded': {
      const r = row as UploadedRow;
      const next = done(r, 'uploaded', now, { objectKey: r.objectKey, verified: r.verified });
      return change.serverKey !== undefined ? { ...next, serverKey: change.serverKey } : next;
    }
    case 'stored': {
      const r = row as UploadedRow;
      return done(r, 'stored', now, { objectKey: r.objectKey, verified: change.verified });
    }
    case 'verified': {
      const r = row as DoneRow;
      return { ...r, verified: change.verified };
    }
    case 'retry': {
      const r = row as WorkingRow;
      return {
        ...settled(r, change.callbackSettled),
        attempts: r.attempts + 1,
        nextAttemptAt: change.at,
        errorKind: change.error.kind,
        errorMessage: change.error.message,
      };
    }
    case 'defer': {
      const r = row as WorkingRow;
      return { ...r, nextAttemptAt: change.at, errorKind: null, errorMessage: change.message };
    }
    case 'failed': {
      const r = row as WorkingRow | ParkedRow;
      const parked: ParkedRow = {
        ...withUpload(settled(r, change.callbackSettled)),
        state: 'failed',
        resumeState: r.state === 'failed' ? r.resumeState : r.state,
        attempts: r.attempts + 1,
        errorKind: change.error.kind,
        errorMessage: change.error.message,
      };
      return parked;
    }
    case 'parked': {
      const r = row as WorkingRow;
      const parked: ParkedRow = {
        ...withUpload(r),
        state: 'waiting-for-source',
        resumeState: r.state,
        errorKind: 'source-missing',
        errorMessage: change.message,
      };
      return parked;
    }
    case 'resumed':
    case 'retried': {
      const r = row as ParkedRow;
      return {
        ...resumeAs(r),
        resumeState: null,
        nextAttemptAt: 0,
        errorKind: null,
        errorMessage: null,
        ...(change.type === 'retried' ? { attempts: 0 } : {}),
      };
    }
    case 'fresh-tries': {
      const r = row as WorkingRow;
      const settling = 'callbackUnknown' in r && r.callbackUnknown;
      return { ...r, attempts: 0, nextAttemptAt: settling ? r.nextAttemptAt : 0 };
    }
    case 'woken': {
      const r = row as WorkingRow;
      return { ...r, nextAttemptAt: 0, errorMessage: null };
    }
  }
}

/** A done row; the part log and any failure are cleared. */
function done(
  r: HashedRow | CheckedRow | UploadedRow,
  outcome: DoneRow['outcome'],
  now: number,
  o: { objectKey: string | null; verified: Verification | null },
): DoneRow {
  const { multipart: _multipart, callbackUnknown: _callback, ...rest } = r as UploadedRow;
  return {
    ...rest,
    ...identity(r),
    state: 'done',
    outcome,
    doneAt: now,
    objectKey: o.objectKey,
    serverKey: null,
    verified: o.verified,
    resumeState: null,
    errorKind: null,
    errorMessage: null,
  };
}

/** A callback refused before it was acted on: no need to ask before the next one. */
function settled<R extends WorkingRow | ParkedRow>(r: R, callbackSettled: boolean): R {
  return callbackSettled && 'callbackUnknown' in r && r.callbackUnknown
    ? { ...r, callbackUnknown: false }
    : r;
}

/** A parked row keeps whatever it reached, with the part-log fields present. */
function withUpload(r: WorkingRow | ParkedRow): Omit<ParkedRow, 'state'> {
  if ('objectKey' in r) return r;
  return { ...r, ...NO_UPLOAD };
}

/** A parked or failed row put back in the state it had reached (discovered if it had none). */
function resumeAs(r: ParkedRow): QueueRow {
  const state = r.resumeState !== null && isWorking(r.resumeState) ? r.resumeState : 'discovered';
  if (state === 'discovered' || r.fingerprint === undefined) {
    return { ...stripIdentity(r), state: 'discovered' };
  }
  return { ...r, state } as QueueRow;
}

function stripIdentity(r: ParkedRow): ParkedRow {
  const { fingerprint: _f, tinyFingerprint: _t, info: _i, ...rest } = r;
  return rest;
}
