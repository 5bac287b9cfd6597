import { EventEmitter } from 'node:events';
import type { ApiClient } from './api/client.js';
import type { Config } from './config.js';
import { isServerWide, plainMessage, toDmsError } from './errors.js';
import { silentLogger, type Logger } from './log.js';
import type { History } from './queue/history.js';
import { flightFolderOf } from './media/flight-folder.js';
import type { BackoffPolicy, Queue, QueueRow } from './queue/queue.js';
import { matchWayline, WaylineCatalog, type WaylineMatch } from './waylines/match.js';
import { sourceAt, type Card, type CardMonitor } from './sources/cards.js';
import { completeLocal, completeSource, type Completed } from './offload/complete.js';
import { flightsOf, type CardOffload, type FlightOptions } from './offload/card.js';
import type { RunStopped } from './offload/types.js';
import { cleanStaging, type Cleaned } from './copies/staging.js';
import { ejectVolume } from './sources/eject.js';
import { FolderWatcher } from './sources/folder-watcher.js';
import type { PartGate } from './sync/part-gate.js';
import type { SyncEngine, FileEvent, RunState, RunStateChange } from './sync/engine.js';
import type { LocalCopies } from './sync/local-copies.js';
import { syncLanes, type SyncLanes } from './sync/peers.js';
import { ownFolders } from './sync/scan.js';
import type { Destination } from './queue/copies.js';
import type { ProgressSnapshot } from './sync/progress.js';
import type { DiscoverWarning, OwnFolder } from './media/discover.js';
import { cardSource, folderSource, type Source } from './sources/source.js';
import { gatherRun, runResult, RunTally, type RunResult } from './run-result.js';
import { LANE_NAMES, type LaneName } from './queue/lanes.js';
import { ONE_SHOT_TRIES } from './sync/engine.js';
import { DEFAULT_MULTIPART_THRESHOLD } from './storage/parts.js';

export type SourceEvent =
  | { type: 'source-added' | 'source-back'; source: Source }
  | { type: 'source-removed'; source: Source; waiting: number; message: string }
  /** A scan recorded what it found; `skipped`: links out of the source, never read. */
  | { type: 'scanned'; source: Source; pending: number; alreadyDone: number; skipped: DiscoverWarning[] }
  | { type: 'ejected' | 'eject-failed'; source: Source; message: string };

export interface AgentEvents {
  source: [SourceEvent];
  file: [FileEvent];
  progress: [ProgressSnapshot];
  state: [RunStateChange];
  idle: [];
  warning: [string];
  /** A flight folder was matched to a wayline (shown in notifications and `watch`). */
  wayline: [{ source: Source; folder: string; match: WaylineMatch | null }];
  /** A card came to rest: checked in the bucket, its verdict ("safe to format" or why not) and manifest. */
  offload: [{ source: Source } & Completed];
  /**
   * Every file of a card read and copied to the local destinations: its local
   * verdict ("locally safe", or why not), before the upload is done.
   */
  local: [{ source: Source; offload: CardOffload; histories: string[] }];
  /** A destination stopped for a card (full, unplugged, read-only, not enough room): its reason. */
  'destination-stopped': [{ source: Source; destination: string; message: string }];
  /** A destination's folder as a card's scan found it: created (not there yet), made again, or its drive unplugged. */
  destination: [{ source: Source | undefined; destination: string; look: string; message: string }];
  /** A staging destination's copy of a card was deleted: every file of it is in the workspace. */
  cleaned: [Cleaned];
  /** Run until stopped: what the run did since the last result, each time the engine goes idle. */
  result: [RunResult];
}

export interface AgentOptions {
  queue: Queue;
  api: ApiClient;
  config: Config;
  logger?: Logger;
  /** Quiet period before a growing file is read (copy in progress). */
  quietMs?: number;
  /** The copy lane and the upload lane, built by the caller (tests); default: built here (sync/peers.ts). */
  lanes?: SyncLanes;
  backoff?: BackoffPolicy;
  /** Where cards' manifests go (`<state>/manifests`); without it no verdict is made. */
  manifestsDir?: string;
  /** The run state to start in (a connection without a sign-in: 'auth-required'; a pause carried over). */
  initialState?: RunState;
  /** Asked before every part (the link's policy: metered, budget); default: every part may go. */
  gate?: PartGate;
  /**
   * The lanes the link holds now (asked without reserving anything, unlike
   * the gate): what is left in them waits for the link in the run's result.
   * Default: the gate's own `holds`; without either nothing waits for the link.
   */
  linkHolds?: () => Iterable<LaneName>;
  /**
   * Gives the gate its first facts (the link's watcher: on Linux a D-Bus
   * client and the system bus). `syncOnce` awaits it before its run when a
   * file of the target is not done, so no part leaves before the gate knows
   * the link; a card whose files are all done does not wait for it.
   * Absent: the gate knows the link already.
   */
  linkStart?: () => Promise<void>;
  /**
   * Folders the program writes besides its state, its copies and its code cache
   * (the desktop app's browser data and logs): never read as a source's files,
   * their writes wake no scan.
   */
  ownFolders?: readonly OwnFolder[];
}

