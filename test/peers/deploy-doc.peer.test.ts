/**
 * docs/deploy.md, run as written (issue 30): the blocks the document marks
 * `<!-- recipe: run -->` (a ```sh block, run by bash -euo pipefail as root)
 * and `<!-- recipe: file PATH -->` (the block is PATH's content), in the
 * document's order, read from the document itself, never copied here. Then
 * three real agents sync cards through the recipe's HAProxy (HTTPS with the
 * recipe's private CA); mid-run one instance is killed with SIGKILL (and
 * started again, as the unit's Restart=always would) and PostgreSQL is
 * restarted with the recipe's own command; every file is recorded once.
 *
 * What is changed, and only this (SUBSTITUTIONS below, each must still occur
 * in the document, so a renamed value fails here instead of being skipped):
 * - the machine's address 10.0.0.10 and network 10.0.0.0/24: a loopback
 *   address of this run's own (127.77.N.10, 127.77.N.0/24), nothing leaves
 *   the machine; ports 443 and 7480 stay as written, on that address;
 * - the ports on 127.0.0.1 (Ceph's monitor 3300/6789, the instances
 *   8081/8082) and PostgreSQL's 5432: free ones (the machine is shared);
 * - the folders /etc/dms, /var/lib/dms, /etc/ceph, /var/lib/ceph, /run/ceph,
 *   /var/log/ceph, /etc/haproxy, /run/haproxy and /etc/systemd/system: the
 *   same paths under this run's temp folder;
 * - Debian's cluster `15 main`: a cluster of this run's own, made with
 *   Debian's pg_createcluster as the package makes `main` (PGCLUSTER points
 *   the recipe's `psql` at it, as `main` is the only one on a fresh machine);
 *   Ceph's tools read the temp folder's ceph.conf (CEPH_CONF), their default
 *   being /etc/ceph/ceph.conf;
 * - /usr/local/bin/drone-media-sync: this checkout's build (dist/), with
 *   Node 24;
 * - systemd is not PID 1 here: `systemctl` is deploy-doc/systemctl.ts,
 *   which starts a unit's ExecStart from its unit file (the recipe's or the
 *   package's), as its User. It does not restart a unit that dies
 *   (Restart=always): the test starts the killed instance again itself.
 * Left as written: `log /dev/log` (no journald here: HAProxy says once that
 * it cannot log there and goes on), `apt-get` (the packages are there:
 * nothing is installed), `adduser dms` (a system user, made once).
 */
import { execFile } from 'node:child_process';
import { randomBytes, randomInt } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { promisify } from 'node:util';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { alive, freePorts } from './ceph/daemons.js';
import { runSync, type CliRun } from './ceph/peer.js';
import { BIN, haveHaproxy } from './deployment.js';

const execFileP = promisify(execFile);
const DOC = path.resolve('docs/deploy.md');
const SHIM = path.resolve('test/peers/deploy-doc/systemctl.ts');
const PREFIX = 'dms-deploydoc-';
const AGENTS = 3;
const FILES_PER_CARD = 100;
const FILES = AGENTS * FILES_PER_CARD;

export interface Block {
  kind: 'run' | 'file';
  /** For a file block: where it goes (as the document names it). */
  file?: string;
  text: string;
  /** 1-based line of the fence in the document. */
  line: number;
}

