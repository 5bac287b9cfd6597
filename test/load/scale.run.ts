/**
 * `npm run bench:scale`: issue 24's load run, printed as a table.
 *
 * The same workload against two set-ups, one after the other, on this
 * machine (loopback only):
 *  - PostgreSQL 15 (durable: fsync on), two `serve` instances behind HAProxy;
 *  - one `serve` instance on SQLite (the default), no load balancer.
 * Both use the same Ceph RGW as their bucket, and both start with 1,000,000
 * media records already in the workspace. Then AGENTS simulated agents at
 * once. Each asks sts once and keeps the credentials (as the app's
 * sts-cache does: they last longer than the run), then ROUNDS times:
 * fast-upload of a new file (unknown), PUT of the object to RGW with the STS
 * credentials, callback, fast-upload of the same content under another name
 * (known: a HEAD on RGW), a waylines page. Twice:
 *  - at the field's pace (the target's run): a round takes as long as
 *    uploading one photo over a ground station's uplink (FILE_MB at
 *    UPLINK_MBIT; the PUT itself is 4 KiB, the agent waits out the rest, as
 *    the bytes would go to a bucket elsewhere), and the agents start spread
 *    over one such round, as ground stations do not start on the same
 *    millisecond;
 *  - flat out (saturation): each agent sends its next request as soon as the
 *    last is answered, which says what the machine can carry and where the
 *    CPU goes.
 * Then batches of 1,000 tiny fingerprints (half of them
 * known). Every answer is checked; anything unexpected counts as an error.
 * Then, on the PostgreSQL side, issue 24's faults under the same load
 * (faultPhase): one instance killed with SIGKILL, PostgreSQL restarted, the
 * callbacks counted in the database. Each agent has its own loopback address
 * (127.0.x.y), as each ground station has its own in the field. Bounded:
 * each phase stops at its deadline.
 */
import { S3Client } from '@aws-sdk/client-s3';
import Database from 'better-sqlite3';
import { createHash, randomBytes } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { Agent, request } from 'undici';
import { it } from 'vitest';
import { SignedPut } from '../../main/core/storage/s3-put.js';
import type { BucketTarget } from '../../main/core/storage/types.js';
import { hashToken } from '../../main/service/auth.js';
import { CODES, type DatabaseConfig } from '../../main/service/index.js';
import { freePorts } from '../peers/ceph/daemons.js';
import { rgwBucketConfig } from '../peers/ceph/peer.js';
import { startRgw, type Rgw } from '../peers/ceph/rgw.js';
import { startHaproxy, startInstance, stopInstance, type Instance } from '../peers/deployment.js';
import { startPostgres, type PgCluster } from '../support/postgres.js';
import { cores, groupSeconds, machineBusySeconds, selfSeconds, stolenSeconds } from './cpu.js';

const AGENTS = Number(process.env.DMS_SCALE_AGENTS ?? 200);
const ROUNDS = Number(process.env.DMS_SCALE_ROUNDS ?? 3);
/** Rounds of each agent at the field's pace: more of them, for a p99 over enough requests. */
const PACED_ROUNDS = Number(process.env.DMS_SCALE_PACED_ROUNDS ?? 5);
/**
 * A photo of a wide or zoom camera of the M30T / H20T (4-6 MB), over the top
 * of the field's 8-15 Mbit/s (a faster uplink means more requests per second).
 */
const FILE_MB = Number(process.env.DMS_SCALE_FILE_MB ?? 5);
const UPLINK_MBIT = Number(process.env.DMS_SCALE_UPLINK_MBIT ?? 15);
/** How long one photo's upload takes at the field's pace. */
const UPLOAD_MS = (FILE_MB * 8 * 1000) / UPLINK_MBIT;
/** Headroom: the same agents again as if their uplinks were this many times faster (more requests per second). */
const FASTER = (process.env.DMS_SCALE_FASTER ?? '2,4').split(',').filter(Boolean).map(Number);
const PRELOAD = Number(process.env.DMS_SCALE_ROWS ?? 1_000_000);
const TINY_BATCHES = 20;
/** Rounds of one agent alone, before the crowd: each request's own time, with no queue in front of it. */
const SOLO_ROUNDS = 30;
const PHASE_DEADLINE_MS = 180_000;
/**
 * `serve` logs at its default level (info: a line per request), as a deployment runs it;
 * DMS_SCALE_LOG_LEVEL=warn to see what the log costs.
 */
/** PostgreSQL's cache: a quarter of a small server's memory, more than the media table and its indexes. */
const SHARED_BUFFERS = process.env.DMS_SCALE_SHARED_BUFFERS ?? '1GB';
const SERVE_ENV = { DMS_LOG_LEVEL: process.env.DMS_SCALE_LOG_LEVEL ?? 'info' };

