/**
 * One running agent: built from the settings and a resolved connection,
 * following the watched folders and (when auto-sync is on) the cards, with
 * its events translated into plain activity. Rebuilt whole when the server
 * or the sources change; the queue outlives it.
 */
import { Agent } from '../core/agent.js';
import type { Config } from '../core/config.js';
import { DmsError, plainMessage, toDmsError } from '../core/errors.js';
import type { Logger } from '../core/log.js';
import type { Queue } from '../core/queue/queue.js';
import { canUpload, type Connection } from '../core/session/connection.js';
import type { RunState } from '../core/sync/engine.js';
import type { PartGate } from '../core/sync/part-gate.js';
import { CardMonitor, type Card } from '../core/sources/cards.js';
import { cardSource } from '../core/sources/source.js';
import type { ProgressSnapshot } from '../core/sync/progress.js';
import { countSource } from '../core/sync/scan.js';
import type { OwnFolder } from '../core/media/discover.js';
import { startService, type RunningService } from '../service/index.js';
import type { CardLedger } from './card-ledger.js';
import type { Activity } from './notifications.js';

/** An agent at work for a target (a server, or the local service the user chose). */
export interface Runtime {
  agent: Agent;
  conn: Exclude<Connection, { kind: 'none' }>;
  monitor: CardMonitor | null;
}

/** Where a runtime reports; `live()` is false once it has been replaced (events still drain while it stops). */
export interface RuntimeSink {
  /** Called before the agent starts, so events it emits at once (a card already inserted) are live. */
  adopt(rt: Runtime): void;
  live(agent: Agent): boolean;
  activity(a: Activity): void;
  label(sourceId: string, label: string): void;
  progress(p: ProgressSnapshot): void;
  /** Each card's verdicts (local, workspace), its bytes in the workspace and stopped destinations. */
  cards: CardLedger;
  /** Something the window shows changed (state, counts, the list). */
  changed(): void;
}

export interface RuntimeOptions {
  queue: Queue;
  config: Config;
  conn: Exclude<Connection, { kind: 'none' }>;
  logger: Logger;
  sink: RuntimeSink;
  /** `<state>/manifests`: each card's manifest and report. */
  manifestsDir: string;
  quietMs?: number;
  cardPollMs?: number;
  /** The user's pause outlives a rebuild of the agent (a settings change must not resume). */
  paused?: boolean;
  /**
   * The link's policy, asked before every part (core/link: metered, pinned,
   * budget), as `watch` has it; it outlives a rebuild of the agent.
   */
  gate?: PartGate;
  /** The app's own folders besides its state (Chromium's profile, the logs): never read as a card's files. */
  ownFolders?: readonly OwnFolder[];
}

/**
 * Where the engine starts: paused when the user had paused; waiting for a
 * sign-in when the server has none yet (cards are recorded, nothing is sent).
 */
function initialState(o: RuntimeOptions): RunState | undefined {
  if (o.paused) return { name: 'paused' };
  if (canUpload(o.conn)) return undefined;
  const text = `Sign in to ${o.conn.label} to start uploading. Cards are queued meanwhile.`;
  return { name: 'auth-required', error: new DmsError('auth', text, { plain: text, retryable: false }) };
}

export function startRuntime(o: RuntimeOptions): Runtime {
  const agent = new Agent({
    queue: o.queue,
    api: o.conn.api,
    config: o.config,
    logger: o.logger,
    manifestsDir: o.manifestsDir,
    ...(o.quietMs === undefined ? {} : { quietMs: o.quietMs }),
    ...(initialState(o) ? { initialState: initialState(o) } : {}),
    ...(o.gate ? { gate: o.gate } : {}),
    ...(o.ownFolders ? { ownFolders: o.ownFolders } : {}),
  });
  const rt: Runtime = { agent, conn: o.conn, monitor: null };
  o.sink.adopt(rt);
  wire(agent, o.sink, o.logger);
  agent.start();
  for (const f of o.config.watchedFolders) watchFolder(agent, f, o.logger);
  if (o.config.autoSyncCards) {
    rt.monitor = cardMonitor(o.config, o.cardPollMs);
    agent.watchCards(rt.monitor);
  }
  return rt;
}