/** The document's marked blocks, in order. A marker not followed by a fenced block is an error. */
export function recipeBlocks(markdown: string): Block[] {
  const lines = markdown.split('\n');
  const blocks: Block[] = [];
  for (let i = 0; i < lines.length; i++) {
    const m = /^<!-- recipe: (run|file (\S+)) -->$/.exec(lines[i]!);
    if (!m) continue;
    // The block's fence: the next line that is not blank (Prettier puts a blank line after a comment).
    let at = i + 1;
    while (lines[at]?.trim() === '') at++;
    const fence = lines[at] ?? '';
    if (!/^```/.test(fence))
      throw new Error(`docs/deploy.md:${i + 1}: a recipe marker without a block after it`);
    if (m[1] === 'run' && fence !== '```sh')
      throw new Error(`docs/deploy.md:${at + 1}: a run block must be \`\`\`sh`);
    const end = lines.findIndex((l, j) => j > at && l === '```');
    if (end < 0) throw new Error(`docs/deploy.md:${at + 1}: the block never ends`);
    blocks.push({
      kind: m[1] === 'run' ? 'run' : 'file',
      ...(m[2] ? { file: m[2] } : {}),
      text: `${lines.slice(at + 1, end).join('\n')}\n`,
      line: at + 1,
    });
    i = end;
  }
  return blocks;
}

interface Run {
  root: string;
  cluster: string;
  address: string;
  ports: Record<string, number>;
  subst: [string, string][];
  env: NodeJS.ProcessEnv;
}

let r: Run;
/** Set once the whole recipe ran: the agents' test needs what it made. */
let recipeRan = false;
const asPostgres = ['runuser', '-u', 'postgres', '--'];

/** Leftovers of a run whose test process died: its daemons, its PostgreSQL cluster, its folder. */
async function sweep(): Promise<void> {
  for (const entry of fs.readdirSync(os.tmpdir())) {
    const m = new RegExp(`^${PREFIX}(\\d+)-`).exec(entry);
    if (!m || alive(Number(m[1]))) continue;
    const root = path.join(os.tmpdir(), entry);
    killUnits(root);
    await execFileP('pg_dropcluster', ['--stop', '15', `dmsdoc${m[1]}`]).catch(() => undefined);
    fs.rmSync(root, { recursive: true, force: true });
  }
}

/** SIGKILL for every process the test's systemctl started under `root` (still that process: its environment says so). */
function killUnits(root: string): void {
  const dir = path.join(root, 'units');
  if (!fs.existsSync(dir)) return;
  for (const f of fs.readdirSync(dir).filter((n) => n.endsWith('.pid'))) {
    const pid = Number(fs.readFileSync(path.join(dir, f), 'utf8'));
    let environ: string;
    try {
      environ = fs.readFileSync(`/proc/${pid}/environ`, 'utf8');
    } catch {
      continue;
    }
    if (alive(pid) && environ.includes(`DMS_RECIPE_ROOT=${root}\0`)) process.kill(pid, 'SIGKILL');
  }
}

/** The last lines each unit started so far wrote (what systemd's journal would say), for a failure. */
function unitLogs(): string {
  const dir = path.join(r.root, 'log');
  if (!fs.existsSync(dir)) return '';
  return fs
    .readdirSync(dir)
    .map((f) => {
      const lines = fs.readFileSync(path.join(dir, f), 'utf8').trimEnd().split('\n');
      return `--- ${f}, last lines\n${lines
        .slice(-4)
        .map((l) => l.slice(0, 400))
        .join('\n')}`;
    })
    .join('\n');
}

async function sh(script: string, what: string, timeoutMs = 240_000): Promise<string> {
  const file = path.join(r.root, 'blocks', `${what.replace(/\W+/g, '-')}.sh`);
  fs.mkdirSync(path.dirname(file), { recursive: true });
  fs.writeFileSync(file, script);
  try {
    const { stdout, stderr } = await execFileP('bash', ['-euo', 'pipefail', file], {
      env: r.env,
      timeout: timeoutMs,
      maxBuffer: 64 * 1024 * 1024,
    });
    return stdout + stderr;
  } catch (err) {
    const e = err as { stdout?: string; stderr?: string; message: string };
    throw new Error(
      `${what} failed: ${e.message}\n--- stdout\n${e.stdout ?? ''}\n--- stderr\n${e.stderr ?? ''}\n${unitLogs()}`,
      {
        cause: err,
      },
    );
  }
}

const substitute = (text: string): string => r.subst.reduce((t, [from, to]) => t.split(from).join(to), text);

const psql = async (sql: string): Promise<string> =>
  (
    await execFileP(asPostgres[0]!, [...asPostgres.slice(1), 'psql', '-d', 'dms', '-At', '-c', sql], {
      env: r.env,
    })
  ).stdout.trim();

const callbackCount = async (): Promise<number> =>
  Number(await psql("SELECT count(*) FROM media WHERE source = 'callback'"));

const systemctl = (...args: string[]) => sh(`systemctl ${args.join(' ')}\n`, `systemctl ${args.join(' ')}`);

const unitPid = (unit: string): number =>
  Number(fs.readFileSync(path.join(r.root, 'units', `${unit}.service.pid`), 'utf8'));

async function waitFor(what: string, check: () => Promise<boolean>, ms = 120_000): Promise<void> {
  const end = Date.now() + ms;
  while (!(await check().catch(() => false))) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await sleep(200);
  }
}