/** What `syncOnce` did, per folder: its verdict and manifest (none when the run stopped short). */
export interface OnceResult {
  /** The sources the folders were taken as (a card by the card), in the order given. */
  sources: Source[];
  completed: Array<{ source: Source } & Completed>;
  /** What the run did, per card, what is left and why it stopped: what `sync` prints. */
  result: RunResult;
}

/**
 * The one agent behind `sync` (run once), `watch` and the tray app (run
 * until stopped): sources (cards, watched folders, the folders given) feed
 * the queue through one scan path, the engine drains it, and each source at
 * rest gets its verdict and manifest. A source that goes away parks its
 * files; when it comes back it is rescanned and resumes.
 */
export class Agent extends EventEmitter<AgentEvents> {
  /** The upload lane. */
  readonly engine: SyncEngine;
  /** The copies' owner: their destinations, and what a pulled card leaves wanted. */
  private readonly copies: LocalCopies;
  /** The two lanes, peers: the copy lane (its own loop) and the engine; each gets the other as function values. */
  private readonly lanes: SyncLanes;
  readonly waylines: WaylineCatalog;
  private readonly queue: Queue;
  private readonly log: Logger;
  private readonly watchers = new Map<string, FolderWatcher>();
  private readonly controller = new AbortController();
  private running: Promise<void> | null = null;
  private config: Config;
  private cardMonitor: CardMonitor | null = null;
  private readonly cards = new Map<string, Card>();
  /** Cards with something new since their last verdict. */
  private readonly unsettled = new Set<string>();
  private settling: Promise<void> = Promise.resolve();
  private readonly ejected = new Set<string>();
  /** Run once (`sync`): no card settling in the background. */
  private runOnce = false;
  /** `sync`: the flight folders being named after the waylines, while the files go (see rescan). */
  private readonly naming: Array<Promise<void>> = [];
  /** What this run saw that the store does not keep (outcomes, scans, verdicts said): half of its result. */
  private readonly tally = new RunTally();

  constructor(private readonly opts: AgentOptions) {
    super();
    this.queue = opts.queue;
    this.config = opts.config;
    this.log = opts.logger ?? silentLogger;
    const lanes =
      opts.lanes ??
      syncLanes({
        queue: opts.queue,
        api: opts.api,
        config: opts.config,
        logger: this.log,
        ...(opts.backoff ? { backoff: opts.backoff } : {}),
        ...(opts.initialState ? { initialState: opts.initialState } : {}),
        ...(opts.gate ? { gate: opts.gate } : {}),
        ...(opts.ownFolders ? { ownFolders: opts.ownFolders } : {}),
      });
    this.lanes = lanes;
    this.engine = lanes.engine;
    this.copies = lanes.copies;
    if (!opts.queue.target) throw new Error('The agent needs a queue bound to a target.');
    this.waylines = new WaylineCatalog(opts.api);
    this.engine.on('file', (e) => {
      this.tally.file(e);
      if (
        e.outcome === 'uploaded' ||
        e.outcome === 'fast-uploaded' ||
        e.outcome === 'stored' ||
        e.outcome === 'failed'
      ) {
        this.history.record({
          sourceId: e.sourceId,
          label: this.queue.sources.labelOf(e.sourceId),
          folder: flightFolderOf(e.relPath).path,
          size: e.size,
          outcome: e.outcome,
        });
      }
      if (this.cards.has(e.sourceId)) this.unsettled.add(e.sourceId);
      this.emit('file', e);
    });
    this.engine.on('progress', (p) => this.emit('progress', p));
    lanes.copyLane.on('copied', ({ sourceId }) => this.copiesAtRest(sourceId));
    // A card's files all read: by the copy lane with local copies, else by the engine.
    lanes.copyLane.on('read', ({ sourceId }) => this.holdFlagged(sourceId));
    this.engine.on('read', ({ sourceId }) => this.holdFlagged(sourceId));
    this.copies.on('stop', ({ sourceId, destination, message }) => {
      const source = this.sourceById(sourceId);
      if (source) this.emit('destination-stopped', { source, destination: destination.label, message });
    });
    this.copies.on('seen', ({ sourceId, destination, look, message }) =>
      this.emit('destination', {
        source: this.sourceById(sourceId),
        destination: destination.label,
        look,
        message,
      }),
    );
    this.engine.on('state', (change) => {
      // Going idle: what the run did comes first, so whoever sums it up at 'idle' has it.
      const idle = change.to.name === 'idle' && !this.runOnce;
      if (idle) this.emitResult();
      this.emit('state', change);
      // `sync` settles its folders itself, after its one run.
      if (idle) {
        this.emit('idle');
        void this.settleCards();
        void this.ejectFinishedCards();
      }
    });
  }

