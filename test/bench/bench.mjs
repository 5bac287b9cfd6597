#!/usr/bin/env node
// Drone Media Sync benchmark (issue 6): the built agent (dist/) against real
// peers (rclone, aws s3 cp, md5sum) on synthetic DJI cards, all on loopback
// against the reference service and its embedded bucket, started as a
// separate process. See test/bench/README.md; results in test/bench/RESULTS.md.
//
//   npm run bench [-- --rounds N] [-- --quick] [-- --json] [-- --only survey,small,big,reinsert,offload,link]
//   (link-rate, link-lane, link-timetable, link-faults, link-latency: one row of it; link-outage: the 5 min outage, opt-in)
//   (link: the agent and rclone through a shaped link, test/bench/lib/link.mjs; root only, not in the default set)
import { execFileSync, spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { parseArgs } from 'node:util';
import { Buffer } from 'node:buffer';
import { setTimeout as sleep } from 'node:timers/promises';
import { cardSpecs, makeCard, MiB } from './lib/cards.mjs';
import { openDevices, openThrottles } from './lib/card-device.mjs';
import { offloadScenario } from './lib/offload.mjs';
import { measure, running } from './lib/proc.mjs';
import { fmt, sizeText, summarize, table, verdict } from './lib/report.mjs';

const HERE = path.dirname(fileURLToPath(import.meta.url));
const REPO = path.resolve(HERE, '..', '..');
const EXIT_HOOK = pathToFileURL(path.join(HERE, 'exit-stats.mjs')).href;

const { values: opt } = parseArgs({
  options: {
    rounds: { type: 'string' },
    quick: { type: 'boolean', default: false },
    json: { type: 'boolean', default: false },
    only: { type: 'string' },
    warm: { type: 'boolean', default: false },
    results: { type: 'string' },
    'agent-config': { type: 'string' },
    'agent-node-args': { type: 'string' },
    'agent-env': { type: 'string' },
    keep: { type: 'boolean', default: false },
    'agent-dist': { type: 'string' },
    'mem-sample': { type: 'string' },
    'service-dist': { type: 'string' },
    'service-node-args': { type: 'string' },
  },
});
// Another build of the agent (e.g. main's, copied into a folder of this checkout so that its
// packages resolve): before/after figures of a change, with the peers in the same run.
const BIN = path.join(path.resolve(REPO, opt['agent-dist'] ?? 'dist'), 'main', 'cli', 'bin.js');
// The service may come from another build (A/B of a service change with the same agent), and
// take Node flags of its own (e.g. --cpu-prof: the profile is written when it exits on SIGTERM).
const SERVICE_BIN = opt['service-dist']
  ? path.join(path.resolve(REPO, opt['service-dist']), 'main', 'cli', 'bin.js')
  : BIN;
const SERVICE_NODE_ARGS = opt['service-node-args'] ? opt['service-node-args'].split(' ').filter(Boolean) : [];
const ROUNDS = Math.max(1, Number(opt.rounds ?? (opt.quick ? 1 : 3)));
const ONLY = new Set((opt.only ?? 'survey,small,big,reinsert,offload').split(',').map((s) => s.trim()));
const AGENT_CONFIG = opt['agent-config'] ? JSON.parse(opt['agent-config']) : null;
// The agent as its launcher starts it: the environment and Node flags of bin.js's first line
// (`#!/usr/bin/env -S [NAME=value …] node …`). The environment is set for every process the bench
// starts: the service is started through the same bin.js, and the peers (rclone, cp, md5sum) are
// not glibc-malloc programs it tunes. `--agent-env 'NAME=value NAME='` changes it (empty: unset).
const LAUNCH = /^#!\/usr\/bin\/env -S ((?:\S+=\S*\s+)*)node(?: (.*))?$/m.exec(
  fs.readFileSync(BIN, 'utf8').split('\n')[0],
);
const LAUNCH_ARGS = LAUNCH?.[2];
/** The environment set from bin.js's first line and --agent-env (null: unset). */
const LAUNCH_ENV = {};
for (const a of [...(LAUNCH?.[1] ?? '').split(/\s+/), ...(opt['agent-env'] ?? '').split(/\s+/)].filter(
  Boolean,
)) {
  const [k, v] = [a.slice(0, a.indexOf('=')), a.slice(a.indexOf('=') + 1)];
  LAUNCH_ENV[k] = v === '' ? null : v;
  if (v === '') delete process.env[k];
  else process.env[k] = v;
}
/** How the agent is started, for the results: its environment from bin.js and the Node flags. */
const launchText = () =>
  [
    ...Object.entries(LAUNCH_ENV).map(([k, v]) => (v === null ? `-u ${k}` : `${k}=${v}`)),
    'node',
    ...AGENT_NODE_ARGS.filter((a) => !a.includes('mem-sample')),
  ].join(' ');
const AGENT_NODE_ARGS = [
  ...(LAUNCH_ARGS ? LAUNCH_ARGS.split(' ').filter(Boolean) : []),
  ...(opt['agent-node-args'] ? opt['agent-node-args'].split(' ').filter(Boolean) : []),
  // Where the agent's memory is, thread by thread (mem-sample.mjs; summary: mem-breakdown.mjs).
  ...(opt['mem-sample'] ? ['--import', pathToFileURL(path.join(HERE, 'mem-sample.mjs')).href] : []),
];
if (opt['mem-sample']) process.env.DMS_MEM_SAMPLE = path.resolve(opt['mem-sample']);
const RESULTS_FILE = opt.results
  ? path.resolve(opt.results)
  : opt.quick
    ? null
    : path.join(HERE, 'RESULTS.md');

const log = (msg) => process.stderr.write(`[bench ${new Date().toISOString().slice(11, 19)}] ${msg}\n`);

// ---------------------------------------------------------------- tools

function which(cmd) {
  for (const dir of (process.env.PATH ?? '').split(':')) {
    const p = path.join(dir, cmd);
    try {
      fs.accessSync(p, fs.constants.X_OK);
      return p;
    } catch {
      // next
    }
  }
  return null;
}

let aptUpdated = false;
function aptInstall(pkg) {
  try {
    if (!aptUpdated) {
      log('apt-get update');
      execFileSync('apt-get', ['update', '-qq'], { stdio: 'ignore' });
      aptUpdated = true;
    }
    log(`apt-get install ${pkg}`);
    execFileSync('apt-get', ['install', '-y', '-qq', pkg], {
      stdio: 'ignore',
      env: { ...process.env, DEBIAN_FRONTEND: 'noninteractive' },
    });
    return true;
  } catch (err) {
    log(`could not install ${pkg}: ${err.message.split('\n')[0]}`);
    return false;
  }
}

