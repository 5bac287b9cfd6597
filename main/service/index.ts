import { mkdirSync } from 'node:fs';
import { pino, type Logger } from 'pino';
import { safeJsonText } from '../shared/visible.js';
import { TOKEN_TTL_SECONDS, TokenStore } from './auth.js';
import {
  createUser,
  createWorkspace,
  ensureDefaultWorkspace,
  ensureDefaults,
  resetPassword,
} from './bootstrap.js';
import type { ExternalBucketConfig } from './bucket/external-config.js';
import { CredentialsCheck } from './bucket/credentials-check.js';
import { startEmbeddedBucket } from './bucket/embedded.js';
import type { BucketBackend } from './bucket/types.js';
import type { ServiceContext } from './context.js';
import type { DatabaseConfig } from './data/config.js';
import { openServiceDatabase, type ServiceDatabase } from './data/open.js';
import type { SqlDb } from './data/sql.js';
import { MediaStore, type MediaRecord } from './media-store.js';
import { resolveLimits, type ServiceLimits } from './limits.js';
import { buildServer, DEFAULT_BODY_LIMIT } from './server.js';
import { insertWaylines } from './waylines.js';

// The external bucket pulls in the AWS SDK: loaded only when configured, so
// the built-in service starts fast.
export { validateExternalBucketConfig, type ExternalBucketConfig } from './bucket/external-config.js';
export { SchemaTooNewError } from './db.js';
export { InstanceConflictError } from './data/open.js';
export { DatabaseStartError } from './data/postgres.js';
export { BucketCredentialsError } from './bucket/credentials-check.js';
export {
  describeDatabase,
  validateDatabaseConfig,
  type DatabaseConfig,
  type PostgresConfig,
} from './data/config.js';
export { CODES } from './envelope.js';
export type { MediaRecord } from './media-store.js';
export { DEFAULT_BODY_LIMIT } from './server.js';
export { TOKEN_TTL_SECONDS } from './auth.js';
export { DEFAULT_LIMITS, type ServiceLimits } from './limits.js';

export const DEFAULT_STS_EXPIRE_SECONDS = 3600;

export interface ServiceOptions {
  /** Interface to listen on; default 127.0.0.1 (this machine only). */
  host?: string;
  /** Default 0: a free port, read it from baseUrl. */
  port?: number;
  /** The embedded bucket's port; default 0: a free port (bucket.endpoint tells which). */
  bucketPort?: number;
  dataDir: string;
  /** Default: pino at info level on stderr. false: silent. */
  logger?: Logger | false;
  /** Lifetime of STS credentials, default 3600 s. */
  stsExpireSeconds?: number;
  /** Default 256 KiB. */
  bodyLimitBytes?: number;
  /** A real bucket instead of the embedded one. */
  externalBucket?: ExternalBucketConfig;
  /** Timeouts, caps and throttling; DEFAULT_LIMITS for what is not given. */
  limits?: Partial<ServiceLimits>;
  /** Where the tables are: default the data dir's SQLite file; or PostgreSQL (docs/deploy.md). */
  database?: DatabaseConfig;
}

/** Direct control for tests and the CLI, bypassing HTTP. */
export interface ServiceAdmin {
  /** A new access token (default: default workspace, 24 h). ttlSeconds <= 0 gives an already expired token. */
  createToken(opts?: { workspaceId?: string; ttlSeconds?: number }): Promise<string>;
  /** Resolves false when the token was unknown or already revoked. */
  revokeToken(token: string): Promise<boolean>;
  createUser(username: string, password: string, workspaceId?: string): Promise<void>;
  /** A new, empty workspace; resolves to its id (also its object key prefix). */
  createWorkspace(name: string): Promise<string>;
  mediaRecords(workspaceId?: string): Promise<MediaRecord[]>;
  setStsExpireSeconds(seconds: number): void;
}

