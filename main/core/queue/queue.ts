import type Database from 'better-sqlite3';
import type { Db } from './db.js';
import { openDatabase } from './db.js';
import type { FinishedPart } from '../storage/types.js';
import type { DmsError } from '../errors.js';

/** Where a file stands. Only `done` means the server acknowledged it. */
export const FILE_STATES = [
  'discovered', // seen on disk, not hashed yet
  'hashed', // fingerprint and metadata known
  'fast-upload-checked', // the server did not know the fingerprint: upload needed
  'uploading', // object being written (multipart parts in `parts`)
  'uploaded', // object complete in the bucket, callback not acknowledged yet
  'done', // server acknowledged (callback or fast-upload)
  'failed', // needs the user (rejected by the server, unsupported file...)
  'waiting-for-source', // the card or folder went away; continues when it is back
] as const;
export type FileState = (typeof FILE_STATES)[number];

/** States in which the engine still has work to do. */
const ACTIVE: readonly FileState[] = ['discovered', 'hashed', 'fast-upload-checked', 'uploading', 'uploaded'];

export interface ObservedFile {
  sourceId: string;
  relPath: string;
  absPath: string;
  size: number;
  mtimeMs: number;
}

export interface QueueRow {
  id: number;
  sourceId: string;
  relPath: string;
  absPath: string;
  size: number;
  mtimeMs: number;
  state: FileState;
  resumeState: FileState | null;
  fingerprint: string | null;
  tinyFingerprint: string | null;
  info: unknown;
  objectKey: string | null;
  uploadId: string | null;
  partSize: number | null;
  outcome: 'uploaded' | 'fast-uploaded' | null;
  callbackUnknown: boolean;
  bytesSent: number;
  attempts: number;
  nextAttemptAt: number;
  errorKind: string | null;
  errorMessage: string | null;
  createdAt: number;
  updatedAt: number;
  doneAt: number | null;
}

interface RawRow {
  id: number;
  source_id: string;
  rel_path: string;
  abs_path: string;
  size: number;
  mtime_ms: number;
  state: FileState;
  resume_state: FileState | null;
  fingerprint: string | null;
  tiny_fingerprint: string | null;
  info_json: string | null;
  object_key: string | null;
  upload_id: string | null;
  part_size: number | null;
  outcome: 'uploaded' | 'fast-uploaded' | null;
  callback_unknown: number;
  bytes_sent: number;
  attempts: number;
  next_attempt_at: number;
  error_kind: string | null;
  error_message: string | null;
  created_at: number;
  updated_at: number;
  done_at: number | null;
}

function fromRaw(r: RawRow): QueueRow {
  return {
    id: r.id,
    sourceId: r.source_id,
    relPath: r.rel_path,
    absPath: r.abs_path,
    size: r.size,
    mtimeMs: r.mtime_ms,
    state: r.state,
    resumeState: r.resume_state,
    fingerprint: r.fingerprint,
    tinyFingerprint: r.tiny_fingerprint,
    info: r.info_json === null ? null : (JSON.parse(r.info_json) as unknown),
    objectKey: r.object_key,
    uploadId: r.upload_id,
    partSize: r.part_size,
    outcome: r.outcome,
    callbackUnknown: r.callback_unknown === 1,
    bytesSent: r.bytes_sent,
    attempts: r.attempts,
    nextAttemptAt: r.next_attempt_at,
    errorKind: r.error_kind,
    errorMessage: r.error_message,
    createdAt: r.created_at,
    updatedAt: r.updated_at,
    doneAt: r.done_at,
  };
}

export interface ObserveResult {
  /** Rows with work left (new, changed, or unfinished from an earlier run). */
  pending: QueueRow[];
  /** Files recognised as already done by path + size + mtime, without hashing. */
  alreadyDone: number;
  /** Files that need the user (failed earlier); left alone until `retry`. */
  failed: number;
}

export interface BackoffPolicy {
  baseMs: number;
  capMs: number;
}

export const DEFAULT_BACKOFF: BackoffPolicy = { baseMs: 2_000, capMs: 5 * 60_000 };

/** Capped exponential backoff with full jitter (half fixed, half random). */
export function backoffDelay(attempts: number, policy: BackoffPolicy = DEFAULT_BACKOFF, random = Math.random): number {
  const exp = Math.min(policy.capMs, policy.baseMs * 2 ** Math.max(0, attempts - 1));
  return Math.round(exp / 2 + (random() * exp) / 2);
}

export type StateCounts = Record<FileState, { files: number; bytes: number }>;

/**
 * The persistent work queue. Every transition is one small synchronous
 * statement (better-sqlite3), committed before the engine takes the next step,
 * so a crash at any point leaves a state the next run can continue from.
 */