function version(cmd, args) {
  try {
    return execFileSync(cmd, args, {
      encoding: 'utf8',
      stdio: ['ignore', 'pipe', 'pipe'],
      env: peerEnvBase(),
    })
      .split('\n')[0]
      .trim();
  } catch {
    return null;
  }
}

/** rclone refuses to start while AWS_CA_BUNDLE is set; no peer needs it on loopback http. */
function peerEnvBase() {
  const env = { ...process.env };
  delete env.AWS_CA_BUNDLE;
  return env;
}

function ensurePeers() {
  let rclone = which('rclone');
  if (!rclone && aptInstall('rclone')) rclone = which('rclone');
  // A pyenv shim may shadow the Debian package; the Debian one is what we install and describe.
  let aws = fs.existsSync('/usr/bin/aws') ? '/usr/bin/aws' : null;
  if (!aws && aptInstall('awscli')) aws = fs.existsSync('/usr/bin/aws') ? '/usr/bin/aws' : which('aws');
  const md5sum = which('md5sum');
  // The offload scenario's read-once proof runs the agent under strace.
  let strace = ONLY.has('offload') ? which('strace') : null;
  if (ONLY.has('offload') && !strace && aptInstall('strace')) strace = which('strace');
  return {
    ...(ONLY.has('offload') ? { strace: strace && { path: strace, version: version(strace, ['-V']) } } : {}),
    rclone: rclone && { path: rclone, version: version(rclone, ['version']) },
    aws: aws && { path: aws, version: version(aws, ['--version']) },
    md5sum: md5sum && { path: md5sum, version: version(md5sum, ['--version']) },
  };
}

// ---------------------------------------------------------------- workspace

if (!fs.existsSync(BIN)) {
  console.error(`${BIN} is missing: run "npm run build" first.`);
  process.exit(2);
}
const TMP = fs.mkdtempSync(path.join(os.tmpdir(), 'dms-bench-'));
const SVC_DATA = path.join(TMP, 'service');
let service = null;

function cleanup() {
  if (service && service.exitCode === null) service.kill('SIGTERM');
  for (const c of running) if (c.exitCode === null) c.kill('SIGKILL');
  for (const t of openThrottles) t.close();
  for (const d of openDevices) {
    try {
      d.close();
    } catch (err) {
      log(`could not unmount the card at ${d.root}: ${err.message}`);
    }
  }
  if (!opt.keep) fs.rmSync(TMP, { recursive: true, force: true });
}
process.on('exit', cleanup);
for (const sig of ['SIGINT', 'SIGTERM']) {
  process.on(sig, () => {
    log(`${sig}: cleaning up ${TMP}`);
    process.exit(130);
  });
}

async function startService() {
  fs.mkdirSync(SVC_DATA, { recursive: true });
  const errLog = fs.openSync(path.join(TMP, 'service.log'), 'a');
  const child = spawn(
    process.execPath,
    [...SERVICE_NODE_ARGS, SERVICE_BIN, 'serve', '--port', '0', '--data', SVC_DATA],
    {
      env: { ...process.env, DMS_LOG_LEVEL: 'warn' },
      stdio: ['ignore', 'pipe', errLog],
    },
  );
  service = child;
  const line = await new Promise((resolve, reject) => {
    let buf = '';
    child.stdout.setEncoding('utf8');
    child.stdout.on('data', (d) => {
      buf += d;
      const nl = buf.indexOf('\n');
      if (nl >= 0) resolve(buf.slice(0, nl));
    });
    child.once('exit', (code) =>
      reject(new Error(`the service exited (${code}); see ${path.join(TMP, 'service.log')}`)),
    );
  });
  const info = JSON.parse(line);
  return { pid: child.pid, baseUrl: info.base_url, workspaceId: info.workspace_id, token: info.token };
}

async function sts(svc) {
  const res = await globalThis.fetch(`${svc.baseUrl}/storage/api/v1/workspaces/${svc.workspaceId}/sts`, {
    method: 'POST',
    headers: { 'x-auth-token': svc.token },
  });
  const body = await res.json();
  if (body.code !== 0) throw new Error(`sts failed: ${JSON.stringify(body)}`);
  return body.data;
}

/**
 * Removes every object of the workspace (and unfinished multipart uploads)
 * from the embedded bucket: its files are under objects/<workspace id>, and
 * the bucket forgets an object whose file is gone (main/service/bucket/store.ts).
 */
function wipeBucket(target) {
  const bucketDir = path.join(SVC_DATA, 'bucket');
  fs.rmSync(path.join(bucketDir, 'objects', target.object_key_prefix), { recursive: true, force: true });
  fs.rmSync(path.join(bucketDir, 'uploads'), { recursive: true, force: true });
}

// ---------------------------------------------------------------- page cache

function dropCaches() {
  try {
    execFileSync('sync');
    fs.writeFileSync('/proc/sys/vm/drop_caches', '3');
    return true;
  } catch {
    return false;
  }
}

/** Reads every file once so that it sits in the page cache. */
function prewarm(files) {
  const buf = Buffer.allocUnsafe(4 * MiB);
  for (const f of files) {
    const fd = fs.openSync(f.path, 'r');
    try {
      while (fs.readSync(fd, buf, 0, buf.length, null) > 0);
    } finally {
      fs.closeSync(fd);
    }
  }
}

// ---------------------------------------------------------------- runners

let runNo = 0;

function agentArgs(card, stateDir, svc) {
  return [
    ...AGENT_NODE_ARGS,
    '--import',
    EXIT_HOOK,
    BIN,
    'sync',
    card,
    '--server',
    svc.baseUrl,
    '--token',
    svc.token,
    '--workspace',
    svc.workspaceId,
    '--state',
    stateDir,
    '--json',
  ];
}

