import type { Statement } from 'better-sqlite3';
import type { Db } from '../db.js';
import type { SqlDb, SqlValue } from './sql.js';

interface PendingWrite {
  sql: string;
  params: readonly SqlValue[];
  resolve: (changes: number) => void;
  reject: (err: unknown) => void;
}

/** Statements by SQL text: the texts come from a bounded set, capped anyway. */
const MAX_STATEMENTS = 512;

/**
 * SqlDb on better-sqlite3. Its calls are synchronous; an async transaction
 * (tx) holds the one connection between BEGIN and COMMIT, so every other call
 * waits for it to end instead of slipping into it.
 *
 * Writes outside a transaction (run) are committed in groups: those asked
 * for while the event loop was busy run together, each in its own savepoint,
 * in one transaction committed at the next turn of the loop (setImmediate),
 * and each caller's promise settles only once that COMMIT returned (in the
 * operating system, synchronous=NORMAL: see db.ts), so nothing is answered
 * before it would survive the process; a failing statement fails only its
 * own caller. The commit runs in one synchronous block: nothing else of this
 * process slips into it.
 */
export class SqliteDb implements SqlDb {
  readonly kind = 'sqlite' as const;
  private readonly statements = new Map<string, Statement<unknown[]>>();
  private busy: Promise<void> | null = null;
  /** Writes waiting for their group's commit (run). */
  private writes: PendingWrite[] = [];

  constructor(readonly raw: Db) {}

  private stmt(sql: string): Statement<unknown[]> {
    let s = this.statements.get(sql);
    if (!s) {
      if (this.statements.size >= MAX_STATEMENTS) this.statements.clear();
      s = this.raw.prepare<unknown[]>(sql);
      this.statements.set(sql, s);
    }
    return s;
  }

  // SQLite takes no arrays and no booleans: inList() spreads arrays for it.
  private direct: SqlDb = {
    kind: 'sqlite',
    all: <T>(sql: string, params: readonly SqlValue[] = []) =>
      Promise.resolve(this.stmt(sql).all(...params) as T[]),
    get: <T>(sql: string, params: readonly SqlValue[] = []) =>
      Promise.resolve(this.stmt(sql).get(...params) as T | undefined),
    run: (sql: string, params: readonly SqlValue[] = []) =>
      Promise.resolve(this.stmt(sql).run(...params).changes),
    tx: () => Promise.reject(new Error('nested transactions are not supported')),
    ping: () => Promise.resolve(),
    close: () => Promise.resolve(),
    outsideWrites: () => null,
  };

  async all<T>(sql: string, params?: readonly SqlValue[]): Promise<T[]> {
    while (this.busy) await this.busy; // checked right before the call: nothing runs in between
    return this.direct.all<T>(sql, params);
  }
  async get<T>(sql: string, params?: readonly SqlValue[]): Promise<T | undefined> {
    while (this.busy) await this.busy; // checked right before the call: nothing runs in between
    return this.direct.get<T>(sql, params);
  }
  async run(sql: string, params?: readonly SqlValue[]): Promise<number> {
    return new Promise<number>((resolve, reject) => {
      this.writes.push({ sql, params: params ?? [], resolve, reject });
      if (this.writes.length === 1) setImmediate(() => void this.commitWrites());
    });
  }

  /** The writes asked for since the last group, in one transaction (see the class). */
  private async commitWrites(): Promise<void> {
    while (this.busy) await this.busy; // checked right before the commit: nothing runs in between
    this.commitWritesNow();
  }

  private commitWritesNow(): void {
    const group = this.writes.splice(0);
    if (group.length === 0) return;
    const run = (w: PendingWrite) => this.stmt(w.sql).run(...w.params).changes;
    if (group.length === 1) {
      const [w] = group as [PendingWrite];
      try {
        w.resolve(run(w));
      } catch (err) {
        w.reject(err);
      }
      return;
    }
    const outcomes: Array<{ changes: number } | { err: unknown }> = [];
    try {
      this.raw.exec('BEGIN IMMEDIATE');
      for (const w of group) {
        this.raw.exec('SAVEPOINT one_write');
        try {
          outcomes.push({ changes: run(w) });
          this.raw.exec('RELEASE one_write');
        } catch (err) {
          this.raw.exec('ROLLBACK TO one_write');
          this.raw.exec('RELEASE one_write');
          outcomes.push({ err });
        }
      }
      this.raw.exec('COMMIT');
    } catch (err) {
      if (this.raw.inTransaction) this.raw.exec('ROLLBACK');
      for (const w of group) w.reject(err);
      return;
    }
    group.forEach((w, i) => {
      const o = outcomes[i]!;
      if ('err' in o) w.reject(o.err);
      else w.resolve(o.changes);
    });
  }

  async tx<T>(fn: (db: SqlDb) => Promise<T>): Promise<T> {
    while (this.busy) await this.busy;
    let release = (): void => undefined;
    this.busy = new Promise((resolve) => (release = resolve));
    try {
      // IMMEDIATE: the write lock now, so importWaylines() in another process waits here, not mid-way.
      this.raw.exec('BEGIN IMMEDIATE');
      try {
        const result = await fn(this.direct);
        this.raw.exec('COMMIT');
        return result;
      } catch (err) {
        if (this.raw.inTransaction) this.raw.exec('ROLLBACK');
        throw err;
      }
    } finally {
      this.busy = null;
      release();
    }
  }

  ping(): Promise<void> {
    return Promise.resolve();
  }

  /** SQLite's data_version: it changes when another connection commits, never for this one's writes. */
  outsideWrites(): number {
    return (this.stmt('PRAGMA data_version').get() as { data_version: number }).data_version;
  }

  close(): Promise<void> {
    this.commitWritesNow();
    this.raw.close();
    return Promise.resolve();
  }
}