export interface RunningService {
  baseUrl: string;
  /** The default workspace. */
  workspaceId: string;
  /** The development token of the default workspace: no expiry, stable across restarts. */
  token: string;
  bucket: { name: string; endpoint: string; dataDir: string; objectKeyPrefix: string };
  /** 'sqlite' or the PostgreSQL server as user@host:port/database (never a password). */
  database: string;
  /**
   * Graceful stop, first half: /readyz answers 503, new requests are refused
   * (503002, `Connection: close`), and this resolves once the requests in
   * flight have finished (or after `timeoutMs`). Then call close().
   */
  drain(timeoutMs?: number): Promise<void>;
  close(): Promise<void>;
  admin: ServiceAdmin;
}

function checkSeconds(n: number): number {
  if (!Number.isInteger(n) || n < 1)
    throw new Error(`stsExpireSeconds must be a positive integer (got ${n}).`);
  return n;
}

function defaultLogger(): Logger {
  return pino(
    { name: 'dms-service', level: 'info', hooks: { streamWrite: safeJsonText } },
    pino.destination(2),
  );
}

export async function startService(opts: ServiceOptions): Promise<RunningService> {
  const host = opts.host ?? '127.0.0.1';
  const log = opts.logger === false ? null : (opts.logger ?? defaultLogger());
  const settings = { stsExpireSeconds: checkSeconds(opts.stsExpireSeconds ?? DEFAULT_STS_EXPIRE_SECONDS) };
  const bodyLimit = opts.bodyLimitBytes ?? DEFAULT_BODY_LIMIT;
  if (!Number.isInteger(bodyLimit) || bodyLimit < 1024)
    throw new Error('bodyLimitBytes must be an integer of at least 1024.');

  const limits = resolveLimits(opts.limits);
  // Whatever the database: the data folder holds the password and token files (and the bucket's).
  mkdirSync(opts.dataDir, { recursive: true });
  const data = await openServiceDatabase({
    dataDir: opts.dataDir,
    database: opts.database ?? { kind: 'sqlite' },
    embeddedBucket: !opts.externalBucket,
    log,
  });
  const { db } = data;
  let bucket: BucketBackend | null = null;
  try {
    const tokens = new TokenStore(db);
    const defaults = await data.startup(() => ensureDefaults(db, opts.dataDir, tokens));
    if (defaults.createdPasswordFile) {
      // The path only: the password itself never goes to a log.
      log?.info(`Created user "pilot"; its password is in ${defaults.createdPasswordFile}`);
    }
    bucket = opts.externalBucket
      ? (await import('./bucket/external.js')).createExternalBucket(opts.externalBucket, {
          providerIdleMs: limits.providerIdleMs,
        })
      : await startEmbeddedBucket({
          dataDir: opts.dataDir,
          host,
          port: opts.bucketPort ?? 0,
          db: await data.bucketDb(),
          limits,
          log,
        });
    // An external bucket whose STS refuses credentials stops the start here, with the fix.
    const credentials = new CredentialsCheck(
      bucket,
      () => settings.stsExpireSeconds,
      log,
      limits.bucketCheckSeconds * 1000,
    );
    await credentials.atStart();
    const lifecycle = { draining: false, inFlight: 0 };
    const ctx: ServiceContext = { db, tokens, bucket, credentials, settings, log, limits, lifecycle };
    const app = buildServer(ctx, { logger: log, bodyLimit });
    await app.listen({ host, port: opts.port ?? 0 });
    const address = app.server.address();
    const port = typeof address === 'object' && address ? address.port : (opts.port ?? 0);
    const shownHost = host === '0.0.0.0' || host === '::' ? '127.0.0.1' : host;
    const baseUrl = `http://${shownHost.includes(':') ? `[${shownHost}]` : shownHost}:${port}`;
    const prefixRow = await db.get<{ object_key_prefix: string }>(
      'SELECT object_key_prefix FROM workspaces WHERE id = ?',
      [defaults.workspaceId],
    );

    const running = bucket;
    let closing: Promise<void> | null = null;
    return {
      baseUrl,
      workspaceId: defaults.workspaceId,
      token: defaults.devToken,
      database: data.description,
      bucket: {
        name: running.name,
        endpoint: running.endpoint,
        dataDir: running.dataDir,
        objectKeyPrefix: running.prefixFor(prefixRow?.object_key_prefix ?? defaults.workspaceId),
      },
      admin: createAdmin(data, tokens, defaults.workspaceId, settings),
      async drain(timeoutMs = limits.requestTimeoutMs) {
        lifecycle.draining = true;
        const until = Date.now() + timeoutMs;
        while (lifecycle.inFlight > 0 && Date.now() < until) await sleep(20);
      },
      close() {
        // Order matters: no new requests, then no bucket, then the DB they both use.
        closing ??= (async () => {
          lifecycle.draining = true;
          await app.close();
          await running.close();
          await data.close();
        })();
        return closing;
      },
    };
  } catch (err) {
    await bucket?.close().catch(() => undefined);
    await data.close();
    throw err;
  }
}

