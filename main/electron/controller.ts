/**
 * The desktop app's logic, free of Electron so it runs (and is tested) in
 * plain Node: builds the agent from config.json and the stored sign-in,
 * answers every IPC request, and turns agent events into throttled pushes
 * for the window and plain activity for the tray and notifications.
 */
import { EventEmitter } from 'node:events';
import fs from 'node:fs';
import path from 'node:path';
import type { CardRef } from '../core/offload/card.js';
import { defaultConfig, loadConfig, parseConfig, saveConfig, type Config } from '../core/config.js';
import { startLink, type LinkController } from '../core/link/controller.js';
import type { LinkQuestion } from '../core/link/gate.js';
import { parseTimetable, rateAt } from '../core/link/timetable.js';
import { needsAnswer } from '../core/link/transitions.js';
import type { LinkWatcher } from '../core/link/watcher.js';
import type { OwnFolder } from '../core/media/discover.js';
import { plainMessage, QueueLockedError, toDmsError } from '../core/errors.js';
import { silentLogger, type Logger } from '../core/log.js';
import { statePaths, type StatePaths } from '../core/paths.js';
import type { LaneName } from '../core/queue/lanes.js';
import type { Queue } from '../core/queue/queue.js';
import { canUpload } from '../core/session/connection.js';
import { FORGET_KEEPS, forgetPlan, forgetTarget, targetName } from '../core/session/forget-target.js';
import { openSession, type Session } from '../core/session/open.js';
import { LOCAL_LABEL, sameServer } from '../core/session/target.js';
import type {
  AccountView,
  AppStateView,
  FlightSummaryView,
  FlightView,
  HistoryEntryView,
  LinkView,
  QueueItemView,
  SettingsAnswer,
  SettingsView,
  TargetView,
  WaylinePageView,
  WaylineQueryView,
} from '../shared/ipc.js';
import { signIn, testConnection, verifyToken } from './account.js';
import { CardLedger } from './card-ledger.js';
import { UserError } from './failures.js';
import { flightSummaries, flightView, TileCache } from './flights.js';
import type { Activity } from './notifications.js';
import { listQueue, retryFailed, type QueueFilter } from './queue-query.js';
import {
  cardMonitor,
  LocalService,
  startRuntime,
  WaitingForSignIn,
  watchFolder,
  type Runtime,
} from './runtime.js';
import type { SecretStore, StoredToken } from './secrets.js';
import { applySettings, needsRestart, toSettingsView } from './settings.js';
import { Pushes, type PushMessage } from './pushes.js';
import {
  appStateView,
  historyViews,
  progressView,
  queueItemView,
  waylinePageView,
  waylineQuery,
} from './views.js';

export type { PushMessage } from './pushes.js';

export interface ControllerEvents {
  push: [PushMessage];
  activity: [Activity];
  /** The settings in force (the shell applies start-at-login); `configured` once config.json exists. */
  config: [Config, { configured: boolean }];
}

export interface ControllerOptions {
  stateDir: string;
  secrets: SecretStore;
  logger?: Logger;
  env?: NodeJS.ProcessEnv;
  /** Test knobs: quiet period of growing files, card polling, push interval, lock retries. */
  quietMs?: number;
  cardPollMs?: number;
  pushIntervalMs?: number;
  lockRetryMs?: number;
  /** What the OS says of the link (default: this OS's watcher; tests: NetworkManager on a private bus). */
  linkWatcher?: LinkWatcher;
  /** The app's folders besides its state (Chromium's profile, the logs): never read as a card's files. */
  ownFolders?: readonly OwnFolder[];
}

/** While the command line holds the queue, the app looks again this often. */
const LOCK_RETRY_MS = 5_000;