const md5 = (b: Buffer | string) => createHash('md5').update(b).digest('hex');
const dispatcher = new Agent({ connections: 256, keepAliveTimeout: 10_000 });
/**
 * Agent i's own client address on the loopback (127.0.x.y): each ground station comes from its own
 * address, as in the field, and the service bounds connections per address (64).
 */
const agentDispatchers = new Map<number, Agent>();
const dispatcherOf = (i: number): Agent => {
  let d = agentDispatchers.get(i);
  if (!d) {
    // One connection: a simulated agent sends one request at a time.
    const localAddress = `127.0.${1 + Math.floor(i / 250)}.${1 + (i % 250)}`;
    d = new Agent({ connections: 1, keepAliveTimeout: 10_000, localAddress });
    agentDispatchers.set(i, d);
  }
  return d;
};

interface Side {
  label: string;
  url: string;
  workspaceId: string;
  /** Runs SQL on the side's database (setup and counting only). */
  sql(sql: string, params?: unknown[]): Promise<Record<string, unknown>[]>;
  /** The side's processes by name (each with what it starts), for where the CPU went. */
  processes: Record<string, number[]>;
  /** What each `serve` process logged so far (its access log: a line per answered request). */
  logs(): string[];
}

/** CPU seconds during a phase: per process group, this process (the agents), the whole machine. */
interface CpuUse {
  groups: Record<string, number>;
  agents: number;
  machine: number;
  /** Of `machine`: taken by the host running this virtual machine (steal). */
  stolen: number;
}

async function cpuDuring<T>(groups: Record<string, number[]>, f: () => Promise<T>): Promise<[T, CpuUse]> {
  const [g0, a0, m0, s0] = [groupSeconds(groups), selfSeconds(), machineBusySeconds(), stolenSeconds()];
  const result = await f();
  const [g1, a1, m1, s1] = [groupSeconds(groups), selfSeconds(), machineBusySeconds(), stolenSeconds()];
  const used = Object.fromEntries(Object.keys(groups).map((k) => [k, g1[k]! - g0[k]!]));
  return [result, { groups: used, agents: a1 - a0, machine: m1 - m0, stolen: s1 - s0 }];
}

type Timings = Record<string, number[]>;

async function api(
  url: string,
  token: string,
  method: 'GET' | 'POST',
  p: string,
  body?: unknown,
  via: Agent = dispatcher,
): Promise<{ status: number; json: { code: number; data?: unknown } }> {
  const res = await request(`${url}${p}`, {
    method,
    dispatcher: via,
    headers: { 'x-auth-token': token, ...(body ? { 'content-type': 'application/json' } : {}) },
    ...(body ? { body: JSON.stringify(body) } : {}),
  });
  const text = await res.body.text();
  try {
    return { status: res.statusCode, json: JSON.parse(text) as { code: number; data?: unknown } };
  } catch {
    // Not the service's envelope (a load balancer's HTML page): counted as an error, with what it said.
    return { status: res.statusCode, json: { code: -1, data: text.slice(0, 200) } };
  }
}

const pct = (xs: number[], p: number): number => {
  if (xs.length === 0) return NaN;
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.ceil((p / 100) * s.length) - 1)]!;
};

/** Tokens for the simulated agents, written as the service writes them (sha256 only). */
async function agentTokens(side: Side): Promise<string[]> {
  const tokens = Array.from({ length: AGENTS }, () => randomBytes(32).toString('base64url'));
  for (const t of tokens) {
    await side.sql(
      "INSERT INTO tokens (hash, workspace_id, user_id, kind, created_at, expires_at) VALUES (?, ?, NULL, 'admin', ?, NULL)",
      [hashToken(t), side.workspaceId, Date.now()],
    );
  }
  return tokens;
}

/** What one phase of agents did: each request's time by kind, every unexpected answer, the wall time. */
interface AgentsRun {
  timings: Timings;
  errors: string[];
  ms: number;
  /** Callbacks answered 0 (a retried one counted once). */
  recorded: number;
}

interface AgentsOptions {
  rounds?: number;
  /** In the files' names: the solo agent's files are not the crowd's. */
  tag?: string;
  /**
   * As a real agent does through an outage: a step not answered as expected is tried again (after
   * 250-750 ms) until it is, or the phase's deadline; without it, the round ends at the first error.
   */
  persist?: boolean;
  /** Called after each recorded callback, with the count so far (the fault phase's cue). */
  onRecorded?: (n: number) => void;
  /** Said before each unexpected answer: when it came (the fault phase's stage). */
  when?: () => string;
  /** True when trying again is pointless (no instance left running). */
  hopeless?: () => boolean;
  /**
   * At the field's pace: each upload takes `uploadMs` (the agent waits out what the 4 KiB PUT did
   * not take), and each agent starts at a random moment within one upload's time.
   */
  uploadMs?: number;
}

