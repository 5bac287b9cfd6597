import { createHash } from 'node:crypto';
import pg from 'pg';
import type { Logger } from 'pino';
import { SchemaTooNewError } from '../db.js';
import { MIGRATIONS, SCHEMA_VERSION } from '../migrations.js';
import type { PostgresConfig } from './config.js';
import { connectionOptions, describeDatabase } from './config.js';
import { InstanceLock } from './instance-lock.js';
import { ApiError, CODES } from '../envelope.js';
import { DatabaseUnavailableError, type SqlDb, type SqlValue } from './sql.js';

/** Advisory lock key of migrations (any bigint; 'dms' in ASCII, then a number; see INSTANCE_LOCK). */
const MIGRATE_LOCK = 0x646d73_0001;

// BIGINT (ms timestamps, ids, count(*)) as numbers: every value we keep is far below 2^53.
const INT8 = 20;
const types = {
  getTypeParser: ((oid: number, format?: 'text' | 'binary'): unknown =>
    oid === INT8 && format !== 'binary'
      ? (v: string) => Number(v)
      : (pg.types.getTypeParser(oid, format) as unknown)) as typeof pg.types.getTypeParser,
};

/** `?` placeholders to `$1, $2...` (our SQL has no `?` inside string literals). */
function numbered(sql: string): string {
  let n = 0;
  return sql.replace(/\?/g, () => `$${++n}`);
}

/**
 * A statement with parameters as a named prepared statement: each connection
 * parses and plans it once, not on every request (the fast-upload look-up, the
 * token check, the media insert run thousands of times a minute under load).
 * The service's SQL texts are a fixed set (lists are one `= ANY(?)` array
 * parameter, see inList), so the names are too; the name is the text's hash.
 */
const prepared = new Map<string, pg.QueryConfig>();
function statement(sql: string, params: readonly SqlValue[]): pg.QueryConfig {
  if (params.length === 0) return { text: numbered(sql) };
  let config = prepared.get(sql);
  if (!config) {
    const text = numbered(sql);
    config = { name: `dms_${createHash('sha1').update(text).digest('hex').slice(0, 20)}`, text };
    prepared.set(sql, config);
  }
  return { ...config, values: params as unknown[] };
}

const UNAVAILABLE_CODES = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'ETIMEDOUT',
  'EPIPE',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'ENOTFOUND',
  'EAI_AGAIN',
  '57P01', // admin_shutdown: the server is stopping
  '57P02', // crash_shutdown
  '57P03', // cannot_connect_now: starting up or in recovery
  '53300', // too_many_connections
]);

/** True for failures of the connection, not of the statement: retrying later may succeed. */
export function isUnavailable(err: unknown): boolean {
  if (!(err instanceof Error)) return false;
  const code = (err as { code?: unknown }).code;
  if (typeof code === 'string' && (UNAVAILABLE_CODES.has(code) || code.startsWith('08'))) return true;
  return /Connection terminated|connection timeout|timeout exceeded when trying to connect|Client has encountered a connection error|not queryable/i.test(
    err.message,
  );
}

/** Node's codes for a certificate whose issuer it does not trust (verify-ca / verify-full). */
const TLS_TRUST_CODES = new Set([
  'UNABLE_TO_VERIFY_LEAF_SIGNATURE',
  'UNABLE_TO_GET_ISSUER_CERT_LOCALLY',
  'UNABLE_TO_GET_ISSUER_CERT',
  'SELF_SIGNED_CERT_IN_CHAIN',
  'DEPTH_ZERO_SELF_SIGNED_CERT',
  'CERT_UNTRUSTED',
]);

/** The database could not be used at start: the message says why and what to do (never the password). */
export class DatabaseStartError extends Error {
  constructor(message: string, cause: unknown) {
    super(message, { cause });
    this.name = 'DatabaseStartError';
  }
}

/** Why the first connection failed, in words an operator can act on (never the password). */
export function explainConnectFailure(err: unknown, description: string): Error {
  const code = (err as { code?: unknown }).code;
  const text = err instanceof Error ? err.message : String(err);
  let why: string;
  if (/password must be a string|no password/i.test(text)) {
    why =
      'asks for a password and none was given: put it in the --database settings file ("password"), ' +
      'in PGPASSWORD or in ~/.pgpass';
  } else if (code === '28P01' || code === '28000') {
    why = 'refused the user name or password';
  } else if (code === '3D000') {
    why = 'has no such database: create it first (createdb)';
  } else if (typeof code === 'string' && TLS_TRUST_CODES.has(code)) {
    why =
      `presented a TLS certificate this service does not trust (${code}): Node checks it against its own ` +
      "list of CAs, not the system's; give the CA that signed it in NODE_EXTRA_CA_CERTS=/path/to/ca.crt " +
      "in the service's environment (docs/deploy.md, PostgreSQL)";
  } else if (code === 'ERR_TLS_CERT_ALTNAME_INVALID') {
    why = `presented a TLS certificate for another name (${code}): connect with the name the certificate carries`;
  } else if (code === '57P03' || code === '57P01') {
    why = `is starting up or shutting down (${code}): start the service again once PostgreSQL is up (a systemd unit with Restart= does)`;
  } else if (isUnavailable(err) || err instanceof DatabaseUnavailableError) {
    why = `cannot be reached (${typeof code === 'string' ? code : 'no answer'}): check that PostgreSQL runs and listens there`;
  } else {
    return err instanceof Error ? err : new Error(text);
  }
  return new DatabaseStartError(`The database server ${description} ${why}.`, err);
}

