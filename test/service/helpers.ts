import { S3Client, PutObjectCommand } from '@aws-sdk/client-s3';
import { createHash, randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import pg from 'pg';
import { inject } from 'vitest';
import {
  startService,
  type DatabaseConfig,
  type RunningService,
  type ServiceOptions,
} from '../../main/service/index.js';
import { connectionOptions } from '../../main/service/data/config.js';
import { PostgresDb } from '../../main/service/data/postgres.js';
import type { SqlDb } from '../../main/service/data/sql.js';
import { SqliteDb } from '../../main/service/data/sqlite.js';
import { DB_FILE } from '../../main/service/db.js';

/** JSON answers as tests read them: loose on purpose, the assertions check the shape. */
// eslint-disable-next-line @typescript-eslint/no-explicit-any
export type Loose = any;

export function tempDir(): string {
  return mkdtempSync(join(tmpdir(), 'dms-service-'));
}

export function removeDir(dir: string): void {
  rmSync(dir, { recursive: true, force: true });
}

/**
 * The PostgreSQL variant of these suites (test/service/vitest.postgres.config.ts
 * starts a throw-away cluster and provides these): every startTemp() without a
 * `database` gets a fresh database of its own there. Unset: SQLite, as `serve`.
 */
const PG_URL: string | undefined = inject('pgUrl');
const PG_PASSWORD: string | undefined = inject('pgPassword');
export const onPostgres = PG_URL !== undefined;

async function adminQuery(sql: string): Promise<void> {
  const client = new pg.Client(
    connectionOptions({
      kind: 'postgres',
      url: `${PG_URL}/postgres`,
      ...(PG_PASSWORD ? { password: PG_PASSWORD } : {}),
    }),
  );
  await client.connect();
  try {
    await client.query(sql);
  } finally {
    await client.end();
  }
}

/** A fresh, empty database of the suite's backend; `drop()` removes it (PostgreSQL). */
export async function tempDatabase(): Promise<{ config: DatabaseConfig; drop(): Promise<void> }> {
  if (!onPostgres) return { config: { kind: 'sqlite' }, drop: () => Promise.resolve() };
  const name = `t_${randomBytes(6).toString('hex')}`;
  await adminQuery(`CREATE DATABASE ${name}`);
  return {
    config: { kind: 'postgres', url: `${PG_URL}/${name}`, ...(PG_PASSWORD ? { password: PG_PASSWORD } : {}) },
    drop: () => adminQuery(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`),
  };
}

/**
 * The service's own tables, read and written as a test needs, on whichever
 * backend `s` runs: the data dir's SQLite file or its PostgreSQL database.
 */
export function openTables(s: { dataDir: string; dbConfig: DatabaseConfig }): SqlDb {
  return s.dbConfig.kind === 'postgres'
    ? new PostgresDb(s.dbConfig, null)
    : new SqliteDb(new Database(join(s.dataDir, DB_FILE)));
}

/** A started service on a fresh data dir (and database); call `stop()` in afterAll/afterEach. */
export async function startTemp(
  opts: Partial<ServiceOptions> = {},
): Promise<RunningService & { dataDir: string; dbConfig: DatabaseConfig; stop(): Promise<void> }> {
  const dataDir = opts.dataDir ?? tempDir();
  const own = opts.database ? null : await tempDatabase();
  const database = opts.database ?? own!.config;
  const s = await startService({ logger: false, ...opts, dataDir, database });
  return Object.assign(s, {
    dataDir,
    dbConfig: database,
    async stop() {
      await s.close();
      await own?.drop();
      removeDir(dataDir);
    },
  });
}

export interface Answer {
  status: number;
  body: Loose;
}

/** One request with JSON in and out. `token: null` sends no x-auth-token. */
export async function call(
  s: { baseUrl: string; token: string },
  method: string,
  path: string,
  opts: { body?: unknown; raw?: string; token?: string | null; headers?: Record<string, string> } = {},
): Promise<Answer> {
  const headers: Record<string, string> = { ...opts.headers };
  const token = opts.token === undefined ? s.token : opts.token;
  if (token !== null) headers['x-auth-token'] = token;
  let body: string | undefined;
  if (opts.raw !== undefined) body = opts.raw;
  else if (opts.body !== undefined) body = JSON.stringify(opts.body);
  if (body !== undefined) headers['content-type'] ??= 'application/json';
  const res = await fetch(`${s.baseUrl}${path}`, { method, headers, body });
  const text = await res.text();
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    throw new Error(`not JSON (HTTP ${res.status}): ${text.slice(0, 200)}`);
  }
  return { status: res.status, body: parsed };
}

export const paths = (ws: string) => ({
  waylines: `/wayline/api/v1/workspaces/${ws}/waylines`,
  sts: `/storage/api/v1/workspaces/${ws}/sts`,
  callback: `/media/api/v1/workspaces/${ws}/upload-callback`,
  fastUpload: `/media/api/v1/workspaces/${ws}/fast-upload`,
});

/** An S3 client built from an STS answer, the way a client of the contract would. */
export function s3From(sts: Loose): S3Client {
  return new S3Client({
    endpoint: sts.endpoint,
    region: sts.region,
    forcePathStyle: true,
    // With the SDK defaults, bodies are aws-chunked, which the embedded bucket refuses (README).
    requestChecksumCalculation: 'WHEN_REQUIRED',
    responseChecksumValidation: 'WHEN_REQUIRED',
    credentials: {
      accessKeyId: sts.credentials.access_key_id,
      secretAccessKey: sts.credentials.access_key_secret,
      sessionToken: sts.credentials.security_token,
    },
  });
}

export async function getSts(s: RunningService, ws = s.workspaceId, token = s.token): Promise<Loose> {
  const r = await call({ baseUrl: s.baseUrl, token }, 'POST', paths(ws).sts);
  if (r.body.code !== 0) throw new Error(`sts failed: ${JSON.stringify(r.body)}`);
  return r.body.data;
}

/** The upload fingerprint of some content: its MD5 in hex. */
export function md5Hex(content: string | Buffer): string {
  return createHash('md5').update(content).digest('hex');
}

/** Puts an object into the embedded bucket with fresh STS credentials; returns its key. */
export async function putObject(
  s: RunningService,
  name: string,
  content: string | Buffer = `content of ${name}`,
): Promise<string> {
  const sts = await getSts(s);
  const key = `${sts.object_key_prefix}/${name}`;
  const client = s3From(sts);
  try {
    await client.send(new PutObjectCommand({ Bucket: sts.bucket, Key: key, Body: content }));
  } finally {
    client.destroy();
  }
  return key;
}
