import { EventEmitter } from 'node:events';
import { DmsError, toDmsError } from '../errors.js';
import { silentLogger, type Logger } from '../log.js';
import type { Queue, QueueRow } from '../queue/queue.js';
import type { DiscoveredRow } from '../queue/rows.js';
import type { WorkingState } from '../queue/states.js';
import type { RunStateName } from '../../shared/states.js';
import type { CopyPort, UploadPort } from './copy-port.js';
import { Dispatcher } from './dispatch.js';
import { ONE_SHOT_TRIES, type RunOptions } from './run-options.js';
import { Limiter } from './limiter.js';
import type { LocalCopies } from './local-copies.js';
import { Waker } from './waker.js';

export interface CopyLaneEvents {
  /** Every file of a source found so far is read: what the card's one read tells (its flight checks) is known. */
  read: [{ sourceId: string }];
  /** Every file of a source found so far is read and copied; none waits to be copied (again). */
  copied: [{ sourceId: string }];
}

/**
 * The copy lane's rows: files not read yet (their first read copies and
 * hashes them) of cards with destinations that count for them; the upload
 * lane reads the others' itself.
 */
const UNREAD: readonly WorkingState[] = ['discovered'];
const READ_BY_COPIES = true;

/** Files of a card in the copy lane at once: two copying (both cores), two being read back. */
const WIDTH = 4;

/**
 * The copy lane, the upload lane's peer under the agent: its own loop,
 * dispatcher and read limiter. It takes the due copy work from the store
 * (files not read yet, and copies wanted again of files already read),
 * reads each file of the card once (copied to every destination that wants
 * it, hashed in the same read), and hands it to the upload lane by the
 * store alone: the file's state past 'discovered', which the engine's
 * query takes. It writes only through its own doors (the copies' records,
 * a file's first read); it stops for the crew's pause and a halt, never for
 * the server, the link or a sign-in, so cards are copied at card speed
 * whatever the upload's retries do.
 */
export class CopyLane extends EventEmitter<CopyLaneEvents> {
  private readonly dispatcher: Dispatcher;
  /** First reads at once (copy and hash in one read). */
  private readonly reads: Limiter;
  private readonly log: Logger;
  /** Aborted on the crew's pause and on a halt: the reads in flight stop; made anew after. */
  private stop = new AbortController();
  private readonly waker = new Waker();
  /** Runs going on (0: the lane is not running, so the upload lane waits for nothing of it). */
  private runs = 0;
  /** A one-shot run's tries per file. */
  private limit: number | undefined;
  private upload: UploadPort | null = null;

  constructor(
    private readonly queue: Queue,
    private readonly copies: LocalCopies,
    opts: { logger?: Logger; readConcurrency?: number } = {},
  ) {
    super();
    this.log = opts.logger ?? silentLogger;
    this.reads = new Limiter(opts.readConcurrency ?? 2);
    this.dispatcher = new Dispatcher(queue, UNREAD, READ_BY_COPIES);
  }

  /** The upload lane's function values (the two lanes are built side by side: sync/peers.ts). */
  attach(upload: UploadPort): void {
    this.upload = upload;
  }

  private get up(): UploadPort {
    if (!this.upload) throw new Error('The copy lane runs beside an upload lane (sync/peers.ts).');
    return this.upload;
  }

  /** What the upload lane (the engine) is handed: function values, never the copies themselves. */
  port(): CopyPort {
    return {
      count: (sourceId) => this.copies.count(sourceId),
      place: (row) => this.copies.placeOf(row),
      hasCopy: (row) => this.copies.hasCopy(row),
      prepare: (sourceId, from) => this.copies.prepare(sourceId, from),
      wake: () => this.wake(true),
      busy: () => this.busy(),
      reading: (sourceId) => this.dispatcher.flies(sourceId),
    };
  }

  /** The run state changed: a pause or a halt stops the reads in flight; anything else lets them go on. */
  stateChanged(name: RunStateName): void {
    if (stops(name)) {
      if (!this.stop.signal.aborted) this.stop.abort(new DmsError('cancelled', 'Paused.'));
    } else if (this.stop.signal.aborted) this.stop = new AbortController();
    this.wake();
  }

  /** Looks again (`fresh`: new work recorded, due rows listed afresh). */
  wake(fresh = false): void {
    if (fresh) this.dispatcher.forget();
    this.waker.wake();
  }

  /**
   * Still has files to read in this run: one in flight, or (running, not
   * stopped) one due now or later with tries left.
   */
  busy(): boolean {
    if (this.dispatcher.inFlight > 0) return true;
    return this.runs > 0 && !stops(this.up.state()) && this.nextRead() !== null;
  }