/** `sync` of the built agent. stateDir: reused when given, else a fresh one (removed after). */
async function runAgent(svc, card, expect, stateDir) {
  const fresh = !stateDir;
  const dir = stateDir ?? path.join(TMP, `state-${++runNo}`);
  fs.mkdirSync(dir, { recursive: true });
  if (AGENT_CONFIG && fresh) fs.writeFileSync(path.join(dir, 'config.json'), JSON.stringify(AGENT_CONFIG));
  const statsFile = path.join(TMP, `agent-stats-${++runNo}.json`);
  let summary = null;
  const r = await measure(process.execPath, agentArgs(card, dir, svc), {
    env: { ...process.env, DMS_BENCH_STATS: statsFile },
    svcPid: svc.pid,
    statsFile,
    onLine: (l) => {
      if (l.startsWith('{"type":"summary"')) summary = JSON.parse(l);
    },
  });
  fs.rmSync(statsFile, { force: true });
  if (fresh) fs.rmSync(dir, { recursive: true, force: true });
  const problems = [];
  if (r.code !== 0) problems.push(`exit ${r.code}: ${r.stderrTail.slice(-500)}`);
  if (!summary) problems.push('no summary line');
  else {
    for (const k of Object.keys(expect))
      if (summary[k] !== expect[k]) problems.push(`${k}=${summary[k]} (expected ${expect[k]})`);
  }
  return { ...r, ok: problems.length === 0, error: problems.join('; ') || undefined, summary };
}

/** rclone between local folders: no remote, so no config file at all (and no notice about it). */
function rcloneLocalEnv() {
  return { ...peerEnvBase(), RCLONE_CONFIG: path.join(TMP, 'rclone-none.conf') };
}

function rcloneEnv(t) {
  const p = 'RCLONE_CONFIG_BENCH_';
  return {
    ...peerEnvBase(),
    // No config file is read or written: the remote lives in these variables only.
    RCLONE_CONFIG: path.join(TMP, 'rclone-none.conf'),
    [`${p}TYPE`]: 's3',
    [`${p}PROVIDER`]: 'Minio',
    [`${p}ACCESS_KEY_ID`]: t.credentials.access_key_id,
    [`${p}SECRET_ACCESS_KEY`]: t.credentials.access_key_secret,
    [`${p}SESSION_TOKEN`]: t.credentials.security_token,
    [`${p}ENDPOINT`]: t.endpoint,
    [`${p}REGION`]: t.region,
    [`${p}FORCE_PATH_STYLE`]: 'true',
    // Not needed since the embedded bucket answers S3's multipart ETag (s3rver
    // gave a plain MD5, which rclone took for corruption); kept so that runs
    // compare with earlier ones. Credentials cannot create buckets.
    [`${p}USE_MULTIPART_ETAG`]: 'false',
    [`${p}NO_CHECK_BUCKET`]: 'true',
  };
}

async function runRclone(svc, peers, card, sub) {
  const t = await sts(svc);
  const dest = `bench:${t.bucket}/${t.object_key_prefix}/${sub}/`;
  // rclone's defaults, retries included: if its check of an object after the
  // upload fails, rclone copies it again, and that time counts as its own
  // (it happened with s3rver, which answered a PUT before its file was complete).
  const r = await measure(peers.rclone.path, ['copy', card, dest], { env: rcloneEnv(t), svcPid: svc.pid });
  const retried = /Attempt \d+\/\d+ failed/.test(r.stderrTail);
  return { ...r, retried, ok: r.code === 0, error: r.code === 0 ? undefined : r.stderrTail.slice(-500) };
}

async function runAws(svc, peers, card, sub) {
  const t = await sts(svc);
  const cfg = path.join(TMP, 'aws-config');
  fs.writeFileSync(cfg, '[default]\ns3 =\n  addressing_style = path\n');
  const env = {
    ...peerEnvBase(),
    AWS_ACCESS_KEY_ID: t.credentials.access_key_id,
    AWS_SECRET_ACCESS_KEY: t.credentials.access_key_secret,
    AWS_SESSION_TOKEN: t.credentials.security_token,
    AWS_DEFAULT_REGION: t.region,
    AWS_CONFIG_FILE: cfg,
    AWS_SHARED_CREDENTIALS_FILE: path.join(TMP, 'aws-no-credentials'),
    AWS_EC2_METADATA_DISABLED: 'true',
    AWS_PAGER: '',
  };
  delete env.AWS_PROFILE;
  const dest = `s3://${t.bucket}/${t.object_key_prefix}/${sub}/`;
  const r = await measure(
    peers.aws.path,
    [
      's3',
      'cp',
      '--recursive',
      '--only-show-errors',
      '--no-progress',
      '--endpoint-url',
      t.endpoint,
      card,
      dest,
    ],
    { env, svcPid: svc.pid },
  );
  return { ...r, ok: r.code === 0, error: r.code === 0 ? undefined : r.stderrTail.slice(-500) };
}

async function runMd5sum(svc, peers, files) {
  const r = await measure(
    peers.md5sum.path,
    files.map((f) => f.path),
    { svcPid: svc.pid },
  );
  return { ...r, ok: r.code === 0, error: r.code === 0 ? undefined : r.stderrTail.slice(-500) };
}

function describe(name, r, bytes, files) {
  const rate =
    r.wallS > 0
      ? ` ${(bytes / MiB / r.wallS).toFixed(1)} MiB/s, ${(files / r.wallS).toFixed(0)} files/s`
      : '';
  const svc = r.svcCpuS !== null ? `, service ${r.svcCpuS.toFixed(1)} s CPU` : '';
  log(
    `  ${name.padEnd(14)} ${r.ok ? '' : 'FAILED '}${r.wallS.toFixed(2)} s${rate}, CPU ${r.cpuS.toFixed(1)} s, peak RSS ${r.peakRssMiB.toFixed(0)} MiB${svc}${r.ok ? '' : ` — ${r.error}`}`,
  );
}

// ---------------------------------------------------------------- scenarios

const specs = cardSpecs(opt.quick);
const rotate = (list, n) => list.map((_, i) => list[(i + n) % list.length]);