export function watchFolder(agent: Agent, folder: string, log: Logger): void {
  agent.addFolder(folder).catch((err: unknown) => {
    log.warn({ folder, kind: toDmsError(err).kind }, `Could not watch ${folder}`);
  });
}

function wire(agent: Agent, sink: RuntimeSink, log: Logger): void {
  const live = () => sink.live(agent);
  const activity = (a: Activity) => {
    if (live()) sink.activity(a);
  };
  agent.on('source', (e) => {
    const sourceId = e.source.sourceId;
    const label = e.source.label;
    sink.label(sourceId, label);
    if (e.type === 'source-added')
      activity({ type: 'source-added', sourceId, label, isCard: e.source.kind === 'card' });
    else if (e.type === 'source-removed') activity({ type: 'source-removed', sourceId });
    else if (e.type === 'scanned') {
      sink.cards.scanned(sourceId);
      activity({ type: 'scanned', sourceId, pending: e.pending, alreadyDone: e.alreadyDone });
      for (const w of e.skipped) log.warn({ source: sourceId, file: w.relPath }, w.message);
    }
    if (live()) sink.changed();
  });
  // The engine sends progress at most 4 times a second and not after the last file of a
  // quick batch; counts are refreshed on every finished file and state change so "4 of 4" is shown.
  const refresh = () => sink.progress(agent.engine.progress.snapshot());
  agent.on('file', (e) => {
    if (e.outcome === 'uploaded' || e.outcome === 'fast-uploaded' || e.outcome === 'stored')
      sink.cards.fileThere(e.sourceId, e.size);
    if (!live()) return;
    refresh();
    sink.changed();
  });
  // What the run did since the engine last went idle: the agent's result, summed up by the policy.
  agent.on('result', (r) =>
    activity({
      type: 'result',
      uploaded: r.uploaded.files,
      bytes: r.uploaded.bytes,
      alreadyThere: r.alreadyThere,
      failed: r.failedNow,
    }),
  );
  agent.on('progress', (p) => {
    if (live()) sink.progress(p);
  });
  agent.on('state', ({ to }) => {
    activity({
      type: 'state',
      state: to.name,
      message: 'error' in to ? plainMessage(to.error) : null,
      ...(to.name === 'halted' ? { halt: to.reason } : {}),
    });
    if (!live()) return;
    refresh();
    sink.changed();
  });
  agent.on('wayline', ({ source, folder, match }) => {
    activity({ type: 'wayline', sourceId: source.sourceId, folder, waylineName: match?.waylineName ?? null });
  });
  agent.on('warning', (w) => log.warn(w));
  agent.on('local', ({ source, offload }) => {
    sink.cards.local(source.sourceId, offload);
    const l = offload.local;
    if (l)
      activity({
        type: 'local',
        sourceId: source.sourceId,
        label: source.label,
        safe: l.safe,
        message: l.message,
      });
    if (live()) sink.changed();
  });
  agent.on('destination-stopped', ({ source, destination, message }) => {
    sink.cards.stopped(source.sourceId, destination, message);
    activity({
      type: 'destination-stopped',
      sourceId: source.sourceId,
      label: source.label,
      destination,
      message,
    });
    if (live()) sink.changed();
  });
  // A destination folder made for a card (not created yet, or gone from its drive): said once in the window.
  agent.on('destination', ({ source, destination, look, message }) => {
    if (!source || (look !== 'not-created' && look !== 'missing')) return;
    sink.cards.created(source.sourceId, destination, message);
    if (live()) sink.changed();
  });
  agent.on('cleaned', (c) =>
    log.info(
      { destination: c.destination.label, folder: c.folder, files: c.files },
      'staging copy deleted: every file of it is in the workspace',
    ),
  );
  agent.on('offload', ({ source, offload }) => {
    sink.cards.offload(source.sourceId, offload);
    const v = offload.verdict;
    activity({
      type: 'offload',
      sourceId: source.sourceId,
      label: source.label,
      safe: v.safe,
      message: v.message,
      reasons: v.reasons,
    });
    if (live()) sink.changed();
  });
}

