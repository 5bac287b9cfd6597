import { EventEmitter } from 'node:events';
import { createHash } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import type { ApiClient } from '../api/client.js';
import type { Config } from '../config.js';
import { DmsError, isServerWide, plainMessage, QueueWriteError, toDmsError } from '../errors.js';
import { silentLogger, type Logger } from '../log.js';
import {
  backoffDelay,
  DEFAULT_BACKOFF,
  type BackoffPolicy,
  type Queue,
  type QueueRow,
  type TargetRef,
} from '../queue/queue.js';
import type { DoneRow, Outcome, WorkingRow } from '../queue/rows.js';
import { isWorking } from '../queue/states.js';
import { serverTarget } from '../session/target.js';
import { createUploader } from '../storage/create.js';
import type { Uploader, UploaderOptions } from '../storage/types.js';
import type { StorageProvider } from '../api/types.js';
import { loadCaFile, trustedCas } from '../tls.js';
import { KeptBytes } from './kept.js';
import { Limiter } from './limiter.js';
import { Progress, type ProgressSnapshot } from './progress.js';
import { scanSource, type ScanResult } from './scan.js';
import type { Source } from '../sources/source.js';
import {
  CallbackOutcomeUnknown,
  callbackStep,
  doneByTwin,
  FileChangedError,
  fastUploadStep,
  hashStep,
  storeStep,
  UNCLEAR_ANSWER_TRIES,
  verifyDone,
  UnclearAnswerError,
  uploadStep,
  type StepContext,
} from './steps.js';
import { StsCache } from './sts-cache.js';
import { BandwidthLimiter } from './throttle.js';

/**
 * idle / syncing; paused (the user's); offline (the server or network is
 * failing: everything waits together); auth-required (sign in again);
 * halted (the queue cannot be written: disk full, database failing), with
 * its reason in `error`.
 */
export type EngineState = 'idle' | 'syncing' | 'paused' | 'offline' | 'auth-required' | 'halted';

/** An SQLite or disk failure: the queue itself could not be written or read. */
function isQueueFailure(err: unknown): boolean {
  const code = (err as { code?: unknown } | null)?.code;
  return typeof code === 'string' && (code.startsWith('SQLITE_') || code === 'ENOSPC');
}

/** How long a row waits for another row with the same content before it goes on by itself. */
const TWIN_MAX_WAIT_MS = 10 * 60_000;

/** 'stored': an RTK/PPK file in the bucket, checked (no callback). */
export type FileOutcome =
  'uploaded' | 'fast-uploaded' | 'stored' | 'failed' | 'waiting-for-source' | 'retry-later';

export interface FileEvent {
  id: number;
  sourceId: string;
  relPath: string;
  absPath: string;
  size: number;
  outcome: FileOutcome;
  error?: { kind: string; message: string; plain: string };
}

export interface EngineEvents {
  file: [FileEvent];
  progress: [ProgressSnapshot];
  state: [EngineState, DmsError | null];
}

export interface EngineOptions {
  queue: Queue;
  api: ApiClient;
  config: Config;
  /** Where the work goes; default: the API's server and workspace (sessions bind the queue themselves). */
  target?: TargetRef;
  logger?: Logger;
  /** Injectable for tests (e.g. a mocked Alibaba OSS). */
  createUploader?: (provider: StorageProvider, opts: UploaderOptions) => Uploader;
  /** Limits of the server-call and hashing stages. */
  apiConcurrency?: number;
  hashConcurrency?: number;
  /** Retry spacing for transient failures (tests shorten it). */
  backoff?: BackoffPolicy;
}

export interface RunOptions {
  signal?: AbortSignal;
  /** 'until-idle' returns when nothing is left to do now; 'forever' keeps waiting for work. */
  mode: 'until-idle' | 'forever';
  /** until-idle: attempts per file in this run before leaving it for the next run. */
  maxAttempts?: number;
}

/**
 * The sync pipeline: takes due rows from the queue and moves each through
 * hash -> fast-upload -> upload -> callback. Each stage has its own limiter, so
 * hashing the next files overlaps uploading the current ones and server calls
 * never wait behind a long transfer. Every transition is written to the queue
 * before the next step, which is what makes a crash at any point resumable.
 */
