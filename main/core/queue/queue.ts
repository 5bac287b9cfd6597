import path from 'node:path';
import type Database from 'better-sqlite3';
import { DmsError } from '../errors.js';
import type { FinishedPart } from '../storage/types.js';
import { changedColumns } from './columns.js';
import type { Db } from './db.js';
import { openDatabase } from './db.js';
import { CopyFacts, readByCopiesSql } from './copies.js';
import { FlightFacts } from './flights.js';
import type { LaneLeft } from '../../shared/lanes.js';
import { LANE_NAMES, QueueLanes } from './lanes.js';
import { History } from './history.js';
import {
  FACT_COLUMNS,
  fileInfo,
  parseFactRow,
  parseRow,
  type FactColumns,
  type FactRow,
  type FileKind,
  type QueueRow,
  type RawRow,
  type RowPatch,
  type WorkingRow,
} from './rows.js';
import { SourceFacts } from './sources.js';
import type { FileInfo } from './file-info.js';
import {
  FILE_STATES,
  isWorking,
  sqlStates,
  WORKING_STATES,
  type FileState,
  type WorkingState,
} from './states.js';
import {
  isTargetState,
  SERVER_ANSWERS,
  targetTransition,
  type TargetChange,
  type TargetNext,
  type TargetState,
} from './targets.js';
import { clearsParts, mayWait, transition, type Change } from './transitions.js';

export { FILE_STATES, type FileState } from './states.js';
export type { FactRow, QueueRow, WorkingRow } from './rows.js';
export type { Change } from './transitions.js';

export interface ObservedFile {
  sourceId: string;
  relPath: string;
  absPath: string;
  size: number;
  mtimeMs: number;
  /** Default 'media'. */
  kind?: FileKind;
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
export function backoffDelay(
  attempts: number,
  policy: BackoffPolicy = DEFAULT_BACKOFF,
  random = Math.random,
): number {
  const exp = Math.min(policy.capMs, policy.baseMs * 2 ** Math.max(0, attempts - 1));
  return Math.round(exp / 2 + (random() * exp) / 2);
}

export type StateCounts = Record<FileState, { files: number; bytes: number }>;

/** Which of the bound target's rows a listing reads. */
export interface RowFilter {
  states?: readonly FileState[];
  sourceId?: string;
  /** Only rows whose bucket check is due: never checked, vouched for by the server alone, or checked at or before this time (a damaged record is read, and reported). */
  checkDueBefore?: number;
}

/**
 * Where the work goes. `key` identifies it for good: a server's normalised
 * base URL and the workspace (`https://media.example.com#ws-1`), or the
 * built-in local service by its data folder (`local:/home/u/.config/...#ws`).
 */
export interface TargetRef {
  key: string;
  /** What a person calls it: the server URL or "the built-in local service". */
  label: string;
  workspaceId: string;
}

export interface TargetSummary extends TargetRef {
  id: number;
  lastUsedAt: number;
  /** 'unanswered' until its server answered a request about a file (targets.ts). */
  state: TargetState;
  counts: StateCounts;
}

/** What forgetting a target drops: said to the crew before it is done. */
export interface TargetHoldings {
  counts: StateCounts;
  /** The sources (cards, folders) with rows for this target. */
  sources: string[];
  historyEntries: number;
  acceptedFlights: number;
  waylineMatches: number;
}

const WORKING = sqlStates(WORKING_STATES);

/**
 * The states, with the files not read yet ('discovered') apart when only
 * those of cards read by the copy lane (`readByCopies` true) or not (false)
 * are asked for: their condition is the partial index files_unread's.
 */
function split(states: readonly WorkingState[], readByCopies: boolean | undefined) {
  const unread = readByCopies !== undefined && states.includes('discovered');
  return {
    read: unread ? states.filter((s) => s !== 'discovered') : states,
    unread: unread ? `state = 'discovered' AND read_by_copies = ${readByCopies ? 1 : 0}` : null,
  };
}

/**
 * Queue.ready's statement: the due rows of each of these states, lane by
 * lane, oldest first (see readyStatement). Exported for the test of its
 * query plan.
 */
export function readySql(states: readonly WorkingState[], readByCopies?: boolean): string {
  const { read, unread } = split(states, readByCopies);
  const select = (where: string): string =>
    `SELECT id, lane FROM (SELECT id, lane FROM files WHERE target_id = @t AND ${where} ORDER BY id LIMIT @limit)`;
  return [
    ...LANE_NAMES.flatMap((_, lane) => [
      ...read.map((s) => select(`lane = ${lane} AND state = '${s}' AND next_attempt_at = 0`)),
      ...(unread ? [select(`${unread} AND next_attempt_at = 0 AND lane = ${lane}`)] : []),
    ]),
    // Retries due now, state by state: a range of files_due each (one IN over the states read
    // every row of the target at each listing).
    ...read.map((s) => select(`state = '${s}' AND next_attempt_at > 0 AND next_attempt_at <= @now`)),
    ...(unread ? [select(`${unread} AND next_attempt_at > 0 AND next_attempt_at <= @now`)] : []),
  ].join(' UNION ALL ');
}

/** Queue.nextWakeAt's statement (exported for the test of its query plan). */
export function nextWakeSql(states: readonly WorkingState[], readByCopies?: boolean): string {
  const { read, unread } = split(states, readByCopies);
  const min = (where: string): string =>
    `SELECT MIN(next_attempt_at) AS t FROM files WHERE target_id = @t AND ${where} AND attempts < @maxAttempts`;
  const parts = [
    ...(read.length > 0 ? [min(`state IN (${sqlStates(read)})`)] : []),
    ...(unread ? [min(unread)] : []),
  ];
  return parts.length === 1 ? (parts[0] as string) : `SELECT MIN(t) AS t FROM (${parts.join(' UNION ALL ')})`;
}

/** Changes that may wait (MAY_WAIT) are committed within this, at the latest. */
export const COMMIT_WAIT_MS = 20;

function emptyCounts(): StateCounts {
  return Object.fromEntries(FILE_STATES.map((s) => [s, { files: 0, bytes: 0 }])) as StateCounts;
}

/**
 * The persistent work queue: the store, the one writer of a file's state.
 * A file moves only through `apply` (the transition table of
 * transitions.ts), one small synchronous statement (better-sqlite3) that
 * checks the from-state, committed before the engine takes the next step, so
 * a crash at any point leaves a state the next run can continue from.
 *
 * Rows belong to a target (bindTarget): a file done for one server is not
 * done for another. Everything that reads or writes work is scoped to the
 * bound target; other targets' rows stay as history. The store owns every
 * table of the queue database (files, targets, sources, flights, history):
 * nothing else opens it.
 */
export class Queue {
  /** Per card and flight folder: what came, when, and the wayline of each flight. */
  readonly history: History;
  /** Exposure logs, aircraft serials and accepted flights. */
  readonly flights: FlightFacts;
  /** Each source's label and last scan. */
  readonly sources: SourceFacts;
  /** Local destinations and the verified copies of each file on them. */
  readonly copies: CopyFacts;
  /** Each row's lane (what goes first), by the setting `lanes`. */
  readonly lanes: QueueLanes;
  private readonly db: Db;
  private readonly file: string;
  private readonly stmts;
  private bound: (TargetRef & { id: number; state: TargetState }) | null = null;
  /** Set while changes that may wait are written and not committed yet (openWaiting). */
  private waiting: ReturnType<typeof setTimeout> | null = null;
  /** A commit of waiting changes that failed on its timer: thrown by the next write. */
  private lostCommit: Error | undefined;