/** One unexpected answer, said as the agent got it: HTTP status and code, or what came instead of JSON. */
function describe(what: string, got: { status: number; json: { code: number; data?: unknown } }): string {
  if (got.json.code === -1)
    return `${what}: HTTP ${got.status} not the envelope ${JSON.stringify(got.json.data)}`;
  if (got.json.code === -2) return `${what}: no answer (${String(got.json.data)})`;
  return `${what}: HTTP ${got.status} code ${got.json.code}`;
}

async function runAgents(side: Side, tokens: string[], opts: AgentsOptions = {}): Promise<AgentsRun> {
  const { rounds = ROUNDS, tag = '', persist = false } = opts;
  const timings: Timings = {
    sts: [],
    'fast-upload new': [],
    'fast-upload known': [],
    callback: [],
    waylines: [],
  };
  const errors: string[] = [];
  let recorded = 0;
  const ws = side.workspaceId;
  const deadline = Date.now() + PHASE_DEADLINE_MS;
  /** One request, timed; tried again while `persist`; its envelope when answered with `code`, else null. */
  const step = async (
    what: string,
    kind: string,
    send: () => ReturnType<typeof api>,
    code: number,
  ): Promise<{ code: number; data?: unknown } | null> => {
    for (;;) {
      const t0 = performance.now();
      const got = await send().catch((err: NodeJS.ErrnoException) => ({
        status: 0,
        json: { code: -2, data: err.code ?? err.message },
      }));
      timings[kind]!.push(performance.now() - t0);
      if (got.json.code === code) return got.json;
      errors.push(`${opts.when ? `${opts.when()}: ` : ''}${describe(what, got)}`);
      if (!persist || Date.now() > deadline || opts.hopeless?.()) return null;
      await sleep(250 + Math.random() * 500);
    }
  };
  const agent = async (i: number) => {
    const token = tokens[i]!;
    const via = dispatcherOf(i);
    const send = (method: 'GET' | 'POST', p: string, body?: unknown) => () =>
      api(side.url, token, method, p, body, via);
    const media = `/media/api/v1/workspaces/${ws}`;
    if (opts.uploadMs) await sleep(Math.random() * opts.uploadMs);
    // Asked once and kept, as the app does: the credentials outlast the run.
    let d: StsData | null = null;
    let s3: S3Client | null = null;
    try {
      for (let round = 0; round < rounds && Date.now() < deadline; round++) {
        if (!d) {
          const sts = await step('sts', 'sts', send('POST', `/storage/api/v1/workspaces/${ws}/sts`), 0);
          if (!sts) continue;
          d = sts.data as StsData;
          s3 = bucketClient(d);
        }
        const content = randomBytes(4096);
        const fp = md5(content);
        const name = `DJI_20240301090000_${tag}${String(i).padStart(4, '0')}_${round}_W.JPG`;
        const fu = await step(
          'fast-upload (new)',
          'fast-upload new',
          send('POST', `${media}/fast-upload`, { fingerprint: fp, name }),
          CODES.FINGERPRINT_UNKNOWN,
        );
        if (!fu) continue;
        const key = `${d.object_key_prefix}/scale/${side.label}/${name}`;
        const putStarted = performance.now();
        if (!(await putObject(s3!, d, key, content, errors, persist ? deadline : 0))) continue;
        if (opts.uploadMs) await sleep(Math.max(0, opts.uploadMs - (performance.now() - putStarted)));
        const cb = await step(
          'callback',
          'callback',
          send('POST', `${media}/upload-callback`, {
            result: 0,
            name,
            object_key: key,
            fingerprint: fp,
            path: 'DJI_202403010900_001_Scale',
            ext: { tinny_fingerprint: `${fp}_2024_3_1_9_0_0` },
          }),
          0,
        );
        if (!cb) continue;
        opts.onRecorded?.(++recorded);
        const known = await step(
          'fast-upload (known)',
          'fast-upload known',
          send('POST', `${media}/fast-upload`, { fingerprint: fp, name: `copy-${name}` }),
          0,
        );
        if (!known) continue;
        await step(
          'waylines',
          'waylines',
          send('GET', `/wayline/api/v1/workspaces/${ws}/waylines?page=${1 + (i % 3)}&page_size=10`),
          0,
        );
      }
    } finally {
      s3?.destroy();
    }
  };
  const t0 = performance.now();
  await Promise.all(tokens.map((_, i) => agent(i)));
  return { timings, errors, ms: performance.now() - t0, recorded };
}

interface StsData {
  bucket: string;
  endpoint: string;
  region: string;
  object_key_prefix: string;
  credentials: { access_key_id: string; access_key_secret: string; security_token: string };
}