export class AppController extends EventEmitter<ControllerEvents> {
  readonly paths: StatePaths;
  private readonly log: Logger;
  private readonly env: NodeJS.ProcessEnv;
  private readonly local: LocalService;
  private readonly push: Pushes;
  private config: Config = defaultConfig();
  private session: Session | null = null;
  private rt: Runtime | null = null;
  /**
   * The link (core/link, docs/link.md), as `watch` has it: what the OS says,
   * the crew's pins, budgets and timetable, asked before every part. Started
   * with the first agent, kept across rebuilds, stopped on quit.
   */
  private link: LinkController | null = null;
  /** The link's last question ("Upload 41 GB of photos and videos over this metered network?"). */
  private linkQuestion: LinkQuestion | null = null;
  /** Networks (and their kind of link) whose question the crew put off ("Not now") in this session. */
  private readonly linkNotNow = new Set<string>();
  /** No server chosen yet: cards are counted, nothing is sent ("Sign in to upload"). */
  private waiting: WaitingForSignIn | null = null;
  private lockRetry: NodeJS.Timeout | null = null;
  /** Each card's verdicts (locally safe, in the workspace), by source id. */
  private readonly cards = new CardLedger();
  /** The stored sign-in as the agent was built with it (who and where; its token is never shown). */
  private stored: StoredToken | null = null;
  private stopped = false;
  private startError: string | null = null;
  private chain: Promise<unknown> = Promise.resolve();

  constructor(private readonly opts: ControllerOptions) {
    super();
    this.paths = statePaths(opts.stateDir);
    this.log = opts.logger ?? silentLogger;
    this.env = opts.env ?? process.env;
    this.local = new LocalService(this.paths.service, this.log);
    this.push = new Pushes(
      (m: PushMessage) => this.emit('push', m),
      () => this.state(),
      opts.pushIntervalMs,
    );
  }

  start(): Promise<void> {
    return this.serial(async () => {
      const config = this.readConfig();
      if (!config) {
        // Running on defaults could sync cards to the wrong place. Nothing runs
        // until the file is fixed or the settings are saved.
        this.changed();
        return;
      }
      this.config = config;
      this.emitConfig();
      await this.build();
    });
  }

  /**
   * The lock, the queue and the server, the same way the command line opens
   * them (core/session): the app and `sync`/`watch` never drain one queue at
   * once. While the command line holds it, the app says so and looks again.
   */
  private async openSession(): Promise<boolean> {
    try {
      this.session = await openSession({
        stateDir: this.opts.stateDir,
        config: this.config,
        env: this.env,
        tokens: this.opts.secrets,
        noServer: 'sign-in',
        localService: async () => ({ ...(await this.local.get()), dataDir: this.paths.service }),
        what: 'Drone Media Sync',
        lockWaitMs: 0,
      });
      if (this.session.notice) this.log.warn(this.session.notice);
      return true;
    } catch (err) {
      // e.g. `sync` running in a terminal, or better-sqlite3 not rebuilt for this Electron.
      const e = toDmsError(err);
      const held = err instanceof QueueLockedError;
      this.startError = held
        ? `${e.message} The app takes over as soon as it has finished.`
        : `The upload queue (${this.paths.queue}) cannot be opened: ${e.message}`;
      this.log.error({ err: e.toJSON() }, 'queue did not open');
      if (held && !this.stopped) {
        this.lockRetry = setTimeout(() => {
          this.lockRetry = null;
          void this.serial(async () => {
            if (!this.session && !this.stopped) await this.build();
          });
        }, this.opts.lockRetryMs ?? LOCK_RETRY_MS);
        this.lockRetry.unref();
      }
      this.changed();
      return false;
    }
  }

  /** Stops the agent (in-flight uploads keep their recorded parts), the local service and the queue. */
  stop(): Promise<void> {
    this.stopped = true;
    if (this.lockRetry) clearTimeout(this.lockRetry);
    return this.serial(async () => {
      await this.teardown();
      await this.link?.stop();
      this.link = null;
      await this.local.close();
      this.push.cancel();
      this.session?.close();
      this.session = null;
    });
  }

  state(): AppStateView {
    const rt = this.rt;
    const waiting = this.waiting;
    // What is left, as the agent says it (the window only shows it).
    const left = rt?.agent.left();
    const view = appStateView({
      engine: rt?.agent.engine ?? null,
      signedIn: rt ? canUpload(rt.conn) : false,
      serverLabel:
        rt?.conn.label ??
        (this.config.server?.url || (this.config.useLocalService ? LOCAL_LABEL : 'No server chosen yet')),
      account: this.account(),
      startError: rt ? null : (waiting?.attention() ?? this.startError ?? 'The sync engine is not running.'),
      failedCount: left?.failed ?? 0,
      waitingForCard: left?.card ?? 0,
      hasFiles: left?.anyFiles ?? false,
      destinations: rt?.agent.localDestinations.map((d) => d.label) ?? [],
      progress: this.push.progress,
      cards: rt?.monitor?.cards() ?? waiting?.cards() ?? [],
      verdicts: (sourceId) => this.cards.view(sourceId),
    });
    return { ...view, link: rt ? this.linkView() : null };
  }