  /** The folder the queue's file is in (the agent's state), or null for a queue in memory. */
  get folder(): string | null {
    return this.file === ':memory:' || this.file === '' ? null : path.dirname(path.resolve(this.file));
  }

  constructor(
    file: string,
    private readonly now: () => number = Date.now,
  ) {
    this.file = file;
    this.db = openDatabase(file, now);
    const db = this.db;
    this.history = new History(db, () => this.targetId, now);
    this.flights = new FlightFacts(db, () => this.targetId, now);
    this.sources = new SourceFacts(db, now);
    this.copies = new CopyFacts(db, now);
    this.lanes = new QueueLanes(db);
    this.stmts = {
      target: db.prepare<[string], { id: number; state: string }>(
        'SELECT id, target_state AS state FROM targets WHERE key = ?',
      ),
      setTargetState: db.prepare('UPDATE targets SET target_state = ? WHERE id = ?'),
      addTarget: db.prepare(
        'INSERT INTO targets (key, label, workspace_id, created_at, last_used_at) VALUES (@key, @label, @workspaceId, @now, @now)',
      ),
      touchTarget: db.prepare('UPDATE targets SET label = ?, last_used_at = ? WHERE id = ?'),
      // Only what tells a done file (a row is 1 KB with its info): the whole row for the others.
      // The rows of a batch's paths of one source, in one read (the unique index's prefix).
      findPaths: db.prepare<
        [number, string, string],
        { id: number; state: string; abs_path: string; rel_path: string; size: number; mtime_ms: number }
      >(
        `SELECT id, state, abs_path, rel_path, size, mtime_ms FROM files
         WHERE target_id = ? AND source_id = ? AND rel_path IN (SELECT value FROM json_each(?))`,
      ),
      insert: db.prepare(
        `INSERT INTO files (target_id, kind, source_id, rel_path, size, mtime_ms, abs_path, state, created_at, updated_at, file_class, lane, read_by_copies)
         VALUES (@targetId, @kind, @sourceId, @relPath, @size, @mtimeMs, @absPath, 'discovered', @now, @now, @fileClass, @lane,
         ${readByCopiesSql('@sourceId')})`,
      ),
      // A file whose size or mtime changed is a new version: unfinished rows of
      // the old version are dropped (never recorded with a stale fingerprint);
      // finished ones stay as history.
      dropStale: db.prepare(
        `DELETE FROM files WHERE target_id = ? AND source_id = ? AND rel_path = ? AND (size != ? OR mtime_ms != ?) AND state != 'done'`,
      ),
      setAbsPath: db.prepare('UPDATE files SET abs_path = ? WHERE id = ? AND abs_path != ?'),
      get: db.prepare<[number], RawRow>('SELECT * FROM files WHERE id = ?'),
      nextWake: db.prepare<{ t: number; maxAttempts: number }, { t: number | null }>(
        `SELECT MIN(next_attempt_at) AS t FROM files WHERE target_id = @t AND state IN (${WORKING}) AND attempts < @maxAttempts`,
      ),
      hasDiscovered: db.prepare<[number, string], { one: number }>(
        `SELECT 1 AS one FROM files WHERE target_id = ? AND source_id = ? AND state = 'discovered' LIMIT 1`,
      ),
      hasWork: db.prepare<[number, string], { one: number }>(
        `SELECT 1 AS one FROM files WHERE target_id = ? AND source_id = ? AND state IN (${WORKING}) LIMIT 1`,
      ),
      parts: db.prepare<[number], { part_number: number; etag: string; size: number }>(
        'SELECT part_number, etag, size FROM parts WHERE file_id = ? ORDER BY part_number',
      ),
      addPart: db.prepare(
        'INSERT OR REPLACE INTO parts (file_id, part_number, etag, size) VALUES (?, ?, ?, ?)',
      ),
      clearParts: db.prepare('DELETE FROM parts WHERE file_id = ?'),
      counts: db.prepare<[number], { state: FileState; files: number; bytes: number }>(
        'SELECT state, COUNT(*) AS files, COALESCE(SUM(size), 0) AS bytes FROM files WHERE target_id = ? GROUP BY state',
      ),
      doneTwin: db.prepare<[number, string, number], { id: number }>(
        `SELECT id FROM files WHERE target_id = ? AND fingerprint = ? AND state = 'done' AND id != ? LIMIT 1`,
      ),
      triedOrWaiting: db.prepare<[number], RawRow>(
        `SELECT * FROM files WHERE target_id = ? AND state IN (${WORKING}) AND (attempts > 0 OR next_attempt_at > 0)`,
      ),
      deferredTwins: db.prepare<[number, string], RawRow>(
        `SELECT * FROM files WHERE target_id = ? AND fingerprint = ? AND state IN (${WORKING})
         AND error_kind IS NULL AND next_attempt_at > 0`,
      ),
      workingOfSource: db.prepare<[number, string], RawRow>(
        `SELECT * FROM files WHERE target_id = ? AND source_id = ? AND state IN (${WORKING})`,
      ),
    };
    // Read as the last agent left it until a session binds another target.
    this.bindLastTarget();
  }

