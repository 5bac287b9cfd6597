import { EventEmitter } from 'node:events';
import fs from 'node:fs';
import type { ApiClient } from '../api/client.js';
import type { Config } from '../config.js';
import { DmsError, plainMessage, toDmsError } from '../errors.js';
import { silentLogger, type Logger } from '../log.js';
import {
  DEFAULT_BACKOFF,
  type BackoffPolicy,
  type Queue,
  type QueueRow,
  type TargetRef,
} from '../queue/queue.js';
import type { CheckedRow, Outcome, UploadedRow, WorkingRow } from '../queue/rows.js';
import { SERVER_ANSWERS } from '../queue/targets.js';
import { IllegalTransition, type Change } from '../queue/transitions.js';
import { serverTarget } from '../session/target.js';
import type { Source } from '../sources/source.js';
import type { RunStateName } from '../../shared/states.js';
import { BucketAccess, type UploaderFactory } from './bucket.js';
import { Dispatcher } from './dispatch.js';
import { dispose, type Report } from './disposition.js';
import { KeptBytes } from './kept.js';
import { Limiter } from './limiter.js';
import { LANE_NAMES, laneRank, type LaneName } from '../queue/lanes.js';
import { DEFAULT_MULTIPART_THRESHOLD } from '../storage/parts.js';
import { laneEtas, type LaneEta, type LaneLeft } from '../../shared/lanes.js';
import type { PartGate } from './part-gate.js';
import { PartSlots, type PartSlotsOptions } from './part-slots.js';
import { Progress, type ProgressSnapshot } from './progress.js';
import { RunStatus, type RunState, type RunStateChange } from './run-state.js';
import { ONE_SHOT_TRIES, type RunOptions } from './run-options.js';
import { ownFolders, scanSource, type ScanResult } from './scan.js';
import type { OwnFolder } from '../media/discover.js';
import { UNFINISHED_STATES } from '../queue/states.js';
import { ContentClaims } from './claims.js';
import type { CopyPort, DestinationStop, UploadPort } from './copy-port.js';
import { isQueueFailure, queueFailure } from './queue-failure.js';
import { Waker } from './waker.js';
import {
  callbackStep,
  checkBeforeRepost,
  fastUploadStep,
  hashStep,
  storeStep,
  twinStep,
  uploadStep,
  type PartLog,
  type Place,
  type StepContext,
} from './steps.js';

export type { RunState, RunStateChange } from './run-state.js';
export { ONE_SHOT_TRIES, type RunOptions } from './run-options.js';

/** 'stored': an RTK/PPK file in the bucket, checked (no callback). */
export type FileOutcome = Outcome | Report;

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
  /** The run state changed (from, to); `to.error` says why when it is an error state. */
  state: [RunStateChange];
  /** Every file of a source found so far is read here (no local copies: the copy lane says it otherwise). */
  read: [{ sourceId: string }];
}

export interface EngineOptions {
  queue: Queue;
  api: ApiClient;
  config: Config;
  /** The copy lane, its peer under the agent: where a file is read from, whether it still reads, as values. */
  copies: CopyPort;
  /** Where the work goes; default: the API's server and workspace (sessions bind the queue themselves). */
  target?: TargetRef;
  logger?: Logger;
  /** Injectable for tests (e.g. a mocked Alibaba OSS). */
  createUploader?: UploaderFactory;
  /** Limits of the server-call and hashing stages. */
  apiConcurrency?: number;
  hashConcurrency?: number;
  /** Retry spacing for transient failures (tests shorten it). */
  backoff?: BackoffPolicy;
  /** The state to start in: a connection without a sign-in starts in 'auth-required'; a pause carried over. */
  initialState?: RunState;
  /** Asked before every part: may this lane send now (the link module; default: always). */
  gate?: PartGate;
  /**
   * Folders the program writes besides its state, copies and code cache (the desktop
   * app's browser data and logs): never read as a source's files (scan.ts ownFolders).
   */
  ownFolders?: readonly OwnFolder[];
}