/** An agent's client of the bucket, with its STS credentials: one per agent, as the app keeps one. */
function bucketClient(d: StsData): S3Client {
  return new S3Client({
    endpoint: d.endpoint,
    region: d.region,
    forcePathStyle: true,
    requestChecksumCalculation: 'WHEN_REQUIRED',
    responseChecksumValidation: 'WHEN_REQUIRED',
    credentials: {
      accessKeyId: d.credentials.access_key_id,
      secretAccessKey: d.credentials.access_key_secret,
      sessionToken: d.credentials.security_token,
    },
  });
}

/** The app's own PUT (signed with the SDK's signer, sent with undici): what an agent sends. */
const bucketDispatcher = new Agent({ connections: 256, keepAliveTimeout: 10_000 });
const signedPut = new SignedPut(bucketDispatcher, { headersMs: 30_000, bodyMs: 30_000 }, 256);

/** PUT to the bucket, as the app sends it; tried again until `deadline` (0: once). */
async function putObject(
  s3: S3Client,
  d: StsData,
  key: string,
  content: Buffer,
  errors: string[],
  deadline: number,
): Promise<boolean> {
  const target: BucketTarget = {
    provider: 'minio',
    bucket: d.bucket,
    endpoint: d.endpoint,
    region: d.region,
    objectKeyPrefix: d.object_key_prefix,
    credentials: {
      accessKeyId: d.credentials.access_key_id,
      secretAccessKey: d.credentials.access_key_secret,
      sessionToken: d.credentials.security_token,
      expiresAt: Date.now() + 3_600_000,
    },
  };
  const md5Base64 = createHash('md5').update(content).digest('base64');
  for (;;) {
    try {
      await signedPut.send(s3, target, {
        key,
        body: () => Promise.resolve(content),
        length: content.length,
        md5: md5Base64,
      });
      return true;
    } catch (err) {
      errors.push(`PUT: ${(err as Error).message}`);
      if (Date.now() > deadline) return false;
      await sleep(500);
    }
  }
}

async function tinyBatches(side: Side, token: string): Promise<{ times: number[]; errors: string[] }> {
  // Pre-loaded rows only: a fast-upload's copy shares its original's tiny fingerprint, and a
  // batch holding one twice would be answered with it once (counted as an error).
  const known = (
    await side.sql(
      "SELECT tiny_fingerprint FROM media WHERE workspace_id = ? AND result = 0 AND path = 'DJI_202401010800_001' LIMIT 500",
      [side.workspaceId],
    )
  ).map((r) => String(r.tiny_fingerprint));
  const times: number[] = [];
  const errors: string[] = [];
  for (let b = 0; b < TINY_BATCHES; b++) {
    const unknown = Array.from(
      { length: 1000 - known.length },
      () => `${randomBytes(16).toString('hex')}_2024_1_1_0_0_0`,
    );
    const t0 = performance.now();
    const r = await api(
      side.url,
      token,
      'POST',
      `/media/api/v1/workspaces/${side.workspaceId}/files/tiny-fingerprints`,
      {
        tiny_fingerprints: [...known, ...unknown],
      },
    );
    times.push(performance.now() - t0);
    const got = (r.json.data as { tiny_fingerprints?: string[] } | undefined)?.tiny_fingerprints ?? [];
    if (r.json.code !== 0 || got.length !== known.length)
      errors.push(`tiny: code ${r.json.code}, ${got.length} known`);
  }
  return { times, errors };
}

async function countTwice(side: Side): Promise<number> {
  const rows = await side.sql(
    "SELECT count(*) AS n FROM (SELECT name, path FROM media WHERE source = 'callback' AND name LIKE 'DJI_20240301090000_%' GROUP BY name, path HAVING count(*) > 1) t",
  );
  return Number(rows[0]!.n);
}

interface Result {
  label: string;
  /** One agent alone first: what each request costs without a queue in front of it. */
  solo: AgentsRun;
  /** The crowd at the field's pace (the target's run), and flat out; each with where the CPU went. */
  paced: Crowd;
  /** The same, with uplinks FASTER times as fast. */
  faster: { factor: number; crowd: Crowd }[];
  flat: Crowd;
  tiny: { times: number[]; errors: string[] };
  twice: number;
  preloadS: number;
  /** PostgreSQL side only: the same agents again, through a SIGKILL and a database restart. */
  faults?: FaultResult;
}

interface Crowd {
  run: AgentsRun;
  cpu: CpuUse;
  /** fast-upload's time inside `serve`, from its access log: the agents' time less the way there and back. */
  served: number[];
}

/** The time of each fast-upload in these access-log lines (pino JSON, 'request completed'). */
function servedTimes(text: string): number[] {
  const times: number[] = [];
  for (const line of text.split('\n')) {
    if (!line.includes('/fast-upload')) continue;
    try {
      const l = JSON.parse(line) as { msg?: string; responseTime?: number };
      if (l.msg === 'request completed' && typeof l.responseTime === 'number') times.push(l.responseTime);
    } catch {
      // not a JSON line
    }
  }
  return times;
}