  /** The database file (named in messages: "the disk holding ... is full"). */
  get path(): string {
    return this.file;
  }

  close(): void {
    try {
      this.commitWaiting();
    } finally {
      this.db.close();
    }
  }

  /** Scopes the queue to a target (created on first use); returns its id. */
  bindTarget(target: TargetRef): number {
    this.commitWaiting();
    const now = this.now();
    const found = this.stmts.target.get(target.key);
    let id = found?.id;
    // Written only when the target changes: a session on a full disk still opens.
    if (id === undefined) id = Number(this.stmts.addTarget.run({ ...target, now }).lastInsertRowid);
    if (this.getMeta('current_target') !== target.key) {
      this.stmts.touchTarget.run(target.label, now, id);
      this.setMeta('current_target', target.key);
    }
    this.bound = { ...target, id, state: stateOf(found?.state) };
    return id;
  }

  /**
   * Scopes the queue to a target the queue knows, to read it (status and
   * report show each target on its own): the last target used is not changed.
   */
  useTarget(t: TargetSummary): void {
    this.bound = { key: t.key, label: t.label, workspaceId: t.workspaceId, id: t.id, state: t.state };
  }

  /**
   * The one door of a target's state (targets.ts): 'answered' when its server
   * answered about a file, 'forget' when the crew drops it with all it holds
   * (its files and their parts, history, accepted flights, wayline matches).
   */
  applyTarget(t: { id: number; key: string; state: TargetState }, change: TargetChange): TargetNext {
    this.commitWaiting();
    const next = targetTransition(t.state, change);
    if (next === 'forgotten') {
      this.db.transaction(() => {
        this.db
          .prepare('DELETE FROM parts WHERE file_id IN (SELECT id FROM files WHERE target_id = ?)')
          .run(t.id);
        for (const table of ['files', 'history', 'accepted_flights', 'folder_waylines', 'flight_summaries'])
          this.db.prepare(`DELETE FROM ${table} WHERE target_id = ?`).run(t.id);
        this.db.prepare('DELETE FROM targets WHERE id = ?').run(t.id);
        if (this.getMeta('current_target') === t.key)
          this.db.prepare("DELETE FROM meta WHERE key = 'current_target'").run();
      })();
      if (this.bound?.id === t.id) this.bound = null;
      return next;
    }
    if (next !== t.state) this.stmts.setTargetState.run(next, t.id);
    if (this.bound?.id === t.id) this.bound = { ...this.bound, state: next };
    return next;
  }