export class SyncEngine extends EventEmitter<EngineEvents> {
  readonly progress = new Progress();
  readonly sts: StsCache;
  private readonly queue: Queue;
  private readonly api: ApiClient;
  private readonly log: Logger;
  private config: Config;
  private readonly hashLimiter: Limiter;
  private readonly apiLimiter: Limiter;
  private readonly uploadLimiter: Limiter;
  private readonly bandwidth: BandwidthLimiter;
  private readonly uploaders = new Map<string, Uploader>();
  private readonly makeUploader: NonNullable<EngineOptions['createUploader']>;
  private readonly inFlight = new Map<
    number,
    { promise: Promise<void>; controller: AbortController; sourceId: string }
  >();
  /** Content (fingerprint) -> the row carrying it to the server: at most one row per content in flight. */
  private readonly claims = new Map<string, number>();
  private readonly tracked = new Set<number>();
  /** Due row ids listed by the last dispatch and not taken yet, oldest first. */
  private candidates: number[] = [];
  /** Small files' bytes between their hash and upload steps (see steps.ts); at most one per row in flight. */
  private readonly kept = new KeptBytes();
  private wakeUp: (() => void) | null = null;
  private stateValue: EngineState = 'idle';
  private lastError: DmsError | null = null;
  private pausedFlag = false;
  /** The queue could not be written: nothing runs until resume(). */
  private halted = false;
  private haltController = new AbortController();
  private lastProgressEmit = 0;
  private readonly backoff: BackoffPolicy;
  /** Consecutive failures that say the server (not one file) is in trouble, and the shared pause they set. */
  private serverFailures = 0;
  private holdUntil = 0;

  constructor(opts: EngineOptions) {
    super();
    this.queue = opts.queue;
    if (opts.target) this.queue.bindTarget(opts.target);
    else if (!this.queue.target) this.queue.bindTarget(serverTarget(opts.api.baseUrl, opts.api.workspaceId));
    this.api = opts.api;
    this.config = opts.config;
    this.log = opts.logger ?? silentLogger;
    this.makeUploader = opts.createUploader ?? createUploader;
    this.backoff = opts.backoff ?? DEFAULT_BACKOFF;
    this.sts = new StsCache((signal) => this.api.getSts(signal ? { signal } : {}));
    this.hashLimiter = new Limiter(opts.hashConcurrency ?? 2);
    this.apiLimiter = new Limiter(opts.apiConcurrency ?? 8);
    this.uploadLimiter = new Limiter(opts.config.concurrency.files);
    this.bandwidth = new BandwidthLimiter(opts.config.bandwidthLimitKiBps * 1024);
  }

  get state(): EngineState {
    return this.stateValue;
  }

  get error(): DmsError | null {
    return this.lastError;
  }

  get paused(): boolean {
    return this.pausedFlag;
  }

  updateConfig(config: Config): void {
    this.config = config;
    this.uploadLimiter.setLimit(config.concurrency.files);
    this.bandwidth.setLimit(config.bandwidthLimitKiBps * 1024);
    for (const u of this.uploaders.values()) u.close();
    this.uploaders.clear();
  }

  /** Finds media under a source and records it; returns what needs work. */
  async scan(
    source: Source,
    signal?: AbortSignal,
  ): Promise<Omit<ScanResult, 'pending'> & { pending: number }> {
    let result: ScanResult;
    try {
      result = await scanSource(this.queue, source, this.config, signal);
    } catch (err) {
      // The queue cannot record what was found (disk full): halt with the reason, as during a sync.
      if (!isQueueFailure(err)) throw err;
      this.haltOnQueueError(err);
      return { pending: 0, alreadyDone: 0, failed: 0, deferred: 0, skipped: [] };
    }
    this.track(result.pending, source.label);
    return { ...result, pending: result.pending.length };
  }

  /**
   * Counts rows into the progress totals once each. A new batch after the
   * engine went idle starts the totals afresh ("Uploading 3 of 40").
   */
  track(rows: readonly QueueRow[], sourceLabel?: string): void {
    const fresh = rows.filter((r) => !this.tracked.has(r.id));
    // New work is listed afresh, not after the ids already in hand.
    this.candidates = [];
    // Rows seen before (a card that came back) still need the loop to look again.
    this.wake();
    if (fresh.length === 0) return;
    if (
      this.inFlight.size === 0 &&
      this.progress.filesDone + this.progress.filesFailed >= this.progress.filesTotal
    ) {
      this.progress.reset();
      this.tracked.clear();
    }
    for (const r of fresh) this.tracked.add(r.id);
    this.progress.addWork(
      fresh.length,
      fresh.reduce((n, r) => n + r.size, 0),
    );
    if (sourceLabel) this.progress.currentSource = sourceLabel;
    this.wake();
  }