/**
 * A one-shot run whose server has not answered once in it (a closed, silent
 * or non-HTTP port, https:// to an http server, busy) ends after this many
 * rounds of the shared offline wait, or once it has failed for
 * ONE_SHOT_UNANSWERED_MS (a silent port: two rounds of 10 s): nothing
 * was sent; the crew runs sync again once it answers (issue 30: 219 s and
 * 454 s before). A server restarting for a few seconds is still waited for.
 */
export const ONE_SHOT_UNANSWERED_ROUNDS = 4;
export const ONE_SHOT_UNANSWERED_MS = 10_000;

/** The upload lane reads the files of cards with no copies wanted (the copy lane, the others'). */
const READ_BY_COPIES = false;

/**
 * The sync pipeline: takes due rows from the queue and moves each through
 * hash -> fast-upload -> upload -> callback. Each stage has its own limiter, so
 * hashing the next files overlaps uploading the current ones and server calls
 * never wait behind a long transfer. Steps do the I/O and return what
 * happened; the store applies it (the transition table) before the next step,
 * which is what makes a crash at any point resumable. Failures go through the
 * failure ladder (disposition.ts); the run state through its one door.
 */
export class SyncEngine extends EventEmitter<EngineEvents> {
  readonly progress = new Progress();
  /** The current target's bucket: STS credentials and uploaders (offload gets its narrow port). */
  readonly bucket: BucketAccess;
  readonly status: RunStatus;
  /** Whether the server answered about a file in the current run (a one-shot run gives up sooner without). */
  private answeredInRun = false;
  /** Set at each change of the run state: see givesUp. */
  private gaveUp = false;
  /** See heldByLink. */
  private endedHeld = false;
  private readonly queue: Queue;
  private readonly api: ApiClient;
  private readonly log: Logger;
  private config: Config;
  private readonly hashLimiter: Limiter;
  private readonly apiLimiter: Limiter;
  /** Files uploading at once, per lane: a new card's first lane never waits for a file slot held by videos. */
  private readonly uploadLimiters: Record<LaneName, Limiter>;
  /** Whose part goes next on the link: lane by lane, as many as fill it (part-slots.ts). */
  readonly slots: PartSlots;
  private readonly dispatcher: Dispatcher;
  private readonly gate: PartGate | undefined;
  /** Where cards are copied first, and where a file is read from once copied (the copy lane's port). */
  private readonly copies: CopyPort;
  /** At most one row per content on its way to the server. */
  private readonly claims: ContentClaims;
  private readonly tracked = new Set<number>();
  /** Small files' bytes between their hash and upload steps (see steps.ts); at most one per row in flight. */
  private readonly kept = new KeptBytes();
  private readonly waker = new Waker();
  /** Big files not read yet, lane by lane, oldest first: hashed ahead of their turn (see hashAhead). */
  private aheadRows: Array<{ id: number; rank: number }> = [];
  /** Aborted on pause, halt and a refused sign-in: everything in flight stops. */
  private stopAll = new AbortController();
  private lastProgressEmit = 0;
  private readonly backoff: BackoffPolicy;
  private readonly alsoOwn: readonly OwnFolder[];

  constructor(opts: EngineOptions) {
    super();
    this.alsoOwn = opts.ownFolders ?? [];
    this.queue = opts.queue;
    if (opts.target) this.queue.bindTarget(opts.target);
    else if (!this.queue.target) this.queue.bindTarget(serverTarget(opts.api.baseUrl, opts.api.workspaceId));
    this.api = opts.api;
    this.config = opts.config;
    this.queue.lanes.order(opts.config.lanes);
    this.log = opts.logger ?? silentLogger;
    this.backoff = opts.backoff ?? DEFAULT_BACKOFF;
    this.bucket = new BucketAccess(opts.api, opts.config, opts.createUploader);
    this.status = new RunStatus(opts.initialState, this.backoff);
    this.status.on('change', (c) => {
      // Decided once per change, so what the run says at the change and what it does agree.
      this.gaveUp =
        c.to.name === 'offline' &&
        !this.answeredInRun &&
        (c.to.failures >= ONE_SHOT_UNANSWERED_ROUNDS || Date.now() - c.to.since >= ONE_SHOT_UNANSWERED_MS);
      this.emit('state', c);
    });
    this.hashLimiter = new Limiter(opts.hashConcurrency ?? 2);
    this.apiLimiter = new Limiter(opts.apiConcurrency ?? 8);
    const files = opts.config.concurrency.files;
    this.uploadLimiters = Object.fromEntries(LANE_NAMES.map((l) => [l, new Limiter(files)])) as Record<
      LaneName,
      Limiter
    >;
    this.slots = new PartSlots(slotOptions(opts.config, opts.gate));
    this.copies = opts.copies;
    this.claims = new ContentClaims(this.queue, () => this.wake());
    this.gate = opts.gate;
    // Files read already, and files not read yet of cards with no copies wanted (read here): the
    // copy lane reads those of cards with destinations and hands them over by their state.
    this.dispatcher = new Dispatcher(this.queue, undefined, READ_BY_COPIES, (row) =>
      this.waitsForChecks(row),
    );
  }