  /** The link line: the network, metered or not and why, the budget left, the limit now, the question. */
  private linkView(): LinkView | null {
    const link = this.link;
    if (!link) return null;
    const { gate, detected, settings } = link;
    const snap = gate.snapshot();
    const facts = gate.facts;
    const pin = (facts.key && settings.link.networks[facts.key]?.pin) || null;
    const timetable = settings.link.timetable ?? null;
    const q = this.linkQuestion;
    const asking =
      q !== null &&
      needsAnswer(snap.state) &&
      q.network === facts.key &&
      q.cost === snap.state.cost &&
      !this.linkNotNow.has(`${q.network} ${q.cost}`);
    return {
      network: facts.label,
      known: facts.key !== '',
      cost: facts.cost,
      why: pin ? 'pinned' : detected.cost === 'unknown' ? 'not-said' : 'detected',
      source: detected.source,
      pin,
      state: snap.state.name,
      answer: snap.state.answer,
      budget: snap.budget,
      limit: {
        bytesPerSecond: timetable
          ? rateAt(parseTimetable(timetable), new Date())
          : settings.bandwidthLimitKiBps * 1024,
        timetable,
      },
      question: asking ? q.text : null,
    };
  }

  private requireNetwork(): LinkController {
    const link = this.link;
    if (!link) throw new UserError('unavailable', 'The link is not watched yet: try again in a moment.');
    if (!link.gate.facts.key)
      throw new UserError('invalid-input', 'No network found (no default route): connect first.');
    return link;
  }

  /**
   * The crew's answer to the link's question, for the network the agent is
   * on: yes and never are kept for it (link.db, as `link answer yes|no`);
   * not now puts the question off for this session.
   */
  linkAnswer(answer: 'yes' | 'not-now' | 'never'): AppStateView {
    const { gate } = this.requireNetwork();
    if (answer === 'not-now') this.linkNotNow.add(`${gate.facts.key} ${gate.state.cost}`);
    else gate.answer(answer === 'yes' ? 'yes' : 'no');
    this.log.info({ network: gate.facts.label, answer }, 'link question answered');
    return this.stateNow();
  }

  /** The crew pins this network (as `link pin`): a setting; the answer given before no longer holds. */
  linkPin(pin: 'metered' | 'unmetered' | 'ask' | 'none'): Promise<AppStateView> {
    return this.serial(async () => {
      const link = this.requireNetwork();
      const key = link.gate.facts.key;
      const current = this.readConfig() ?? this.config;
      const networks = { ...current.link.networks };
      const entry = { ...networks[key] };
      if (pin === 'none') delete entry.pin;
      else entry.pin = pin;
      if (Object.keys(entry).length === 0) delete networks[key];
      else networks[key] = entry;
      const next = parseConfig({ ...current, link: { ...current.link, networks } }, 'link settings');
      link.store.setAnswer(key, null);
      await this.applyConfig(next);
      link.tick(); // the gate sees the pin now, not at the next look at the file
      return this.stateNow();
    });
  }

  /**
   * Where uploads go, for the window: the server in force (or the one
   * chosen in the settings), its workspace, and who signed in to it.
   */
  private account(): AccountView {
    const conn = this.rt?.conn;
    if (conn?.kind === 'local' || (!conn && this.config.useLocalService))
      return { kind: 'local', server: null, workspaceId: null, user: null };
    const server = conn?.kind === 'server' ? conn.serverUrl : (this.config.server?.url ?? null);
    if (!server) return { kind: 'none', server: null, workspaceId: null, user: null };
    const mine = this.stored && sameServer(this.stored.server, server) ? this.stored : null;
    return {
      kind: 'server',
      server,
      workspaceId: conn?.target.workspaceId ?? mine?.workspaceId ?? this.config.server?.workspaceId ?? null,
      user: mine?.user ?? null,
    };
  }

