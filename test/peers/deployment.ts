/**
 * The multi-instance deployment of docs/deploy.md on one machine, for the
 * peer tests and the scale benchmark: `drone-media-sync serve` processes (the
 * real CLI, secrets in 0600 settings files, never on a command line), each
 * with its own data dir, on one database, behind HAProxy from Debian
 * (health checks on /readyz, the JSON 503 page of the recipe). Loopback only.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import type { DatabaseConfig, ExternalBucketConfig } from '../../main/service/index.js';
import { tempDir } from '../support/harness.js';
import { startPostgres, type PgCluster } from '../support/postgres.js';
import { freePorts } from './ceph/daemons.js';
import { rgwBucketConfig } from './ceph/peer.js';
import { startRgw, type Rgw } from './ceph/rgw.js';

export const BIN = path.resolve('dist/main/cli/bin.js');

export interface Instance {
  name: string;
  port: number;
  baseUrl: string;
  child: ChildProcess;
  /** What it printed on stderr (its log). */
  log(): string;
  /** The dev token and workspace it printed when ready. */
  token: string;
  workspaceId: string;
  exited: Promise<number | null>;
}

/** The JSON answer HAProxy gives when no instance is ready (docs/deploy.md, errorfile 503). */
export const NO_INSTANCE_READY_BODY = JSON.stringify({
  code: 503003,
  message:
    'No instance of the service is ready (its database cannot be reached, or it is restarting). Try again in a few seconds.',
});

function writeSecret(file: string, value: unknown): string {
  fs.writeFileSync(file, JSON.stringify(value), { mode: 0o600 });
  return file;
}

/** Starts `serve` on `port`; resolves when it printed its ready line. */
export async function startInstance(opts: {
  name: string;
  dir: string;
  port: number;
  database: DatabaseConfig;
  bucket?: ExternalBucketConfig;
  env?: NodeJS.ProcessEnv;
}): Promise<Instance> {
  const dataDir = path.join(opts.dir, `data-${opts.name}`);
  fs.mkdirSync(dataDir, { recursive: true });
  const args = [BIN, 'serve', '--port', String(opts.port), '--data', dataDir];
  if (opts.bucket) args.push('--bucket-config', writeSecret(path.join(opts.dir, 'bucket.json'), opts.bucket));
  if (opts.database.kind === 'postgres') {
    args.push(
      '--database',
      writeSecret(path.join(opts.dir, 'database.json'), {
        url: opts.database.url,
        password: opts.database.password,
      }),
    );
  }
  const child = spawn(process.execPath, args, {
    stdio: ['ignore', 'pipe', 'pipe'],
    env: { ...process.env, DMS_LOG_LEVEL: 'warn', ...opts.env },
  });
  let out = '';
  let err = '';
  child.stderr.on('data', (d) => (err += String(d)));
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  const ready = await new Promise<{ base_url: string; token: string; workspace_id: string }>(
    (resolve, reject) => {
      child.stdout.on('data', (d) => {
        out += String(d);
        const line = out.split('\n').find((l) => l.startsWith('{'));
        if (line) resolve(JSON.parse(line) as { base_url: string; token: string; workspace_id: string });
      });
      void exited.then((code) => reject(new Error(`serve ${opts.name} exited with ${code}: ${err}`)));
    },
  );
  return {
    name: opts.name,
    port: opts.port,
    baseUrl: ready.base_url,
    child,
    log: () => err,
    token: ready.token,
    workspaceId: ready.workspace_id,
    exited,
  };
}

export interface Haproxy {
  url: string;
  pid: number;
  /** Its log (stderr): check results, and one line per request when started with `log`. */
  log(): string;
  stop(): Promise<void>;
}

/**
 * HAProxy in front of `ports`: round robin, /readyz checked every 500 ms
 * (down after 2 failures), failed connections and cut answers retried on
 * another instance. The service is what makes such a retry safe: a repeated
 * callback is recorded once (README "upload-callback"). `log`: one line per
 * request in log() (status, instance, timings), for a test to say what
 * happened; the load benchmark leaves it off.
 */