  /** The earliest attempt due among this lane's rows (0: now), or null (see the dispatcher above). */
  private nextWake(limit: number | undefined): number | null {
    return this.queue.nextWakeAt(limit, undefined, READ_BY_COPIES);
  }

  /** The copy lane's view of this lane: function values (sync/peers.ts hands them over). */
  uploadPort(): UploadPort {
    return {
      state: () => this.state,
      context: (signal, id) => this.context(signal, id),
      failed: (row, err) => this.failed(row, err),
      working: () => this.status.set('syncing'),
      wake: () => this.wake(),
    };
  }

  /**
   * A photo read and not yet sent, held back while its card is still being
   * read, when the crew leaves flagged photos out of a metered upload
   * (issue 32) and the link holds the flagged lane now: the card's checks
   * need its whole flight (the median pitch...), so no photo leaves on a
   * metered network before they have said which are unusable. Only while a
   * read of the card is in flight (never a wait on nothing: a card pulled,
   * a read waiting to be tried again, lets them go as before).
   */
  private waitsForChecks(row: WorkingRow): boolean {
    return (
      row.lane === 'photos' &&
      row.state !== 'discovered' &&
      this.config.holdFlaggedOnMetered &&
      this.gate?.holds?.('flagged') === true &&
      this.queue.hasUnread(row.sourceId) &&
      (this.copies.reading(row.sourceId) || this.readingNow(row.sourceId))
    );
  }

  /** A row of this source is being read (hashed) by the upload lane's dispatcher. */
  private readingNow(sourceId: string): boolean {
    return this.dispatcher
      .flyingRows()
      .some(
        ({ id }) => this.queue.get(id)?.state === 'discovered' && this.queue.get(id)?.sourceId === sourceId,
      );
  }

  /** The run state's name (derived from `status`). */
  get state(): RunStateName {
    return this.status.name;
  }

  /** Why the engine stopped or waits, when it does. */
  get error(): DmsError | null {
    return this.status.error;
  }

  get paused(): boolean {
    return this.status.name === 'paused';
  }

  updateConfig(config: Config): void {
    this.config = config;
    this.queue.lanes.order(config.lanes);
    for (const l of LANE_NAMES) this.uploadLimiters[l].setLimit(config.concurrency.files);
    this.slots.update(slotOptions(config));
    this.bucket.updateConfig(config);
  }

  /**
   * Finds media under a source and records it; returns what needs work. A
   * queue that cannot record what was found (disk full) halts the engine with
   * the reason, as during a sync.
   */
  async scan(
    source: Source,
    signal?: AbortSignal,
    opts: { quietMs?: number } = {},
  ): Promise<ScanResult & { destinationsStopped: DestinationStop[] }> {
    let result: ScanResult;
    let destinationsStopped: DestinationStop[];
    try {
      this.queue.sources.seen(source.sourceId, source.label);
      // The destinations of this run count for the card before a row of it is recorded: with any,
      // its files are the copy lane's to read (read once), never taken here first.
      this.copies.count(source.sourceId);
      this.dispatcher.forget();
      result = await scanSource(this.queue, source, this.config, signal, {
        ...opts,
        own: ownFolders(this.queue, this.alsoOwn),
      });
      // What each destination lacks is wanted there.
      destinationsStopped = this.copies.prepare(source.sourceId, source);
      for (const stop of destinationsStopped)
        this.log.warn({ source: stop.sourceId, destination: stop.destination.label }, stop.message);
    } catch (err) {
      if (!isQueueFailure(err)) throw err;
      this.halt(err);
      return { pending: [], alreadyDone: 0, failed: 0, deferred: 0, skipped: [], destinationsStopped: [] };
    }
    this.track(result.pending, source.label);
    return { ...result, destinationsStopped };
  }