function translate(err: unknown): never {
  throw isUnavailable(err) ? new DatabaseUnavailableError(err) : err;
}

async function exec<T>(
  q: pg.Pool | pg.PoolClient,
  sql: string,
  params: readonly SqlValue[],
): Promise<pg.QueryResult<T & pg.QueryResultRow>> {
  try {
    return await q.query<T & pg.QueryResultRow>(statement(sql, params));
  } catch (err) {
    return translate(err);
  }
}

function over(q: pg.Pool | pg.PoolClient, tx: SqlDb['tx']): SqlDb {
  return {
    kind: 'postgres',
    all: async <T>(sql: string, params: readonly SqlValue[] = []) => (await exec<T>(q, sql, params)).rows,
    get: async <T>(sql: string, params: readonly SqlValue[] = []) =>
      (await exec<T>(q, sql, params)).rows[0] as T | undefined,
    run: async (sql: string, params: readonly SqlValue[] = []) => (await exec(q, sql, params)).rowCount ?? 0,
    tx,
    ping: async () => void (await exec(q, 'SELECT 1', [])),
    close: () => Promise.resolve(),
    outsideWrites: () => null,
  };
}

/**
 * SqlDb on a pool of PostgreSQL connections. A connection that breaks (the
 * server restarted) is dropped and the next query opens a new one: the service
 * recovers by itself; meanwhile requests fail with DatabaseUnavailableError.
 */
export class PostgresDb implements SqlDb {
  readonly kind = 'postgres' as const;
  readonly pool: pg.Pool;
  private readonly q: SqlDb;
  /** The instance lock (embedded-bucket or shared mode), taken again when its connection is lost. */
  private lock: InstanceLock | null = null;
  /**
   * One connection of its own for /readyz: under load the main pool is busy,
   * and a readiness check that waits behind requests would make a load
   * balancer take every instance out at once.
   */
  private readonly healthPool: pg.Pool;

  constructor(
    readonly config: PostgresConfig,
    private readonly log: Logger | null,
  ) {
    this.pool = new pg.Pool({
      ...connectionOptions(config),
      max: config.maxConnections ?? 10,
      // A request waits at most this long for a connection, then gets 503001.
      connectionTimeoutMillis: 5_000,
      idleTimeoutMillis: 30_000,
      keepAlive: true,
      application_name: 'drone-media-sync',
      types,
    });
    // An idle connection cut by a server restart: without a listener, the process would exit.
    this.pool.on('error', (err) =>
      this.log?.warn({ err: err.message }, 'database connection lost; reconnecting'),
    );
    this.q = over(this.pool, (fn) => this.tx(fn));
    this.healthPool = new pg.Pool({
      ...connectionOptions(config),
      max: 1,
      connectionTimeoutMillis: 2_000,
      idleTimeoutMillis: 60_000,
      application_name: 'drone-media-sync readiness',
      types,
    });
    this.healthPool.on('error', () => undefined); // said by the main pool's listener already
  }

  all<T>(sql: string, params?: readonly SqlValue[]): Promise<T[]> {
    return this.q.all<T>(sql, params);
  }
  get<T>(sql: string, params?: readonly SqlValue[]): Promise<T | undefined> {
    return this.q.get<T>(sql, params);
  }
  run(sql: string, params?: readonly SqlValue[]): Promise<number> {
    return this.q.run(sql, params);
  }
  /** Other instances write through their own connections: nothing tells this one cheaply. */
  outsideWrites(): null {
    return null;
  }

  async ping(): Promise<void> {
    // Another instance took the database while this one's lock was lost: not ready, said as it is.
    if (this.lock?.conflict) throw new ApiError(503, CODES.INSTANCE_CONFLICT, this.lock.conflict);
    return over(this.healthPool, () => Promise.reject(new Error('no transactions here'))).ping();
  }