export async function startHaproxy(
  dir: string,
  ports: number[],
  opts: { log?: boolean } = {},
): Promise<Haproxy> {
  const [port] = await freePorts(1);
  const errorfile = path.join(dir, '503.http');
  fs.writeFileSync(
    errorfile,
    'HTTP/1.1 503 Service Unavailable\r\nContent-Type: application/json\r\nCache-Control: no-store\r\n' +
      `Connection: close\r\nRetry-After: 5\r\n\r\n${NO_INSTANCE_READY_BODY}\n`,
  );
  const cfg = path.join(dir, 'haproxy.cfg');
  fs.writeFileSync(
    cfg,
    [
      'global',
      '  maxconn 2000',
      ...(opts.log ? ['  log stderr format iso local0 info'] : []),
      'defaults',
      '  mode http',
      ...(opts.log ? ['  log global', '  option httplog'] : []),
      '  timeout connect 2s',
      '  timeout client 60s',
      '  timeout server 60s',
      // A check waits this long: a busy instance is slow, not down.
      '  timeout check 3s',
      '  retries 3',
      // Every retry on another instance, and one refused or cut connection takes an instance out at once
      // (docs/deploy.md): without both, the requests queued for a killed instance got no answer.
      '  option redispatch 1',
      '  retry-on conn-failure empty-response response-timeout',
      // At most `maxconn` requests at once per instance (the rest wait here), on reused connections:
      // every connection comes from HAProxy's one address, and `serve` takes 64 per address.
      '  http-reuse always',
      '  timeout queue 30s',
      `  errorfile 503 ${errorfile}`,
      'frontend api',
      `  bind 127.0.0.1:${port}`,
      '  default_backend dms',
      'backend dms',
      '  balance roundrobin',
      '  option httpchk GET /readyz',
      '  http-check expect status 200',
      '  default-server inter 500ms fall 2 rise 2 maxconn 48 observe layer4 error-limit 1 on-error mark-down',
      ...ports.map((p, i) => `  server dms${i + 1} 127.0.0.1:${p} check`),
      '',
    ].join('\n'),
  );
  const child = spawn('haproxy', ['-db', '-f', cfg], { stdio: ['ignore', 'ignore', 'pipe'] });
  let err = '';
  child.stderr.on('data', (d) => (err += String(d)));
  const url = `http://127.0.0.1:${port}`;
  const until = Date.now() + 15_000;
  for (;;) {
    if (child.exitCode !== null) throw new Error(`haproxy exited: ${err}`);
    const ok = await fetch(`${url}/readyz`)
      .then((r) => r.status === 200)
      .catch(() => false);
    if (ok) break;
    if (Date.now() > until) throw new Error(`haproxy did not become ready: ${err}`);
    await sleep(100);
  }
  return {
    url,
    pid: child.pid!,
    log: () => err,
    async stop() {
      if (child.exitCode === null) {
        child.kill('SIGTERM');
        await new Promise((r) => child.once('exit', r));
      }
    },
  };
}

export function haveHaproxy(): boolean {
  return ['/usr/sbin/haproxy', '/usr/bin/haproxy'].some((p) => fs.existsSync(p));
}

/** SIGTERM and wait; SIGKILL after `ms`. */
export async function stopInstance(i: Instance, ms = 20_000): Promise<void> {
  if (i.child.exitCode !== null || i.child.signalCode !== null) return;
  i.child.kill('SIGTERM');
  const timer = setTimeout(() => i.child.kill('SIGKILL'), ms);
  await i.exited;
  clearTimeout(timer);
}

/** The whole recipe on this machine: PostgreSQL, Ceph RGW, `instances` serve processes, HAProxy. */
export interface Deployment {
  dir: string;
  pg: PgCluster;
  rgw: Rgw;
  /** The service's database in `pg`. */
  database: string;
  instances: Instance[];
  lb: Haproxy;
  stop(): Promise<void>;
}

/** Starts the recipe (HAProxy logging each request); `env` for each `serve` process. */
export async function startDeployment(
  name: string,
  opts: { instances?: number; env?: NodeJS.ProcessEnv } = {},
): Promise<Deployment> {
  const dir = tempDir(`dms-peer-${name}-`);
  const [pg, rgw] = await Promise.all([startPostgres(), startRgw()]);
  const database = await pg.createDatabase(name);
  const ports = await freePorts(opts.instances ?? 2);
  const instances: Instance[] = [];
  // One after the other only for a readable log: the startup lock would serialise them anyway.
  for (const [i, port] of ports.entries()) {
    instances.push(
      await startInstance({
        name: `i${i + 1}`,
        dir,
        port,
        database: pg.config(database),
        bucket: rgwBucketConfig(rgw),
        ...(opts.env ? { env: opts.env } : {}),
      }),
    );
  }
  const lb = await startHaproxy(dir, ports, { log: true });
  return {
    dir,
    pg,
    rgw,
    database,
    instances,
    lb,
    async stop() {
      await lb.stop();
      for (const i of instances) await stopInstance(i);
      await Promise.all([pg.stop(), rgw.stop()]);
      fs.rmSync(dir, { recursive: true, force: true });
    },
  };
}
