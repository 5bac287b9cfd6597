/**
 * The link lab: a network namespace joined to this one by a veth pair whose
 * uplink (this side's egress: what the agent sends) is shaped by `tc tbf`,
 * for the reference service and its bucket inside the namespace and the
 * agent (or rclone) outside. Traffic goes only to the namespace's own
 * addresses (10.231.N.0/29, made here); nothing is routed anywhere else.
 * Every wait is bounded; `close()` removes the namespace and the pair (also
 * after a failure: callers close in finally; a lab left by a killed run is
 * removed by the next open of the same name).
 *
 * Plain Node (no imports of the project), so the bench (.mjs) loads it too.
 * Needs root (CAP_NET_ADMIN): labMissing() says why not.
 * This kernel has tbf, htb and ifb but no netem: latency comes from
 * delayProxy() below, a userland TCP proxy on loopback in front of the
 * service's ports.
 */
import { execFileSync, spawn, spawnSync, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import path from 'node:path';

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
  /**
   * The agent's address changes under it (a new DHCP lease, Wi-Fi to 4G):
   * the old one is removed, the link goes down and comes up 1 s later with
   * `hostIp` + 4. Connections from the old address are dead from then on.
   */
  switchAddress(): Promise<void>;
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
    run('ip', ['addr', 'add', `${hostIp}/29`, 'dev', dev]);
    run('ip', ['link', 'set', dev, 'up']);
    run('ip', ['-n', ns, 'addr', 'add', `${nsIp}/29`, 'dev', peer]);
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
    switchAddress: async () => {
      const [a, b, c, d] = hostIp.split('.').map(Number) as [number, number, number, number];
      run('ip', ['addr', 'flush', 'dev', dev]);
      run('ip', ['link', 'set', dev, 'down']);
      await new Promise((r) => setTimeout(r, 1000));
      run('ip', ['addr', 'add', `${a}.${b}.${c}.${d + 4}/29`, 'dev', dev]);
      run('ip', ['link', 'set', dev, 'up']);
    },
    sentBytes: () => {
      const m = /Sent (\d+) bytes/.exec(run('tc', ['-s', 'qdisc', 'show', 'dev', dev]));
      return m ? Number(m[1]) : 0;
    },
    spawnInside: (cmd, args, o = {}) => spawn('ip', ['netns', 'exec', ns, cmd, ...args], o),
    close,
  };
}

export interface LabService {
  child: ChildProcess;
  baseUrl: string;
  workspaceId: string;
  token: string;
  /** The API's and the bucket's ports. */
  ports: number[];
  /** Requests the service answered with 2xx whose "METHOD /url" matches `pattern` (needs `log`). */
  answered(pattern: RegExp): number;
}

/**
 * Starts `serve` inside the lab, listening on the namespace's address (or on
 * all of the namespace's addresses: `anyAddress`, for delayProxy, so the
 * bucket endpoint it hands out is the address the client used). `log`: the
 * service's request log is kept, to count requests (answered()).
 */
export async function serveInside(
  lab: Lab,
  bin: string,
  dataDir: string,
  opts: { anyAddress?: boolean; log?: boolean } = {},
): Promise<LabService> {
  const child = lab.spawnInside(
    process.execPath,
    [
      bin,
      'serve',
      '--host',
      opts.anyAddress === true ? '0.0.0.0' : lab.nsIp,
      '--port',
      '0',
      '--data',
      dataDir,
    ],
    {
      env: { ...process.env, DMS_LOG_LEVEL: opts.log === true ? 'info' : 'warn' },
      stdio: ['ignore', 'pipe', opts.log === true ? 'pipe' : 'ignore'],
    },
  );
  const done: string[] = [];
  if (opts.log === true) {
    let rest = '';
    child.stderr?.setEncoding('utf8');
    child.stderr?.on('data', (d: string) => {
      const lines = (rest + d).split('\n');
      rest = lines.pop() ?? '';
      for (const l of lines) {
        const m = /"method":"([A-Z]+)","url":"([^"]+)".*"statusCode":(2\d\d)/.exec(l);
        if (m && l.includes('request completed')) done.push(`${m[1]} ${m[2]}`);
      }
    });
  }
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
  const apiPort = Number(new URL(info.base_url).port);
  const baseUrl = `http://${lab.nsIp}:${apiPort}`;
  // The bucket's port, from the endpoint the service hands out.
  const sts = await fetch(`${baseUrl}/storage/api/v1/workspaces/${info.workspace_id}/sts`, {
    method: 'POST',
    headers: { 'x-auth-token': info.token },
    signal: AbortSignal.timeout(30_000),
  });
  const endpoint = ((await sts.json()) as { data: { endpoint: string } }).data.endpoint;
  return {
    child,
    baseUrl,
    workspaceId: info.workspace_id,
    token: info.token,
    ports: [apiPort, Number(new URL(endpoint).port)],
    answered: (pattern) => done.filter((r) => pattern.test(r)).length,
  };
}

