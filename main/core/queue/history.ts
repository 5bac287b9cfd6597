import type { WaylineMatch } from '../waylines/match.js';
import type { Statement } from 'better-sqlite3';
import type { Db } from './db.js';

export interface HistoryEntry {
  id: number;
  sourceId: string;
  label: string;
  folder: string;
  startedAt: number;
  finishedAt: number | null;
  files: number;
  bytes: number;
  fastUploaded: number;
  failed: number;
  wayline: WaylineMatch | null;
}

interface Row {
  id: number;
  source_id: string;
  label: string;
  folder: string;
  started_at: number;
  finished_at: number | null;
  files: number;
  bytes: number;
  fast_uploaded: number;
  failed: number;
  wayline_id: string | null;
  wayline_name: string | null;
  how: WaylineMatch['how'] | null;
}

/**
 * Per card (or folder) and flight folder: when, how many files, how long,
 * and which wayline the flight was. Lives in the queue database so it
 * survives restarts and travels with the queue; part of the store
 * (`queue.history`), scoped to its bound target (waylines are per workspace).
 */
export class History {
  private readonly sessions = new Map<string, number>();
  private recordStmt: Statement | undefined;

  constructor(
    private readonly db: Db,
    private readonly target: () => number,
    private readonly now: () => number = Date.now,
  ) {}

  private get targetId(): number {
    return this.target();
  }

  /** Starts a new session for a source (a card insertion); later files count into it. */
  begin(sourceId: string): number {
    const last =
      this.db.prepare<[], { s: number | null }>('SELECT MAX(session) AS s FROM history').get()?.s ?? 0;
    const session = Math.max(last, ...this.sessions.values(), 0) + 1;
    this.sessions.set(sourceId, session);
    return session;
  }

  /** Counts one finished file into its folder's entry of the source's current session. */
  record(file: {
    sourceId: string;
    label: string;
    folder: string;
    size: number;
    outcome: 'uploaded' | 'fast-uploaded' | 'stored' | 'failed';
  }): void {
    const session = this.sessions.get(file.sourceId) ?? this.begin(file.sourceId);
    const t = this.now();
    // Prepared once: this runs for every file finished (a prepare each showed in profiles of small files).
    this.recordStmt ??= this.db.prepare(
      `INSERT INTO history (session, target_id, source_id, label, folder, started_at, finished_at, files, bytes, fast_uploaded, failed)
       VALUES (@session, @target, @sourceId, @label, @folder, @t, @t, @files, @bytes, @fast, @failed)
       ON CONFLICT (session, folder) DO UPDATE SET finished_at = @t, files = files + @files, bytes = bytes + @bytes,
         fast_uploaded = fast_uploaded + @fast, failed = failed + @failed`,
    );
    this.recordStmt.run({
      session,
      target: this.targetId,
      sourceId: file.sourceId,
      label: file.label,
      folder: file.folder,
      t,
      files: file.outcome === 'failed' ? 0 : 1,
      bytes: file.outcome === 'uploaded' || file.outcome === 'stored' ? file.size : 0,
      fast: file.outcome === 'fast-uploaded' ? 1 : 0,
      failed: file.outcome === 'failed' ? 1 : 0,
    });
  }

  /** The wayline of a flight folder; a user's choice is never overwritten by a name match. */
  setWayline(folder: string, match: WaylineMatch | null, opts: { user?: boolean } = {}): number {
    if (!opts.user && this.waylineOf(folder)?.how === 'user') return 0;
    if (match === null && !opts.user) return 0;
    return this.db
      .prepare(
        `INSERT INTO folder_waylines (target_id, folder, wayline_id, wayline_name, how) VALUES (?, ?, ?, ?, ?)
         ON CONFLICT (target_id, folder) DO UPDATE SET wayline_id = excluded.wayline_id, wayline_name = excluded.wayline_name, how = excluded.how`,
      )
      .run(
        this.targetId,
        folder,
        match?.waylineId ?? null,
        match?.waylineName ?? null,
        opts.user ? 'user' : (match?.how ?? 'user'),
      ).changes;
  }

  waylineOf(folder: string): WaylineMatch | null {
    const r = this.db
      .prepare<
        [number, string],
        { wayline_id: string | null; wayline_name: string | null; how: WaylineMatch['how'] }
      >('SELECT wayline_id, wayline_name, how FROM folder_waylines WHERE target_id = ? AND folder = ?')
      .get(this.targetId, folder);
    return r?.wayline_id ? { waylineId: r.wayline_id, waylineName: r.wayline_name ?? '', how: r.how } : null;
  }

  /** Every wayline match of the target, as one string: what a card's flights were matched with. */
  waylinesStamp(): string {
    return this.db
      .prepare<
        [number],
        { folder: string; wayline_id: string | null; wayline_name: string | null; how: string }
      >(
        'SELECT folder, wayline_id, wayline_name, how FROM folder_waylines WHERE target_id = ? ORDER BY folder',
      )
      .all(this.targetId)
      .map((r) => JSON.stringify([r.folder, r.wayline_id, r.wayline_name, r.how]))
      .join('\n');
  }

  /** Whether a folder already has a decision (a match, or the user's "none"). */
  hasDecision(folder: string): boolean {
    return (
      this.db
        .prepare('SELECT 1 FROM folder_waylines WHERE target_id = ? AND folder = ?')
        .get(this.targetId, folder) !== undefined
    );
  }

  list(limit = 50): HistoryEntry[] {
    return this.db
      .prepare<[number, number], Row>(
        `SELECT h.*, f.wayline_id, f.wayline_name, f.how FROM history h
         LEFT JOIN folder_waylines f ON f.target_id = h.target_id AND f.folder = h.folder
         WHERE h.target_id = ? ORDER BY h.started_at DESC, h.id DESC LIMIT ?`,
      )
      .all(this.targetId, limit)
      .map((r) => ({
        id: r.id,
        sourceId: r.source_id,
        label: r.label,
        folder: r.folder,
        startedAt: r.started_at,
        finishedAt: r.finished_at,
        files: r.files,
        bytes: r.bytes,
        fastUploaded: r.fast_uploaded,
        failed: r.failed,
        wayline: r.wayline_id
          ? { waylineId: r.wayline_id, waylineName: r.wayline_name ?? '', how: r.how ?? 'user' }
          : null,
      }));
  }
}