  /** Per card and flight folder: what came, when, and the wayline of each flight (the store's). */
  get history(): History {
    return this.queue.history;
  }

  /**
   * `sync`: the folders once. Each is scanned (links out of it named, never
   * read), everything is synced until nothing is left to do now, and each
   * folder at rest gets its verdict and manifest, unless the run stopped
   * short (a sign-in to renew, a halt, Ctrl+C).
   */
  async syncOnce(roots: readonly string[], signal?: AbortSignal): Promise<OnceResult> {
    this.runOnce = true;
    this.tally.reset();
    // A card by the card (two cards from one slot are two), another folder by its path.
    const sources = roots.map((root) => sourceAt(root));
    for (const source of sources) {
      this.known.set(source.sourceId, source);
      this.history.begin(source.sourceId);
      await this.rescan(source, signal);
    }
    if (this.opts.linkStart && this.maySend()) await this.opts.linkStart();
    await this.lanes.run({ mode: 'until-idle', ...(signal ? { signal } : {}) });
    // The flights' names (the waylines' answer) are the verdict's and the report's: in before them.
    await Promise.all(this.naming.splice(0));
    const completed: OnceResult['completed'] = [];
    const manifestsDir = this.opts.manifestsDir;
    const stopped = this.engine.state === 'auth-required' || this.engine.state === 'halted';
    if (manifestsDir && !stopped && !signal?.aborted) {
      for (const source of sources) {
        const done = await this.complete(source, manifestsDir, signal);
        this.emitOffload({ source, ...done });
        completed.push({ source, ...done });
      }
      this.tidyStaging();
    }
    return { sources, completed, result: this.result(sources, signal?.aborted ?? false) };
  }

  /** Whether a run may send a file's bytes: a file of the target not done (a failed one gets fresh tries). */
  private maySend(): boolean {
    return Object.entries(this.queue.counts()).some(([state, c]) => state !== 'done' && c.files > 0);
  }

  /**
   * What the run did for these sources (since `syncOnce` began, or the last
   * result): the run's tally beside one read of the store's facts.
   */
  result(sources: ReadonlyArray<{ sourceId: string; label: string }>, cancelled = false): RunResult {
    const gate = this.opts.gate;
    const holds =
      this.opts.linkHolds ?? (gate?.holds ? () => LANE_NAMES.filter((l) => gate.holds?.(l)) : undefined);
    return runResult({
      cards: gatherRun(this.queue, sources),
      tally: this.tally,
      bytesSent: this.engine.progress.bytesSent,
      engine: { state: this.engine.state, error: this.engine.error },
      cancelled,
      ...(holds ? { heldLanes: new Set(holds()) } : {}),
    });
  }

  /**
   * What is left over every card (the app's standing between runs): files
   * failed, files waiting for their card, and whether any file was ever recorded.
   */
  left(): { failed: number; card: number; anyFiles: boolean } {
    const counts = this.queue.counts();
    return {
      failed: counts.failed.files,
      card: counts['waiting-for-source'].files,
      anyFiles: Object.values(counts).some((c) => c.files > 0),
    };
  }

  /** Whether any file has a try left in this one-shot run (else it stops now, and says so at the end). */
  get triesLeft(): boolean {
    return !this.engine.givesUp && this.queue.nextWakeAt(ONE_SHOT_TRIES) !== null;
  }