  /**
   * Counts rows into the progress totals once each. A new batch after the
   * engine went idle starts the totals afresh ("Uploading 3 of 40").
   */
  track(rows: readonly QueueRow[], sourceLabel?: string): void {
    const fresh = rows.filter((r) => !this.tracked.has(r.id));
    // New work is listed afresh; rows seen before (a card that came back) still need the loop to look again.
    this.dispatcher.forget();
    this.copies.wake();
    this.wake();
    if (fresh.length === 0) return;
    if (
      this.inFlight === 0 &&
      this.progress.filesDone + this.progress.filesFailed >= this.progress.filesTotal
    ) {
      this.progress.reset();
      this.tracked.clear();
    }
    for (const r of fresh) this.tracked.add(r.id);
    this.noteAhead(fresh);
    this.progress.addWork(
      fresh.length,
      fresh.reduce((n, r) => n + r.size, 0),
    );
    if (sourceLabel) this.progress.currentSource = sourceLabel;
  }

  /** Parks every unfinished file of a source that went away (card pulled). */
  sourceRemoved(sourceId: string, message: string): number {
    // Stop reading from it at once: parts already acknowledged stay recorded
    // and are reused when the card is back. Files with a verified local copy
    // go on from it: that is what a locally safe card is for. (The copies it
    // still wanted, and its reads, are the copy lane's: the agent stops them first.)
    this.dispatcher.abortSource(sourceId, new DmsError('cancelled', message), (id) => {
      const row = this.queue.get(id);
      return !row || !this.copies.hasCopy(row);
    });
    this.queue.parkSource(sourceId, message, (row) => this.copies.hasCopy(row));
    this.wake();
    // Every unfinished file that waits for the card, whoever parked it (a read that found the card
    // gone parks its file first): not only those this call parked, which may be none.
    return this.queue
      .list({ sourceId, states: UNFINISHED_STATES, limit: 1_000_000 })
      .filter((row) => !this.copies.hasCopy(row)).length;
  }

  /** Rows in flight in this lane. */
  private get inFlight(): number {
    return this.dispatcher.inFlight;
  }

  /** Where a row's file is read from: a verified copy still as written, else the card. */
  placeOf(row: QueueRow): Place {
    return this.copies.place(row);
  }

  pause(): void {
    this.status.set('paused');
    this.stopAll.abort(new DmsError('cancelled', 'Paused.'));
  }

  /** Resumes after a pause, a halt (the user freed space) or a new sign-in. */
  resume(): void {
    if (this.stopAll.signal.aborted) this.stopAll = new AbortController();
    this.status.resume();
    this.wake();
  }

  /** Wakes the loop (new work scanned, settings changed). */
  wake(): void {
    this.waker.wake();
  }

  /**
   * A one-shot run stops trying now: the server is failing as a whole and has
   * not answered once in this run, ONE_SHOT_UNANSWERED_ROUNDS times in a row
   * or for ONE_SHOT_UNANSWERED_MS.
   */
  get givesUp(): boolean {
    return this.gaveUp && this.status.current.name === 'offline';
  }