export class Queue {
  readonly db: Db;
  private readonly stmts;

  constructor(file: string, private readonly now: () => number = Date.now) {
    this.db = openDatabase(file);
    const db = this.db;
    this.stmts = {
      find: db.prepare<[string, string, number, number], RawRow>(
        'SELECT * FROM files WHERE source_id = ? AND rel_path = ? AND size = ? AND mtime_ms = ?',
      ),
      insert: db.prepare(
        `INSERT INTO files (source_id, rel_path, size, mtime_ms, abs_path, state, created_at, updated_at)
         VALUES (@sourceId, @relPath, @size, @mtimeMs, @absPath, 'discovered', @now, @now)`,
      ),
      // A file whose size or mtime changed is a new version: unfinished rows of
      // the old version are dropped (never recorded with a stale fingerprint);
      // finished ones stay as history.
      dropStale: db.prepare(
        `DELETE FROM files WHERE source_id = ? AND rel_path = ? AND (size != ? OR mtime_ms != ?) AND state != 'done'`,
      ),
      setAbsPath: db.prepare('UPDATE files SET abs_path = ? WHERE id = ? AND abs_path != ?'),
      get: db.prepare<[number], RawRow>('SELECT * FROM files WHERE id = ?'),
      // The due rows of each active state, oldest first, straight from the
      // files_state index (state, next_attempt_at, id): never-failed rows
      // (next_attempt_at 0) come in id order with no sort, and due retries are
      // few. The engine asks on every file finished, so this must not cost
      // O(rows pending), as one sort of all active rows by id did.
      readyIds: db.prepare<{ now: number; limit: number }, { id: number }>(
        [
          ...ACTIVE.map(
            (s) => `SELECT id FROM (SELECT id FROM files WHERE state = '${s}' AND next_attempt_at = 0 ORDER BY id LIMIT @limit)`,
          ),
          `SELECT id FROM (SELECT id FROM files WHERE state IN (${ACTIVE.map((s) => `'${s}'`).join(',')})
           AND next_attempt_at > 0 AND next_attempt_at <= @now ORDER BY id LIMIT @limit)`,
        ].join(' UNION ALL '),
      ),
      nextWake: db.prepare<[], { t: number | null }>(
        `SELECT MIN(next_attempt_at) AS t FROM files WHERE state IN ('discovered','hashed','fast-upload-checked','uploading','uploaded')`,
      ),
      parts: db.prepare<[number], { part_number: number; etag: string; size: number }>(
        'SELECT part_number, etag, size FROM parts WHERE file_id = ? ORDER BY part_number',
      ),
      addPart: db.prepare('INSERT OR REPLACE INTO parts (file_id, part_number, etag, size) VALUES (?, ?, ?, ?)'),
      clearParts: db.prepare('DELETE FROM parts WHERE file_id = ?'),
      addBytes: db.prepare('UPDATE files SET bytes_sent = bytes_sent + ? WHERE id = ?'),
      counts: db.prepare<[], { state: FileState; files: number; bytes: number }>(
        'SELECT state, COUNT(*) AS files, COALESCE(SUM(size), 0) AS bytes FROM files GROUP BY state',
      ),
    };
  }

  close(): void {
    this.db.close();
  }

  /**
   * Records what a scan found, in one transaction (10,000 files take
   * milliseconds), and returns what still needs work.
   */
  observe(files: readonly ObservedFile[]): ObserveResult {
    const now = this.now();
    const pending: QueueRow[] = [];
    let alreadyDone = 0;
    let failed = 0;
    this.db.transaction(() => {
      for (const f of files) {
        let row = this.stmts.find.get(f.sourceId, f.relPath, f.size, f.mtimeMs);
        if (!row) {
          this.stmts.dropStale.run(f.sourceId, f.relPath, f.size, f.mtimeMs);
          const info = this.stmts.insert.run({ ...f, now });
          row = this.mustGet(Number(info.lastInsertRowid));
        } else if (row.abs_path !== f.absPath) {
          this.stmts.setAbsPath.run(f.absPath, row.id, f.absPath);
          row.abs_path = f.absPath;
        }
        if (row.state === 'done') alreadyDone++;
        else if (row.state === 'failed') failed++;
        else {
          if (row.state === 'waiting-for-source') {
            this.patch(row.id, { state: row.resume_state ?? 'discovered', resume_state: null, next_attempt_at: 0, error_kind: null, error_message: null });
            row = this.mustGet(row.id);
          }
          pending.push(fromRaw(row));
        }
      }
    })();
    return { pending, alreadyDone, failed };
  }

  private mustGet(id: number): RawRow {
    const r = this.stmts.get.get(id);
    if (!r) throw new Error(`queue row ${id} vanished inside its own transaction`);
    return r;
  }