  /** The engine went idle: what it did since the last result, for `watch` and the app. */
  private emitResult(): void {
    const touched = this.tally.touched;
    if (touched.length === 0) return;
    try {
      const result = this.result(
        touched.map((sourceId) => ({ sourceId, label: this.queue.sources.labelOf(sourceId) })),
      );
      this.tally.reset();
      this.emit('result', result);
    } catch (err) {
      this.emit('warning', `What the run did could not be read: ${toDmsError(err).message}`);
    }
  }

  /** A card's verdict, said and kept for the run's result (its copies' part). */
  private emitOffload(done: { source: Source } & Completed): void {
    const local = done.offload.local;
    // A run that makes no copies (none named, none in the settings) was not asked for any: the
    // copies of an earlier run are said with the verdict, never counted as this run's shortfall.
    if (local && this.copies.enabled)
      this.tally.copies(done.source.sourceId, { safe: local.safe, made: local.made, message: local.message });
    this.emit('offload', done);
  }

  start(): void {
    this.running ??= this.lanes.run({ mode: 'forever', signal: this.controller.signal });
  }

  async stop(): Promise<void> {
    this.cardMonitor?.stop();
    this.controller.abort();
    await this.settling;
    await Promise.all([...this.watchers.values()].map((w) => w.stop()));
    this.watchers.clear();
    await this.running;
    this.engine.close();
  }

  /** Watches a folder: reconciles it now (what changed while we were not running), then follows changes. */
  async addFolder(root: string): Promise<void> {
    const source = folderSource(root);
    if (this.watchers.has(source.sourceId)) return;
    const watcher = new FolderWatcher(
      source,
      {
        files: (s) => void this.rescan(s),
        gone: (s) => this.sourceGone(s),
        back: (s) => {
          this.emit('source', { type: 'source-back', source: s });
          void this.rescan(s);
        },
      },
      { quietMs: this.quietMs, own: () => ownFolders(this.queue, this.opts.ownFolders).map((f) => f.path) },
    );
    this.watchers.set(source.sourceId, watcher);
    this.known.set(source.sourceId, source);
    watcher.start();
    this.history.begin(source.sourceId);
    this.emit('source', { type: 'source-added', source });
    await this.rescan(source);
  }

  /**
   * Follows card insertions: each DJI card becomes a source named by its
   * identity, so the same card at another mount point continues where it was.
   */
  watchCards(monitor: CardMonitor): void {
    monitor.on('inserted', (card) => void this.addCard(card));
    monitor.on('removed', (card) => {
      const w = this.watchers.get(cardSource(card).sourceId);
      if (w && w.source.root === card.root) {
        this.cards.delete(w.source.sourceId);
        this.watchers.delete(w.source.sourceId);
        void w.stop();
        this.sourceGone(w.source);
      }
    });
    this.cardMonitor = monitor;
    monitor.start();
  }

  /** A card setting: the card's own value, else the global one. */
  private cardSetting(cardId: string, key: 'autoSync' | 'ejectAfterSync'): boolean {
    const own = this.config.cards[cardId]?.[key];
    return own ?? (key === 'autoSync' ? this.config.autoSyncCards : this.config.ejectAfterSync);
  }

  /**
   * Cards at rest (nothing left to do) with something new since their last
   * verdict: every object checked again in the bucket, the verdict, the
   * manifest. One at a time, in the background of an idle engine.
   */
  private settleCards(): Promise<void> {
    const manifestsDir = this.opts.manifestsDir;
    if (!manifestsDir) return this.settling;
    this.settling = this.settling.then(async () => {
      for (const [sourceId, card] of this.cards) {
        // Files still being written when last scanned are looked at again first: no verdict meanwhile.
        const scanned = this.queue.sources.lastScan(sourceId)?.complete === true;
        if (
          !this.unsettled.has(sourceId) ||
          !scanned ||
          this.queue.hasWork(sourceId) ||
          this.controller.signal.aborted
        )
          continue;
        this.unsettled.delete(sourceId);
        try {
          const done = await this.complete(cardSource(card), manifestsDir, this.controller.signal);
          this.emitOffload({ source: cardSource(card), ...done });
          if (done.offload.verdict.safe) this.tidyStaging();
        } catch (err) {
          const e = toDmsError(err);
          if (e.kind !== 'cancelled')
            this.emit('warning', `The verdict for ${card.label} could not be made: ${e.message}`);
        }
      }
    });
    return this.settling;
  }