  async run(opts: RunOptions): Promise<void> {
    const signal = opts.signal;
    const maxAttempts = opts.maxAttempts ?? ONE_SHOT_TRIES;
    const limit = opts.mode === 'until-idle' ? maxAttempts : undefined;
    // A one-shot run is the crew's "try again": each file its full count of tries, now.
    try {
      if (opts.mode === 'until-idle') this.queue.freshTries();
      this.answeredInRun = false;
      this.endedHeld = false;
    } catch (err) {
      if (!isQueueFailure(err)) throw err;
      this.halt(err);
    }
    const onAbort = () => this.wake();
    signal?.addEventListener('abort', onAbort);
    try {
      while (!signal?.aborted) {
        const blocked = this.status.blocked;
        // A one-shot run reports and exits on a sign-in to renew or a halt, once the copy lane (its
        // peer, which copies without a server or a sign-in) has read its files; a pause waits.
        if (opts.mode === 'until-idle' && blocked && this.state !== 'paused' && !this.copies.busy()) break;
        const holdMs = this.status.holdUntil - Date.now();
        if (!blocked && holdMs <= 0) this.dispatchDue(limit, signal);
        // A one-shot run sends what the link's policy lets go, then ends: the rest waits (heldByLink).
        if (opts.mode === 'until-idle' && this.onlyHeldByLink()) {
          this.endedHeld = true;
          this.dispatcher.abortAll(new DmsError('cancelled', 'Waits for a better network.'));
          break;
        }
        if (!blocked && holdMs > 0 && this.inFlight === 0) {
          // A one-shot run whose files have all had their tries ends now, not after the wait;
          // so does one whose server never answered in it (givesUp).
          if (
            opts.mode === 'until-idle' &&
            (this.givesUp || (this.nextWake(limit) === null && !this.copies.busy()))
          )
            break;
          // The whole server is failing: one shared pause instead of every
          // file trying on its own schedule (no request storm during an outage).
          await this.sleep(holdMs);
          continue;
        }
        if (this.inFlight === 0 && !blocked) {
          const next = this.nextWake(limit);
          // Files the copy lane still reads come here as each is read: it wakes this loop.
          if (next === null && this.copies.busy()) {
            await this.sleep(null);
            continue;
          }
          if (next === null) {
            if (opts.mode === 'until-idle') break;
            this.status.set('idle');
          }
          await this.sleep(next === null ? null : Math.max(0, next - Date.now()));
        } else {
          await this.sleep(blocked ? null : 1000);
        }
      }
    } finally {
      signal?.removeEventListener('abort', onAbort);
      await this.dispatcher.settled();
      // What the run recorded is committed when it returns (a reader in another process sees it).
      try {
        this.queue.commitWaiting();
      } catch (err) {
        this.halt(err);
      }
      this.emitProgress(true);
      if (this.state === 'syncing') this.status.set('idle');
    }
  }

  /**
   * The last one-shot run ended with files the link's policy holds (a
   * metered network: every lane but the first; roaming; a budget used up):
   * they keep their place and their parts sent, for a later run.
   */
  get heldByLink(): boolean {
    return this.endedHeld;
  }

  /**
   * Everything in flight waits for the link's gate alone: no part on the
   * wire, no copy being made, and each row in flight has reached its upload
   * in a lane the gate holds (a row still hashing or asking the server may
   * yet be fast-uploaded: it is waited for).
   */
  private onlyHeldByLink(): boolean {
    if (this.copies.busy() || this.dispatcher.inFlight === 0) return false;
    const held = this.slots.heldByGate();
    if (!held) return false;
    return this.dispatcher.flyingRows().every(({ id, lane }) => {
      const state = this.queue.get(id)?.state;
      return held.has(lane) && (state === 'fast-upload-checked' || state === 'uploading');
    });
  }

  close(): void {
    this.slots.close();
    this.bucket.close();
  }

  private dispatchDue(maxAttempts: number | undefined, signal?: AbortSignal): void {
    // Enough rows in flight to keep every stage busy, few enough that memory
    // and the "in progress" list stay small.
    const rows = this.dispatcher.take(this.config.concurrency.files * 2 + 4, maxAttempts);
    for (const row of rows) {
      this.status.set('syncing');
      this.dispatcher.start(
        row,
        (own) => this.process(row, [own, ...(signal ? [signal] : [])]),
        () => {
          this.kept.delete(row.id);
          this.wake();
        },
      );
    }
    this.hashAhead(maxAttempts, signal);
  }