  /** Parks every unfinished file of a source that went away (card pulled). */
  sourceRemoved(sourceId: string, message: string): number {
    // Stop reading from it at once: parts already acknowledged stay recorded
    // and are reused when the card is back.
    for (const f of this.inFlight.values()) {
      if (f.sourceId === sourceId) f.controller.abort(new DmsError('cancelled', message));
    }
    const n = this.queue.parkSource(sourceId, message);
    this.wake();
    return n;
  }

  pause(): void {
    this.pausedFlag = true;
    this.haltController.abort(new DmsError('cancelled', 'Paused.'));
    // A halt keeps its reason on screen: pausing does not hide a full disk.
    if (!this.halted) this.setState('paused');
  }

  /** Resumes after a pause, a halt (the user freed space) or a new sign-in. */
  resume(): void {
    this.pausedFlag = false;
    this.halted = false;
    if (this.haltController.signal.aborted) this.haltController = new AbortController();
    this.lastError = null;
    this.setState('idle');
    this.wake();
  }

  /** Wakes the loop (new work scanned, settings changed). */
  wake(): void {
    const w = this.wakeUp;
    this.wakeUp = null;
    w?.();
  }

  async run(opts: RunOptions): Promise<void> {
    const signal = opts.signal;
    const maxAttempts = opts.maxAttempts ?? 4;
    const onAbort = () => this.wake();
    signal?.addEventListener('abort', onAbort);
    try {
      while (!signal?.aborted) {
        if (this.stateValue === 'auth-required' && opts.mode === 'until-idle') break;
        // A queue failure halts a one-shot run too: it reports and exits.
        if (this.halted && opts.mode === 'until-idle') break;
        const blocked = this.pausedFlag || this.halted || this.stateValue === 'auth-required';
        const holdMs = this.holdUntil - Date.now();
        if (!blocked && holdMs <= 0) this.dispatch(maxAttempts, opts.mode, signal);
        if (!blocked && holdMs > 0 && this.inFlight.size === 0) {
          // The whole server is failing: one shared pause instead of every
          // file trying on its own schedule (no request storm during an outage).
          await this.sleep(holdMs);
          continue;
        }
        if (this.inFlight.size === 0 && !blocked) {
          const next = this.nextWake(maxAttempts, opts.mode);
          if (next === null) {
            if (opts.mode === 'until-idle') break;
            if (this.stateValue !== 'offline') this.setState('idle');
          }
          await this.sleep(next === null ? null : Math.max(0, next - Date.now()));
        } else {
          await this.sleep(blocked ? null : 1000);
        }
      }
    } finally {
      signal?.removeEventListener('abort', onAbort);
      await Promise.allSettled([...this.inFlight.values()].map((f) => f.promise));
      this.emitProgress(true);
      if (this.stateValue === 'syncing') this.setState('idle');
    }
  }

  close(): void {
    for (const u of this.uploaders.values()) u.close();
    this.uploaders.clear();
  }

  private dispatch(maxAttempts: number, mode: RunOptions['mode'], signal?: AbortSignal): void {
    // Enough rows in flight to keep every stage busy, few enough that memory
    // and the "in progress" list stay small.
    const width = this.config.concurrency.files * 2 + 4;
    const room = width - this.inFlight.size;
    if (room <= 0) return;
    const rows: WorkingRow[] = [];
    // Ids taken in this call are not in inFlight yet: a second listing below
    // must not hand the same row out twice (two uploads of one file at once).
    const taken = new Set<number>();
    const busy = (id: number): boolean => this.inFlight.has(id) || taken.has(id);
    // Due ids are listed 64 at a time and each row is re-read when taken:
    // listing them on every file finished showed in profiles of small files.
    let listed = false;
    while (rows.length < room) {
      if (this.candidates.length === 0) {
        if (listed) break;
        listed = true;
        this.candidates = this.queue.readyIds(64 + this.inFlight.size + taken.size).filter((id) => !busy(id));
        continue;
      }
      const id = this.candidates.shift() as number;
      if (busy(id)) continue;
      const row = this.queue.dueRow(id);
      if (!row || (mode === 'until-idle' && row.attempts >= maxAttempts)) continue;
      taken.add(id);
      rows.push(row);
    }
    for (const row of rows) {
      if (this.stateValue !== 'syncing' && this.stateValue !== 'offline') this.setState('syncing');
      const controller = new AbortController();
      const promise = this.process(row, [controller.signal, ...(signal ? [signal] : [])]).finally(() => {
        this.inFlight.delete(row.id);
        this.kept.delete(row.id);
        this.wake();
      });
      this.inFlight.set(row.id, { promise, controller, sourceId: row.sourceId });
    }
  }