  /** Before the first sign-in nothing is recorded, so there is nothing to list (the window says why). */
  queueList(filter: QueueFilter, limit: number): QueueItemView[] {
    if (this.waiting) return [];
    const queue = this.requireQueue();
    return listQueue(queue, filter, limit).map((r) => queueItemView(r, queue.sources.labelOf(r.sourceId)));
  }

  retry(selector: { id: number } | { all: true }): { count: number } {
    const { count, rows } = retryFailed(this.requireQueue(), selector);
    this.rt?.agent.engine.track(rows);
    this.changed();
    return { count };
  }

  pause(): AppStateView {
    this.requireRuntime().agent.engine.pause();
    return this.stateNow();
  }

  resume(): AppStateView {
    this.requireRuntime().agent.engine.resume();
    return this.stateNow();
  }

  /** Rescans every card and folder now; also the user's "go on" after a pause or a sign-in problem. */
  async syncNow(): Promise<AppStateView> {
    const { agent, conn } = this.requireRuntime();
    // A sign-in the server refused is tried again; none at all is waited for.
    if (agent.engine.paused || (agent.engine.state === 'auth-required' && canUpload(conn)))
      agent.engine.resume();
    await agent.syncNow();
    return this.stateNow();
  }

  history(limit: number): HistoryEntryView[] {
    if (this.waiting) return [];
    const queue = this.requireQueue();
    return historyViews(queue.history.list(limit), queue.list({ states: ['failed'], limit: 1_000_000 }));
  }

  async setWayline(folder: string, waylineId: string | null): Promise<{ updated: number }> {
    return { updated: await this.requireRuntime().agent.setFolderWayline(folder, waylineId) };
  }

  /** The workspace's waylines; what stops them is said for this page (a sign-in, the server), never about uploads. */
  async waylines(q: WaylineQueryView): Promise<WaylinePageView> {
    const rt = this.rt;
    if (!rt || !canUpload(rt.conn))
      throw new UserError(
        'auth',
        rt || this.waiting
          ? 'Sign in (Settings, Sign in) to see the waylines of your workspace.'
          : (this.startError ?? 'The app is starting; the waylines are shown in a moment.'),
      );
    try {
      const page = await rt.conn.api.listWaylines(waylineQuery(q));
      return waylinePageView(page.list, page.pagination);
    } catch (err) {
      if (toDmsError(err).kind === 'auth')
        throw new UserError(
          'auth',
          'The server no longer accepts this sign-in. Sign in again (Settings, Sign in) to see the waylines.',
        );
      throw err;
    }
  }

  /** The flights of a card (source id), or of the recent ones. */
  flights(cardId?: string): FlightSummaryView[] {
    if (this.waiting) return []; // nothing is read of a card before a sign-in
    const queue = this.requireQueue();
    const ids = cardId ? [cardId] : queue.recentSources().slice(0, 20);
    return flightSummaries(
      queue,
      ids.map((id) => this.cardRef(id)),
      this.flightChecks(),
    );
  }

  flight(cardId: string, folder: string, part?: number): FlightView {
    return flightView(
      this.requireQueue(),
      this.cardRef(cardId),
      folder,
      this.config.mapTiles,
      part,
      this.flightChecks(),
    );
  }

  /** A card's verdict with its advisory line (issue 32), from the ledger the verdict was just put in. */
  private advised(a: Activity): Activity {
    if (a.type !== 'offload' && a.type !== 'local') return a;
    return { ...a, advisory: this.cards.advisoryOf(a.sourceId) };
  }

  /** The crew's settings of the flight checks (config.json flightMinHeightM). */
  private flightChecks(): { minHeight: number | null } {
    return { minHeight: this.config.flightMinHeightM ?? null };
  }

  /** The crew accepts a flagged flight as it is: it no longer stops "safe to format". */
  acceptFlight(cardId: string, folder: string): FlightSummaryView {
    const queue = this.requireQueue();
    const found = flightSummaries(queue, [this.cardRef(cardId)]).find((f) => f.folder === folder);
    if (!found) throw new UserError('invalid-input', `There is no flight ${folder} on this card.`);
    queue.flights.accept(cardId, folder);
    void this.rt?.agent.reconsider(cardId);
    this.changed();
    return { ...found, accepted: true };
  }

