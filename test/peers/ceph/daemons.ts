/**
 * Process plumbing for the throw-away Ceph cluster of the peer tests: free
 * loopback ports, daemons started in the foreground as children of the test
 * process, liveness read from /proc (a daemon reparented to PID 1 stays a
 * zombie here for a while, and `kill -0` would call it alive), an orderly
 * stop, and a sweep of clusters left behind by a test process that was
 * itself killed.
 */
import { execFile, spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { promisify } from 'node:util';

const execFileP = promisify(execFile);

/** Cluster folders are `<tmp>/<CLUSTER_DIR_PREFIX>XXXXXX`; the sweep looks for these. */
export const CLUSTER_DIR_PREFIX = 'dms-rgw-';

/** Running and not a zombie. */
export function alive(pid: number): boolean {
  try {
    const stat = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
    // "pid (comm) S ...": the state follows the last ')' (comm may hold spaces and parentheses).
    const state = stat.slice(stat.lastIndexOf(')') + 2, stat.lastIndexOf(')') + 3);
    return state !== '' && state !== 'Z' && state !== 'X';
  } catch {
    return false;
  }
}

/** `count` distinct ports that were free on 127.0.0.1 a moment ago (held together, so never the same one twice). */
export async function freePorts(count: number): Promise<number[]> {
  const servers = await Promise.all(
    Array.from(
      { length: count },
      () =>
        new Promise<net.Server>((resolve, reject) => {
          const s = net.createServer();
          s.once('error', reject);
          s.listen(0, '127.0.0.1', () => resolve(s));
        }),
    ),
  );
  const ports = servers.map((s) => (s.address() as net.AddressInfo).port);
  await Promise.all(servers.map((s) => new Promise((r) => s.close(r))));
  return ports;
}

/** Runs a command to completion; a failure carries its output. */
export async function run(
  cmd: string,
  args: string[],
  opts: { timeoutMs?: number; input?: string } = {},
): Promise<string> {
  const child = execFileP(cmd, args, { timeout: opts.timeoutMs ?? 30_000, maxBuffer: 16 * 1024 * 1024 });
  if (opts.input !== undefined) child.child.stdin?.end(opts.input);
  try {
    return (await child).stdout;
  } catch (err) {
    const e = err as { stdout?: string; stderr?: string; message: string };
    throw new Error(
      `${cmd} ${args.join(' ')} failed: ${e.message}\n${e.stderr ?? ''}${e.stdout ?? ''}`.trim(),
      {
        cause: err,
      },
    );
  }
}

export interface Daemon {
  name: string;
  pid: number;
  child: ChildProcess;
  /** Its stdout and stderr (startup failures land here), then its Ceph log. */
  logs: string[];
}

/**
 * Starts a daemon in the foreground (`-f`) as a child of this process, so
 * an interrupted test run takes it along. Its pid is recorded under
 * `<dir>/pids/` for the sweep.
 */
export function startDaemon(
  dir: string,
  name: string,
  cmd: string,
  args: string[],
  opts: { cephName: string; env?: NodeJS.ProcessEnv },
): Daemon {
  const outFile = path.join(dir, 'log', `${name}.out`);
  const out = fs.openSync(outFile, 'a');
  try {
    const child = spawn(cmd, [...args, '-f'], { stdio: ['ignore', out, out], env: opts.env ?? process.env });
    if (child.pid === undefined) throw new Error(`${cmd} could not be started`);
    fs.writeFileSync(path.join(dir, 'pids', `${name}.pid`), String(child.pid));
    child.on('error', () => undefined);
    return { name, pid: child.pid, child, logs: [outFile, path.join(dir, 'log', `${opts.cephName}.log`)] };
  } finally {
    fs.closeSync(out);
  }
}

/** The last lines of a daemon's output and log, for an error message. */
export function tail(d: Daemon, lines = 12): string {
  return d.logs
    .map((file) => {
      const text = readOr(file, '');
      return `--- ${path.basename(file)}\n${text === '' ? '(empty)' : text.split('\n').slice(-lines).join('\n')}`;
    })
    .join('\n');
}

/**
 * SIGTERM, then SIGKILL if it has not ended within `graceMs`. One at a time
 * and in the caller's order: radosgw hangs for up to two minutes in its
 * shutdown when the OSD goes first.
 */
export async function stopDaemons(daemons: Daemon[], graceMs = 5_000): Promise<void> {
  for (const d of daemons) {
    if (!alive(d.pid)) continue;
    d.child.kill('SIGTERM');
    const end = Date.now() + graceMs;
    while (alive(d.pid) && Date.now() < end) await sleep(50);
    if (alive(d.pid)) d.child.kill('SIGKILL');
    const killed = Date.now() + 10_000;
    while (alive(d.pid) && Date.now() < killed) await sleep(20);
  }
}

/** Synchronous last resort for process 'exit': no waiting possible there. */
export function killDaemonsNow(daemons: Daemon[]): void {
  for (const d of daemons) {
    if (alive(d.pid)) d.child.kill('SIGKILL');
  }
}

/**
 * Clusters whose test process died without stopping them (SIGKILL, OOM):
 * their daemons are killed (only if the pid still runs our ceph.conf) and,
 * once they are gone, their folders removed.
 */
export async function sweepStaleClusters(): Promise<void> {
  const tmp = os.tmpdir();
  for (const entry of fs.readdirSync(tmp)) {
    if (!entry.startsWith(CLUSTER_DIR_PREFIX)) continue;
    const dir = path.join(tmp, entry);
    const owner = Number(readOr(path.join(dir, 'owner.pid'), '0'));
    if (owner > 0 && alive(owner)) continue;
    const pidsDir = path.join(dir, 'pids');
    const pids = (fs.existsSync(pidsDir) ? fs.readdirSync(pidsDir) : [])
      .map((f) => Number(readOr(path.join(pidsDir, f), '0')))
      .filter((pid) => pid > 0 && alive(pid) && readOr(`/proc/${pid}/cmdline`, '').includes(dir));
    for (const pid of pids) {
      try {
        process.kill(pid, 'SIGKILL');
      } catch {
        // ended meanwhile
      }
    }
    const end = Date.now() + 10_000;
    while (pids.some(alive) && Date.now() < end) await sleep(20);
    fs.rmSync(dir, { recursive: true, force: true });
  }
}

function readOr(file: string, fallback: string): string {
  try {
    return fs.readFileSync(file, 'utf8').trim();
  } catch {
    return fallback;
  }
}