  /** When the loop should look again, or null when nothing is pending. */
  private nextWake(maxAttempts: number, mode: RunOptions['mode']): number | null {
    return this.queue.nextWakeAt(mode === 'until-idle' ? maxAttempts : undefined);
  }

  private sleep(ms: number | null): Promise<void> {
    return new Promise((resolve) => {
      const timer = ms === null ? null : setTimeout(() => this.wake(), Math.min(ms, 60_000));
      this.wakeUp = () => {
        if (timer) clearTimeout(timer);
        resolve();
      };
    });
  }

  private async process(start: WorkingRow, sources: readonly AbortSignal[]): Promise<void> {
    // One AbortSignal.any per row (the row, the run, a pause): it is not
    // cheap in Node 20, and showed in profiles of thousands of small files.
    const ctx = this.context(AbortSignal.any([...sources, this.haltController.signal]));
    let row: WorkingRow = start;
    let claimed: string | null = null;
    try {
      if (row.state === 'discovered') {
        const discovered = row;
        await this.hashLimiter.run(() => hashStep(ctx, discovered));
        row = this.reload(row.id);
      }
      if (row.state === 'discovered') return;
      // At most one row per content on its way to the server: a copy of the
      // same file (the card and a watched folder, a card under a new id)
      // waits, then asks fast-upload, so bytes and callback go once.
      claimed = this.claim(row);
      if (claimed === null) return;
      if (row.state !== 'hashed' && this.queue.hasDoneTwin(row.fingerprint, row.id)) {
        const waited = row;
        if (await this.apiLimiter.run(() => doneByTwin(ctx, waited)))
          return this.finished(row, 'fast-uploaded');
      }
      if (row.state === 'hashed' && row.kind === 'rtk') {
        // RTK/PPK files are not media: no fast-upload (its answer is about media records).
        this.queue.setFastUploadChecked(row.id);
        row = this.reload(row.id);
      }
      if (row.state === 'hashed') {
        const hashed = row;
        const known = await this.apiLimiter.run(() => fastUploadStep(ctx, hashed));
        if (known === 'known') return this.finished(row, 'fast-uploaded');
        row = this.reload(row.id);
      }
      if (row.state === 'fast-upload-checked' || row.state === 'uploading') {
        const checked = row;
        await this.uploadLimiter.run(() => uploadStep(ctx, checked));
        row = this.reload(row.id);
      }
      if (row.state === 'uploaded' && row.kind === 'rtk') {
        const uploaded = row;
        await this.apiLimiter.run(() => storeStep(ctx, uploaded));
        return this.finished(row, 'stored');
      }
      if (row.state === 'uploaded') {
        const uploaded = row;
        await this.apiLimiter.run(() => callbackStep(ctx, uploaded));
        return this.finished(row, 'uploaded');
      }
    } catch (err) {
      try {
        this.failed(row, toDmsError(err));
      } catch (bookkeeping) {
        this.haltOnQueueError(bookkeeping);
      }
    } finally {
      if (claimed !== null) this.release(claimed, row.id);
    }
  }

  private context(signal: AbortSignal): StepContext {
    return {
      queue: this.queue,
      api: this.api,
      sts: this.sts,
      uploaderFor: (p) => this.uploaderFor(p as StorageProvider),
      signal,
      config: this.config,
      kept: this.kept,
      onBytes: (n, sent) => {
        this.progress.moved(n, sent);
        this.emitProgress(false);
      },
    };
  }

  /**
   * Checks in the bucket the done files of a source never checked, or last
   * checked more than `olderThanMs` ago (for "safe to format": an object
   * deleted after its callback is caught). A check that cannot be made now
   * (network) leaves the file as it was; returns how many were checked.
   */
  async verifySource(sourceId: string, opts: { olderThanMs: number; signal?: AbortSignal }): Promise<number> {
    const before = Date.now() - opts.olderThanMs;
    const ctx = this.context(
      AbortSignal.any([this.haltController.signal, ...(opts.signal ? [opts.signal] : [])]),
    );
    const rows = this.queue
      .list({ sourceId, states: ['done'], limit: 1_000_000 })
      .filter(
        (r): r is DoneRow & { fingerprint: string } =>
          r.state === 'done' &&
          r.fingerprint !== undefined &&
          (r.verified === null || r.verified.at <= before),
      );
    let checked = 0;
    await Promise.all(
      rows.map((r) =>
        this.apiLimiter.run(async () => {
          try {
            await verifyDone(ctx, r);
            checked++;
          } catch (err) {
            this.log.info({ file: r.relPath, kind: toDmsError(err).kind }, 'not checked in the bucket now');
          }
        }),
      ),
    );
    return checked;
  }