  /** What forgetting a target would drop. */
  holdings(targetId: number): TargetHoldings {
    const one = (sql: string): number => this.db.prepare<[number], { n: number }>(sql).get(targetId)?.n ?? 0;
    return {
      counts: this.countsFor(targetId),
      sources: this.db
        .prepare<[number], { source_id: string }>(
          'SELECT source_id FROM files WHERE target_id = ? GROUP BY source_id ORDER BY MAX(updated_at) DESC',
        )
        .all(targetId)
        .map((r) => r.source_id),
      historyEntries: one('SELECT COUNT(*) AS n FROM history WHERE target_id = ?'),
      acceptedFlights: one('SELECT COUNT(*) AS n FROM accepted_flights WHERE target_id = ?'),
      waylineMatches: one('SELECT COUNT(*) AS n FROM folder_waylines WHERE target_id = ?'),
    };
  }

  /**
   * Binds to the target the last agent worked for (status, retry: they run
   * beside it without a server); false when there is none yet.
   */
  bindLastTarget(): boolean {
    const key = this.getMeta('current_target');
    const row =
      key === undefined
        ? undefined
        : this.db
            .prepare<[string], { id: number; label: string; workspace_id: string; state: string }>(
              'SELECT id, label, workspace_id, target_state AS state FROM targets WHERE key = ?',
            )
            .get(key);
    if (key === undefined || !row) return false;
    this.bound = {
      key,
      label: row.label,
      workspaceId: row.workspace_id,
      id: row.id,
      state: stateOf(row.state),
    };
    return true;
  }

  /** The bound target, or null before bindTarget. */
  get target(): (TargetRef & { id: number; state: TargetState }) | null {
    return this.bound;
  }

  private get targetId(): number {
    if (!this.bound) throw new Error('The queue is not bound to a target (server and workspace) yet.');
    return this.bound.id;
  }

  /** Every target this queue has worked for, most recently used first, with its counts. */
  targets(): TargetSummary[] {
    const rows = this.db
      .prepare<
        [],
        { id: number; key: string; label: string; workspace_id: string; last_used_at: number; state: string }
      >(
        'SELECT id, key, label, workspace_id, last_used_at, target_state AS state FROM targets ORDER BY last_used_at DESC, id DESC',
      )
      .all();
    return rows.map((t) => ({
      id: t.id,
      key: t.key,
      label: t.label,
      workspaceId: t.workspace_id,
      lastUsedAt: t.last_used_at,
      state: stateOf(t.state),
      counts: this.countsFor(t.id),
    }));
  }

  /**
   * Records what a scan found, in one transaction (10,000 files take
   * milliseconds), and returns what still needs work.
   */
  observe(files: readonly ObservedFile[]): ObserveResult {
    this.commitWaiting();
    const now = this.now();
    const targetId = this.targetId;
    const pending: QueueRow[] = [];
    let alreadyDone = 0;
    let failed = 0;
    this.db.transaction(() => {
      const knownRows = this.knownOf(files);
      for (const f of files) {
        const known = knownRow(knownRows, f);
        let id: number;
        if (!known) {
          this.stmts.dropStale.run(targetId, f.sourceId, f.relPath, f.size, f.mtimeMs);
          const kind = f.kind ?? 'media';
          const lane = this.lanes.of(f.relPath, kind);
          id = Number(this.stmts.insert.run({ ...f, kind, targetId, now, ...lane }).lastInsertRowid);
          // The same file twice in a batch is the row just made.
          const made = { id, state: 'discovered', abs_path: f.absPath, size: f.size, mtime_ms: f.mtimeMs };
          const same = knownRows.get(f.sourceId)?.get(f.relPath);
          if (same) same.push(made);
          else knownRows.get(f.sourceId)?.set(f.relPath, [made]);
        } else {
          id = known.id;
          if (known.abs_path !== f.absPath) this.stmts.setAbsPath.run(f.absPath, id, f.absPath);
          if (known.state === 'done') {
            alreadyDone++;
            continue;
          }
          if (known.state === 'failed') {
            failed++;
            continue;
          }
        }
        const raw = this.mustGet(id);
        if (raw.state === 'done') alreadyDone++;
        else if (raw.state === 'failed') failed++;
        else {
          const row = this.parse(raw);
          // The card is back: the file continues where it was.
          pending.push(row.state === 'waiting-for-source' ? this.apply(row, { type: 'resumed' }) : row);
        }
      }
    })();
    return { pending, alreadyDone, failed };
  }

  /**
   * The rows the files of a scan's batch already have, by source and path
   * (a path's versions of another size or time beside each other): one read
   * per source, not one per file, and no key string made per row and file
   * (issue 33: 20,000 of them for a re-inserted card of 10,000 files).
   */
  private knownOf(files: readonly ObservedFile[]): KnownRows {
    const paths = new Map<string, string[]>();
    for (const f of files) {
      const list = paths.get(f.sourceId);
      if (list) list.push(f.relPath);
      else paths.set(f.sourceId, [f.relPath]);
    }
    const out: KnownRows = new Map();
    for (const [sourceId, relPaths] of paths) {
      const bySource = new Map<string, KnownRow[]>();
      out.set(sourceId, bySource);
      for (const r of this.stmts.findPaths.all(this.targetId, sourceId, JSON.stringify(relPaths))) {
        const same = bySource.get(r.rel_path);
        if (same) same.push(r);
        else bySource.set(r.rel_path, [r]);
      }
    }
    return out;
  }

