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

export class LinkStore {
  private readonly db: Database.Database;

  constructor(file: string) {
    fs.mkdirSync(path.dirname(file), { recursive: true });
    this.db = new Database(file);
    this.db.pragma('journal_mode = WAL');
    this.db.pragma('busy_timeout = 5000');
    this.db.exec(`
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

  /** Bytes this network carried in the period. */
  used(network: string, period: string): number {
    const row = this.db
      .prepare('SELECT bytes FROM link_usage WHERE network = ? AND period = ?')
      .get(network, period) as { bytes: number } | undefined;
    return row?.bytes ?? 0;
  }

  addUsage(network: string, period: string, bytes: number): void {
    if (bytes <= 0) return;
    this.db
      .prepare(
        `INSERT INTO link_usage (network, period, bytes) VALUES (?, ?, ?)
         ON CONFLICT (network, period) DO UPDATE SET bytes = bytes + excluded.bytes`,
      )
      .run(network, period, Math.round(bytes));
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
