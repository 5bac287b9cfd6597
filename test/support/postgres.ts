/**
 * A throw-away PostgreSQL 15 cluster for the tests, from Debian's
 * `postgresql-15` (/usr/lib/postgresql/15/bin): initdb in a temp folder, the
 * server on a free 127.0.0.1 port with its socket in that folder, password
 * authentication (scram) for a superuser `postgres`. PostgreSQL refuses to run
 * as root: as root, every command runs as the `postgres` user that the package
 * creates. A cluster left by a test process that was killed is stopped and
 * removed by the next start (its folder names the pid of its owner).
 */
import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import pg from 'pg';
import { connectionOptions } from '../../main/service/data/config.js';
import type { PostgresConfig } from '../../main/service/index.js';
import { freePorts } from '../peers/ceph/daemons.js';

const execFileP = promisify(execFile);
export const PG_BIN = process.env.DMS_PG_BIN ?? '/usr/lib/postgresql/15/bin';
const PREFIX = 'dms-pg-';
const SUPERUSER = 'postgres';

export interface PgCluster {
  port: number;
  password: string;
  dir: string;
  /** postgres://postgres@127.0.0.1:<port>/<database>: no password in it. */
  url(database?: string): string;
  /** The service's settings for `database` (password given apart from the URL). */
  config(database: string): PostgresConfig;
  /** A new, empty database; returns its name. */
  createDatabase(prefix?: string): Promise<string>;
  dropDatabase(name: string): Promise<void>;
  /** One statement as the superuser, on `database` (default postgres). */
  query<T = Record<string, unknown>>(sql: string, params?: unknown[], database?: string): Promise<T[]>;
  /** The server's main process (postmaster.pid); its sessions are its children. */
  serverPid(): number;
  /** Stops the server (fast: open sessions are cut), keeping the data. */
  stopServer(): Promise<void>;
  startServer(): Promise<void>;
  /** Stops the server and removes everything. */
  stop(): Promise<void>;
}

function asPostgresUser(): string[] {
  return process.getuid?.() === 0 ? ['runuser', '-u', 'postgres', '--'] : [];
}

async function pgRun(bin: string, args: string[], timeoutMs = 60_000): Promise<string> {
  const [cmd, ...pre] = [...asPostgresUser(), path.join(PG_BIN, bin)];
  try {
    const { stdout, stderr } = await execFileP(cmd, [...pre, ...args], { timeout: timeoutMs });
    return stdout + stderr;
  } catch (err) {
    const e = err as { stdout?: string; stderr?: string; message: string };
    throw new Error(`${bin} failed: ${e.message}\n${e.stdout ?? ''}${e.stderr ?? ''}`, { cause: err });
  }
}

function pidAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

/** Stops and removes clusters whose owning test process is gone. */
async function sweep(): Promise<void> {
  for (const name of fs.readdirSync(os.tmpdir())) {
    const m = new RegExp(`^${PREFIX}(\\d+)-`).exec(name);
    if (!m || pidAlive(Number(m[1]))) continue;
    const dir = path.join(os.tmpdir(), name);
    if (fs.existsSync(path.join(dir, 'data', 'postmaster.pid'))) {
      await pgRun('pg_ctl', ['stop', '-D', path.join(dir, 'data'), '-m', 'immediate']).catch(() => undefined);
    }
    fs.rmSync(dir, { recursive: true, force: true });
  }
}

export function havePostgres(): boolean {
  return fs.existsSync(path.join(PG_BIN, 'initdb'));
}

/**
 * Starts a cluster. `durable: false` (default) turns fsync off: a test
 * cluster need not survive a power cut, and it is several times faster on a
 * shared disk. The load benchmark keeps it on (the same as the SQLite side).
 * `sharedBuffers`: PostgreSQL's cache (default 128MB), sized as a deployment
 * sizes it for its data (docs/deploy.md).
 */
export async function startPostgres(
  opts: { durable?: boolean; sharedBuffers?: string } = {},
): Promise<PgCluster> {
  if (!havePostgres()) {
    throw new Error(
      `PostgreSQL 15 is not installed (${PG_BIN}/initdb is missing): apt-get install --no-install-recommends postgresql`,
    );
  }
  await sweep();
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), `${PREFIX}${process.pid}-`));
  const data = path.join(dir, 'data');
  const password = randomBytes(18).toString('base64url');
  const pwfile = path.join(dir, 'pw');
  fs.writeFileSync(pwfile, `${password}\n`, { mode: 0o600 });
  if (process.getuid?.() === 0) {
    const { stdout } = await execFileP('id', ['-u', 'postgres']);
    const uid = Number(stdout.trim());
    fs.chownSync(dir, uid, -1);
    fs.chownSync(pwfile, uid, -1);
  }
  await pgRun('initdb', [
    '-D',
    data,
    '-U',
    SUPERUSER,
    '--auth=scram-sha-256',
    `--pwfile=${pwfile}`,
    '-E',
    'UTF8',
    '--locale=C.UTF-8',
  ]);
  fs.rmSync(pwfile);
  const [port] = await freePorts(1);
  const settings = [
    `port = ${port}`,
    "listen_addresses = '127.0.0.1'",
    `unix_socket_directories = '${dir}'`,
    'max_connections = 200',
    ...(opts.durable ? [] : ['fsync = off', 'synchronous_commit = off', 'full_page_writes = off']),
    ...(opts.sharedBuffers ? [`shared_buffers = ${opts.sharedBuffers}`] : []),
  ];
  fs.appendFileSync(path.join(data, 'postgresql.conf'), `\n${settings.join('\n')}\n`);

  const url = (database = 'postgres') => `postgres://${SUPERUSER}@127.0.0.1:${port}/${database}`;
  const startServer = async () => {
    await pgRun('pg_ctl', ['start', '-w', '-t', '60', '-D', data, '-l', path.join(dir, 'server.log')]);
  };
  const stopServer = async () => {
    await pgRun('pg_ctl', ['stop', '-w', '-D', data, '-m', 'fast']);
  };
  const query = async <T>(sql: string, params: unknown[] = [], database = 'postgres'): Promise<T[]> => {
    const client = new pg.Client(connectionOptions({ kind: 'postgres', url: url(database), password }));
    await client.connect();
    try {
      return (await client.query(sql, params)).rows as T[];
    } finally {
      await client.end();
    }
  };
  await startServer();
  return {
    port: port!,
    password,
    dir,
    url,
    config: (database) => ({ kind: 'postgres', url: url(database), password }),
    async createDatabase(prefix = 'dms') {
      const name = `${prefix}_${randomBytes(6).toString('hex')}`;
      await query(`CREATE DATABASE ${name}`);
      return name;
    },
    async dropDatabase(name) {
      await query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
    },
    query,
    serverPid: () => Number(fs.readFileSync(path.join(data, 'postmaster.pid'), 'utf8').split('\n')[0]),
    stopServer,
    startServer,
    async stop() {
      await stopServer().catch(() => undefined);
      fs.rmSync(dir, { recursive: true, force: true });
    },
  };
}