  private parse(raw: RawRow): QueueRow {
    return parseRow(raw, this.file);
  }

  private mustGet(id: number): RawRow {
    const r = this.stmts.get.get(id);
    if (!r) throw new Error(`queue row ${id} vanished inside its own transaction`);
    return r;
  }

  get(id: number): QueueRow | undefined {
    const r = this.stmts.get.get(id);
    return r ? this.parse(r) : undefined;
  }

  /**
   * Ids of due rows, oldest first, for a caller that takes them a few at a
   * time and checks each with dueRow() when it does.
   */
  readyIds(
    limit: number,
    states: readonly WorkingState[] = WORKING_STATES,
    readByCopies?: boolean,
  ): number[] {
    return this.ready(limit, states, readByCopies).map((r) => r.id);
  }

  /**
   * readyIds with each row's lane rank (0 goes first), in the same order.
   * `readByCopies`: of the files not read yet ('discovered'), only those of
   * cards whose copies are wanted (true: the copy lane's) or not (false:
   * the upload lane's); undefined: all.
   */
  ready(
    limit: number,
    states: readonly WorkingState[] = WORKING_STATES,
    readByCopies?: boolean,
  ): Array<{ id: number; lane: number }> {
    const rows = this.readyStatement(states, readByCopies).all({ t: this.targetId, now: this.now(), limit });
    // Lane by lane (what goes first), then oldest first: card by card, flight by flight.
    rows.sort((a, b) => a.lane - b.lane || a.id - b.id);
    if (rows.length > limit) rows.length = limit;
    return rows;
  }

  /** Per lane, the files and bytes still to send for the bound target. */
  lanesLeft(): LaneLeft[] {
    return this.lanes.left(this.targetId);
  }

  /** The link's rate as the engine measured it in the last 10 minutes (bytes/s), or 0. */
  recentRate(): number {
    return this.lanes.recentRate(this.targetId, this.now());
  }

  /** Keeps the engine's measure of the link for readers of the queue (`status`). */
  saveRate(bytesPerSecond: number): void {
    this.commitWaiting();
    this.lanes.saveRate(this.targetId, bytesPerSecond, this.now());
  }

  /**
   * The row if it is still working and due now (it may have moved on since
   * its id was listed); `readByCopies`: and still of that lane (see `ready`).
   */
  dueRow(id: number, readByCopies?: boolean): WorkingRow | undefined {
    const r = this.stmts.get.get(id);
    if (!r || r.target_id !== this.targetId || !isWorking(r.state) || r.next_attempt_at > this.now())
      return undefined;
    // Not read yet, and its card's lane changed since it was listed (destinations counted or forgotten).
    if (
      readByCopies !== undefined &&
      r.state === 'discovered' &&
      (r as RawRow & { read_by_copies: number }).read_by_copies !== Number(readByCopies)
    )
      return undefined;
    return this.parse(r) as WorkingRow;
  }

  /**
   * Epoch ms of the earliest attempt due among working rows tried fewer than
   * `maxAttempts` times (0 = due now), or null when there is none; `states`:
   * only rows in these (a lane's own); `readByCopies`: as for `ready`.
   */
  nextWakeAt(
    maxAttempts = Number.MAX_SAFE_INTEGER,
    states?: readonly WorkingState[],
    readByCopies?: boolean,
  ): number | null {
    if (!states && readByCopies === undefined)
      return this.stmts.nextWake.get({ t: this.targetId, maxAttempts })?.t ?? null;
    const key = `${(states ?? WORKING_STATES).join(',')}:${readByCopies}`;
    let stmt = this.nextWakeCache.get(key);
    if (!stmt) {
      stmt = this.db.prepare<{ t: number; maxAttempts: number }, { t: number | null }>(
        nextWakeSql(states ?? WORKING_STATES, readByCopies),
      );
      this.nextWakeCache.set(key, stmt);
    }
    return stmt.get({ t: this.targetId, maxAttempts })?.t ?? null;
  }

  /** nextWakeAt's statement per set of states (a lane's own: the copy lane reads, the upload lane sends). */
  private readonly nextWakeCache = new Map<
    string,
    Database.Statement<{ t: number; maxAttempts: number }, { t: number | null }>
  >();

  /** True while a source has files the engine is still working on. */
  private readonly readyCache = new Map<
    string,
    Database.Statement<{ t: number; now: number; limit: number }, { id: number; lane: number }>
  >();

  /**
   * The due rows of each of these states, lane by lane, oldest first, straight
   * from the files_lane_due index (target_id, lane, state, next_attempt_at,
   * id): never-failed rows (next_attempt_at 0) come in id order with no sort,
   * and due retries are few. This must not cost O(rows pending). Prepared
   * once per set.
   */
  private readyStatement(states: readonly WorkingState[], readByCopies?: boolean) {
    const key = `${states.join(',')}:${readByCopies}`;
    let stmt = this.readyCache.get(key);
    if (!stmt) {
      stmt = this.db.prepare<{ t: number; now: number; limit: number }, { id: number; lane: number }>(
        readySql(states, readByCopies),
      );
      this.readyCache.set(key, stmt);
    }
    return stmt;
  }