  get(id: number): QueueRow | undefined {
    const r = this.stmts.get.get(id);
    return r ? fromRaw(r) : undefined;
  }

  /**
   * Rows whose next attempt is due, oldest first. Ids in `skip` (rows the
   * caller already has in hand) count towards `limit` but are not read.
   */
  ready(limit: number, skip?: { has(id: number): boolean }): QueueRow[] {
    // The same rows as "state IN (active) AND next_attempt_at <= now ORDER BY
    // id LIMIT limit", gathered per state from the index and merged here.
    const ids = this.stmts.readyIds.all({ now: this.now(), limit }).map((r) => r.id);
    ids.sort((a, b) => a - b);
    if (ids.length > limit) ids.length = limit;
    const out: QueueRow[] = [];
    for (const id of ids) {
      if (skip?.has(id)) continue;
      const r = this.stmts.get.get(id);
      if (r) out.push(fromRaw(r));
    }
    return out;
  }

  /**
   * Ids of due rows, oldest first (what ready() reads), for a caller that
   * takes them a few at a time and checks each with dueRow() when it does.
   */
  readyIds(limit: number): number[] {
    const ids = this.stmts.readyIds.all({ now: this.now(), limit }).map((r) => r.id);
    ids.sort((a, b) => a - b);
    if (ids.length > limit) ids.length = limit;
    return ids;
  }

  /** The row if it is still active and due now (it may have moved on since its id was listed). */
  dueRow(id: number): QueueRow | undefined {
    const r = this.stmts.get.get(id);
    if (!r || !ACTIVE.includes(r.state) || r.next_attempt_at > this.now()) return undefined;
    return fromRaw(r);
  }

  /** Epoch ms of the earliest scheduled retry, or null when nothing is pending. */
  nextWakeAt(): number | null {
    return this.stmts.nextWake.get()?.t ?? null;
  }

  parts(id: number): FinishedPart[] {
    return this.stmts.parts.all(id).map((p) => ({ partNumber: p.part_number, etag: p.etag, size: p.size }));
  }

  setHashed(id: number, fingerprint: string, tinyFingerprint: string, info: unknown): void {
    this.patch(id, { state: 'hashed', fingerprint, tiny_fingerprint: tinyFingerprint, info_json: JSON.stringify(info) });
  }

  setFastUploadChecked(id: number): void {
    this.patch(id, { state: 'fast-upload-checked' });
  }

  setMultipartStarted(id: number, objectKey: string, uploadId: string, partSize: number): void {
    this.db.transaction(() => {
      this.stmts.clearParts.run(id);
      this.patch(id, { state: 'uploading', object_key: objectKey, upload_id: uploadId, part_size: partSize });
    })();
  }

  setUploading(id: number, objectKey: string): void {
    this.patch(id, { state: 'uploading', object_key: objectKey });
  }

  addPart(id: number, part: FinishedPart): void {
    this.stmts.addPart.run(id, part.partNumber, part.etag, part.size);
  }

  resetMultipart(id: number): void {
    this.db.transaction(() => {
      this.stmts.clearParts.run(id);
      this.patch(id, { upload_id: null, part_size: null });
    })();
  }

  addBytesSent(id: number, bytes: number): void {
    this.stmts.addBytes.run(bytes, id);
  }

  /** The object is complete in the bucket (`bytesSent` of it sent by this run); parts are no longer needed. */
  setUploaded(id: number, objectKey: string, bytesSent = 0): void {
    this.db.transaction(() => {
      this.stmts.clearParts.run(id);
      if (bytesSent > 0) this.stmts.addBytes.run(bytesSent, id);
      this.patch(id, { state: 'uploaded', object_key: objectKey, upload_id: null, outcome: 'uploaded' });
    })();
  }

  /** Written just before a callback goes out: if we crash or lose the answer, we know to check first. */
  setCallbackUnknown(id: number): void {
    this.patch(id, { callback_unknown: 1 });
  }

  clearCallbackUnknown(id: number): void {
    this.patch(id, { callback_unknown: 0 });
  }

  setDone(id: number, outcome: 'uploaded' | 'fast-uploaded'): void {
    this.db.transaction(() => {
      this.stmts.clearParts.run(id);
      this.patch(id, {
        state: 'done',
        outcome,
        callback_unknown: 0,
        done_at: this.now(),
        error_kind: null,
        error_message: null,
        resume_state: null,
        upload_id: null,
      });
    })();
  }

