/**
 * The one data-access interface of the service's tables (users, workspaces,
 * tokens, throttle counters, media records, waylines). Two backends implement
 * it: SQLite (better-sqlite3, the default, data dir's service.db) and
 * PostgreSQL (pg). Queries are written once, with `?` placeholders; the rare
 * spots where the two dialects differ ask `kind`.
 */
import { ApiError, CODES } from '../envelope.js';

export type SqlValue = string | number | null | readonly string[] | readonly number[];

export interface SqlDb {
  readonly kind: 'sqlite' | 'postgres';
  all<T>(sql: string, params?: readonly SqlValue[]): Promise<T[]>;
  get<T>(sql: string, params?: readonly SqlValue[]): Promise<T | undefined>;
  /** INSERT/UPDATE/DELETE: the number of rows changed. */
  run(sql: string, params?: readonly SqlValue[]): Promise<number>;
  /** Runs `fn` in one transaction on one connection: all of it or nothing. */
  tx<T>(fn: (db: SqlDb) => Promise<T>): Promise<T>;
  /**
   * Throws DatabaseUnavailableError when the database does not answer, or
   * another ApiError when this instance must not serve (readiness says it).
   */
  ping(): Promise<void>;
  close(): Promise<void>;
  /**
   * A number that changes whenever another connection (another process)
   * commits to the database, read without touching a table; null when the
   * backend cannot tell (PostgreSQL: other instances write through their own
   * connections) or inside a transaction. What this process read stays true
   * while the number holds, except for this connection's own writes.
   */
  outsideWrites(): number | null;
}

/**
 * `column IN (values)` for a list of any length: one array parameter on
 * PostgreSQL (one plan for every length), a list of `?` on SQLite.
 */
export function inList(db: SqlDb, column: string, values: readonly string[]): [string, SqlValue[]] {
  if (db.kind === 'postgres') return [`${column} = ANY(?)`, [values]];
  return [`${column} IN (${values.map(() => '?').join(', ')})`, [...values]];
}

/**
 * The database cannot be reached (down, restarting, network): the request
 * failed before anything was recorded or its outcome is unknown; either way
 * the client should retry. Answered as HTTP 503 with the contract's envelope.
 */
export class DatabaseUnavailableError extends ApiError {
  constructor(cause?: unknown) {
    super(
      503,
      CODES.DATABASE_UNAVAILABLE,
      'The service cannot reach its database right now. Try again in a few seconds; a repeated request is never recorded twice.',
    );
    this.name = 'DatabaseUnavailableError';
    if (cause !== undefined) this.cause = cause;
  }
}