  mapTile(z: number, x: number, y: number): Promise<string> {
    return new TileCache(path.join(this.opts.stateDir, 'tiles'), this.config.mapTiles).tile(z, x, y);
  }

  private cardRef(sourceId: string): CardRef {
    return { sourceId, label: this.requireQueue().sources.labelOf(sourceId) };
  }

  settings(): SettingsAnswer {
    const conn = this.rt?.conn;
    return {
      ...toSettingsView(this.config),
      signedIn: conn ? canUpload(conn) : false,
      account: this.account(),
    };
  }

  saveSettings(view: SettingsView): Promise<SettingsAnswer> {
    return this.serial(async () => {
      const out = applySettings(this.readConfig() ?? this.config, view);
      if (!out.ok) throw new UserError('invalid-input', 'Some settings need fixing.', out.fields);
      await this.applyConfig(out.config);
      return this.settings();
    });
  }

  /**
   * The crew forgets a local destination: taken out of the settings (the
   * agent is rebuilt without it), then forgotten in the queue through the
   * copies' one door, as `copies forget DIR` does: it counts for no card any
   * more, its copy records are forgotten, its files are not touched. The
   * cards in are judged again without it.
   */
  forgetDestination(dir: string): Promise<SettingsAnswer> {
    return this.serial(async () => {
      const where = path.resolve(dir);
      const current = this.readConfig() ?? this.config;
      const kept = current.destinations.filter((d) => path.resolve(d.path) !== where);
      const known = this.session?.queue.copies.destinationAt(where);
      if (kept.length === current.destinations.length && (!known || known.forgotten))
        throw new UserError(
          'invalid-input',
          `${where} is not a copy destination: there is nothing to forget.`,
        );
      if (kept.length !== current.destinations.length)
        await this.applyConfig({ ...current, destinations: kept });
      if (known && !known.forgotten) {
        const n = this.session?.queue.copies.forgetDestination(known.id) ?? 0;
        this.log.info({ destination: known.path, records: n }, 'destination forgotten');
      }
      for (const card of this.rt?.monitor?.cards() ?? []) void this.rt?.agent.reconsider(card.id);
      this.changed();
      return this.settings();
    });
  }

  /** The servers and workspaces this laptop synced to, each with what forgetting it would drop. */
  targets(): TargetView[] {
    const queue = this.session?.queue;
    if (!queue) return [];
    const inUse = this.rt?.conn.target.key ?? queue.target?.key;
    return queue
      .targets()
      .filter((t) => t.key !== 'legacy:' || Object.values(t.counts).some((c) => c.files > 0))
      .map((t) => {
        const plan = forgetPlan(queue, t, this.paths.manifests);
        return {
          key: t.key,
          name: targetName(t),
          answered: t.state === 'answered',
          inUse: t.key === inUse,
          files: Object.values(t.counts).reduce((n, c) => n + c.files, 0),
          filesDone: t.counts.done.files,
          drops: plan.what,
          keeps: FORGET_KEEPS,
        };
      });
  }

  /**
   * The crew forgets a server (and workspace) it no longer wants, through the
   * queue's one door for targets (forget-target.ts), as `forget --yes` does.
   * Not the one the app sends cards to now: its agent works on those rows.
   */
  forgetTarget(key: string): Promise<TargetView[]> {
    return this.serial(() => {
      const queue = this.requireQueue();
      const t = queue.targets().find((x) => x.key === key);
      if (!t)
        throw new UserError(
          'invalid-input',
          'This server was already forgotten: there is nothing to forget.',
        );
      if (t.key === (this.rt?.conn.target.key ?? queue.target?.key))
        throw new UserError(
          'invalid-input',
          `${targetName(t)} is where the app sends cards now. Choose another server in Settings and save, then forget it.`,
        );
      const plan = forgetPlan(queue, t, this.paths.manifests);
      forgetTarget(queue, plan);
      this.log.info({ target: t.label, workspace: t.workspaceId }, 'target forgotten');
      this.changed();
      return Promise.resolve(this.targets());
    });
  }