/** Objects the service's bucket holds for a workspace, by size (the embedded bucket's files on disk). */
export function objectSizes(dataDir: string, workspaceId: string): number[] {
  const dir = path.join(dataDir, 'bucket', 'objects', workspaceId);
  if (!fs.existsSync(dir)) return [];
  return fs.readdirSync(dir).map((f) => fs.statSync(path.join(dir, f)).size);
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

export interface DelayProxy {
  /** The address the proxy listens on (loopback), with the service's own port numbers. */
  host: string;
  /** Requests seen on the way in whose request line ("POST /path") matches `pattern`. */
  count(pattern: RegExp): number;
  close(): Promise<void>;
}

/**
 * A fixed delay each way (a satellite or 4G round trip: this kernel has no
 * netem), as a TCP proxy on a loopback address in front of the service's
 * ports (the API's and the bucket's, with the same numbers, so the bucket
 * endpoint the service hands out under the proxy's address leads through
 * it too). Every chunk is held `delayMs` before it is passed on, in order,
 * with backpressure (at most 1 MiB held per direction). It keeps the
 * request lines it saw going in, to count requests (a second callback).
 */
export async function delayProxy(lab: Lab, ports: number[], delayMs: number): Promise<DelayProxy> {
  const host = `127.77.${lab.nsIp.split('.')[2]}.1`;
  const sockets = new Set<net.Socket>();
  const lines: string[] = [];
  const HOLD = 1024 * 1024;
  const pass = (from: net.Socket, to: net.Socket, watch: boolean): void => {
    let held = 0;
    let tail = '';
    const resumeIfRoom = (): void => {
      if (from.isPaused() && held + to.writableLength < HOLD) from.resume();
    };
    to.on('drain', resumeIfRoom);
    from.on('data', (chunk: Buffer) => {
      if (watch) {
        // Request lines (a body's bytes rarely look like one; a line cut between chunks is joined).
        const text = tail + chunk.toString('latin1');
        for (const m of text.matchAll(/(?:^|\r\n)([A-Z]{3,7} \S+) HTTP\/1\.1\r\n/g))
          lines.push(m[1] as string);
        tail = text.slice(-300);
      }
      held += chunk.length;
      if (held + to.writableLength >= HOLD) from.pause();
      setTimeout(() => {
        held -= chunk.length;
        if (!to.destroyed) to.write(chunk);
        resumeIfRoom();
      }, delayMs);
    });
    from.on('end', () => setTimeout(() => to.end(), delayMs));
    from.on('close', () => setTimeout(() => to.destroy(), delayMs));
    from.on('error', () => undefined);
  };
  const servers = await Promise.all(
    ports.map(
      (port) =>
        new Promise<net.Server>((resolve, reject) => {
          const server = net.createServer((client) => {
            const upstream = net.connect({ host: lab.nsIp, port });
            for (const s of [client, upstream]) {
              sockets.add(s);
              s.once('close', () => sockets.delete(s));
            }
            pass(client, upstream, true);
            pass(upstream, client, false);
          });
          server.once('error', reject);
          server.listen(port, host, () => resolve(server));
        }),
    ),
  );
  return {
    host,
    count: (pattern) => lines.filter((l) => pattern.test(l)).length,
    close: async () => {
      for (const s of sockets) s.destroy();
      await Promise.all(servers.map((s) => new Promise((r) => s.close(r))));
    },
  };
}