  /** True while a source has files not read yet (with local copies: not copied yet). */
  hasUnread(sourceId: string): boolean {
    return this.stmts.hasDiscovered.get(this.targetId, sourceId) !== undefined;
  }

  hasWork(sourceId: string): boolean {
    return this.stmts.hasWork.get(this.targetId, sourceId) !== undefined;
  }

  parts(id: number): FinishedPart[] {
    return this.stmts.parts.all(id).map((p) => ({ partNumber: p.part_number, etag: p.etag, size: p.size }));
  }

  /**
   * Moves a file: the next row by the transition table, written in one
   * statement that checks the row is still in the state it was read in, with
   * what the change brings besides (the part log cleared, the flight's serial
   * and exposure log kept) in the same transaction. Returns the new row: no
   * caller reads it back to learn what happened.
   */
  apply(row: QueueRow, change: Change): QueueRow {
    const now = this.now();
    const next = { ...transition(row, change, now), updatedAt: now };
    const patch = changedColumns(row, next);
    const clears = clearsParts(row.state, change.type);
    const hashed = change.type === 'hashed' ? change : null;
    const write = () => {
      if (this.update(row.id, row.state, patch, now) === 0) throw this.movedOn(row);
      if (clears) this.stmts.clearParts.run(row.id);
      if (hashed?.info.sn) this.flights.noteSerial(row.sourceId, hashed.info.fileGroupId, hashed.info.sn);
      if (hashed?.mrk) this.flights.noteMrk(row.sourceId, row.relPath, hashed.mrk);
      for (const copy of hashed?.copies ?? []) this.copies.settle(row, copy);
    };
    const waits = mayWait(row.state, change.type) && !hashed?.copies?.length;
    if (waits) this.openWaiting();
    try {
      if (clears || hashed?.info.sn || hashed?.mrk || hashed?.copies?.length) this.db.transaction(write)();
      else write();
    } finally {
      // A change the engine acts on next is committed now, with those that waited for it.
      if (!waits) this.commitWaiting();
    }
    const bound = this.bound;
    if (bound && bound.state !== 'answered' && SERVER_ANSWERS.has(change.type))
      this.applyTarget(bound, 'answered');
    return next;
  }

  /** The part log: a part the bucket acknowledged, for the upload in progress (committed now: never sent twice). */
  addPart(id: number, part: FinishedPart): void {
    this.commitWaiting();
    this.stmts.addPart.run(id, part.partNumber, part.etag, part.size);
  }

  /**
   * Starts (or joins) the transaction of changes that may wait (MAY_WAIT):
   * a small file's 'hashed', 'not-known' and 'recorded' (and the history
   * count beside it) then share a commit with the next change that may not
   * wait, instead of a commit each. It is committed within COMMIT_WAIT_MS
   * at the latest. Inside a caller's transaction the writes are simply
   * part of it.
   */
  private openWaiting(): void {
    this.throwLostCommit();
    if (this.waiting !== null || this.db.inTransaction) return;
    this.db.exec('BEGIN');
    this.waiting = setTimeout(() => {
      try {
        this.commitWaiting();
      } catch (err) {
        // Nobody to tell here: the next write of the store says it (throwLostCommit).
        this.lostCommit = err instanceof Error ? err : new Error(String(err));
      }
    }, COMMIT_WAIT_MS);
  }

  /** Commits the changes that waited (a no-op when none did). */
  commitWaiting(): void {
    this.throwLostCommit();
    if (this.waiting === null) return;
    clearTimeout(this.waiting);
    this.waiting = null;
    try {
      this.db.exec('COMMIT');
    } catch (err) {
      // Their rows go back to where they were committed (as after a crash): each step is done again.
      if (this.db.inTransaction) this.db.exec('ROLLBACK');
      throw err;
    }
  }

  private throwLostCommit(): void {
    const err = this.lostCommit;
    if (err === undefined) return;
    this.lostCommit = undefined;
    throw err;
  }

  /** Why a row could not be moved: replaced by a newer version of the file, or moved on meanwhile. */
  private movedOn(row: QueueRow): DmsError {
    const now = this.stmts.get.get(row.id);
    if (!now) return new DmsError('source-missing', `${row.relPath} was replaced by a newer version.`);
    return new DmsError('cancelled', `${row.relPath} moved on to ${now.state} meanwhile.`);
  }

  /**
   * Parks every unfinished file of a source (its card was pulled), but those
   * `goesOn` keeps (a verified local copy to read from); returns how many.
   */
  parkSource(sourceId: string, message: string, goesOn: (row: QueueRow) => boolean = () => false): number {
    const parked = this.stmts.workingOfSource
      .all(this.targetId, sourceId)
      .filter((raw) => !goesOn(this.parse(raw)));
    return this.applyAll(parked, { type: 'parked', message });
  }