  async login(serverUrl: string, username: string, password: string): Promise<{ workspaceId: string }> {
    return this.useSignIn(await signIn(serverUrl, username, password, this.config.caFile));
  }

  async setToken(serverUrl: string, workspaceId: string, token: string): Promise<{ workspaceId: string }> {
    return this.useSignIn(await verifyToken(serverUrl, workspaceId, token, this.log, this.config.caFile));
  }

  async signOut(): Promise<{ signedIn: false }> {
    this.opts.secrets.clear();
    this.stored = null;
    this.log.info('signed out');
    await this.serial(() => this.rebuild());
    return { signedIn: false };
  }

  testConnection(serverUrl: string, workspaceId: string): Promise<{ message: string }> {
    return testConnection({
      serverUrl,
      workspaceId,
      secrets: this.opts.secrets,
      local: this.local.instance,
      ...(this.config.caFile ? { caFile: this.config.caFile } : {}),
    });
  }

  // ---------- internals ----------

  /** Restarts and config writes one at a time: two quick saves must not build two agents. */
  private serial<T>(fn: () => Promise<T>): Promise<T> {
    const p = this.chain.then(fn, fn);
    this.chain = p.catch(() => undefined);
    return p;
  }

  private stateNow(): AppStateView {
    this.push.state();
    return this.state();
  }

  private changed(): void {
    this.push.changed();
  }

  private requireQueue(): Queue {
    // Without a target (not signed in) there is nothing of this queue to show.
    if (!this.session || !this.rt)
      throw new UserError(
        'unavailable',
        this.waiting?.attention() ??
          this.startError ??
          'The app is starting or stopping; try again in a moment.',
      );
    return this.session.queue;
  }

  private requireRuntime(): Runtime {
    if (!this.rt)
      throw new UserError(
        'unavailable',
        this.waiting?.attention() ?? this.startError ?? 'The sync engine is not running.',
      );
    return this.rt;
  }

  /** A config.json someone broke by hand is reported (and replaced only by saving the settings). */
  private readConfig(): Config | null {
    try {
      return loadConfig(this.paths.config);
    } catch (err) {
      const e = toDmsError(err);
      this.startError = `${e.message} Saving the settings in this window replaces it.`;
      this.log.warn({ kind: e.kind }, e.message);
      return null;
    }
  }

  private emitConfig(): void {
    this.emit('config', this.config, { configured: fs.existsSync(this.paths.config) });
  }

  /** The secret store gets the token; the config only the server and workspace; the window neither. */
  private async useSignIn(signed: StoredToken): Promise<{ workspaceId: string }> {
    this.opts.secrets.write(signed);
    this.log.info({ server: signed.server, workspace: signed.workspaceId }, 'signed in');
    const server = { url: signed.server, workspaceId: signed.workspaceId };
    await this.serial(() =>
      this.applyConfig({ ...(this.readConfig() ?? this.config), server, useLocalService: false }, true),
    );
    return { workspaceId: signed.workspaceId };
  }

  private async applyConfig(next: Config, forceRestart = false): Promise<void> {
    saveConfig(this.paths.config, next);
    const prev = this.config;
    this.config = next;
    this.emitConfig();
    if (forceRestart || !this.rt || needsRestart(prev, next)) return this.rebuild();
    this.rt.agent.updateConfig(next);
    for (const f of next.watchedFolders) {
      if (!prev.watchedFolders.includes(f)) watchFolder(this.rt.agent, f, this.log);
    }
    this.push.state();
  }

  /** A new agent for new settings or a new sign-in; the user's pause carries over (an app restart resumes). */
  private async rebuild(): Promise<void> {
    const paused = this.rt?.agent.engine.paused ?? false;
    await this.teardown();
    await this.build(paused);
  }

  private async teardown(): Promise<void> {
    const rt = this.rt;
    this.rt = null;
    this.waiting?.stop();
    this.waiting = null;
    this.push.progress = null;
    if (rt) await rt.agent.stop();
  }