async function measure(side: Side, preloadS: number, adminToken: string): Promise<Result> {
  const tokens = await agentTokens(side);
  await tinyBatches(side, adminToken); // warm-up, not counted
  const solo = await runAgents(side, tokens.slice(0, 1), { rounds: SOLO_ROUNDS, tag: 'solo-' });
  const crowd = async (opts: AgentsOptions): Promise<Crowd> => {
    const logged = side.logs().map((l) => l.length);
    const [run, cpu] = await cpuDuring(side.processes, () => runAgents(side, tokens, opts));
    const served = side.logs().flatMap((l, i) => servedTimes(l.slice(logged[i])));
    return { run, cpu, served };
  };
  const paced = await crowd({ rounds: PACED_ROUNDS, tag: 'paced-', uploadMs: UPLOAD_MS });
  const faster: Result['faster'] = [];
  for (const factor of FASTER) {
    const opts = { rounds: PACED_ROUNDS, tag: `paced${factor}x-`, uploadMs: UPLOAD_MS / factor };
    faster.push({ factor, crowd: await crowd(opts) });
  }
  const flat = await crowd({});
  const tiny = await tinyBatches(side, adminToken);
  return { label: side.label, solo, paced, faster, flat, tiny, twice: await countTwice(side), preloadS };
}

interface FaultResult {
  expected: number;
  run: AgentsRun;
  timeline: string[];
  /** Callbacks answered 0 when PostgreSQL was stopped, out of `expected`. */
  recordedAtStop: number;
  /** From PostgreSQL started again to the first callback answered 0 after it. */
  recoveredS: number;
  /** Counted in the database afterwards. */
  records: number;
  twice: number;
  missing: number;
  /** The unexpected answers the agents got (and tried again after), by what they said. */
  answers: Record<string, number>;
}

/**
 * Issue 24's faults under the same load: the agents run again, each step tried
 * until it is answered as expected (as a real agent does), while one instance
 * is killed with SIGKILL once a third of the callbacks are recorded and
 * PostgreSQL is stopped (2 s) and started again at two thirds. Then the
 * database is counted: one record per callback, none lost, none twice.
 */
async function faultPhase(
  side: Side,
  tokens: string[],
  faults: {
    /** True when no instance runs any more. */
    hopeless(): boolean;
    kill(): void;
    stopDb(): Promise<void>;
    startDb(): Promise<void>;
    /** What the surviving instance says when the agents did not all finish. */
    diagnose(): Promise<string>;
  },
): Promise<FaultResult> {
  const expected = tokens.length * ROUNDS;
  const timeline: string[] = [];
  const t0 = performance.now();
  const at = (what: string) => timeline.push(`${((performance.now() - t0) / 1000).toFixed(1)} s ${what}`);
  let stage: 'running' | 'killed' | 'restarting' | 'recovered' = 'running';
  let restart: Promise<void> = Promise.resolve();
  let recordedAtStop = 0;
  let startedAt = 0;
  let recoveredS = NaN;
  const onRecorded = (n: number) => {
    if (stage === 'running' && n >= expected / 3) {
      stage = 'killed';
      faults.kill();
      at(`SIGKILL of serve #2 after ${n} callbacks`);
    } else if (stage === 'killed' && n >= (2 * expected) / 3) {
      stage = 'restarting';
      recordedAtStop = n;
      restart = (async () => {
        at(`PostgreSQL stopping after ${n} callbacks`);
        await faults.stopDb();
        at('PostgreSQL stopped');
        await sleep(2_000);
        await faults.startDb();
        startedAt = performance.now();
        at('PostgreSQL started again');
      })();
    } else if (stage === 'restarting' && startedAt) {
      stage = 'recovered';
      recoveredS = (performance.now() - startedAt) / 1000;
      at(`first callback recorded after the restart (${n} so far)`);
    }
  };
  const when = () =>
    ({
      running: 'before the kill',
      killed: 'after the kill',
      restarting: 'database stopped or restarting',
      recovered: 'after the restart',
    })[stage];
  const run = await runAgents(side, tokens, {
    tag: 'fault-',
    persist: true,
    onRecorded,
    when,
    hopeless: () => faults.hopeless(),
  });
  await restart;
  at(`agents done: ${run.recorded} callbacks recorded`);
  if (run.recorded < expected) at(await faults.diagnose());
  const [counted] = await side.sql(
    "SELECT count(*) AS n, count(DISTINCT name) AS names FROM media WHERE workspace_id = ? AND source = 'callback' AND name LIKE 'DJI_20240301090000_fault-%'",
    [side.workspaceId],
  );
  const records = Number(counted!.n);
  const names = Number(counted!.names);
  const answers: Record<string, number> = {};
  for (const e of run.errors) {
    // "<stage>: <request>: <answer>", counted by stage and answer.
    const [stageSaid = '', , ...answer] = e.split(': ');
    const said = `${stageSaid}: ${answer.join(': ')}`.replace(/\s+/g, ' ').slice(0, 120);
    answers[said] = (answers[said] ?? 0) + 1;
  }
  return {
    expected,
    run,
    timeline,
    recordedAtStop,
    recoveredS,
    records,
    twice: records - names,
    missing: expected - names,
    answers,
  };
}