beforeAll(async () => {
  if (!haveHaproxy())
    throw new Error('HAProxy is not installed: apt-get install --no-install-recommends haproxy');
  await sweep();
  const root = fs.mkdtempSync(path.join(os.tmpdir(), `${PREFIX}${process.pid}-`));
  // The recipe's users (dms, ceph, postgres) reach their files under it, as under /etc and /var.
  fs.chmodSync(root, 0o755);
  const [mon2, mon1, i1, i2, pgPort] = (await freePorts(5)) as [number, number, number, number, number];
  const net = `127.77.${randomInt(1, 255)}`;
  const cluster = `dmsdoc${process.pid}`;
  const under = (p: string): [string, string] => [p, path.join(root, p)];
  const subst: [string, string][] = [
    ['10.0.0.0/24', `${net}.0/24`],
    ['10.0.0.10', `${net}.10`],
    ['127.0.0.1:3300', `127.0.0.1:${mon2}`],
    ['127.0.0.1:6789', `127.0.0.1:${mon1}`],
    ['8081', String(i1)],
    ['8082', String(i2)],
    [':5432/', `:${pgPort}/`],
    ['/etc/postgresql/15/main/', `/etc/postgresql/15/${cluster}/`],
    ['pg_ctlcluster 15 main ', `pg_ctlcluster 15 ${cluster} `],
    ['/usr/local/bin/drone-media-sync', path.join(root, 'bin', 'drone-media-sync')],
    under('/etc/dms'),
    under('/var/lib/dms'),
    under('/etc/ceph'),
    under('/var/lib/ceph'),
    under('/run/ceph'),
    under('/var/log/ceph'),
    under('/etc/haproxy'),
    under('/etc/systemd/system'),
  ];
  // Not in the document: the package's haproxy.service names them (pid file, master socket).
  const unitOnly: [string, string][] = [under('/run/haproxy')];
  const bin = path.join(root, 'bin');
  fs.mkdirSync(bin);
  for (const d of ['run/haproxy', 'etc/systemd/system'])
    fs.mkdirSync(path.join(root, d), { recursive: true });
  // Node 24 where the service's user can run it (root's home is closed to others): a hard link, else a copy.
  const node = path.join(bin, 'node');
  try {
    fs.linkSync(process.execPath, node);
  } catch {
    fs.copyFileSync(process.execPath, node);
    fs.chmodSync(node, 0o755);
  }
  const script = (name: string, body: string) =>
    fs.writeFileSync(path.join(bin, name), body, { mode: 0o755 });
  script('drone-media-sync', `#!/bin/sh\nexec ${node} ${BIN} "$@"\n`);
  script('systemctl', `#!/bin/sh\nexec ${node} ${SHIM} "$@"\n`);
  r = {
    root,
    cluster,
    address: `${net}.10`,
    ports: { i1, i2, pgPort },
    subst,
    env: {
      ...process.env,
      PATH: `${bin}:${process.env.PATH}`,
      DEBIAN_FRONTEND: 'noninteractive',
      CEPH_CONF: path.join(root, 'etc/ceph/ceph.conf'),
      PGCLUSTER: `15/${cluster}`,
      DMS_RECIPE_ROOT: root,
      DMS_RECIPE_SUBST: JSON.stringify([...subst, ...unitOnly]),
      DMS_LOG_LEVEL: 'info',
    },
  };
  // What Debian's postgresql-15 package does on a fresh machine (cluster `main`, started), for this run.
  await execFileP('pg_createcluster', ['15', cluster, '-p', String(pgPort), '--start'], { env: r.env });
}, 60_000);