  /**
   * Uploads files that are not card files (a card's manifest) under
   * `<prefix>/<folder>/`: small, whole in memory, each with its Content-MD5.
   */
  async publish(
    folder: string,
    files: ReadonlyArray<{ rel: string; content: Buffer }>,
    signal?: AbortSignal,
  ): Promise<string[]> {
    const target = await this.sts.get(signal ? { signal } : {});
    const uploader = this.uploaderFor(target.provider);
    const keys: string[] = [];
    for (const f of files) {
      const key = `${target.objectKeyPrefix.replace(/\/+$/, '')}/${folder}/${f.rel}`;
      await uploader.upload({
        filePath: '',
        size: f.content.length,
        key,
        md5Hex: createHash('md5').update(f.content).digest('hex'),
        content: f.content,
        contentType: f.rel.endsWith('.html')
          ? 'text/html; charset=utf-8'
          : f.rel.endsWith('.json')
            ? 'application/json'
            : 'application/xml',
        ...(signal ? { signal } : {}),
      });
      keys.push(key);
    }
    return keys;
  }

  /** Claims the row's content for it; null (and the row put aside) when another row carries it. */
  private claim(row: Exclude<WorkingRow, { state: 'discovered' }>): string | null {
    const fp = row.fingerprint.toLowerCase();
    const holder = this.claims.get(fp);
    if (holder !== undefined && holder !== row.id) {
      const other = this.queue.get(holder);
      const what = other ? other.relPath : 'another file';
      this.queue.defer(
        row.id,
        TWIN_MAX_WAIT_MS,
        `Waiting for ${what} (the same content) to reach the server first.`,
      );
      return null;
    }
    this.claims.set(fp, row.id);
    return fp;
  }

  private release(fp: string, id: number): void {
    if (this.claims.get(fp) !== id) return;
    this.claims.delete(fp);
    try {
      if (this.queue.wakeTwins(fp) > 0) this.wake();
    } catch (err) {
      this.haltOnQueueError(err);
    }
  }

  /**
   * The queue itself cannot be written (disk full, database failing): going
   * on would do work we cannot record. Stop, say why, and wait for the user.
   */
  private haltOnQueueError(raw: unknown): void {
    const e = toDmsError(raw);
    const code = (raw as { code?: unknown } | null)?.code;
    const full = code === 'SQLITE_FULL' || code === 'ENOSPC';
    const where = path.dirname(this.queue.path);
    const message = full
      ? `Disk full: the disk holding ${where} is full. Free space on it, then press Resume; nothing is lost.`
      : `The upload queue (${this.queue.path}) cannot be written: ${e.message} Fix the cause, then press Resume. Nothing is lost.`;
    const err = new QueueWriteError(
      new DmsError(e.kind, message, { cause: raw }),
      full ? 'disk-full' : 'database',
    );
    this.lastError = err;
    this.halted = true;
    this.haltController.abort(err);
    this.log.error({ kind: err.kind, reason: err.reason }, err.message);
    this.setState('halted', err);
  }

  private reload(id: number): WorkingRow {
    const row = this.queue.get(id);
    if (!row) throw new DmsError('source-missing', 'The file was replaced by a newer version.');
    if (!isWorking(row.state))
      throw new DmsError('cancelled', `${row.relPath} moved on to ${row.state} meanwhile.`);
    return row as WorkingRow;
  }

  private finished(row: QueueRow, outcome: Outcome): void {
    this.serverFailures = 0;
    this.holdUntil = 0;
    if (this.stateValue === 'offline') this.setState('syncing');
    this.progress.fileDone(row.size);
    this.emit('file', { ...fileBase(row), outcome });
    // The last file of a batch always reaches the UI, however soon after the previous one.
    this.emitProgress(this.inFlight.size <= 1);
  }