  /** A source at rest: its objects checked in the bucket, its verdict, its manifest written and uploaded. */
  /** The cards and folders this agent follows (or syncs once), by id. */
  private readonly known = new Map<string, Source>();
  /** Sources said removed and not seen since: a removal is said once, whoever notices it (watcher, monitor, a scan). */
  private readonly gone = new Set<string>();

  private sourceById(sourceId: string): Source | undefined {
    return this.known.get(sourceId);
  }

  /**
   * A card's files are all read and copied (the copy lane drained
   * for it): its local verdict and each destination's history, at once,
   * while the upload goes on from the copies.
   */
  private copiesAtRest(sourceId: string): void {
    const source = this.sourceById(sourceId);
    if (!source || this.localDestinations.length === 0) return;
    try {
      const done = completeLocal({
        queue: this.queue,
        card: { sourceId, label: source.label },
        destinations: this.localDestinations,
        flights: this.flightOptions(),
      });
      const local = done.offload.local;
      if (local && this.copies.enabled)
        this.tally.copies(sourceId, { safe: local.safe, made: local.made, message: local.message });
      this.emit('local', { source, ...done });
    } catch (err) {
      const e = toDmsError(err);
      this.emit('warning', `The local verdict for ${source.label} could not be made: ${e.message}`);
    }
  }

  /**
   * A source's files are all read, so its flight checks have run: with the
   * crew's "leave flagged frames out of a metered upload" on, the photos
   * they found probably unusable go through the lanes' door into the
   * 'flagged' lane, which the link holds on a metered network (issue 32).
   * Hints (sharpness, RTK, clock) are not held.
   */
  private holdFlagged(sourceId: string): void {
    const target = this.queue.target;
    if (!this.config.holdFlaggedOnMetered || !target) return;
    try {
      const rows = this.queue.list({ sourceId, limit: 1_000_000 });
      const flagged = flightsOf(this.queue, sourceId, rows, this.flightOptions()).flatMap((f) =>
        (f.frames ?? []).filter((x) => x.unusable).map((x) => x.relPath),
      );
      if (flagged.length === 0) return;
      const moved = this.queue.lanes.flag(target.id, sourceId, flagged);
      if (moved > 0)
        this.log.info({ source: sourceId, photos: moved }, 'flagged photos wait for an unmetered network');
    } catch (err) {
      this.emit('warning', `The flagged photos could not be set aside: ${toDmsError(err).message}`);
    }
  }

  /** Staging copies whose every file is in the workspace, older than their destination keeps them: deleted. */
  private tidyStaging(): void {
    try {
      for (const c of cleanStaging(this.queue)) this.emit('cleaned', c);
    } catch (err) {
      this.emit('warning', `A staging copy could not be cleaned up: ${toDmsError(err).message}`);
    }
  }

  private complete(source: Source, manifestsDir: string, signal?: AbortSignal): Promise<Completed> {
    return completeSource({
      queue: this.queue,
      destinations: this.localDestinations,
      bucket: this.engine.bucket,
      card: { sourceId: source.sourceId, label: source.label },
      manifestsDir,
      recheckAfterMs: this.config.recheckAfterMinutes * 60_000,
      log: this.log,
      flights: this.flightOptions(),
      ...(signal ? { signal } : {}),
      ...(this.engine.givesUp ? { serverDown: true } : {}),
      // A one-shot run has ended here: what is not sent waits for the next run, for this reason.
      ...(this.runOnce ? { stopped: this.whyStopped() } : {}),
    });
  }

  /** Why a one-shot run left files: the server's failure in the crew's words, or none (it simply ended). */
  private whyStopped(): RunStopped {
    const err = this.engine.state === 'offline' ? this.engine.status.error : null;
    // The same advice as the run's last line ("run sync again once it answers").
    return { reason: err ? plainMessage(err, 'request') : null, once: 'it answers' };
  }

  /** The crew's settings of the flight checks. */
  private flightOptions(): FlightOptions {
    return { minHeight: this.config.flightMinHeightM ?? null };
  }

  /** A card's verdict is due again (the crew accepted one of its flights): made now if it is at rest. */
  reconsider(sourceId: string): Promise<void> {
    if (this.cards.has(sourceId)) this.unsettled.add(sourceId);
    return this.settleCards();
  }