async function surveyScenario(svc, peers, cache) {
  const card = makeCard(path.join(TMP, 'card-survey'), specs.survey);
  const n = card.files.length;
  log(`survey card: ${n} files, ${sizeText(card.bytes)}`);
  const runs = { agent: [], rclone: [], aws: [], known_agent: [], md5sum: [] };
  const t0 = await sts(svc);
  for (let round = 1; round <= ROUNDS; round++) {
    log(`survey round ${round}/${ROUNDS}`);
    const blocks = {
      agent: async () => {
        prewarm(card.files);
        const r = await runAgent(svc, card.root, { uploaded: n, fast_uploaded: 0, failed: 0, pending: 0 });
        describe('agent', r, card.bytes, n);
        runs.agent.push(r);
        if (!r.ok) return;
        // Scenario 2 right away: the server now has this content; a fresh agent state.
        const pair = {
          known_agent: () =>
            runAgent(svc, card.root, { uploaded: 0, fast_uploaded: n, failed: 0, pending: 0 }),
          md5sum: () => runMd5sum(svc, peers, card.files),
        };
        for (const k of round % 2 ? ['known_agent', 'md5sum'] : ['md5sum', 'known_agent']) {
          if (k === 'md5sum' && !peers.md5sum) continue;
          if (cache === 'cold') {
            dropCaches();
            // Only the card's data is cold: the tools' own code is read again first.
            if (k === 'md5sum') execFileSync(peers.md5sum.path, ['--version'], { stdio: 'ignore' });
            else execFileSync(process.execPath, [BIN, 'help'], { stdio: 'ignore' });
          } else prewarm(card.files);
          const r2 = await pair[k]();
          describe(k === 'md5sum' ? 'md5sum' : 'agent (known)', r2, card.bytes, n);
          runs[k].push(r2);
        }
        wipeBucket(t0);
      },
      rclone: async () => {
        if (!peers.rclone) return;
        prewarm(card.files);
        const r = await runRclone(svc, peers, card.root, `bench-rclone-${round}`);
        describe('rclone', r, card.bytes, n);
        runs.rclone.push(r);
        wipeBucket(t0);
      },
      aws: async () => {
        if (!peers.aws) return;
        prewarm(card.files);
        const r = await runAws(svc, peers, card.root, `bench-aws-${round}`);
        describe('aws s3 cp', r, card.bytes, n);
        runs.aws.push(r);
        wipeBucket(t0);
      },
    };
    for (const k of rotate(['agent', 'rclone', 'aws'], round - 1)) await blocks[k]();
  }
  fs.rmSync(card.root, { recursive: true, force: true });
  return { files: n, bytes: card.bytes, runs };
}

/** Agent against rclone on one card, alternating who goes first. */
async function pairScenario(name, svc, peers, spec) {
  const card = makeCard(path.join(TMP, `card-${name}`), spec);
  const n = card.files.length;
  log(`${name} card: ${n} files, ${sizeText(card.bytes)}`);
  const runs = { agent: [], rclone: [] };
  const t0 = await sts(svc);
  for (let round = 1; round <= ROUNDS; round++) {
    log(`${name} round ${round}/${ROUNDS}`);
    const order = round % 2 ? ['agent', 'rclone'] : ['rclone', 'agent'];
    for (const k of order) {
      if (k === 'rclone' && !peers.rclone) continue;
      prewarm(card.files);
      const r =
        k === 'agent'
          ? await runAgent(svc, card.root, { uploaded: n, fast_uploaded: 0, failed: 0, pending: 0 })
          : await runRclone(svc, peers, card.root, `bench-rclone-${name}-${round}`);
      describe(k, r, card.bytes, n);
      runs[k].push(r);
      wipeBucket(t0);
    }
  }
  fs.rmSync(card.root, { recursive: true, force: true });
  return { files: n, bytes: card.bytes, runs };
}

async function reinsertScenario(svc) {
  const card = makeCard(path.join(TMP, 'card-reinsert'), specs.reinsert);
  const n = card.files.length;
  log(`re-insert card: ${n} files, ${sizeText(card.bytes)}; first sync (setup, not timed for the target)`);
  const state = path.join(TMP, 'state-reinsert');
  if (AGENT_CONFIG) {
    fs.mkdirSync(state, { recursive: true });
    fs.writeFileSync(path.join(state, 'config.json'), JSON.stringify(AGENT_CONFIG));
  }
  const setup = await runAgent(svc, card.root, { uploaded: n, failed: 0, pending: 0 }, state);
  describe('first sync', setup, card.bytes, n);
  const runs = { agent: [] };
  if (setup.ok) {
    for (let round = 1; round <= ROUNDS; round++) {
      const r = await runAgent(
        svc,
        card.root,
        { uploaded: 0, fast_uploaded: 0, skipped: n, failed: 0, pending: 0 },
        state,
      );
      describe(`re-insert ${round}`, r, 0, n);
      runs.agent.push(r);
    }
  }
  fs.rmSync(card.root, { recursive: true, force: true });
  fs.rmSync(state, { recursive: true, force: true });
  wipeBucket(await sts(svc));
  return { files: n, bytes: card.bytes, setup, runs };
}

// ---------------------------------------------------------------- figures

const okRuns = (list) => list.filter((r) => r.ok);
const pick = (list, f) => summarize(okRuns(list).map(f));

/** Per-round ratios a/b (same round, so drift of a noisy machine cancels). */
function ratios(a, b, f) {
  const out = [];
  for (let i = 0; i < Math.min(a.length, b.length); i++) if (a[i].ok && b[i].ok) out.push(f(a[i]) / f(b[i]));
  return summarize(out);
}

/** One line, without rclone's notice about the (deliberately) missing config file. */
function oneLine(text) {
  return String(text ?? '')
    .split('\n')
    .filter((l) => l.trim() !== '' && !/NOTICE: Config file/.test(l))
    .join(' / ')
    .slice(-400);
}

function runFigures(list, bytes, files) {
  return {
    ok_runs: okRuns(list).length,
    retried_runs: list.filter((r) => r.retried).length,
    failed_runs: list.length - okRuns(list).length,
    errors: list.filter((r) => !r.ok).map((r) => oneLine(r.error)),
    wall_s: pick(list, (r) => r.wallS),
    mib_s: pick(list, (r) => bytes / MiB / r.wallS),
    files_s: pick(list, (r) => files / r.wallS),
    cpu_s: pick(list, (r) => r.cpuS),
    peak_rss_mib: pick(list, (r) => r.peakRssMiB),
    service_cpu_s: pick(list, (r) => r.svcCpuS),
    service_cores: pick(list, (r) => (r.svcCpuS ?? NaN) / r.wallS),
    tool_cores: pick(list, (r) => r.cpuS / r.wallS),
    // Bytes the card's device delivered during the run, in card sizes (scenario 6 only).
    card_read: pick(list, (r) => (typeof r.cardReadBytes === 'number' ? r.cardReadBytes / bytes : NaN)),
  };
}

/** The agent's threads during the copy phase (scenario 6): CPU seconds by thread name. */
const THREADS = ['MainThread', 'WorkerThread', 'libuv-worker', 'V8Worker'];
function threadFigures(list) {
  const out = {};
  for (const t of [...THREADS, 'other'])
    out[t] = pick(list, (r) => {
      if (!r.threads) return NaN;
      if (t !== 'other') return r.threads[t] ?? 0;
      return Object.entries(r.threads).reduce((n, [k, v]) => (THREADS.includes(k) ? n : n + v), 0);
    });
  return out;
}