  /** The row carrying `fingerprint` finished (or stopped): the rows waiting for it are due now. */
  wakeTwins(fingerprint: string): number {
    return this.applyAll(this.stmts.deferredTwins.all(this.targetId, fingerprint), { type: 'woken' });
  }

  /**
   * A new one-shot run (`sync`): every file on its way gets its full count of
   * tries again, due now (see the 'fresh-tries' change). Without this, a file
   * that used its tries in an earlier run would never be tried by a later one.
   */
  freshTries(): number {
    return this.applyAll(this.stmts.triedOrWaiting.all(this.targetId), { type: 'fresh-tries' });
  }

  /** One change to many rows, in one transaction. */
  private applyAll(raws: readonly RawRow[], change: Change): number {
    // No row to change (no twin waits, the usual case after every file): what waits keeps waiting.
    if (raws.length === 0) return 0;
    this.commitWaiting();
    this.db.transaction(() => {
      for (const raw of raws) this.apply(this.parse(raw), change);
    })();
    return raws.length;
  }

  /** Another row of this target with the same content is done: the server holds it. */
  hasDoneTwin(fingerprint: string, exceptId: number): boolean {
    return this.stmts.doneTwin.get(this.targetId, fingerprint, exceptId) !== undefined;
  }

  /** Puts failed files (all, or the given ids / absolute paths) of the bound target back in line; returns them. */
  retry(selector: { all: true } | { ids: number[] } | { absPaths: string[] }): QueueRow[] {
    this.commitWaiting();
    let where = `target_id = ? AND state = 'failed'`;
    const params: unknown[] = [this.targetId];
    if ('ids' in selector) {
      where += ` AND id IN (${selector.ids.map(() => '?').join(',') || 'NULL'})`;
      params.push(...selector.ids);
    } else if ('absPaths' in selector) {
      where += ` AND abs_path IN (${selector.absPaths.map(() => '?').join(',') || 'NULL'})`;
      params.push(...selector.absPaths);
    }
    const raws = this.db.prepare<unknown[], RawRow>(`SELECT * FROM files WHERE ${where}`).all(...params);
    return this.db.transaction(() => raws.map((raw) => this.apply(this.parse(raw), { type: 'retried' })))();
  }

  /** Files and bytes per state, for the bound target. */
  counts(): StateCounts {
    return this.countsFor(this.targetId);
  }

  private countsFor(targetId: number): StateCounts {
    const out = emptyCounts();
    for (const r of this.stmts.counts.all(targetId)) out[r.state] = { files: r.files, bytes: r.bytes };
    return out;
  }

  /** Rows of the bound target, oldest first (or newest first). */
  list(opts: RowFilter & { limit?: number; newestFirst?: boolean } = {}): QueueRow[] {
    const { where, params } = this.whereOf(opts);
    const limit = opts.limit ?? 1000;
    // SQLite sorts whole rows in a temporary b-tree for ORDER BY (the index is by state):
    // 0.4-1.1 s for a 10,000-file card on a loaded 2-core machine, three times the read
    // itself. When every row matching is wanted (counted on the index), they are sorted here.
    const all =
      this.db
        .prepare<unknown[], { n: number }>(`SELECT count(*) AS n FROM files WHERE ${where}`)
        .get(...params)!.n <= limit;
    const raw = all
      ? this.db.prepare<unknown[], RawRow>(`SELECT * FROM files WHERE ${where}`).all(...params)
      : this.db
          .prepare<unknown[], RawRow>(
            `SELECT * FROM files WHERE ${where} ORDER BY id ${opts.newestFirst ? 'DESC' : ''} LIMIT ?`,
          )
          .all(...params, limit);
    if (all) {
      raw.sort(opts.newestFirst ? (a, b) => b.id - a.id : (a, b) => a.id - b.id);
      if (raw.length > limit) raw.length = limit; // rows another process added since the count
    }
    return raw.map((r) => this.parse(r));
  }

  /**
   * The ids of the bound target's rows that match, oldest first: for a
   * caller that reads a whole card's rows a page at a time (rowsOf), never
   * all of them parsed at once.
   */
  idsOf(filter: RowFilter): number[] {
    const { where, params } = this.whereOf(filter);
    return this.db
      .prepare<unknown[], { id: number }>(`SELECT id FROM files WHERE ${where}`)
      .all(...params)
      .map((r) => r.id)
      .sort((a, b) => a - b);
  }

  /** The bound target's rows of these ids, oldest first; a row no longer there is left out. */
  rowsOf(ids: readonly number[]): QueueRow[] {
    if (ids.length === 0) return [];
    return this.db
      .prepare<unknown[], RawRow>(
        `SELECT * FROM files WHERE target_id = ? AND id IN (${ids.map(() => '?').join(',')})`,
      )
      .all(this.targetId, ...ids)
      .sort((a, b) => a.id - b.id)
      .map((r) => this.parse(r));
  }