  /** Of rows new to the run, the big files not read yet: those hashAhead reads before their turn. */
  private noteAhead(rows: readonly QueueRow[]): void {
    const big = rows.filter((r) => r.state === 'discovered' && r.size >= DEFAULT_MULTIPART_THRESHOLD);
    if (big.length === 0) return;
    this.aheadRows = [...this.aheadRows, ...big.map((r) => ({ id: r.id, rank: laneRank(r.lane) }))].sort(
      (a, b) => a.rank - b.rank || a.id - b.id,
    );
  }

  /**
   * A big file (a video) is hashed while the files before it are sent, not
   * when its turn comes: its MD5 is a whole read of it (a 300 MiB video:
   * about half a second of a core), and its upload could not start before
   * it, so the link carried nothing meanwhile when the lanes before it were
   * done (issue 33). It is only hashed here: it then waits, hashed, for its
   * turn (its fast-upload and upload go lane by lane as before). One at a
   * time, so the files sending now always have a hash slot; only files read
   * again for their upload anyway (never kept in memory), so the card is
   * read as often as before, and a card whose copies the copy lane makes is
   * never read here (its rows are not this lane's: dueRow).
   */
  private hashAhead(maxAttempts: number | undefined, signal?: AbortSignal): void {
    while (this.aheadRows.length > 0) {
      const { id } = this.aheadRows[0] as { id: number };
      if (this.dispatcher.has(id)) return; // in flight (ahead, or in its turn): one at a time
      this.aheadRows.shift();
      const row = this.queue.dueRow(id, READ_BY_COPIES);
      if (!row || row.state !== 'discovered') continue;
      if (maxAttempts !== undefined && row.attempts >= maxAttempts) continue;
      this.dispatcher.start(
        row,
        (own) => this.process(row, [own, ...(signal ? [signal] : [])], 'hash-only'),
        () => this.wake(),
      );
      return;
    }
  }

  private sleep(ms: number | null): Promise<void> {
    return this.waker.sleep(ms);
  }

  /** One file, from where it stands to done: the table of contents of a file's way. */
  private async process(
    start: WorkingRow,
    signals: readonly AbortSignal[],
    /** Read ahead of its turn (hashAhead): hashed, then it waits for its turn. */
    only?: 'hash-only',
  ): Promise<void> {
    // One AbortSignal.any per row (the row, the run, a pause): it showed in
    // profiles of thousands of small files.
    const ctx = this.context(AbortSignal.any([...signals, this.stopAll.signal]), start.id);
    // The row as the store last wrote it: every change goes through `to`.
    let row: WorkingRow = start;
    const to = (change: Change): QueueRow => {
      const next = this.queue.apply(row, change);
      if (SERVER_ANSWERS.has(change.type)) this.answeredInRun = true;
      if (next.state !== 'done') row = next as WorkingRow;
      return next;
    };
    let claimed: string | null = null;
    try {
      if (row.state === 'discovered') {
        // A card with no copies wanted is read here (with copies, the copy lane reads it first).
        const discovered = row;
        to(await this.hashLimiter.run(() => hashStep(ctx, discovered)));
        if (!this.queue.hasUnread(row.sourceId)) this.emit('read', { sourceId: row.sourceId });
      }
      if (row.state === 'discovered' || only === 'hash-only') return;
      // At most one row per content on its way to the server: a copy of the
      // same file (the card and a watched folder, a card under a new id)
      // waits, then asks fast-upload, so bytes and callback go once.
      claimed = this.claims.claim(row, to);
      if (claimed === null) return;
      if (row.state !== 'hashed' && this.queue.hasDoneTwin(row.fingerprint, row.id)) {
        const waited = row;
        const known = await this.apiLimiter.run(() => twinStep(ctx, waited));
        if (known) return this.finished(to(known));
      }
      // RTK/PPK files are not media: no fast-upload (its answer is about media records).
      if (row.state === 'hashed' && row.kind !== 'media') to({ type: 'check-skipped' });
      if (row.state === 'hashed') {
        const hashed = row;
        const answer = to(await this.apiLimiter.run(() => fastUploadStep(ctx, hashed)));
        if (answer.state === 'done') return this.finished(answer);
      }
      // Its card's checks not made yet, on a link that holds flagged photos: it waits, due (waitsForChecks).
      if (row.state === 'fast-upload-checked' && this.waitsForChecks(row)) return;
      if (row.state === 'fast-upload-checked' || row.state === 'uploading') {
        const log = this.partLog(row, to);
        to(await this.uploadLimiters[row.lane].run(() => uploadStep(ctx, log)));
      }
      if (row.state === 'uploaded' && row.kind !== 'media') {
        const uploaded = row;
        return this.finished(to(await this.apiLimiter.run(() => storeStep(ctx, uploaded))));
      }
      if (row.state === 'uploaded') {
        const uploaded = row;
        return this.finished(await this.apiLimiter.run(() => this.callback(ctx, uploaded, to)));
      }
    } catch (err) {
      this.failed(row, err);
    } finally {
      if (claimed !== null) this.release(claimed, row.id);
    }
  }

