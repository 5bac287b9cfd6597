import type { Statement } from 'better-sqlite3';
import type { Db } from '../db.js';
import type { SqlDb, SqlValue } from './sql.js';

/** Statements by SQL text: the texts come from a bounded set, capped anyway. */
const MAX_STATEMENTS = 512;

/**
 * SqlDb on better-sqlite3. Its calls are synchronous; an async transaction
 * (tx) holds the one connection between BEGIN and COMMIT, so every other call
 * waits for it to end instead of slipping into it.
 */
export class SqliteDb implements SqlDb {
  readonly kind = 'sqlite' as const;
  private readonly statements = new Map<string, Statement<unknown[]>>();
  private busy: Promise<void> | null = null;

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
    while (this.busy) await this.busy; // checked right before the call: nothing runs in between
    return this.direct.run(sql, params);
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

  close(): Promise<void> {
    this.raw.close();
    return Promise.resolve();
  }
}