function faultReport(r: FaultResult): string {
  const envelope = Object.entries(r.answers)
    .sort((a, b) => b[1] - a[1])
    .map(([said, n]) => `${n} × ${said}`);
  return [
    `Faults (${r.run.recorded} of ${r.expected} callbacks answered, ${(r.run.ms / 1000).toFixed(1)} s):`,
    ...r.timeline.map((l) => `  ${l}`),
    `  mid-run: PostgreSQL stopped with ${r.recordedAtStop} of ${r.expected} callbacks recorded`,
    `  recovered by itself: first callback recorded ${r.recoveredS.toFixed(1)} s after PostgreSQL started`,
    `  counted in the database: ${r.records} callback records, ${r.missing} missing, ${r.twice} twice`,
    `  answers tried again (${r.run.errors.length}): ${envelope.join('; ') || 'none'}`,
  ].join('\n');
}

async function postgresSide(dir: string, rgw: Rgw): Promise<{ result: Result; stop(): Promise<void> }> {
  // Its cache sized for the workspace, as docs/deploy.md says (the default 128MB holds a fifth of it).
  const pg: PgCluster = await startPostgres({ durable: true, sharedBuffers: SHARED_BUFFERS });
  const db = await pg.createDatabase('scale');
  const database: DatabaseConfig = pg.config(db);
  const [p1, p2] = await freePorts(2);
  const instances: Instance[] = [];
  instances.push(
    await startInstance({
      name: 'pg1',
      dir,
      port: p1!,
      database,
      bucket: rgwBucketConfig(rgw),
      env: SERVE_ENV,
    }),
  );
  const ws = instances[0]!.workspaceId;
  const t0 = performance.now();
  await pg.query(
    `INSERT INTO media (workspace_id, fingerprint, name, path, object_key, result, source, created_at, tiny_fingerprint)
     SELECT $1, md5(i::text), 'DJI_' || i || '.JPG', 'DJI_202401010800_001', $1 || '/preload/' || i, 0, 'callback', 0,
            md5(i::text) || '_2024_1_1_8_0_0'
       FROM generate_series(1, $2::int) i`,
    [ws, PRELOAD],
    db,
  );
  await pg.query('VACUUM ANALYZE media', [], db);
  // The pre-load's WAL written out now, not by a checkpoint in the middle of the measured run:
  // a workspace does not get a million rows a second before its agents arrive.
  await pg.query('CHECKPOINT', [], db);
  const [size] = await pg.query<{ mb: string }>(
    "SELECT pg_total_relation_size('media') / 1048576 AS mb",
    [],
    db,
  );
  console.log(
    `PostgreSQL: the media table and its indexes take ${size!.mb} MB; shared_buffers ${SHARED_BUFFERS}`,
  );
  const preloadS = (performance.now() - t0) / 1000;
  instances.push(
    await startInstance({
      name: 'pg2',
      dir,
      port: p2!,
      database,
      bucket: rgwBucketConfig(rgw),
      env: SERVE_ENV,
    }),
  );
  const lb = await startHaproxy(dir, [p1!, p2!]);
  const side: Side = {
    label: 'PostgreSQL, 2 instances + HAProxy',
    url: lb.url,
    workspaceId: ws,
    processes: {
      'serve #1': [instances[0]!.child.pid!],
      'serve #2': [instances[1]!.child.pid!],
      HAProxy: [lb.pid],
      PostgreSQL: [pg.serverPid()],
      'Ceph (RGW, mon, osd)': rgw.pids(),
    },
    logs: () => instances.map((i) => i.log()),
    sql: async (sql, params = []) => {
      let n = 0;
      return pg.query(
        sql.replace(/\?/g, () => `$${++n}`),
        params,
        db,
      );
    },
  };
  const result = await measure(side, preloadS, instances[0]!.token);
  if (process.env.DMS_SCALE_FAULTS !== '0')
    result.faults = await faultPhase(side, await agentTokens(side), {
      hopeless: () => instances.every((i) => i.child.exitCode !== null || i.child.signalCode !== null),
      kill: () => instances[1]!.child.kill('SIGKILL'),
      stopDb: () => pg.stopServer(),
      startDb: () => pg.startServer(),
      diagnose: async () => {
        const ready = await fetch(`${instances[0]!.baseUrl}/readyz`)
          .then(async (r) => `HTTP ${r.status} ${await r.text()}`)
          .catch((err: Error) => err.message);
        const log = instances[0]!.log().trim().split('\n').slice(-60).join('\n    ');
        return `serve #1 /readyz: ${ready}; its last log lines:\n    ${log}`;
      },
    });
  return {
    result,
    async stop() {
      await lb.stop();
      for (const i of instances) await stopInstance(i);
      await pg.stop();
    },
  };
}