const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

function createAdmin(
  data: ServiceDatabase,
  tokens: TokenStore,
  defaultWorkspace: string,
  settings: { stsExpireSeconds: number },
): ServiceAdmin {
  const db: SqlDb = data.db;
  const media = new MediaStore(db);
  const requireWorkspace = async (id: string): Promise<string> => {
    if (!(await db.get('SELECT 1 FROM workspaces WHERE id = ?', [id])))
      throw new Error(`Workspace ${id} does not exist.`);
    return id;
  };
  return {
    async createToken(opts = {}) {
      const workspaceId = await requireWorkspace(opts.workspaceId ?? defaultWorkspace);
      return tokens.issue({ workspaceId, userId: null, kind: 'admin' }, opts.ttlSeconds ?? TOKEN_TTL_SECONDS);
    },
    revokeToken: (token) => tokens.revoke(token),
    async createUser(username, password, workspaceId) {
      await createUser(db, username, password, await requireWorkspace(workspaceId ?? defaultWorkspace));
    },
    async createWorkspace(name) {
      const id = await createWorkspace(db, name);
      await data.workspaceCreated();
      return id;
    },
    mediaRecords: (workspaceId) => media.list(workspaceId),
    setStsExpireSeconds(seconds) {
      settings.stsExpireSeconds = checkSeconds(seconds);
    },
  };
}

/**
 * Validated bulk import of waylines (the service may be running on the same
 * data: SQLite WAL, or PostgreSQL, lets both write). Items are the contract's
 * wayline items (2.2) plus optional create_time and workspace_id (default:
 * the default workspace); an item with an existing id replaces it. All or
 * nothing: the first invalid item throws `Wayline <index>: <field> ...`.
 */
export async function importWaylines(
  dataDir: string,
  items: unknown[],
  database: DatabaseConfig = { kind: 'sqlite' },
): Promise<number> {
  if (!Array.isArray(items)) throw new Error('importWaylines expects an array of waylines.');
  return withServiceData(dataDir, database, (db, ws) => insertWaylines(db, ws, items));
}

/**
 * The service's database opened beside any running instance (no lock, no
 * bucket), its default workspace made sure of, for one offline task.
 */
async function withServiceData<T>(
  dataDir: string,
  database: DatabaseConfig,
  task: (db: SqlDb, workspace: Awaited<ReturnType<typeof ensureDefaultWorkspace>>) => Promise<T>,
): Promise<T> {
  const data = await openServiceDatabase({
    dataDir,
    database,
    embeddedBucket: false,
    log: null,
    lock: false,
  });
  try {
    const ws = await data.startup(() => ensureDefaultWorkspace(data.db));
    return await task(data.db, ws);
  } finally {
    await data.close();
  }
}

/**
 * `serve reset-password USER`: a new random password for USER, in
 * `<dataDir>/pilot-password` (pilot) or `<dataDir>/USER-password`, 0600; the
 * user's sign-ins are revoked. Works beside running instances (SQLite WAL,
 * PostgreSQL). Resolves to the file, or null when there is no such user.
 */
export async function resetUserPassword(
  dataDir: string,
  username: string,
  database: DatabaseConfig = { kind: 'sqlite' },
): Promise<string | null> {
  mkdirSync(dataDir, { recursive: true });
  return withServiceData(dataDir, database, (db) => resetPassword(db, dataDir, username));
}