  /** A transient failure: try again later, with backoff. */
  scheduleRetry(id: number, err: DmsError, policy: BackoffPolicy = DEFAULT_BACKOFF): number {
    const row = this.stmts.get.get(id);
    const attempts = (row?.attempts ?? 0) + 1;
    const delay = Math.max(backoffDelay(attempts, policy), err.retryAfterMs ?? 0);
    this.patch(id, { attempts, next_attempt_at: this.now() + delay, error_kind: err.kind, error_message: err.message });
    return delay;
  }

  /** A failure that needs the user: kept with its reason until `retry`. */
  setFailed(id: number, err: DmsError): void {
    const row = this.stmts.get.get(id);
    if (!row || row.state === 'done') return;
    this.patch(id, {
      state: 'failed',
      resume_state: row.state === 'failed' ? row.resume_state : row.state,
      attempts: row.attempts + 1,
      error_kind: err.kind,
      error_message: err.message,
    });
  }

  /** The file (or card) went away: park it, keeping parts, until the source is back. */
  setWaitingForSource(id: number, message: string): void {
    const row = this.stmts.get.get(id);
    if (!row || row.state === 'done' || row.state === 'waiting-for-source') return;
    this.patch(id, { state: 'waiting-for-source', resume_state: row.state, error_kind: 'source-missing', error_message: message });
  }

  /** Parks every unfinished file of a source; returns how many. */
  parkSource(sourceId: string, message: string): number {
    return this.db
      .prepare(
        `UPDATE files SET resume_state = state, state = 'waiting-for-source', error_kind = 'source-missing',
         error_message = ?, updated_at = ? WHERE source_id = ? AND state IN ('discovered','hashed','fast-upload-checked','uploading','uploaded')`,
      )
      .run(message, this.now(), sourceId).changes;
  }

  /** Puts failed files (all, or the given ids / absolute paths) back in line. */
  retry(selector: { all: true } | { ids: number[] } | { absPaths: string[] }): number {
    let where: string;
    let params: unknown[];
    if ('all' in selector) {
      where = "state = 'failed'";
      params = [];
    } else if ('ids' in selector) {
      where = `state = 'failed' AND id IN (${selector.ids.map(() => '?').join(',') || 'NULL'})`;
      params = selector.ids;
    } else {
      where = `state = 'failed' AND abs_path IN (${selector.absPaths.map(() => '?').join(',') || 'NULL'})`;
      params = selector.absPaths;
    }
    return this.db
      .prepare(
        `UPDATE files SET state = COALESCE(resume_state, 'discovered'), resume_state = NULL, attempts = 0,
         next_attempt_at = 0, error_kind = NULL, error_message = NULL, updated_at = ? WHERE ${where}`,
      )
      .run(this.now(), ...params).changes;
  }

  counts(): StateCounts {
    const out = Object.fromEntries(FILE_STATES.map((s) => [s, { files: 0, bytes: 0 }])) as StateCounts;
    for (const r of this.stmts.counts.all()) out[r.state] = { files: r.files, bytes: r.bytes };
    return out;
  }

  list(opts: { states?: readonly FileState[]; sourceId?: string; limit?: number } = {}): QueueRow[] {
    const clauses: string[] = [];
    const params: unknown[] = [];
    if (opts.states?.length) {
      clauses.push(`state IN (${opts.states.map(() => '?').join(',')})`);
      params.push(...opts.states);
    }
    if (opts.sourceId !== undefined) {
      clauses.push('source_id = ?');
      params.push(opts.sourceId);
    }
    const where = clauses.length ? `WHERE ${clauses.join(' AND ')}` : '';
    return this.db
      .prepare<unknown[], RawRow>(`SELECT * FROM files ${where} ORDER BY id LIMIT ?`)
      .all(...params, opts.limit ?? 1000)
      .map(fromRaw);
  }

  isActive(state: FileState): boolean {
    return ACTIVE.includes(state);
  }

  getMeta(key: string): string | undefined {
    return this.db.prepare<[string], { value: string }>('SELECT value FROM meta WHERE key = ?').get(key)?.value;
  }

  setMeta(key: string, value: string): void {
    this.db.prepare('INSERT INTO meta (key, value) VALUES (?, ?) ON CONFLICT (key) DO UPDATE SET value = excluded.value').run(key, value);
  }

  private readonly patchCache = new Map<string, Database.Statement>();

  /** Updates some columns of a row; statements are prepared once per column set. */
  private patch(id: number, fields: Record<string, string | number | null>): void {
    const keys = Object.keys(fields);
    const sig = keys.join(',');
    let stmt = this.patchCache.get(sig);
    if (!stmt) {
      stmt = this.db.prepare(
        `UPDATE files SET ${keys.map((k) => `${k} = @${k}`).join(', ')}, updated_at = @updated_at WHERE id = @id`,
      );
      this.patchCache.set(sig, stmt);
    }
    stmt.run({ ...fields, updated_at: this.now(), id });
  }
}
