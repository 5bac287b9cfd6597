/**
 * The link lab: a network namespace joined to this one by a veth pair whose
 * uplink (this side's egress: what the agent sends) is shaped by `tc tbf`,
 * for the reference service and its bucket inside the namespace and the
 * agent (or rclone) outside. Traffic goes only to the namespace's own
 * addresses (10.231.N.0/30, made here); nothing is routed anywhere else.
 * Every wait is bounded; `close()` removes the namespace and the pair (also
 * after a failure: callers close in finally; a lab left by a killed run is
 * removed by the next open of the same name).
 *
 * Plain Node (no imports of the project), so the bench (.mjs) loads it too.
 * Needs root (CAP_NET_ADMIN): labMissing() says why not.
 * This kernel has tbf, htb and ifb but no netem: no added latency here.
 */
import { execFileSync, spawn, spawnSync, type ChildProcess } from 'node:child_process';

export interface Lab {
  ns: string;
  /** This side's address (the agent's). */
  hostIp: string;
  /** The namespace's address (the service's). */
  nsIp: string;
  /** The shaped interface on this side. */
  dev: string;
  /** Shapes the uplink to `mbit` Mbit/s (tbf), now, also under traffic. */
  shape(mbit: number): void;
  /** The link down for `ms` (the veth pair down, then up). */
  outage(ms: number): Promise<void>;
  /** Bytes sent on the uplink so far (tbf's counter: every byte the agent put on the link). */
  sentBytes(): number;
  /** Starts a process inside the namespace. */
  spawnInside(cmd: string, args: string[], opts?: Parameters<typeof spawn>[2]): ChildProcess;
  close(): void;
}

function run(cmd: string, args: string[]): string {
  return execFileSync(cmd, args, { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'], timeout: 10_000 });
}

/** Why the lab cannot run here (no root, no ip/tc, no tbf), or null. */
export function labMissing(): string | null {
  if (process.platform !== 'linux') return 'the link lab needs Linux network namespaces';
  if (process.getuid?.() !== 0)
    return 'the link lab needs root (CAP_NET_ADMIN) for network namespaces and tc';
  for (const tool of ['ip', 'tc']) {
    if (spawnSync(tool, ['-V'], { encoding: 'utf8' }).error)
      return `the link lab needs ${tool} (Debian: iproute2)`;
  }
  const probe = `dmsprobe${process.pid}`;
  const r = spawnSync('ip', ['netns', 'add', probe], { encoding: 'utf8' });
  if (r.status !== 0) return `no CAP_NET_ADMIN here (ip netns add: ${r.stderr.trim()})`;
  spawnSync('ip', ['netns', 'del', probe]);
  return null;
}

export function openLab(opts: { mbit: number; id?: number }): Lab {
  const n = (opts.id ?? process.pid) % 250;
  const ns = `dmslab${n}`;
  const dev = `dmsl${n}a`;
  const peer = `dmsl${n}b`;
  const hostIp = `10.231.${n}.1`;
  const nsIp = `10.231.${n}.2`;
  const close = (): void => {
    spawnSync('ip', ['link', 'del', dev]);
    spawnSync('ip', ['netns', 'del', ns]);
  };
  close(); // a lab a killed run left behind
  try {
    run('ip', ['netns', 'add', ns]);
    run('ip', ['link', 'add', dev, 'type', 'veth', 'peer', 'name', peer]);
    run('ip', ['link', 'set', peer, 'netns', ns]);
    run('ip', ['addr', 'add', `${hostIp}/30`, 'dev', dev]);
    run('ip', ['link', 'set', dev, 'up']);
    run('ip', ['-n', ns, 'addr', 'add', `${nsIp}/30`, 'dev', peer]);
    run('ip', ['-n', ns, 'link', 'set', peer, 'up']);
    run('ip', ['-n', ns, 'link', 'set', 'lo', 'up']);
  } catch (err) {
    close();
    throw err;
  }
  const shape = (mbit: number): void => {
    // A queue of 200 ms at the rate (a modem's buffer), bursts of 32 KB.
    run('tc', [
      'qdisc',
      'replace',
      'dev',
      dev,
      'root',
      'tbf',
      'rate',
      `${mbit}mbit`,
      'burst',
      '32kb',
      'latency',
      '200ms',
    ]);
  };
  shape(opts.mbit);
  return {
    ns,
    hostIp,
    nsIp,
    dev,
    shape,
    outage: async (ms) => {
      run('ip', ['link', 'set', dev, 'down']);
      try {
        await new Promise((r) => setTimeout(r, ms));
      } finally {
        run('ip', ['link', 'set', dev, 'up']);
      }
    },
    sentBytes: () => {
      const m = /Sent (\d+) bytes/.exec(run('tc', ['-s', 'qdisc', 'show', 'dev', dev]));
      return m ? Number(m[1]) : 0;
    },
    spawnInside: (cmd, args, o = {}) => spawn('ip', ['netns', 'exec', ns, cmd, ...args], o),
    close,
  };
}

/** Starts `serve` inside the lab, listening on the namespace's address; its JSON line. */
export async function serveInside(
  lab: Lab,
  bin: string,
  dataDir: string,
): Promise<{ child: ChildProcess; baseUrl: string; workspaceId: string; token: string }> {
  const child = lab.spawnInside(
    process.execPath,
    [bin, 'serve', '--host', lab.nsIp, '--port', '0', '--data', dataDir],
    {
      env: { ...process.env, DMS_LOG_LEVEL: 'warn' },
      stdio: ['ignore', 'pipe', 'ignore'],
    },
  );
  const line = await new Promise<string>((resolve, reject) => {
    let buf = '';
    const timer = setTimeout(() => reject(new Error('serve did not start within 60 s')), 60_000);
    child.stdout?.setEncoding('utf8');
    child.stdout?.on('data', (d: string) => {
      buf += d;
      const nl = buf.indexOf('\n');
      if (nl >= 0) {
        clearTimeout(timer);
        resolve(buf.slice(0, nl));
      }
    });
    child.once('exit', (code) => {
      clearTimeout(timer);
      reject(new Error(`serve exited (${code})`));
    });
  });
  const info = JSON.parse(line) as { base_url: string; workspace_id: string; token: string };
  return { child, baseUrl: info.base_url, workspaceId: info.workspace_id, token: info.token };
}

/** Stops a process (SIGTERM, then SIGKILL after 5 s). */
export async function stop(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const exited = new Promise((r) => child.once('exit', r));
  child.kill('SIGTERM');
  const timer = setTimeout(() => child.kill('SIGKILL'), 5000);
  await exited;
  clearTimeout(timer);
}