async function sqliteSide(dir: string, rgw: Rgw): Promise<{ result: Result; stop(): Promise<void> }> {
  const [port] = await freePorts(1);
  const instance = await startInstance({
    name: 'sqlite',
    env: SERVE_ENV,
    dir,
    port: port!,
    database: { kind: 'sqlite' },
    bucket: rgwBucketConfig(rgw),
  });
  const file = path.join(dir, 'data-sqlite', 'service.db');
  const db = new Database(file);
  db.pragma('busy_timeout = 10000');
  const t0 = performance.now();
  // The same rows as on PostgreSQL (SQLite has no md5(): random hex instead), in one transaction beside the running service.
  db.prepare(
    `INSERT INTO media (workspace_id, fingerprint, name, path, object_key, result, source, created_at, tiny_fingerprint)
     WITH RECURSIVE g(i, f) AS (SELECT 1, lower(hex(randomblob(16))) UNION ALL
                                SELECT i + 1, lower(hex(randomblob(16))) FROM g WHERE i < ?)
     SELECT ?, f, 'DJI_' || i || '.JPG', 'DJI_202401010800_001', ? || '/preload/' || i, 0, 'callback', 0,
            f || '_2024_1_1_8_0_0' FROM g`,
  ).run(PRELOAD, instance.workspaceId, instance.workspaceId);
  db.exec('ANALYZE');
  db.pragma('wal_checkpoint(TRUNCATE)'); // as CHECKPOINT on the PostgreSQL side
  const preloadS = (performance.now() - t0) / 1000;
  const side: Side = {
    label: 'SQLite, 1 instance',
    url: instance.baseUrl,
    workspaceId: instance.workspaceId,
    processes: { 'serve #1': [instance.child.pid!], 'Ceph (RGW, mon, osd)': rgw.pids() },
    logs: () => [instance.log()],
    sql: (sql, params = []) => {
      const stmt = db.prepare(sql);
      return Promise.resolve(
        stmt.reader ? (stmt.all(...params) as Record<string, unknown>[]) : (stmt.run(...params), []),
      );
    },
  };
  const result = await measure(side, preloadS, instance.token);
  return {
    result,
    async stop() {
      db.close();
      await stopInstance(instance);
    },
  };
}

