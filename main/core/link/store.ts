/**
 * What the link remembers across restarts, in its own SQLite file beside the
 * queue (link.db): the bytes each network carried per day or month (its
 * budget's use) and the crew's answer for each network. The gate (gate.ts)
 * is its only writer.
 */
import Database from 'better-sqlite3';
import fs from 'node:fs';
import path from 'node:path';
import type { LinkAnswer } from './transitions.js';

export type BudgetPeriod = 'day' | 'month';

/** The period a moment falls in, in local time: 2026-11-27 (day) or 2026-11 (month). */
export function periodKey(per: BudgetPeriod, when: Date): string {
  const y = String(when.getFullYear());
  const m = String(when.getMonth() + 1).padStart(2, '0');
  const d = String(when.getDate()).padStart(2, '0');
  return per === 'day' ? `${y}-${m}-${d}` : `${y}-${m}`;
}

/** SQLite's words for a file that cannot be written here (a full disk, a read-only folder). */
const CANNOT_WRITE = /^SQLITE_(FULL|READONLY|CANTOPEN|IOERR)/;

export class LinkStore {
  private readonly db: Database.Database;
  /** Prepared once: addUsage runs after every part (every small file), see addUsage. */
  private readonly stmts: { used: Database.Statement; add: Database.Statement };
  private readonly addAll: (network: string, periods: readonly string[], bytes: number) => void;
  /**
   * Why link.db could not be opened for writing (the disk is full, the
   * folder read-only), or null. Then the link works from memory for this
   * run: the policy holds, but the budget's use and the crew's answers are
   * not kept once it ends; the agent says so.
   */
  readonly notKept: string | null;

  constructor(file: string) {
    let db: Database.Database;
    let notKept: string | null = null;
    try {
      fs.mkdirSync(path.dirname(file), { recursive: true });
      db = LinkStore.open(file);
    } catch (err) {
      const raw = (err as { code?: unknown }).code;
      const code = typeof raw === 'string' ? raw : '';
      if (!CANNOT_WRITE.test(code) && code !== 'ENOSPC' && code !== 'EROFS' && code !== 'EACCES') throw err;
      notKept =
        code === 'SQLITE_FULL' || code === 'ENOSPC'
          ? `the disk holding ${path.basename(file)} is full`
          : `${file} cannot be written (${code})`;
      db = LinkStore.open(':memory:');
    }
    this.db = db;
    this.notKept = notKept;
    this.stmts = {
      used: db.prepare('SELECT bytes FROM link_usage WHERE network = ? AND period = ?'),
      add: db.prepare(
        `INSERT INTO link_usage (network, period, bytes) VALUES (?, ?, ?)
         ON CONFLICT (network, period) DO UPDATE SET bytes = bytes + excluded.bytes`,
      ),
    };
    this.addAll = db.transaction((network: string, periods: readonly string[], bytes: number) => {
      for (const period of periods) this.stmts.add.run(network, period, bytes);
    });
  }

  private static open(file: string): Database.Database {
    const db = new Database(file);
    try {
      if (file !== ':memory:') {
        db.pragma('journal_mode = WAL');
        // A write per part, so per small file: no fsync each (the queue's choice too, queue/db.ts).
        // WAL + NORMAL loses no commit when the agent crashes; a power cut may lose the last
        // moments' count of a budget, never the file.
        db.pragma('synchronous = NORMAL');
        // Keep the log small (a full small disk, issue 7's tmpfs).
        db.pragma('wal_autocheckpoint = 64');
        db.pragma('journal_size_limit = 262144');
      }
      db.pragma('busy_timeout = 5000');
      LinkStore.tables(db);
    } catch (err) {
      db.close();
      throw err;
    }
    return db;
  }

  private static tables(db: Database.Database): void {
    db.exec(`
      CREATE TABLE IF NOT EXISTS link_usage (
        network TEXT NOT NULL,
        period TEXT NOT NULL,
        bytes INTEGER NOT NULL,
        PRIMARY KEY (network, period)
      );
      CREATE TABLE IF NOT EXISTS link_answers (
        network TEXT PRIMARY KEY,
        answer TEXT NOT NULL CHECK (answer IN ('yes', 'no')),
        answered_at INTEGER NOT NULL
      );
    `);
  }

  /** The sentence an agent says when link.db is not kept (notKept), else null. */
  get notKeptMessage(): string | null {
    return this.notKept
      ? `The link's record cannot be kept (${this.notKept}): data budgets and your answers about networks count for this run only. Free some space.`
      : null;
  }

  /** Bytes this network carried in the period. */
  used(network: string, period: string): number {
    const row = this.stmts.used.get(network, period) as { bytes: number } | undefined;
    return row?.bytes ?? 0;
  }

  /** Bytes sent, counted into each of `periods` (the day and the month) in one commit. */
  addUsage(network: string, periods: string | readonly string[], bytes: number): void {
    if (bytes <= 0) return;
    this.addAll(network, typeof periods === 'string' ? [periods] : periods, Math.round(bytes));
  }

  answerOf(network: string): LinkAnswer | null {
    const row = this.db.prepare('SELECT answer FROM link_answers WHERE network = ?').get(network) as
      { answer: LinkAnswer } | undefined;
    return row?.answer ?? null;
  }

  /** null forgets the answer (the crew re-pinned the network): they are asked again. */
  setAnswer(network: string, answer: LinkAnswer | null, at = Date.now()): void {
    if (answer === null) this.db.prepare('DELETE FROM link_answers WHERE network = ?').run(network);
    else
      this.db
        .prepare(
          `INSERT INTO link_answers (network, answer, answered_at) VALUES (?, ?, ?)
           ON CONFLICT (network) DO UPDATE SET answer = excluded.answer, answered_at = excluded.answered_at`,
        )
        .run(network, answer, at);
  }

  close(): void {
    this.db.close();
  }
}