  /**
   * The link, started once: `link pin/budget/limit/answer` from a terminal
   * (config.json, link.db) are followed within seconds, as by `watch`; its
   * new settings reach the agent in force without a rebuild.
   */
  private async startLink(): Promise<LinkController | null> {
    if (this.link || this.stopped) return this.link;
    try {
      this.link = await startLink({
        stateDir: this.paths.root,
        configFile: this.paths.config,
        config: this.config,
        ...(this.opts.linkWatcher ? { watcher: this.opts.linkWatcher } : {}),
        gate: { waiting: () => this.linkWaiting() },
        onSettings: (next) => {
          this.config = { ...this.config, link: next.link };
          this.rt?.agent.updateConfig(this.config);
          this.changed();
        },
      });
      const notKept = this.link.store.notKeptMessage;
      if (notKept) this.log.warn({ reason: this.link.store.notKept }, notKept);
      this.link.gate.subscribe(() => this.changed());
      this.link.gate.on('question', (q) => {
        this.linkQuestion = q;
        this.emit('activity', { type: 'link-question', network: q.network, text: q.text });
        this.changed();
      });
    } catch (err) {
      // link.db cannot be opened: uploads go as if every network were unmetered; said in the log.
      this.log.error({ err: toDmsError(err).toJSON() }, 'the link policy did not start');
    }
    return this.link;
  }

  /** For the link's question: what waits in the lanes it holds, from the queue (every card). */
  private linkWaiting(): { lanes: LaneName[]; bytes: number } | undefined {
    const queue = this.session?.queue;
    const gate = this.link?.gate;
    if (!queue?.target || !gate) return undefined;
    const left = queue.lanesLeft().filter((l) => l.bytes > 0 && gate.holds(l.lane));
    return { lanes: left.map((l) => l.lane), bytes: left.reduce((n, l) => n + l.bytes, 0) };
  }

  private async build(paused = false): Promise<void> {
    // Not open yet when the app started on a broken config.json.
    if (!this.session && !(await this.openSession())) return;
    const session = this.session;
    if (!session) return this.changed();
    try {
      const conn = await session.reconnect(this.config);
      this.stored = this.opts.secrets.read();
      // Switched to a real server (or to none): the local one is not needed any more.
      if (conn.kind !== 'local') await this.local.close();
      if (conn.kind === 'none') {
        // Cards inserted before sign-in are counted and wait; never copied into a local bucket.
        const monitor = this.config.autoSyncCards ? cardMonitor(this.config, this.opts.cardPollMs) : null;
        this.waiting = new WaitingForSignIn(conn.reason, monitor, this.config, {
          activity: (a) => this.emit('activity', a),
          label: (id, label) => this.session?.queue.sources.seen(id, label),
          changed: () => this.changed(),
        });
        this.startError = null;
        this.log.info('waiting for a sign-in: nothing is uploaded');
        return this.changed();
      }
      const link = await this.startLink();
      startRuntime({
        ...(link ? { gate: link.gate } : {}),
        queue: session.queue,
        config: this.config,
        conn,
        logger: this.log,
        ...(this.opts.quietMs === undefined ? {} : { quietMs: this.opts.quietMs }),
        ...(this.opts.cardPollMs === undefined ? {} : { cardPollMs: this.opts.cardPollMs }),
        ...(this.opts.ownFolders ? { ownFolders: this.opts.ownFolders } : {}),
        sink: {
          adopt: (rt) => (this.rt = rt),
          live: (agent) => this.rt?.agent === agent,
          activity: (a) => this.emit('activity', this.advised(a)),
          label: (id, label) => this.session?.queue.sources.seen(id, label),
          progress: (p) => (this.push.progress = progressView(p)),
          cards: this.cards,
          changed: () => this.changed(),
        },
        manifestsDir: this.paths.manifests,
        paused,
      });
      this.startError = null;
      const { watchedFolders, autoSyncCards } = this.config;
      this.log.info(
        {
          server: conn.label,
          signedIn: canUpload(conn),
          folders: watchedFolders.length,
          cards: autoSyncCards,
        },
        'agent started',
      );
    } catch (err) {
      this.rt = null;
      this.startError = `The sync engine could not start: ${plainMessage(toDmsError(err))}`;
      this.log.error({ err: toDmsError(err).toJSON() }, 'agent did not start');
    }
    this.changed();
  }
}