  /** Decides from the error kind alone: stop, park, retry later, or ask the user. */
  private failed(row: QueueRow, err: DmsError): void {
    const event = (outcome: FileOutcome) =>
      this.emit('file', {
        ...fileBase(row),
        outcome,
        error: { kind: err.kind, message: err.message, plain: plainMessage(err) },
      });
    if (err.kind === 'cancelled') {
      // Cut while a callback was on its way: it may still be committing.
      if (err instanceof CallbackOutcomeUnknown)
        this.queue.defer(row.id, this.config.callbackSettleSeconds * 1000, null);
      return;
    }
    if (err.kind === 'auth') {
      // No retry storm: stop everything until the user signs in again.
      this.lastError = err;
      this.haltController.abort(err);
      this.setState('auth-required', err);
      this.log.warn({ kind: err.kind, path: err.path }, 'sign-in needed; sync stopped');
      return;
    }
    if (err.kind === 'source-missing') {
      // Look at the disk to tell the three cases apart: the file changed
      // (read the new version; the stale row is dropped, never recorded),
      // it is gone (wait for the card), or it is there unchanged (a read
      // hiccup: retry later).
      let st: fs.Stats | null;
      try {
        st = fs.statSync(row.absPath);
      } catch {
        st = null;
      }
      if (
        st &&
        (err instanceof FileChangedError || st.size !== row.size || Math.trunc(st.mtimeMs) !== row.mtimeMs)
      ) {
        this.queue.observe([
          {
            sourceId: row.sourceId,
            relPath: row.relPath,
            absPath: row.absPath,
            size: st.size,
            mtimeMs: Math.trunc(st.mtimeMs),
          },
        ]);
        this.progress.addWork(0, st.size - row.size);
        this.log.info({ file: row.relPath }, 'file changed on disk; it will be read again');
        this.wake();
        return;
      }
      if (st) {
        this.queue.scheduleRetry(row.id, err, this.backoff);
        event('retry-later');
        return;
      }
      this.queue.setWaitingForSource(row.id, err.message);
      event('waiting-for-source');
      return;
    }
    if (err instanceof UnclearAnswerError && row.attempts + 1 >= UNCLEAR_ANSWER_TRIES) {
      // Tried enough for this file alone; the rest of the queue never waited for it.
      this.queue.setFailed(row.id, new DmsError(err.kind, err.message, { retryable: false }));
      this.progress.fileFailed();
      this.log.warn({ file: row.relPath, kind: err.kind }, err.message);
      event('failed');
      return;
    }
    if (err.retryable) {
      // A callback whose answer was lost is checked no sooner than its settle time.
      const settle = err instanceof CallbackOutcomeUnknown ? this.config.callbackSettleSeconds * 1000 : 0;
      const delay = this.queue.scheduleRetry(row.id, err, this.backoff, settle);
      if (isServerWide(err)) {
        this.serverFailures++;
        this.holdUntil = Math.max(
          this.holdUntil,
          Date.now() + Math.max(backoffDelay(this.serverFailures, this.backoff), err.retryAfterMs ?? 0),
        );
        this.setState('offline', err);
      }
      this.log.info({ file: row.relPath, kind: err.kind, retryInMs: delay }, err.message);
      event('retry-later');
      return;
    }
    this.queue.setFailed(row.id, err);
    this.progress.fileFailed();
    this.log.warn({ file: row.relPath, kind: err.kind }, err.message);
    event('failed');
  }

  private uploaderFor(provider: StorageProvider): Uploader {
    let u = this.uploaders.get(provider);
    if (!u) {
      u = this.makeUploader(provider, {
        target: this.sts.get,
        partSize: this.config.partSizeMiB * 1024 * 1024,
        partConcurrency: this.config.concurrency.parts,
        maxSockets: this.config.concurrency.files * this.config.concurrency.parts + 2,
        ...(this.config.bandwidthLimitKiBps > 0 ? { throttle: this.bandwidth.take } : {}),
        // A self-hosted bucket often shares the server's private CA.
        ...(this.config.caFile ? { ca: trustedCas(loadCaFile(this.config.caFile)) } : {}),
      });
      this.uploaders.set(provider, u);
    }
    return u;
  }

  private setState(state: EngineState, err: DmsError | null = null): void {
    if (state === this.stateValue && err === this.lastError) return;
    this.stateValue = state;
    if (err) this.lastError = err;
    this.emit('state', state, err);
  }

  /** At most a few progress events a second: the UI and the terminal need no more. */
  private emitProgress(force: boolean): void {
    const t = Date.now();
    if (!force && t - this.lastProgressEmit < 250) return;
    this.lastProgressEmit = t;
    this.emit('progress', this.progress.snapshot());
  }
}

function fileBase(row: QueueRow) {
  return { id: row.id, sourceId: row.sourceId, relPath: row.relPath, absPath: row.absPath, size: row.size };
}