  /** After a sync: eject the cards that asked for it and have nothing left to do. */
  private async ejectFinishedCards(): Promise<void> {
    for (const [sourceId, card] of this.cards) {
      if (this.ejected.has(sourceId) || !this.cardSetting(card.id, 'ejectAfterSync')) continue;
      if (this.queue.hasWork(sourceId)) continue;
      this.ejected.add(sourceId);
      const r = await ejectVolume(card.root, card.device);
      this.emit('source', {
        type: r.ok ? 'ejected' : 'eject-failed',
        source: cardSource(card),
        message: r.message,
      });
    }
  }

  async addCard(card: Card): Promise<void> {
    const source = cardSource(card);
    this.cards.set(source.sourceId, card);
    this.unsettled.add(source.sourceId);
    this.ejected.delete(source.sourceId);
    const old = this.watchers.get(source.sourceId);
    if (old) await old.stop();
    const watcher = new FolderWatcher(
      source,
      {
        files: (s) => {
          if (this.cardSetting(card.id, 'autoSync')) void this.rescan(s);
        },
        // The monitor is the one door for a card coming and going: the watcher, which may notice a
        // pull first, asks it to look now. A card put back before the monitor's own next look was
        // otherwise never taken up again (its watcher stopped, the monitor never saw it go).
        gone: (s) => {
          if (this.cardMonitor) this.cardMonitor.poll();
          else if (this.watchers.get(s.sourceId) === watcher) {
            this.watchers.delete(s.sourceId);
            void watcher.stop();
            this.sourceGone(s);
          }
        },
        back: (s) => {
          if (this.cardSetting(card.id, 'autoSync')) void this.rescan(s);
        },
      },
      { quietMs: this.quietMs, own: () => ownFolders(this.queue, this.opts.ownFolders).map((f) => f.path) },
    );
    this.watchers.set(source.sourceId, watcher);
    this.known.set(source.sourceId, source);
    watcher.start();
    this.history.begin(source.sourceId);
    this.emit('source', { type: 'source-added', source });
    // Auto-sync off (for all cards or this one): announced, synced on "Sync now".
    if (this.cardSetting(card.id, 'autoSync')) await this.rescan(source);
  }

  /** A source went away: its unfinished files wait for it, nothing is lost or marked deleted. */
  sourceGone(source: Source): number {
    if (this.gone.has(source.sourceId)) return 0;
    this.gone.add(source.sourceId);
    // Both lanes stop reading from it: the copies it still wanted wait for it, then the uploads.
    this.lanes.copyLane.sourceRemoved(
      source.sourceId,
      `${source.label} was removed; its files will continue when it is back.`,
    );
    const waiting = this.engine.sourceRemoved(
      source.sourceId,
      `${source.label} was removed; its files will continue when it is back.`,
    );
    const message =
      waiting === 0
        ? `${source.label} was removed; nothing of it waits for the card.`
        : `${source.label} was removed; ${waiting} file${waiting === 1 ? '' : 's'} will continue when it is inserted again.`;
    this.emit('source', { type: 'source-removed', source, waiting, message });
    return waiting;
  }

  /** Rescan every known folder now ("Sync now"). */
  async syncNow(): Promise<void> {
    await Promise.all([...this.watchers.values()].map((w) => this.rescan(w.source)));
    this.engine.wake();
  }

  updateConfig(config: Config): void {
    this.config = config;
    this.copies.updateConfig(config);
    this.engine.updateConfig(config);
    this.lanes.copyLane.wake(true);
    if (!config.holdFlaggedOnMetered) this.queue.lanes.unflag();
  }

  /** The local destinations cards are copied to (settings and `--copy-to`). */
  get localDestinations(): readonly Destination[] {
    return this.copies.all;
  }

  private get quietMs(): number {
    return this.opts.quietMs ?? 2000;
  }

  /** Corrects (or clears, with null) the wayline of a flight folder; the user's word wins from then on. */
  async setFolderWayline(folder: string, waylineId: string | null): Promise<number> {
    if (waylineId === null) return this.history.setWayline(folder, null, { user: true });
    const w = (await this.waylines.all()).find((x) => x.id === waylineId);
    return this.history.setWayline(
      folder,
      { waylineId, waylineName: w?.name ?? waylineId, how: 'user' },
      { user: true },
    );
  }