function figures(res) {
  const out = {};
  if (res.survey) {
    const { files, bytes, runs } = res.survey;
    out.survey = {
      files,
      bytes,
      agent: runFigures(runs.agent, bytes, files),
      rclone: runFigures(runs.rclone, bytes, files),
      aws: runFigures(runs.aws, bytes, files),
      agent_over_rclone: ratios(runs.agent, runs.rclone, (r) => r.wallS),
      agent_over_aws: ratios(runs.agent, runs.aws, (r) => r.wallS),
    };
    out.known = {
      files,
      bytes,
      agent: runFigures(runs.known_agent, bytes, files),
      md5sum: runFigures(runs.md5sum, bytes, files),
      agent_over_md5sum: ratios(runs.known_agent, runs.md5sum, (r) => r.wallS),
    };
  }
  if (res.reinsert) {
    const { files, bytes, runs, setup } = res.reinsert;
    out.reinsert = {
      files,
      bytes,
      first_sync: runFigures([setup], bytes, files),
      agent: runFigures(runs.agent, 0, files),
    };
  }
  for (const k of ['small', 'big']) {
    if (!res[k]) continue;
    const { files, bytes, runs } = res[k];
    out[k] = {
      files,
      bytes,
      agent: runFigures(runs.agent, bytes, files),
      rclone: runFigures(runs.rclone, bytes, files),
      // throughput ratio agent/rclone (files/s or MiB/s: the same), > 1 = agent faster
      agent_over_rclone_throughput: ratios(runs.rclone, runs.agent, (r) => r.wallS),
    };
  }
  if (res.offload) {
    const { files, bytes, runs, proof, device, cache, uplinkKiBps, throttle, fastReader } = res.offload;
    const perGiB = (list) => pick(list, (r) => r.cpuS / (bytes / (1024 * MiB)));
    out.offload = {
      files,
      bytes,
      device,
      cache,
      uplink_kibps: uplinkKiBps,
      throttle,
      agent: {
        ...runFigures(runs.agent, bytes, files),
        threads: threadFigures(runs.agent),
        wait_for_cpu_s: pick(runs.agent, (r) => r.waitForCpuS ?? NaN),
      },
      cp: runFigures(runs.cp, bytes, files),
      rclone: runFigures(runs.rclone, bytes, files),
      plain_agent: runFigures(runs.plain_agent, bytes, files),
      plain_rclone: runFigures(runs.plain_rclone, bytes, files),
      agent_over_cp: ratios(runs.agent, runs.cp, (r) => r.wallS),
      agent_over_rclone: ratios(runs.agent, runs.rclone, (r) => r.wallS),
      plain_agent_over_rclone: ratios(runs.plain_agent, runs.plain_rclone, (r) => r.wallS),
      // The card as fast as the disk (context): bound by the CPU the agent gets.
      agent_fast: runFigures(runs.agent_fast, bytes, files),
      cp_fast: runFigures(runs.cp_fast, bytes, files),
      agent_fast_over_cp_fast: ratios(runs.agent_fast, runs.cp_fast, (r) => r.wallS),
      // Issue 33: a 200 MB/s reader; the card unthrottled and in the page cache against standard tools.
      fast_reader: fastReader,
      agent_200: runFigures(runs.agent_200 ?? [], bytes, files),
      cp_200: runFigures(runs.cp_200 ?? [], bytes, files),
      agent_200_over_cp_200: ratios(runs.agent_200 ?? [], runs.cp_200 ?? [], (r) => r.wallS),
      std_fast: runFigures(runs.std_fast ?? [], bytes, files),
      agent_fast_over_std_fast: ratios(runs.agent_fast, runs.std_fast ?? [], (r) => r.wallS),
      agent_warm: runFigures(runs.agent_warm ?? [], bytes, files),
      std_warm: runFigures(runs.std_warm ?? [], bytes, files),
      agent_warm_over_std_warm: ratios(runs.agent_warm ?? [], runs.std_warm ?? [], (r) => r.wallS),
      cpu_s_per_gib: {
        agent: perGiB(runs.agent),
        agent_fast: perGiB(runs.agent_fast),
        std_fast: perGiB(runs.std_fast ?? []),
        agent_warm: perGiB(runs.agent_warm ?? []),
        std_warm: perGiB(runs.std_warm ?? []),
        cp: perGiB(runs.cp),
      },
      proof,
    };
  }
  return out;
}

/** Read once: the device delivered the card once (metadata aside) and no card file was read twice. */
function readOnce(o) {
  const device = o.agent.card_read;
  const proofOk = o.proof ? o.proof.ok && o.proof.twice.length === 0 && o.proof.mmaps.length === 0 : null;
  if (!device && proofOk === null) return 'n/a';
  return (device ? device.max <= 1.01 : true) && proofOk !== false ? 'yes' : 'NO';
}

function targets(f) {
  const t = [];
  const add = (id, name, value, op, target) =>
    t.push({ id, name, value, op, target, met: verdict(value, op, target) });
  if (f.survey) add(1, 'fresh survey: agent / rclone wall time', f.survey.agent_over_rclone, '<=', 1.0);
  if (f.known) add(2, 'known content: agent / md5sum wall time', f.known.agent_over_md5sum, '<=', 1.0);
  if (f.reinsert)
    add(3, `re-insert ${f.reinsert.files} done files: wall s`, f.reinsert.agent.wall_s, '<=', 0.5);
  if (f.small)
    add(4, 'small files: agent / rclone files per second', f.small.agent_over_rclone_throughput, '>=', 1.0);
  if (f.big) {
    add('5a', 'big file: agent peak RSS MiB', f.big.agent.peak_rss_mib, '<=', 300);
    add('5b', 'big file: agent / rclone throughput', f.big.agent_over_rclone_throughput, '>=', 1.0);
  }
  if (f.offload) {
    const o = f.offload;
    add('6a', 'offload: time to locally safe / (cp -r + sync)', o.agent_over_cp, '<=', 1.3);
    add('6b', 'offload: time to locally safe / (rclone copy ×2 + check ×2)', o.agent_over_rclone, '<=', 0.6);
    add('6c', 'offload: agent peak RSS MiB until locally safe', o.agent.peak_rss_mib, '<=', 300);
    // "Keeps today's figures": the plain upload of this card against rclone, as scenario 1's ratio (+0.10).
    if (f.survey?.agent_over_rclone)
      add(
        '6d',
        'offload card, no destination: agent / rclone',
        o.plain_agent_over_rclone,
        '<=',
        +(f.survey.agent_over_rclone.median + 0.1).toFixed(2),
      );
    t.push({ id: '6e', name: 'offload: every card byte read once', value: null, met: readOnce(o) });
    if (o.agent_200_over_cp_200)
      add(
        '6g',
        'offload, 200 MB/s reader: time to locally safe / (cp -r + sync)',
        o.agent_200_over_cp_200,
        '<=',
        1.3,
      );
    if (o.agent_fast_over_std_fast)
      add('6h', 'offload, card unthrottled: agent / standard tools', o.agent_fast_over_std_fast, '<=', 1.3);
    if (o.agent_warm_over_std_warm)
      add(
        '6i',
        'offload, card in the page cache: agent / standard tools',
        o.agent_warm_over_std_warm,
        '<=',
        1.3,
      );
  }
  return t;
}