  /** A source went away: its reads stop at once, its files still wanted somewhere wait for it. */
  sourceRemoved(sourceId: string, message: string): void {
    this.dispatcher.abortSource(sourceId, new DmsError('cancelled', message));
    this.copies.dropAgain(sourceId, this.queue.sources.labelOf(sourceId));
  }

  /**
   * The lane's loop: 'until-idle' returns once nothing is left to read or
   * copy now (files tried `maxAttempts` times are left for the next run);
   * 'forever' waits for work.
   */
  async run(opts: RunOptions): Promise<void> {
    const signal = opts.signal;
    const untilIdle = opts.mode === 'until-idle';
    this.limit = untilIdle ? (opts.maxAttempts ?? ONE_SHOT_TRIES) : undefined;
    this.runs++;
    const onAbort = () => this.wake();
    signal?.addEventListener('abort', onAbort);
    try {
      // Started beside the upload lane: its start (a one-shot run's fresh tries) comes first.
      await Promise.resolve();
      while (!signal?.aborted) {
        const state = this.up.state();
        if (!stops(state)) this.dispatch(signal);
        if (this.dispatcher.inFlight > 0) {
          // Woken as each file leaves the lane.
          await this.sleep(null);
          continue;
        }
        // A one-shot run ends on a halt; a pause waits for the crew.
        if (stops(state)) {
          if (untilIdle && state === 'halted') break;
          await this.sleep(null);
          continue;
        }
        const next = this.nextRead();
        if (next === null && untilIdle) break;
        await this.sleep(next === null ? null : Math.max(0, next - Date.now()));
      }
    } finally {
      signal?.removeEventListener('abort', onAbort);
      await this.dispatcher.settled();
      this.runs--;
      // The upload lane no longer waits for reads of this lane.
      this.up.wake();
    }
  }

  /**
   * When the next file is due to be read (0: now), or null when none is. A
   * card with destinations of a past run (none named in this one) is still
   * read here, once: its copies are then wanted again at its next scan.
   */
  private nextRead(): number | null {
    return this.queue.nextWakeAt(this.limit, UNREAD, READ_BY_COPIES);
  }

  /** Files not read yet first (card order), then copies wanted again of files already read. */
  private dispatch(signal?: AbortSignal): void {
    const signals = signal ? [signal] : [];
    for (const row of this.dispatcher.take(WIDTH, this.limit)) {
      if (row.state !== 'discovered') continue;
      this.start(row, (own) => this.read(row, [own, ...signals]), true);
    }
    while (this.dispatcher.inFlight < WIDTH) {
      const next = this.copies.nextAgain();
      if (!next || next.targets.length === 0) break;
      const { row, targets } = next;
      this.start(
        row,
        async (own) => {
          const s = AbortSignal.any([own, this.stop.signal, ...signals]);
          const ctx = this.up.context(s, row.id);
          try {
            const problem = await this.copies.copyAgain(row, targets, s, (n) => ctx.onBytes(n, false));
            // Said in the log (a plain line in a terminal); the card's local verdict names the copy missing.
            if (problem) this.log.warn({ source: row.sourceId, file: row.relPath }, problem);
          } catch (err) {
            this.log.warn({ source: row.sourceId, file: row.relPath }, toDmsError(err).message);
          }
        },
        false,
      );
    }
  }

  /** `first`: the file's first read (not a copy again of a file read before). */
  private start(row: QueueRow, work: (own: AbortSignal) => Promise<void>, first: boolean): void {
    this.up.working();
    this.dispatcher.start(row, work, () => {
      if (first && !this.queue.hasUnread(row.sourceId)) this.emit('read', { sourceId: row.sourceId });
      if (this.copies.finished(row.sourceId)) this.emit('copied', { sourceId: row.sourceId });
      // The file is read: the upload lane takes it from the store.
      this.up.wake();
      this.wake();
    });
  }

  /** discovered -> hashed: copied to each destination that wants it and hashed, the card read once. */
  private async read(row: DiscoveredRow, signals: readonly AbortSignal[]): Promise<void> {
    const ctx = this.up.context(AbortSignal.any([...signals, this.stop.signal]), row.id);
    try {
      this.queue.apply(row, await this.reads.run(() => this.copies.copy(ctx, row)));
    } catch (err) {
      // The one failure ladder (the card pulled, a file changed, the store full): the upload lane's.
      this.up.failed(row, err);
    }
  }

  private sleep(ms: number | null): Promise<void> {
    return this.waker.sleep(ms);
  }
}

/** The run states the copy lane stops in: the crew's pause, and a store that cannot record (halted). */
function stops(state: RunStateName): boolean {
  return state === 'paused' || state === 'halted';
}