afterAll(async () => {
  if (!r) return;
  killUnits(r.root);
  await execFileP('pg_dropcluster', ['--stop', '15', r.cluster]).catch(() => undefined);
  if (process.env.DMS_PEER_KEEP === '1') console.log(`deploy-doc: kept ${r.root}`);
  else fs.rmSync(r.root, { recursive: true, force: true });
});

it('docs/deploy.md: every marked block runs as written, and ends with HAProxy answering over HTTPS', async () => {
  const doc = fs.readFileSync(DOC, 'utf8');
  const blocks = recipeBlocks(doc);
  // Packages, Ceph, bucket, CA, PostgreSQL (3), bucket.json, instances, HAProxy, the check; the files.
  expect(blocks.filter((b) => b.kind === 'run').length).toBeGreaterThanOrEqual(10);
  expect(blocks.filter((b) => b.kind === 'file').map((b) => b.file)).toEqual([
    '/etc/postgresql/15/main/conf.d/dms.conf',
    '/etc/systemd/system/dms-serve@.service',
    '/etc/haproxy/haproxy.cfg',
    '/etc/haproxy/errors/dms-503.http',
  ]);
  // Every substitution still has something to change: the document is what the test says it changes.
  const all = blocks.map((b) => `${b.file ?? ''}\n${b.text}`).join('\n');
  for (const [from] of r.subst) expect(all, `"${from}" no longer in docs/deploy.md's blocks`).toContain(from);
  for (const b of blocks) {
    const what = `docs/deploy.md:${b.line} (${b.kind}${b.file ? ` ${b.file}` : ''})`;
    if (b.kind === 'file') {
      const file = substitute(b.file!);
      fs.mkdirSync(path.dirname(file), { recursive: true });
      fs.writeFileSync(file, substitute(b.text));
    } else {
      await sh(substitute(b.text), what);
    }
  }
  // The document's check ran last (curl -f: it fails on anything but 200); its answer, read here.
  const res = await sh(
    `curl -fsS --cacert ${path.join(r.root, 'etc/dms/ca.crt')} https://${r.address}/readyz\n`,
    'readyz',
  );
  expect(JSON.parse(res)).toMatchObject({ code: 0 });
  recipeRan = true;
}, 600_000);

/** A card of `n` distinct small photos (random bytes) in one flight folder. */
function card(name: string, n: number): string {
  const root = path.join(r.root, 'cards', name);
  const folder = path.join(root, 'DCIM', `DJI_20240301080${name.at(-1)}_001_Multi`);
  fs.mkdirSync(folder, { recursive: true });
  for (let i = 0; i < n; i++) {
    fs.writeFileSync(
      path.join(folder, `DJI_20240301080000_${String(i + 1).padStart(4, '0')}_W.JPG`),
      randomBytes(48 * 1024 + i),
    );
  }
  return root;
}