  /**
   * Files to send: the bucket's credentials asked for (and its SDK loaded) while
   * they are hashed, not after the first fast-upload answer (issue 31: a round
   * trip, 0.6 s on a 4G or satellite uplink, and a module load). Only where the
   * card's manifest goes to the bucket at its rest, which needs them whatever
   * the server already knows; never without a sign-in.
   */
  private warmBucket(pending: readonly QueueRow[], signal: AbortSignal): void {
    const state = this.engine.state;
    if (!this.opts.manifestsDir || state === 'auth-required' || state === 'paused') return;
    this.engine.bucket.warm({
      parts: pending.some((r) => r.size >= DEFAULT_MULTIPART_THRESHOLD),
      signal,
    });
  }

  /** Matches the new flight folders of a scan to the workspace's waylines by mission name. */
  private async matchFolders(source: Source, rows: readonly QueueRow[]): Promise<void> {
    const missions = new Map<string, string>();
    // Once per folder, not per file: a folder's thousands of photos ask the history once.
    const seen = new Set<string>();
    for (const r of rows) {
      const f = flightFolderOf(r.relPath);
      if (!f.missionName || seen.has(f.path)) continue;
      seen.add(f.path);
      if (!this.history.hasDecision(f.path)) missions.set(f.path, f.missionName);
    }
    if (missions.size === 0) return;
    try {
      const list = await this.waylines.all(this.controller.signal);
      for (const [folder, mission] of missions) {
        const match = matchWayline(mission, list);
        if (match) this.history.setWayline(folder, match);
        this.emit('wayline', { source, folder, match });
      }
    } catch (err) {
      const e = toDmsError(err);
      // The server down as a whole is said once by the run state (issue 30): only the log gets it here.
      if (e.kind === 'cancelled') return;
      if (isServerWide(e))
        this.log.info(
          { kind: e.kind, detail: e.message },
          'waylines could not be listed to name the flights',
        );
      else
        this.emit(
          'warning',
          `Waylines could not be listed to name the flights: ${plainMessage(e, 'request')}`,
        );
    }
  }

  /** The one scan path (`sync`, `watch`, the app): recorded by the engine, which halts on a full disk. */
  private async rescan(source: Source, signal: AbortSignal = this.controller.signal): Promise<void> {
    try {
      const r = await this.engine.scan(source, signal, { quietMs: this.runOnce ? 0 : this.quietMs });
      this.gone.delete(source.sourceId);
      // The card's other folders (one folder of it synced) are said by the verdict, not kept-nowhere files.
      const notKept = r.skipped.filter((w) => w.blocking && w.kind !== 'rest-of-card').length;
      this.tally.scanned(source.sourceId, r.alreadyDone, notKept);
      // Files too fresh to read (still being written when we looked) get
      // another look once the quiet period is over: the watcher only reports
      // files that change after it started.
      if (r.deferred > 0 && !this.controller.signal.aborted) {
        setTimeout(() => void this.rescan(source), this.quietMs + 100).unref();
      }
      if (r.pending.length) {
        this.warmBucket(r.pending, signal);
        // `sync` does not wait for the waylines' answer to start hashing and sending (a round
        // trip: 0.6 s on a 4G or satellite uplink); it waits for it before the verdict.
        const naming = this.matchFolders(source, r.pending);
        if (this.runOnce) this.naming.push(naming);
        else await naming;
      }
      // Nothing new on a card seen before: the engine stays idle, so say its verdict now.
      else if (!this.runOnce) void this.settleCards();
      // Said to the person by whoever listens to 'scanned' (watch, the window): logged, not printed twice.
      for (const w of r.skipped) this.log.info({ source: source.sourceId, file: w.relPath }, w.message);
      this.emit('source', {
        type: 'scanned',
        source,
        pending: r.pending.length,
        alreadyDone: r.alreadyDone,
        skipped: r.skipped,
      });
      // Destinations stopped for the card at this scan (unplugged, too small): said after 'scanned' (a
      // scan starts each destination afresh for the crew, so its stops come after it).
      for (const stop of r.destinationsStopped)
        this.emit('destination-stopped', {
          source,
          destination: stop.destination.label,
          message: stop.message,
        });
      this.log.debug({ source: source.sourceId, pending: r.pending.length }, 'scanned');
    } catch (err) {
      const e = toDmsError(err);
      if (e.kind === 'source-missing') this.sourceGone(source);
      else if (e.kind !== 'cancelled') this.emit('warning', `Could not read ${source.root}: ${e.message}`);
    }
  }
}