  /**
   * uploaded -> done, exactly once: after a lost answer, ask before posting
   * again; the row says "callback sent" before the callback goes.
   */
  private async callback(
    ctx: StepContext,
    row: UploadedRow,
    to: (change: Change) => QueueRow,
  ): Promise<QueueRow> {
    if (row.callbackUnknown) {
      const recorded = await checkBeforeRepost(ctx, row);
      if (recorded) return to(recorded);
    }
    const sent = to({ type: 'callback-sent' }) as UploadedRow;
    return to(await callbackStep(ctx, sent));
  }

  /** The part log of one upload: each entry a change of the row through the store. */
  private partLog(start: CheckedRow, to: (change: Change) => QueueRow): PartLog {
    let row = start;
    return {
      get row() {
        return row;
      },
      record: (change) => {
        row = to(change) as CheckedRow;
      },
      partDone: (part) => this.queue.addPart(row.id, part),
    };
  }

  private context(signal: AbortSignal, id: number): StepContext {
    return {
      place: (row) => this.placeOf(row),
      queue: this.queue,
      api: this.api,
      bucket: this.bucket,
      signal,
      config: this.config,
      kept: this.kept,
      slots: this.slots,
      laneOf: (rowId) => this.queue.lanes.laneNow(rowId),
      onBytes: (n, sent) => {
        this.progress.moved(n, sent, id);
        this.emitProgress(false);
      },
    };
  }

  private release(fp: string, id: number): void {
    try {
      this.claims.release(fp, id);
    } catch (err) {
      this.halt(err);
    }
  }

  /** A file reached done. */
  private finished(row: QueueRow): void {
    if (row.state !== 'done') return;
    this.status.recovered();
    this.progress.fileDone(row.size, row.id);
    this.emit('file', { ...fileBase(row), outcome: row.outcome });
    // The last file of a batch always reaches the UI, however soon after the previous one.
    this.emitProgress(this.inFlight <= 1);
  }

  /** A step failed: the failure ladder decides (disposition.ts), the store and the run state carry it out. */
  private failed(row: WorkingRow, raw: unknown): void {
    // A queue write that failed is tried once more as the row's retry: a
    // database busy for a moment (another program's transaction) passes; a
    // full disk fails again there, and halts.
    if (raw instanceof IllegalTransition) {
      // A bug, never a server's or a card's doing: say so loudly, keep the row for the next run.
      this.log.error({ file: row.relPath, err: raw.message }, 'illegal transition');
      return;
    }
    const err = toDmsError(raw);
    const d = dispose(row, err, {
      now: Date.now(),
      settleMs: this.config.callbackSettleSeconds * 1000,
      backoff: this.backoff,
      disk: () => (this.copies.hasCopy(row) ? 'same' : diskNow(row)),
    });
    try {
      if (d.act === 'ignore') return;
      if (d.act === 'sign-in') {
        // No retry storm: stop everything until the user signs in again.
        this.status.setError(err);
        this.stopAll.abort(err);
        this.log.warn({ kind: err.kind, path: err.path }, 'sign-in needed; sync stopped');
        return;
      }
      if (d.act === 'reread') return this.reread(row);
      this.queue.apply(row, d.change);
      this.progress.dropPartial(row.id);
      if (d.offline) this.status.setError(err);
      if (d.report === null) return;
      if (d.report === 'failed') {
        this.progress.fileFailed(row.id);
        this.log.warn(
          { file: row.relPath, kind: err.kind, request: err.method && `${err.method} ${err.path}` },
          err.message,
        );
      } else this.log.info({ file: row.relPath, kind: err.kind }, err.message);
      this.emit('file', {
        ...fileBase(row),
        outcome: d.report,
        error: { kind: err.kind, message: err.message, plain: plainMessage(err) },
      });
    } catch (bookkeeping) {
      // The row moved on meanwhile (its card pulled): nothing to record.
      if (bookkeeping instanceof DmsError) return;
      this.halt(bookkeeping);
    }
  }