function markdown(f, tg, meta) {
  const rows = [];
  const met = (id) => tg.find((x) => x.id === id)?.met ?? 'n/a';
  if (f.survey) {
    const s = f.survey;
    rows.push([
      '1',
      `Fresh survey card (${s.files} files, ${sizeText(s.bytes)}): wall s`,
      `${fmt(s.agent.wall_s)} (${fmt(s.agent.mib_s, 0)} MiB/s)`,
      `rclone ${fmt(s.rclone.wall_s)} (${fmt(s.rclone.mib_s, 0)} MiB/s)`,
      fmt(s.agent_over_rclone),
      '≤ 1.00',
      met(1),
    ]);
    rows.push([
      '',
      '… same, vs aws s3 cp',
      '',
      `aws ${fmt(s.aws.wall_s)} (${fmt(s.aws.mib_s, 0)} MiB/s)`,
      fmt(s.agent_over_aws),
      '–',
      '',
    ]);
  }
  if (f.known) {
    const k = f.known;
    rows.push([
      '2',
      `Known content, fresh state (${meta.cache} page cache): wall s`,
      fmt(k.agent.wall_s),
      `md5sum ${fmt(k.md5sum.wall_s)}`,
      fmt(k.agent_over_md5sum),
      '≤ 1.00',
      met(2),
    ]);
  }
  if (f.reinsert) {
    const r = f.reinsert;
    rows.push([
      '3',
      `Re-insert, ${r.files} files already done: wall s`,
      fmt(r.agent.wall_s),
      '–',
      '–',
      '≤ 0.5 s',
      met(3),
    ]);
  }
  if (f.small) {
    const s = f.small;
    rows.push([
      '4',
      `Small files (${s.files} × ${sizeText(s.bytes / s.files)}): files/s`,
      fmt(s.agent.files_s, 0),
      `rclone ${fmt(s.rclone.files_s, 0)}`,
      fmt(s.agent_over_rclone_throughput),
      '≥ 1.00',
      met(4),
    ]);
  }
  if (f.big) {
    const b = f.big;
    rows.push([
      '5a',
      `Big file (${sizeText(b.bytes)}): agent peak RSS MiB`,
      fmt(b.agent.peak_rss_mib, 0),
      `rclone ${fmt(b.rclone.peak_rss_mib, 0)}`,
      '–',
      '≤ 300',
      met('5a'),
    ]);
    rows.push([
      '5b',
      'Big file: MiB/s',
      fmt(b.agent.mib_s, 0),
      `rclone ${fmt(b.rclone.mib_s, 0)}`,
      fmt(b.agent_over_rclone_throughput),
      '≥ 1.00',
      met('5b'),
    ]);
  }
  if (f.offload) rows.push(...offloadRows(f.offload, f, met));
  const main = table(['#', 'Scenario', 'Agent', 'Peer', 'Ratio', 'Target', 'Met'], rows);

  // Where the CPU went: the tool itself and the service (with its embedded bucket) meanwhile.
  const cpuRows = [];
  const addCpu = (label, x) => {
    if (!x || !x.wall_s) return;
    cpuRows.push([
      label,
      fmt(x.wall_s),
      fmt(x.cpu_s),
      fmt(x.tool_cores),
      fmt(x.service_cpu_s),
      fmt(x.service_cores),
      fmt(x.peak_rss_mib, 0),
    ]);
  };
  if (f.survey) {
    addCpu('1 survey: agent', f.survey.agent);
    addCpu('1 survey: rclone', f.survey.rclone);
    addCpu('1 survey: aws s3 cp', f.survey.aws);
  }
  if (f.known) {
    addCpu('2 known: agent', f.known.agent);
    addCpu('2 known: md5sum', f.known.md5sum);
  }
  if (f.reinsert) addCpu('3 re-insert: agent', f.reinsert.agent);
  if (f.small) {
    addCpu('4 small: agent', f.small.agent);
    addCpu('4 small: rclone', f.small.rclone);
  }
  if (f.big) {
    addCpu('5 big: agent', f.big.agent);
    addCpu('5 big: rclone', f.big.rclone);
  }
  if (f.offload) {
    addCpu('6 offload: agent until locally safe', f.offload.agent);
    addCpu('6 offload: cp -r + sync', f.offload.cp);
    addCpu('6 offload: rclone copy ×2 + check ×2', f.offload.rclone);
    addCpu('6 offload, card unthrottled: agent until locally safe', f.offload.agent_fast);
    addCpu('6 offload, card unthrottled: cp -r + sync', f.offload.cp_fast);
    if (f.offload.std_fast?.wall_s) addCpu('6 offload, card unthrottled: standard tools', f.offload.std_fast);
    if (f.offload.agent_warm?.wall_s)
      addCpu('6 offload, card in the page cache: agent', f.offload.agent_warm);
    if (f.offload.std_warm?.wall_s)
      addCpu('6 offload, card in the page cache: standard tools', f.offload.std_warm);
    if (f.offload.agent_200?.wall_s) addCpu('6 offload, 200 MB/s reader: agent', f.offload.agent_200);
    addCpu('6 offload, no destination: agent', f.offload.plain_agent);
    addCpu('6 offload, no destination: rclone', f.offload.plain_rclone);
  }
  const cpu = table(
    ['Run', 'Wall s', 'Tool CPU s', 'Tool cores', 'Service CPU s', 'Service cores', 'Peak RSS MiB'],
    cpuRows,
  );
  const failures = [];
  for (const [scen, obj] of Object.entries(f)) {
    for (const [tool, x] of Object.entries(obj)) {
      if (x && typeof x === 'object' && x.failed_runs)
        failures.push(`- ${scen}/${tool}: ${x.failed_runs} failed run(s): ${x.errors.join(' | ')}`);
      if (x && typeof x === 'object' && x.retried_runs)
        failures.push(
          `- ${scen}/${tool}: ${x.retried_runs} run(s) where rclone retried (its post-upload check failed); the retry time is included.`,
        );
    }
  }
  return { main, cpu, failures, offload: f.offload ? offloadText(f.offload) : null };
}