it('through the recipe: SIGKILL of an instance and `pg_ctlcluster … restart` under 3 agents, every file recorded once', async () => {
  expect(recipeRan, 'docs/deploy.md did not run to its end (the test above)').toBe(true);
  const [i1, i2] = [`dms-serve@${r.ports.i1}`, `dms-serve@${r.ports.i2}`];
  const token = fs.readFileSync(path.join(r.root, `var/lib/dms/${r.ports.i1}/dev-token`), 'utf8').trim();
  const ready = fs
    .readFileSync(path.join(r.root, 'log', `${i1}.service.log`), 'utf8')
    .split('\n')
    .find((l) => l.startsWith('{"base_url"'));
  const ws = (JSON.parse(ready!) as { workspace_id: string }).workspace_id;
  // The second instance took the first's token (the recipe copies dev-token before its first start).
  expect(fs.readFileSync(path.join(r.root, `var/lib/dms/${r.ports.i2}/dev-token`), 'utf8').trim()).toBe(
    token,
  );
  const via = { baseUrl: `https://${r.address}` };
  const crew = { ws, token };
  // The agents trust the recipe's private CA as the document says: NODE_EXTRA_CA_CERTS.
  const agentEnv = { NODE_EXTRA_CA_CERTS: path.join(r.root, 'etc/dms/ca.crt'), DMS_LOG_LEVEL: 'info' };
  const cards = Array.from({ length: AGENTS }, (_, i) => card(`card${i + 1}`, FILES_PER_CARD));
  const states = cards.map((_, i) => fs.mkdtempSync(path.join(r.root, `state${i + 1}-`)));
  const timeline: string[] = [];
  const t0 = Date.now();
  const mark = (what: string) => timeline.push(`${((Date.now() - t0) / 1000).toFixed(1)} s ${what}`);
  const runs: CliRun[] = cards.map((c, i) => runSync(via, crew, states[i]!, c, agentEnv));
  const running = () => runs.filter((x) => x.child.exitCode === null).length;

  await waitFor('a first share of callbacks', async () => (await callbackCount()) >= 15);
  process.kill(unitPid(i2), 'SIGKILL');
  const killedAt = await callbackCount();
  mark(`SIGKILL of ${i2} after ${killedAt} callbacks`);
  await waitFor(
    'more callbacks through the other instance',
    async () => (await callbackCount()) >= killedAt + 15,
  );
  const before = await callbackCount();
  // Mid-run for real: every agent at work, a good share of the files not recorded yet.
  expect(running()).toBe(AGENTS);
  expect(FILES - before).toBeGreaterThanOrEqual(FILES / 4);
  // The recipe's own words for it (step 9).
  await sh(substitute('pg_ctlcluster 15 main restart\n'), 'PostgreSQL restart');
  mark(`PostgreSQL restarted after ${before} callbacks, ${running()} agents running`);
  // The killed instance started again, as the unit's Restart=always does, and back in HAProxy's rotation.
  // (Started while PostgreSQL restarts, an instance exits (57P03) and systemd starts it again a second
  // later; the test's systemctl does not restart, so it starts it once PostgreSQL is back.)
  await systemctl('start', i2);
  await waitFor(
    `${i2} ready again`,
    async () => (await fetch(`http://127.0.0.1:${r.ports.i2}/readyz`)).status === 200,
    60_000,
  );
  mark(`${i2} started again, ready`);

  for (const [i, run] of runs.entries()) {
    let { code, out, err } = await run.done;
    mark(`agent ${i + 1} exited with ${code}`);
    for (let again = 0; code !== 0 && again < 3; again++) {
      ({ code, out, err } = await runSync(via, crew, states[i]!, cards[i]!, agentEnv).done);
      mark(`agent ${i + 1} run again: exit ${code}`);
    }
    expect(code, `${timeline.join('\n')}\n${out}\n${err.slice(-4000)}`).toBe(0);
  }
  const rows = (
    await psql(
      `SELECT name || ' ' || count(*) FROM media WHERE workspace_id = '${ws}' AND source = 'callback' GROUP BY path, name`,
    )
  ).split('\n');
  const twice = rows.filter((l) => !l.endsWith(' 1'));
  console.log(
    `deploy-doc: ${FILES} files, ${rows.length} records, twice ${twice.length}\n  ${timeline.join('\n  ')}`,
  );
  expect(twice).toEqual([]);
  expect(rows).toHaveLength(FILES);
  expect(await psql('SELECT count(*) FROM media WHERE result <> 0')).toBe('0');
  // Both instances answer again, and HAProxy took the killed one out and back (its own log, stderr).
  for (const port of [r.ports.i1, r.ports.i2]) {
    expect((await fetch(`http://127.0.0.1:${port}/readyz`)).status).toBe(200);
  }
  const haproxyLog = fs.readFileSync(path.join(r.root, 'log', 'haproxy.service.log'), 'utf8');
  expect(haproxyLog).toMatch(/Server dms\/dms2 is DOWN[^]*Server dms\/dms2 is UP/);
}, 420_000);