function table(results: Result[]): string {
  const f = (n: number) => (Number.isNaN(n) ? '–' : n < 10 ? n.toFixed(1) : n.toFixed(0));
  const row = (name: string, cell: (r: Result) => string) => `| ${name} | ${results.map(cell).join(' | ')} |`;
  const requests = (run: AgentsRun) => Object.values(run.timings).reduce((n, xs) => n + xs.length, 0);
  // 'fast-upload': both kinds together.
  const timed = (run: AgentsRun, k: string) =>
    Object.entries(run.timings).flatMap(([kind, xs]) => (kind === k || kind.startsWith(`${k} `) ? xs : []));
  const groups = [...new Set(results.flatMap((r) => Object.keys(r.flat.cpu.groups)))];
  /** One crowd's rows: latencies, requests per second, and who used the CPU (in cores) meanwhile. */
  const section = (title: string, crowdOf: (r: Result) => Crowd, alone: boolean) => {
    const lat = (k: string) => (r: Result) => {
      const xs = timed(crowdOf(r).run, k);
      const solo = timed(r.solo, k);
      return `${f(pct(xs, 50))} / ${f(pct(xs, 99))}${alone ? ` (alone ${f(pct(solo, 50))} / ${f(pct(solo, 99))})` : ''}`;
    };
    const core = (seconds: number, r: Result) => (seconds / (crowdOf(r).run.ms / 1000)).toFixed(2);
    // The machine's busy time less the processes' own: 0 when they account for all of it (the two
    // are read a few ms apart, so the difference can come out a hair below 0).
    const others = (c: Crowd) =>
      Math.max(
        0,
        c.cpu.machine - c.cpu.stolen - c.cpu.agents - Object.values(c.cpu.groups).reduce((a, b) => a + b, 0),
      );
    return [
      `| **${title}** | ${results.map(() => '').join(' | ')} |`,
      row('fast-upload p50 / p99 ms (target p99 < 50)', lat('fast-upload')),
      row('… of a new file (a look-up)', lat('fast-upload new')),
      row('… of a known one (look-up, HEAD on the bucket, a record written)', lat('fast-upload known')),
      row('… inside `serve` (its access log: without the way there and back)', (r) => {
        const xs = crowdOf(r).served;
        return `${f(pct(xs, 50))} / ${f(pct(xs, 99))}`;
      }),
      row('upload-callback p50 / p99 ms', lat('callback')),
      row('waylines page p50 / p99 ms', lat('waylines')),
      row('sts (once per agent) p50 / p99 ms', lat('sts')),
      row('requests per second', (r) => (requests(crowdOf(r).run) / (crowdOf(r).run.ms / 1000)).toFixed(0)),
      row('wall time s', (r) => (crowdOf(r).run.ms / 1000).toFixed(1)),
      row(`CPU, cores used of ${cores()}: all processes`, (r) => core(crowdOf(r).cpu.machine, r)),
      row('… the simulated agents (this process)', (r) => core(crowdOf(r).cpu.agents, r)),
      ...groups.map((g) =>
        row(`… ${g}`, (r) => {
          const used = crowdOf(r).cpu.groups[g];
          return used === undefined ? '–' : core(used, r);
        }),
      ),
      row('… everything else on the machine', (r) => core(others(crowdOf(r)), r)),
      row('… taken by the host of this virtual machine (steal)', (r) => core(crowdOf(r).cpu.stolen, r)),
    ];
  };
  const all = (r: Result) => [r.solo, r.paced.run, ...r.faster.map((x) => x.crowd.run), r.flat.run];
  // One line per faster pace: fast-upload p50 / p99, requests per second, cores used.
  const fasterRows = FASTER.map((factor) =>
    row(
      `… uplinks ${factor}× as fast (${UPLINK_MBIT * factor} Mbit/s, a round every ${(UPLOAD_MS / factor / 1000).toFixed(1)} s): fast-upload p50 / p99 ms, requests/s, cores used`,
      (r) => {
        const c = r.faster.find((x) => x.factor === factor)!.crowd;
        const xs = timed(c.run, 'fast-upload');
        const secs = c.run.ms / 1000;
        return `${f(pct(xs, 50))} / ${f(pct(xs, 99))}, ${(requests(c.run) / secs).toFixed(0)}/s, ${(c.cpu.machine / secs).toFixed(2)}`;
      },
    ),
  );
  return [
    `| ${AGENTS} agents, ${PRELOAD.toLocaleString('en')} rows | ${results.map((r) => r.label).join(' | ')} |`,
    `| --- | ${results.map(() => '---').join(' | ')} |`,
    ...section(
      `At the field's pace: ${PACED_ROUNDS} rounds, each a ${FILE_MB} MB photo over ${UPLINK_MBIT} Mbit/s (${(UPLOAD_MS / 1000).toFixed(1)} s)`,
      (r) => r.paced,
      true,
    ),
    ...fasterRows,
    ...section(
      `Flat out: ${ROUNDS} rounds, each request sent when the last is answered`,
      (r) => r.flat,
      false,
    ),
    row(
      `1,000 tiny fingerprints p50 / max ms (${TINY_BATCHES} batches; target < 100)`,
      (r) => `${f(pct(r.tiny.times, 50))} / ${f(Math.max(...r.tiny.times))}`,
    ),
    row('requests answered', (r) =>
      String(all(r).reduce((n, run) => n + requests(run), 0) + r.tiny.times.length),
    ),
    row('errors', (r) => String(all(r).reduce((n, run) => n + run.errors.length, 0) + r.tiny.errors.length)),
    row('callbacks recorded twice', (r) => String(r.twice)),
    row('pre-load of the rows s', (r) => r.preloadS.toFixed(0)),
  ].join('\n');
}

it('scale: PostgreSQL behind HAProxy beside SQLite, same workload', async () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'dms-scale-'));
  const rgw = await startRgw();
  const results: Result[] = [];
  try {
    for (const side of process.env.DMS_SCALE_SIDES === 'postgres'
      ? [postgresSide]
      : [postgresSide, sqliteSide]) {
      const s = await side(dir, rgw);
      results.push(s.result);
      await s.stop();
    }
  } finally {
    await rgw.stop();
    await Promise.all([dispatcher, bucketDispatcher, ...agentDispatchers.values()].map((d) => d.close()));
    fs.rmSync(dir, { recursive: true, force: true });
  }
  const load = os
    .loadavg()
    .map((n) => n.toFixed(2))
    .join(' / ');
  console.log(
    `\n${os.cpus().length} cores (${os.cpus()[0]?.model ?? '?'}), Node ${process.version}, load average at end ${load}\n\n${table(results)}\n`,
  );
  for (const r of results) {
    const runs = [r.solo, r.paced.run, ...r.faster.map((x) => x.crowd.run), r.flat.run];
    const errs = [...runs.flatMap((run) => run.errors), ...r.tiny.errors];
    if (errs.length) console.log(`${r.label}: first errors:\n  ${errs.slice(0, 10).join('\n  ')}`);
    if (r.faults) console.log(`\n${r.label}, ${faultReport(r.faults)}\n`);
  }
});