  /** The file changed on disk: its new version gets a row of its own (the stale one is dropped). */
  private reread(row: WorkingRow): void {
    let st: fs.Stats;
    try {
      st = fs.statSync(row.absPath);
    } catch {
      return;
    }
    this.queue.observe([
      {
        sourceId: row.sourceId,
        relPath: row.relPath,
        absPath: row.absPath,
        size: st.size,
        mtimeMs: Math.trunc(st.mtimeMs),
        kind: row.kind,
      },
    ]);
    this.progress.addWork(0, st.size - row.size);
    this.log.info({ file: row.relPath }, 'file changed on disk; it will be read again');
    this.wake();
  }

  /**
   * The queue itself cannot be written (disk full, database failing): going
   * on would do work we cannot record. Stop, say why, and wait for the user.
   */
  private halt(raw: unknown): void {
    const err = queueFailure(raw, this.queue.path);
    this.status.setError(err);
    this.stopAll.abort(err);
    this.log.error({ kind: err.kind, reason: err.reason }, err.message);
  }

  /** At most a few progress events a second: the UI and the terminal need no more. */
  private emitProgress(force: boolean): void {
    const t = Date.now();
    if (!force && t - this.lastProgressEmit < 250) return;
    this.lastProgressEmit = t;
    this.emit('progress', this.snapshot());
  }

  /** The progress, with each lane's work left and when it should be done at the link's rate. */
  snapshot(): ProgressSnapshot {
    const p = this.progress.snapshot();
    return { ...p, lanes: this.laneEtas(p.rate) };
  }

  private lanesCache: { at: number; left: LaneLeft[] } | null = null;
  private rateSavedAt = 0;

  /** Per lane: what is left (read from the queue at most once a second) at the link's measured rate. */
  private laneEtas(progressRate: number): LaneEta[] {
    const t = Date.now();
    if (!this.lanesCache || t - this.lanesCache.at >= 1000) {
      try {
        this.lanesCache = { at: t, left: this.queue.lanesLeft() };
        // For `status`, which reads the queue without the engine: every 10 s at most.
        if (this.slots.rate > 0 && t - this.rateSavedAt >= 10_000) {
          this.rateSavedAt = t;
          this.queue.saveRate(this.slots.rate);
        }
      } catch {
        // A queue that cannot be read now: the last figures stand.
        this.lanesCache ??= { at: t, left: [] };
      }
    }
    return laneEtas(this.lanesCache.left, this.slots.rate > 0 ? this.slots.rate : progressRate);
  }
}

/** What the disk holds now, against the row's version: for a file that could not be read. */
function diskNow(row: QueueRow): 'changed' | 'gone' | 'same' {
  let st: fs.Stats;
  try {
    st = fs.statSync(row.absPath);
  } catch {
    return 'gone';
  }
  return st.size !== row.size || Math.trunc(st.mtimeMs) !== row.mtimeMs ? 'changed' : 'same';
}

/** The part slots' settings: parts of every file in flight at most, the part size, the user's limit. */
function slotOptions(config: Config, gate?: PartGate): PartSlotsOptions {
  return {
    max: config.concurrency.files * config.concurrency.parts,
    partBytes: config.partSizeMiB * 1024 * 1024,
    limitBytesPerSecond: config.bandwidthLimitKiBps * 1024,
    ...(gate ? { gate } : {}),
  };
}

function fileBase(row: QueueRow) {
  return { id: row.id, sourceId: row.sourceId, relPath: row.relPath, absPath: row.absPath, size: row.size };
}
