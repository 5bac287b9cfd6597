/**
 * One running agent: built from the settings and a resolved connection,
 * following the watched folders and (when auto-sync is on) the cards, with
 * its events translated into plain activity. Rebuilt whole when the server
 * or the sources change; the queue outlives it.
 */
import { Agent } from '../core/agent.js';
import type { Config } from '../core/config.js';
import { plainMessage, toDmsError } from '../core/errors.js';
import type { Logger } from '../core/log.js';
import type { Queue } from '../core/queue/queue.js';
import { CardMonitor } from '../core/sources/cards.js';
import type { ProgressSnapshot } from '../core/sync/progress.js';
import { startService, type RunningService } from '../service/index.js';
import type { Connection } from './connection.js';
import type { Activity } from './notifications.js';

export interface Runtime {
  agent: Agent;
  conn: Connection;
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
  /** Something the window shows changed (state, counts, the list). */
  changed(): void;
}

export interface RuntimeOptions {
  queue: Queue;
  config: Config;
  conn: Connection;
  logger: Logger;
  sink: RuntimeSink;
  quietMs?: number;
  cardPollMs?: number;
}

export function startRuntime(o: RuntimeOptions): Runtime {
  const agent = new Agent({
    queue: o.queue,
    api: o.conn.api,
    config: o.config,
    logger: o.logger,
    ...(o.quietMs === undefined ? {} : { quietMs: o.quietMs }),
  });
  const rt: Runtime = { agent, conn: o.conn, monitor: null };
  o.sink.adopt(rt);
  wire(agent, o.sink, o.logger);
  agent.start();
  for (const f of o.config.watchedFolders) watchFolder(agent, f, o.logger);
  if (o.config.autoSyncCards) {
    // Same card discovery as `watch --cards`: the configured mount roots, else the OS's.
    rt.monitor = new CardMonitor({
      ...(o.config.mountRoots.length ? { mountRoots: o.config.mountRoots } : {}),
      ...(o.cardPollMs ? { intervalMs: o.cardPollMs } : {}),
    });
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
    const label = e.source.label ?? e.source.root;
    sink.label(sourceId, label);
    if (e.type === 'source-added')
      activity({ type: 'source-added', sourceId, label, isCard: sourceId.startsWith('card:') });
    else if (e.type === 'source-removed') activity({ type: 'source-removed', sourceId });
    else if (e.type === 'scanned') {
      activity({ type: 'scanned', sourceId, pending: e.pending ?? 0, alreadyDone: e.alreadyDone ?? 0 });
    }
    if (live()) sink.changed();
  });
  // The engine sends progress at most 4 times a second and not after the last file of a
  // quick batch; counts are refreshed on every finished file and state change so "4 of 4" is shown.
  const refresh = () => sink.progress(agent.engine.progress.snapshot());
  agent.on('file', (e) => {
    activity({ type: 'file', outcome: e.outcome, size: e.size });
    if (!live()) return;
    refresh();
    sink.changed();
  });
  agent.on('progress', (p) => {
    if (live()) sink.progress(p);
  });
  agent.on('state', (state, err) => {
    activity({ type: 'state', state, message: err ? plainMessage(err) : null });
    if (!live()) return;
    refresh();
    sink.changed();
  });
  agent.on('wayline', ({ source, folder, match }) => {
    activity({ type: 'wayline', sourceId: source.sourceId, folder, waylineName: match?.waylineName ?? null });
  });
  agent.on('warning', (w) => log.warn(w));
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