/** The built-in local service, started on first need and kept until the app switches to a real server. */
export class LocalService {
  private running: Promise<RunningService> | null = null;
  private current: RunningService | null = null;

  constructor(
    private readonly dataDir: string,
    private readonly log: Logger,
  ) {}

  /** The service if it is running now (not started by asking). */
  get instance(): RunningService | null {
    return this.current;
  }

  get(): Promise<RunningService> {
    this.running ??= startService({
      dataDir: this.dataDir,
      port: 0,
      // Its request log would be a line per uploaded part: warnings only.
      logger: this.log.child({ name: 'local-service' }, { level: 'warn' }),
    }).then(
      (s) => (this.current = s),
      (err: unknown) => {
        this.running = null;
        throw err;
      },
    );
    return this.running;
  }

  async close(): Promise<void> {
    const r = this.running;
    this.running = null;
    this.current = null;
    if (r) await (await r.catch(() => null))?.close();
  }
}

/**
 * No server yet (the app before its first sign-in): cards are noticed and
 * counted, nothing is recorded or sent. The window says "Sign in to upload";
 * signing in starts a real runtime, which scans and syncs them.
 */
export class WaitingForSignIn {
  private readonly found = new Map<string, { card: Card; files: number }>();
  private readonly controller = new AbortController();

  constructor(
    readonly reason: string,
    readonly monitor: CardMonitor | null,
    config: Config,
    private readonly sink: Pick<RuntimeSink, 'activity' | 'label' | 'changed'>,
  ) {
    monitor?.on('inserted', (card) => {
      const source = cardSource(card);
      sink.label(source.sourceId, card.label);
      sink.activity({ type: 'source-added', sourceId: source.sourceId, label: card.label, isCard: true });
      countSource(source, config, this.controller.signal).then(
        ({ files }) => {
          this.found.set(card.id, { card, files });
          sink.changed();
        },
        () => undefined, // pulled while counting: the removal says it
      );
    });
    monitor?.on('removed', (card) => {
      this.found.delete(card.id);
      sink.activity({ type: 'source-removed', sourceId: cardSource(card).sourceId });
      sink.changed();
    });
    monitor?.start();
  }

  /** Cards inserted, with the media files waiting on each. */
  cards(): Array<{ id: string; label: string; root: string; files: number }> {
    return [...this.found.values()].map(({ card, files }) => ({
      id: card.id,
      label: card.label,
      root: card.root,
      files,
    }));
  }

  /** "212 files on M30T_CARD wait. Nothing is uploaded until you sign in." */
  attention(): string {
    const cards = this.cards();
    const files = cards.reduce((n, c) => n + c.files, 0);
    if (files === 0) return this.reason;
    const names = cards.map((c) => c.label).join(', ');
    return `${files} file${files === 1 ? '' : 's'} on ${names} ${files === 1 ? 'waits' : 'wait'}. Nothing is uploaded until you sign in.`;
  }

  stop(): void {
    this.controller.abort();
    this.monitor?.stop();
  }
}

/** Card discovery as `watch --cards` does it: the configured mount roots, else the OS's. */
export function cardMonitor(config: Config, cardPollMs?: number): CardMonitor {
  return new CardMonitor({
    ...(config.mountRoots.length ? { mountRoots: config.mountRoots } : {}),
    ...(cardPollMs ? { intervalMs: cardPollMs } : {}),
  });
}