function offloadRows(o, f, met) {
  const size = sizeText(o.bytes);
  const rate = (x) => `${fmt(x.wall_s)} (${fmt(x.mib_s, 0)} MiB/s)`;
  const reader = o.throttle ? `a ${o.throttle.bps / 1e6} MB/s card` : 'an UNTHROTTLED card';
  const rows = [
    [
      '6a',
      `Offload, ${o.files} files, ${size} from ${reader} to 2 destinations: time to locally safe, s`,
      rate(o.agent),
      `cp -r + sync (1 destination) ${rate(o.cp)}`,
      fmt(o.agent_over_cp),
      '≤ 1.30',
      met('6a'),
    ],
    [
      '6b',
      '… same, vs rclone copy --checksum to both + rclone check of each',
      '',
      `rclone ${rate(o.rclone)}`,
      fmt(o.agent_over_rclone),
      '≤ 0.60',
      met('6b'),
    ],
    [
      '6c',
      'Offload: agent peak RSS until locally safe, MiB',
      fmt(o.agent.peak_rss_mib, 0),
      '–',
      '–',
      '≤ 300',
      met('6c'),
    ],
    [
      '6d',
      'Offload card, no destination: sync to the workspace, s',
      fmt(o.plain_agent.wall_s),
      `rclone copy ${fmt(o.plain_rclone.wall_s)}`,
      fmt(o.plain_agent_over_rclone),
      f.survey?.agent_over_rclone
        ? `≤ ${(f.survey.agent_over_rclone.median + 0.1).toFixed(2)} (row 1 + 0.10)`
        : 'as row 1',
      met('6d'),
    ],
    [
      '6e',
      'Offload: card bytes read until locally safe (device), × card',
      fmt(o.agent.card_read, 3),
      `cp ${fmt(o.cp.card_read, 3)}, rclone ${fmt(o.rclone.card_read, 3)}`,
      '–',
      'each byte once',
      met('6e'),
    ],
  ];
  const cpuGiB = (k) => `${fmt(o.cpu_s_per_gib?.[k])} CPU s/GiB`;
  if (o.agent_200?.wall_s)
    rows.push([
      '6g',
      `Offload from a ${o.fast_reader.bps / 1e6} MB/s reader (fast microSD): time to locally safe, s`,
      rate(o.agent_200),
      `cp -r + sync (1 destination) ${rate(o.cp_200)}`,
      fmt(o.agent_200_over_cp_200),
      '≤ 1.30',
      met('6g'),
    ]);
  if (o.std_fast?.wall_s)
    rows.push([
      '6h',
      'Offload, card unthrottled (cold): time to locally safe, s',
      `${rate(o.agent_fast)}; ${cpuGiB('agent_fast')}`,
      `md5sum + cp -r ×2 + sync + O_DIRECT read-back into md5sum ×2: ${rate(o.std_fast)}; ${cpuGiB('std_fast')}`,
      fmt(o.agent_fast_over_std_fast),
      '≤ 1.30',
      met('6h'),
    ]);
  if (o.std_warm?.wall_s)
    rows.push([
      '6i',
      'Offload, card in the page cache: time to locally safe, s',
      `${rate(o.agent_warm)}; ${cpuGiB('agent_warm')}`,
      `the same standard tools: ${rate(o.std_warm)}; ${cpuGiB('std_warm')}`,
      fmt(o.agent_warm_over_std_warm),
      '≤ 1.30',
      met('6i'),
    ]);
  if (o.agent_fast?.wall_s)
    rows.push([
      '6f',
      'Context: the card as fast as the disk (not throttled), time to locally safe, s: bound by the CPU (2 cores shared with other work)',
      rate(o.agent_fast),
      `cp -r + sync ${rate(o.cp_fast)}`,
      fmt(o.agent_fast_over_cp_fast),
      '–',
      'n/a',
    ]);
  return rows;
}

/** Scenario 6's own lines: how the card was read, the agent's threads, the read-once proof. */
function offloadText(o) {
  const th = o.agent.threads;
  const t = o.throttle;
  const lines = [
    `Scenario 6 (offload): the card is ${o.device ? `an ext4 file system on its own loop device (${o.device}, direct I/O to its image file)` : 'a plain folder (no loop device here)'}; ` +
      (t
        ? `its reads limited to ${t.bps / 1e6} MB/s (a UHS-I card reader) by a blkio cgroup that every tool of rows 6a–6c and 6e runs in ` +
          `(checked before the rounds: dd of ${t.check.file}, cold, ${t.check.buffered_mb_s.toFixed(1)} MB/s buffered, ${t.check.direct_mb_s.toFixed(1)} MB/s O_DIRECT); ` +
          'rows 6d, 6f and the proof read it unthrottled. '
        : 'its reads NOT throttled (no blkio cgroup here): it is as fast as the disk. ') +
      `Page cache ${o.cache === 'cold' ? 'dropped' : 'NOT dropped (not root)'} before every run of every tool, and before each of rclone's four steps (a 64 GB card does not fit in the page cache); destinations emptied. ` +
      `The agent is timed from its start to its \`local-verdict\` line, with the upload going on from the copies over a ${o.uplink_kibps / 1024} MiB/s uplink (its bandwidth limit), then killed.`,
    `Agent during the copy phase: ${fmt(o.agent.tool_cores)} cores (CPU s / wall s); CPU s by thread: main ${fmt(th.MainThread)}, ` +
      `copy/hash workers ${fmt(th.WorkerThread)}, libuv pool ${fmt(th['libuv-worker'])}, V8 helpers ${fmt(th.V8Worker)}, other ${fmt(th.other)}; ` +
      `its threads waited ${fmt(o.agent.wait_for_cpu_s)} s in all for a core (runnable, another process on it: the shared machine).`,
  ];
  const p = o.proof;
  if (p)
    lines.push(
      `Read-once proof (one more run, the whole sync to the end under strace, not timed): ${p.filesRead} of ${p.files} card files read, ` +
        `${(p.bytesRead / p.cardBytes).toFixed(4)}× the card's bytes by read calls; ${p.twice.length} file(s) read more than once` +
        `${p.twice.length ? ` (${p.twice.map((t) => `${t.path}: ${t.bytes} of ${t.size} bytes`).join('; ')})` : ''}; ` +
        `${p.mmaps.length} mapped; device ${p.deviceBytes === null ? 'n/a' : `${(p.deviceBytes / p.cardBytes).toFixed(4)}×`}${p.ok ? '' : `; the run FAILED: ${p.error}`}.`,
    );
  else lines.push('Read-once proof: not run (no strace).');
  return lines.join('\n');
}