  /**
   * A connection of the pool, for several statements. The pool stops
   * listening for its errors while it is out: a connection cut while no
   * statement runs on it (PostgreSQL restarting while a transaction waits on
   * other work) would emit an error nobody hears, and end the process. Here
   * it is heard from the moment the pool hands it over (in the pool's own
   * callback: a promise would leave a gap in which PostgreSQL's "terminating
   * connection", read in the same chunk as the previous user's last answer,
   * finds no listener); the next statement fails with 503001, and `release`
   * drops the connection.
   */
  private checkout(): Promise<{ client: pg.PoolClient; release: (err?: unknown) => void }> {
    return new Promise((resolve, reject) => {
      this.pool.connect((err, client, done) => {
        if (err || !client) {
          reject(
            isUnavailable(err) ? new DatabaseUnavailableError(err) : (err ?? new Error('no connection')),
          );
          return;
        }
        let lost: Error | undefined;
        const onError = (e: Error) => {
          lost ??= e;
          this.log?.warn({ err: e.message }, 'database connection lost during a request; reconnecting');
        };
        client.on('error', onError);
        resolve({
          client,
          release: (e?: unknown) => {
            client.off('error', onError);
            done(lost ?? (e instanceof Error ? e : undefined));
          },
        });
      });
    });
  }

  async tx<T>(fn: (db: SqlDb) => Promise<T>): Promise<T> {
    const { client, release } = await this.checkout();
    let broken: unknown = undefined;
    try {
      await exec(client, 'BEGIN', []);
      const result = await fn(
        over(client, () => Promise.reject(new Error('nested transactions are not supported'))),
      );
      await exec(client, 'COMMIT', []);
      return result;
    } catch (err) {
      try {
        await client.query('ROLLBACK');
      } catch (rollbackErr) {
        broken = rollbackErr;
      }
      throw err;
    } finally {
      // A connection that failed mid-transaction is not given back to the pool.
      release(broken);
    }
  }

  /**
   * Brings the schema up to date, then runs `bootstrap` (default workspace,
   * pilot user, dev token), holding an advisory lock: several instances
   * starting at once take turns, and the second finds what the first made.
   */
  async startup<T>(bootstrap: () => Promise<T>): Promise<T> {
    try {
      return await this.withLock(MIGRATE_LOCK, async (client) => {
        await this.migrate(client);
        return bootstrap();
      });
    } catch (err) {
      throw explainConnectFailure(err, describeDatabase(this.config.url));
    }
  }

  private async migrate(client: pg.PoolClient): Promise<void> {
    {
      await client.query('CREATE TABLE IF NOT EXISTS dms_schema_version (version INTEGER NOT NULL)');
      const row = (await client.query<{ version: number }>('SELECT version FROM dms_schema_version')).rows[0];
      if (!row) await client.query('INSERT INTO dms_schema_version (version) VALUES (0)');
      const current = row?.version ?? 0;
      if (current > SCHEMA_VERSION)
        throw new SchemaTooNewError(describeDatabase(this.config.url), current, SCHEMA_VERSION);
      for (let version = current + 1; version <= SCHEMA_VERSION; version++) {
        const migration = MIGRATIONS[version - 1];
        if (!migration) break;
        // One transaction per step, as on SQLite: PostgreSQL's DDL is transactional.
        await client.query('BEGIN');
        try {
          await client.query(migration.postgres);
          await client.query('UPDATE dms_schema_version SET version = $1', [version]);
          await client.query('COMMIT');
        } catch (err) {
          await client.query('ROLLBACK');
          throw err;
        }
      }
    }
  }

  /** Runs `fn` on one connection while holding a session advisory lock: one instance at a time. */
  private async withLock<T>(key: number, fn: (client: pg.PoolClient) => Promise<T>): Promise<T> {
    const { client, release } = await this.checkout();
    try {
      await client.query('SELECT pg_advisory_lock($1)', [key]);
      try {
        return await fn(client);
      } finally {
        await client.query('SELECT pg_advisory_unlock($1)', [key]);
      }
    } finally {
      release();
    }
  }

  /**
   * Takes the instance lock for the life of the service (instance-lock.ts):
   * false when another instance holds it in a mode that excludes this one.
   */
  async holdInstanceLock(mode: 'exclusive' | 'shared'): Promise<boolean> {
    const lock = new InstanceLock(this.config, mode, this.log);
    try {
      if (!(await lock.take())) return false;
    } catch (err) {
      throw explainConnectFailure(err, describeDatabase(this.config.url));
    }
    this.lock = lock;
    return true;
  }

  async close(): Promise<void> {
    await this.lock?.close();
    this.lock = null;
    await this.healthPool.end();
    await this.pool.end();
  }
}
