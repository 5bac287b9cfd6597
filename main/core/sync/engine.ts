import { EventEmitter } from 'node:events';
import fs from 'node:fs';
import type { ApiClient } from '../api/client.js';
import type { Config } from '../config.js';
import { DmsError, plainMessage, toDmsError } from '../errors.js';
import { silentLogger, type Logger } from '../log.js';
import { backoffDelay, DEFAULT_BACKOFF, type BackoffPolicy, type Queue, type QueueRow } from '../queue/queue.js';
import { createUploader } from '../storage/create.js';
import type { Uploader, UploaderOptions } from '../storage/types.js';
import type { StorageProvider } from '../api/types.js';
import { loadCaFile, trustedCas } from '../tls.js';
import { Limiter } from './limiter.js';
import { Progress, type ProgressSnapshot } from './progress.js';
import { scanSource, type Source } from './scan.js';
import { callbackStep, FileChangedError, fastUploadStep, hashStep, uploadStep, type StepContext } from './steps.js';
import { StsCache } from './sts-cache.js';
import { BandwidthLimiter } from './throttle.js';

/** Failure kinds that concern the server or the network as a whole, not one file. */
const SERVER_WIDE: ReadonlySet<string> = new Set(['network', 'timeout', 'server', 'throttled', 'malformed-response']);

export type EngineState = 'idle' | 'syncing' | 'paused' | 'offline' | 'auth-required';

export type FileOutcome = 'uploaded' | 'fast-uploaded' | 'failed' | 'waiting-for-source' | 'retry-later';

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
  private readonly inFlight = new Map<number, { promise: Promise<void>; controller: AbortController; sourceId: string }>();
  private readonly tracked = new Set<number>();
  /** Due row ids listed by the last dispatch and not taken yet, oldest first. */
  private candidates: number[] = [];
  /** Small files' bytes between their hash and upload steps (see steps.ts); at most one per row in flight. */
  private readonly contents = new Map<number, Buffer>();
  private wakeUp: (() => void) | null = null;
  private stateValue: EngineState = 'idle';
  private lastError: DmsError | null = null;
  private pausedFlag = false;
  private haltController = new AbortController();
  private lastProgressEmit = 0;
  private readonly backoff: BackoffPolicy;
  /** Consecutive failures that say the server (not one file) is in trouble, and the shared pause they set. */
  private serverFailures = 0;
  private holdUntil = 0;

  constructor(opts: EngineOptions) {
    super();
    this.queue = opts.queue;
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
  async scan(source: Source, signal?: AbortSignal): Promise<{ pending: number; alreadyDone: number; failed: number }> {
    const result = await scanSource(this.queue, source, this.config, signal);
    this.track(result.pending, source.label ?? source.root);
    return { pending: result.pending.length, alreadyDone: result.alreadyDone, failed: result.failed };
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
    if (this.inFlight.size === 0 && this.progress.filesDone + this.progress.filesFailed >= this.progress.filesTotal) {
      this.progress.reset();
      this.tracked.clear();
    }
    for (const r of fresh) this.tracked.add(r.id);
    this.progress.addWork(fresh.length, fresh.reduce((n, r) => n + r.size, 0));
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
    this.setState('paused');
  }

  /** Resumes after pause or after a new sign-in. */
  resume(): void {
    this.pausedFlag = false;
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
        if (this.pausedFlag && this.lastError && opts.mode === 'until-idle') break;
        const blocked = this.pausedFlag || this.stateValue === 'auth-required';
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
    const rows: QueueRow[] = [];
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
        this.contents.delete(row.id);
        this.wake();
      });
      this.inFlight.set(row.id, { promise, controller, sourceId: row.sourceId });
    }
  }

  /** When the loop should look again, or null when nothing is pending. */
  private nextWake(maxAttempts: number, mode: RunOptions['mode']): number | null {
    if (mode === 'until-idle') {
      const left = this.queue.list({ states: ['discovered', 'hashed', 'fast-upload-checked', 'uploading', 'uploaded'], limit: 100_000 });
      const retriable = left.filter((r) => r.attempts < maxAttempts);
      if (retriable.length === 0) return null;
      return Math.min(...retriable.map((r) => r.nextAttemptAt));
    }
    return this.queue.nextWakeAt();
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

  private async process(start: QueueRow, sources: readonly AbortSignal[]): Promise<void> {
    // One AbortSignal.any per row (the row, the run, a pause): it is not
    // cheap in Node 20, and showed in profiles of thousands of small files.
    const signal = AbortSignal.any([...sources, this.haltController.signal]);
    const ctx: StepContext = {
      queue: this.queue,
      api: this.api,
      sts: this.sts,
      uploaderFor: (p) => this.uploaderFor(p as StorageProvider),
      signal,
      contents: this.contents,
      onBytes: (n, sent) => {
        this.progress.moved(n, sent);
        this.emitProgress(false);
      },
      ...(this.config.aircraftDefault ? { aircraftDefault: this.config.aircraftDefault } : {}),
    };
    let row = start;
    try {
      if (row.state === 'discovered') {
        await this.hashLimiter.run(() => hashStep(ctx, row));
        row = this.reload(row.id);
      }
      if (row.state === 'hashed') {
        const known = await this.apiLimiter.run(() => fastUploadStep(ctx, row));
        if (known === 'known') return this.finished(row, 'fast-uploaded');
        row = this.reload(row.id);
      }
      if (row.state === 'fast-upload-checked' || row.state === 'uploading') {
        await this.uploadLimiter.run(() => uploadStep(ctx, row));
        row = this.reload(row.id);
      }
      if (row.state === 'uploaded') {
        await this.apiLimiter.run(() => callbackStep(ctx, row));
        return this.finished(row, 'uploaded');
      }
    } catch (err) {
      try {
        this.failed(row, toDmsError(err));
      } catch (bookkeeping) {
        this.haltOnQueueError(toDmsError(bookkeeping));
      }
    }
  }

  /**
   * The queue itself cannot be written (disk full, database failing): going
   * on would do work we cannot record. Stop, say why, and wait for the user.
   */
  private haltOnQueueError(err: DmsError): void {
    this.lastError = err;
    this.pausedFlag = true;
    this.haltController.abort(err);
    this.log.error({ kind: err.kind }, err.message);
    this.setState('paused', err);
  }

  private reload(id: number): QueueRow {
    const row = this.queue.get(id);
    if (!row) throw new DmsError('source-missing', 'The file was replaced by a newer version.');
    return row;
  }

  private finished(row: QueueRow, outcome: 'uploaded' | 'fast-uploaded'): void {
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
      this.emit('file', { ...fileBase(row), outcome, error: { kind: err.kind, message: err.message, plain: plainMessage(err) } });
    if (err.kind === 'cancelled') return;
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
      if (st && (err instanceof FileChangedError || st.size !== row.size || Math.trunc(st.mtimeMs) !== row.mtimeMs)) {
        this.queue.observe([{ sourceId: row.sourceId, relPath: row.relPath, absPath: row.absPath, size: st.size, mtimeMs: Math.trunc(st.mtimeMs) }]);
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
    if (err.retryable) {
      const delay = this.queue.scheduleRetry(row.id, err, this.backoff);
      if (SERVER_WIDE.has(err.kind)) {
        this.serverFailures++;
        this.holdUntil = Math.max(this.holdUntil, Date.now() + Math.max(backoffDelay(this.serverFailures, this.backoff), err.retryAfterMs ?? 0));
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