  private whereOf(opts: RowFilter): { where: string; params: unknown[] } {
    const clauses = ['target_id = ?'];
    const params: unknown[] = [this.targetId];
    if (opts.states?.length) {
      clauses.push(`state IN (${opts.states.map(() => '?').join(',')})`);
      params.push(...opts.states);
    }
    if (opts.sourceId !== undefined) {
      clauses.push('source_id = ?');
      params.push(opts.sourceId);
    }
    if (opts.checkDueBefore !== undefined) {
      clauses.push(
        "(verified_json IS NULL OR NOT json_valid(verified_json) OR json_extract(verified_json, '$.by') = 'server' OR json_extract(verified_json, '$.at') <= ?)",
      );
      params.push(opts.checkDueBefore);
    }
    return { where: clauses.join(' AND '), params };
  }

  /**
   * Every file of a source for the bound target as a card's verdict reads
   * it, oldest first: the columns it needs, not the file's info (whose
   * parse and check was most of reading a 10,000-file card).
   */
  factsOf(sourceId: string): FactRow[] {
    return this.db
      .prepare<[number, string], FactColumns>(
        `SELECT ${FACT_COLUMNS} FROM files WHERE target_id = ? AND source_id = ?`,
      )
      .all(this.targetId, sourceId)
      .sort((a, b) => a.id - b.id)
      .map((r) => parseFactRow(r, this.file));
  }

  /**
   * The info of each file of a source that has its identity (as QueueRow
   * carries it), by row id: only the two columns, row by row, not the rows.
   */
  infosOf(sourceId: string): Map<number, FileInfo> {
    const out = new Map<number, FileInfo>();
    const rows = this.db
      .prepare<[number, string], { id: number; info_json: string }>(
        `SELECT id, info_json FROM files WHERE target_id = ? AND source_id = ? AND state <> 'discovered'
           AND fingerprint IS NOT NULL AND tiny_fingerprint IS NOT NULL AND info_json IS NOT NULL`,
      )
      .iterate(this.targetId, sourceId);
    for (const r of rows) out.set(r.id, fileInfo(r.info_json, this.file));
    return out;
  }

  /** The key of an object of this target holding the same content (our own upload of a twin), if any. */
  objectKeyOfContent(fingerprint: string): string | undefined {
    return this.db
      .prepare<[number, string], { object_key: string }>(
        `SELECT object_key FROM files WHERE target_id = ? AND fingerprint = ? AND state = 'done' AND object_key IS NOT NULL LIMIT 1`,
      )
      .get(this.targetId, fingerprint)?.object_key;
  }

  /** The sources this target has rows of, most recent first. */
  recentSources(): string[] {
    return this.db
      .prepare<[number], { source_id: string }>(
        'SELECT source_id FROM files WHERE target_id = ? GROUP BY source_id ORDER BY MAX(updated_at) DESC',
      )
      .all(this.targetId)
      .map((r) => r.source_id);
  }

  /**
   * How many times the rows of a source (of the bound target) changed, ever:
   * counted by triggers in each change's own transaction (db.ts,
   * source_changes); undefined when never counted.
   */
  changesOf(sourceId: string): number | undefined {
    return this.db
      .prepare<[number, string], { n: number }>(
        'SELECT n FROM source_changes WHERE target_id = ? AND source_id = ?',
      )
      .get(this.targetId, sourceId)?.n;
  }

  getMeta(key: string): string | undefined {
    return this.db.prepare<[string], { value: string }>('SELECT value FROM meta WHERE key = ?').get(key)
      ?.value;
  }

  setMeta(key: string, value: string): void {
    this.commitWaiting();
    this.db
      .prepare(
        'INSERT INTO meta (key, value) VALUES (?, ?) ON CONFLICT (key) DO UPDATE SET value = excluded.value',
      )
      .run(key, value);
  }

  private readonly updateCache = new Map<string, Database.Statement>();

  /** Writes some columns of a row still in state `from`; statements are prepared once per column set. */
  private update(id: number, from: FileState, fields: RowPatch, now: number): number {
    const keys = Object.keys(fields);
    const sig = keys.join(',');
    let stmt = this.updateCache.get(sig);
    if (!stmt) {
      stmt = this.db.prepare(
        `UPDATE files SET ${keys.map((k) => `${k} = @${k}`).join(', ')}${keys.length ? ', ' : ''}updated_at = @updated_at WHERE id = @id AND state = @from`,
      );
      this.updateCache.set(sig, stmt);
    }
    return stmt.run({ ...fields, updated_at: now, id, from }).changes;
  }
}

function stateOf(s: string | undefined): TargetState {
  return s !== undefined && isTargetState(s) ? s : 'unanswered';
}

/** A row a scan's file may be: what observe needs of it, and its identity (path, size, time). */
interface KnownRow {
  id: number;
  state: string;
  abs_path: string;
  size: number;
  mtime_ms: number;
}

/** Known rows by source, then path. */
type KnownRows = Map<string, Map<string, KnownRow[]>>;

/** The row of a file (its identity in the queue, unique within a target: source, path, size, time). */
function knownRow(rows: KnownRows, f: ObservedFile): KnownRow | undefined {
  return rows
    .get(f.sourceId)
    ?.get(f.relPath)
    ?.find((r) => r.size === f.size && r.mtime_ms === f.mtimeMs);
}