function machine(peers) {
  const cpus = os.cpus();
  return {
    cores: cpus.length,
    cpu_model: cpus[0]?.model ?? 'unknown',
    ram_gib: +(os.totalmem() / 1024 ** 3).toFixed(1),
    node: process.version,
    os: `${os.type()} ${os.release()}`,
    date: new Date().toISOString(),
    load_at_start: os.loadavg().map((x) => +x.toFixed(2)),
    rclone: peers.rclone?.version ?? null,
    aws: peers.aws?.version ?? null,
    md5sum: peers.md5sum?.version ?? null,
  };
}

// ---------------------------------------------------------------- main

async function main() {
  const started = Date.now();
  const peers = ensurePeers();
  for (const [k, v] of Object.entries(peers)) if (!v) log(`${k} is not available: its figures will be n/a`);
  let cache = 'warm';
  if (ONLY.has('survey') && !opt.warm) cache = dropCaches() ? 'cold' : 'warm';
  const m = machine(peers);
  log(
    `${m.cores} cores, ${m.ram_gib} GiB, node ${m.node}; ${ROUNDS} round(s)${opt.quick ? ', quick' : ''}; scenario 2 page cache: ${cache}; temp ${TMP}`,
  );
  const linkRows = [...ONLY].filter((x) => x.startsWith('link'));
  if (linkRows.length > 0) {
    const { linkScenario, linkText, LINK_ROWS } = await import('./lib/link.mjs');
    const link = await linkScenario({
      rows: linkRows.flatMap((x) => (x === 'link' ? LINK_ROWS : [x.slice('link-'.length)])),
      tmp: TMP,
      bin: BIN,
      quick: opt.quick,
      log,
      rclone: peers.rclone?.path ?? null,
      rcloneEnv,
    });
    process.stdout.write(`\n${linkText(link)}\n`);
    if (opt.json) process.stdout.write(JSON.stringify({ link }) + '\n');
    if (ONLY.size === linkRows.length) return;
  }
  const svc = await startService();
  log(`service pid ${svc.pid} at ${svc.baseUrl}`);

  const res = {};
  if (ONLY.has('survey')) res.survey = await surveyScenario(svc, peers, cache);
  if (ONLY.has('small')) res.small = await pairScenario('small', svc, peers, specs.small);
  if (ONLY.has('big')) res.big = await pairScenario('big', svc, peers, specs.big);
  if (ONLY.has('reinsert')) res.reinsert = await reinsertScenario(svc);
  if (ONLY.has('offload'))
    res.offload = await offloadScenario({
      tmp: TMP,
      spec: specs.offload,
      rounds: ROUNDS,
      svc,
      peers,
      log,
      describe,
      dropCaches,
      wipeBucket,
      sts,
      agentArgs,
      agentConfig: AGENT_CONFIG ?? {},
      runAgent,
      runRclone,
      nodeWarm: [process.execPath, BIN, 'help'],
      rcloneLocalEnv,
      strace: peers.strace?.path ?? null,
      keep: opt.keep,
    });

  service.kill('SIGTERM');
  await sleep(200);
  const f = figures(res);
  const tg = targets(f);
  const meta = {
    rounds: ROUNDS,
    quick: opt.quick,
    cache,
    agent_config: AGENT_CONFIG,
    agent_launch: { env: LAUNCH_ENV, node_args: AGENT_NODE_ARGS },
    duration_s: Math.round((Date.now() - started) / 1000),
  };
  const md = markdown(f, tg, meta);
  const text = [
    `Medians of ${ROUNDS} round(s), (min–max). Ratios are computed per round (same round, same machine load), then the median is taken.`,
    '',
    md.main,
    '',
    'Where the CPU went (tool = the process measured; service = the reference service with its embedded bucket, one Node process, during that run):',
    '',
    md.cpu,
    ...(md.offload ? ['', md.offload] : []),
    ...(md.failures.length ? ['', 'Failed runs (left out of the figures) and retries:', ...md.failures] : []),
    '',
    `Load average at the start ${m.load_at_start.join(' / ')}, at the end ${os
      .loadavg()
      .map((x) => x.toFixed(2))
      .join(' / ')}.`,
  ].join('\n');

  if (opt.json) {
    process.stdout.write(JSON.stringify({ machine: m, settings: meta, figures: f, targets: tg }) + '\n');
    process.stderr.write(`\n${text}\n`);
  } else process.stdout.write(`\n${text}\n`);

  if (RESULTS_FILE) {
    const doc = [
      '# Benchmark results',
      '',
      `Produced by \`npm run bench\` (test/bench/bench.mjs; see test/bench/README.md) on ${m.date.slice(0, 10)}.`,
      '',
      `Machine: ${m.cores} cores (${m.cpu_model}), ${m.ram_gib} GiB RAM, Node ${m.node}, ${m.os}; load average at start ${m.load_at_start.join(' / ')} (a shared machine: other work ran meanwhile).`,
      `Peers: ${m.rclone ?? 'rclone n/a'}; ${m.aws ?? 'aws n/a'}; ${m.md5sum ?? 'md5sum n/a'}.`,
      `Service: the reference service (\`serve\`) with its embedded bucket, a separate process on loopback, log level warn.`,
      `Page cache: scenarios 1, 4, 5 read warm cards (every file read once before each run, for every tool); scenario 2 ${cache === 'cold' ? 'drops the page cache (sync; echo 3 > /proc/sys/vm/drop_caches) before each run of either tool: the card is read from disk' : 'runs warm for both tools (the page cache could not be dropped, or --warm)'}.`,
      `Run: ${ROUNDS} round(s)${opt.quick ? ' (--quick)' : ''}, agent defaults${AGENT_CONFIG ? ` overridden by ${JSON.stringify(AGENT_CONFIG)}` : ''}, agent started as \`${launchText()}\`, ${Math.round(meta.duration_s / 60)} min in all.`,
      '',
      text,
      '',
    ].join('\n');
    fs.writeFileSync(RESULTS_FILE, doc);
    log(`wrote ${path.relative(process.cwd(), RESULTS_FILE)}`);
  }
  log(`done in ${meta.duration_s} s`);
}

main().then(
  () => process.exit(0),
  (err) => {
    log(`failed: ${err.stack ?? err}`);
    process.exit(1);
  },
);
