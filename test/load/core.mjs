// Load test of the reference service (issue 7): autocannon at 50 connections
// against the waylines list and fast-upload endpoints (and a bad-token run),
// the service started from dist/ as a separate process on loopback, as the
// benchmark does. Shared by the CLI (load.mjs) and the vitest test
// (load.slow.test.ts); types in core.d.mts. See README.md.
import { execFile, spawn } from 'node:child_process';
import { createHash, randomBytes } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { clearTimeout, setTimeout } from 'node:timers';
import { setTimeout as sleep } from 'node:timers/promises';
import { performance } from 'node:perf_hooks';
import { promisify } from 'node:util';
import autocannon from 'autocannon';
import { cpuSeconds, peakRssMiB } from '../bench/lib/proc.mjs';
import { table } from '../bench/lib/report.mjs';

const HERE = path.dirname(fileURLToPath(import.meta.url));
export const REPO = path.resolve(HERE, '..', '..');
export const BIN = path.join(REPO, 'dist', 'main', 'cli', 'bin.js');
const DIST = (rel) => pathToFileURL(path.join(REPO, 'dist', 'main', rel)).href;

export const DEFAULTS = Object.freeze({
  duration: 10,
  connections: 50,
  warmup: 1,
  waylines: 1000,
  known: 20,
  logLevel: 'warn',
  scenarios: ['waylines', 'fast-upload', 'bad-token'],
});

const quietLog = () => undefined;

// ---------------------------------------------------------------- service

/** Reads the service's numeric codes from the build, so the checks follow the service. */
async function serviceCodes() {
  const { CODES } = await import(DIST('service/envelope.js'));
  return CODES;
}

/**
 * Starts `drone-media-sync serve` (dist/) on 127.0.0.1, port 0, on `dataDir`,
 * and reads its one JSON line: base URL, default workspace, dev token.
 */
export async function startServiceProcess({ dataDir, logFile, logLevel = DEFAULTS.logLevel, nodeArgs = [] }) {
  if (!fs.existsSync(BIN)) throw new Error(`${BIN} is missing: run "npm run build" first.`);
  fs.mkdirSync(dataDir, { recursive: true });
  const errFd = fs.openSync(logFile, 'a');
  const child = spawn(
    process.execPath,
    [...nodeArgs, BIN, 'serve', '--host', '127.0.0.1', '--port', '0', '--data', dataDir],
    {
      env: { ...process.env, DMS_LOG_LEVEL: logLevel },
      stdio: ['ignore', 'pipe', errFd],
    },
  );
  fs.closeSync(errFd);
  const exited = new Promise((resolve) => child.once('exit', (code, signal) => resolve({ code, signal })));
  const line = await new Promise((resolve, reject) => {
    let buf = '';
    const timer = setTimeout(
      () => reject(new Error(`the service did not start within 30 s; see ${logFile}`)),
      30_000,
    );
    child.stdout.setEncoding('utf8');
    child.stdout.on('data', (d) => {
      buf += d;
      const nl = buf.indexOf('\n');
      if (nl >= 0) {
        clearTimeout(timer);
        resolve(buf.slice(0, nl));
      }
    });
    void exited.then(({ code, signal }) => {
      clearTimeout(timer);
      reject(new Error(`the service exited (${code ?? signal}) before it was ready; see ${logFile}`));
    });
  });
  const info = JSON.parse(line);
  return {
    child,
    pid: child.pid,
    baseUrl: info.base_url,
    workspaceId: info.workspace_id,
    token: info.token,
    logFile,
    alive: () => child.exitCode === null && child.signalCode === null,
    async stop() {
      if (child.exitCode !== null || child.signalCode !== null) return;
      child.kill('SIGTERM');
      const killer = setTimeout(() => child.kill('SIGKILL'), 5000);
      await exited;
      clearTimeout(killer);
    },
  };
}

export const paths = (ws) => ({
  waylines: `/wayline/api/v1/workspaces/${ws}/waylines`,
  sts: `/storage/api/v1/workspaces/${ws}/sts`,
  callback: `/media/api/v1/workspaces/${ws}/upload-callback`,
  fastUpload: `/media/api/v1/workspaces/${ws}/fast-upload`,
});

/** One JSON request; `token: null` sends none. Resolves { status, body } (body null when not JSON). */
export async function call(svc, method, urlPath, { body, token } = {}) {
  const headers = {};
  const t = token === undefined ? svc.token : token;
  if (t !== null) headers['x-auth-token'] = t;
  if (body !== undefined) headers['content-type'] = 'application/json';
  const res = await globalThis.fetch(`${svc.baseUrl}${urlPath}`, {
    method,
    headers,
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await res.text();
  let parsed = null;
  try {
    parsed = JSON.parse(text);
  } catch {
    // kept as null: the caller reports it
  }
  return { status: res.status, body: parsed };
}

// ---------------------------------------------------------------- seeding

const SITES = ['Substation', 'Bridge', 'Solar farm', 'Tower line', 'Quarry', 'Pipeline', 'Rooftop', 'Dam'];
const TEMPLATES = [[0], [1], [2], [3], [0, 2], [1, 2]];
const USERS = ['pilot', 'alice', 'bob', 'chen'];
const BASE_TIME = Date.UTC(2024, 2, 1, 8, 0, 0);

/**
 * `n` deterministic waylines (contract 2.2 items) for `import-waylines`, with
 * the aircraft/payload pairs of the service's own demo library (`combos`:
 * MODEL_COMBOS of dist/main/service/seed.js).
 */
export function loadWaylines(n, combos) {
  return Array.from({ length: n }, (_, i) => {
    const [drone, payloads] = combos[i % combos.length];
    const update = BASE_TIME + ((i * 7919) % n) * 60_000;
    return {
      id: `load-${String(i).padStart(5, '0')}`,
      name: `${SITES[i % SITES.length]} ${Math.floor(i / SITES.length) + 1}`,
      drone_model_key: drone,
      payload_model_keys: payloads,
      template_types: TEMPLATES[i % TEMPLATES.length],
      favorited: i % 4 === 0,
      action_type: i % 10 === 0 ? 1 : 0,
      user_name: USERS[i % USERS.length],
      create_time: update - (i % 5) * 86_400_000,
      update_time: update,
      start_wayline_point: {
        start_latitude: Math.round((22.5 + (i % 100) * 0.001) * 1e6) / 1e6,
        start_lontitude: Math.round((113.9 + (i % 97) * 0.001) * 1e6) / 1e6,
      },
    };
  });
}

const execFileP = promisify(execFile);

/** Imports waylines with the CLI (`import-waylines`), as an operator would. */
async function importWaylines(dataDir, items, tmp) {
  const file = path.join(tmp, 'waylines.json');
  fs.writeFileSync(file, JSON.stringify(items));
  await execFileP(process.execPath, [BIN, 'import-waylines', file, '--data', dataDir], {
    env: { ...process.env, DMS_LOG_LEVEL: 'warn' },
  });
}

const md5 = (s) => createHash('md5').update(s).digest('hex');
const FLIGHT = 'DJI_202403010800_001_LoadTest';
const EXT = {
  drone_model_key: '0-67-1',
  is_original: true,
  payload_model_key: '1-53-0',
  sn: '1581F5BKD223P00A0001',
};

/**
 * `known` small objects uploaded the normal way (sts, PUT to the embedded
 * bucket, upload-callback with the fingerprint), so fast-upload finds them;
 * and as many fingerprints nobody uploaded, for the misses.
 */
async function seedMedia(svc, known) {
  const { S3Client, PutObjectCommand } = await import('@aws-sdk/client-s3');
  const p = paths(svc.workspaceId);
  const sts = await call(svc, 'POST', p.sts);
  if (sts.status !== 200 || sts.body?.code !== 0) throw new Error(`sts failed: ${JSON.stringify(sts.body)}`);
  const s = sts.body.data;
  const s3 = new S3Client({
    endpoint: s.endpoint,
    region: s.region,
    forcePathStyle: true,
    requestChecksumCalculation: 'WHEN_REQUIRED',
    responseChecksumValidation: 'WHEN_REQUIRED',
    credentials: {
      accessKeyId: s.credentials.access_key_id,
      secretAccessKey: s.credentials.access_key_secret,
      sessionToken: s.credentials.security_token,
    },
  });
  const media = [];
  try {
    for (let i = 0; i < known; i++) {
      const second = 10 + i;
      const name = `DJI_202403010812${String(second % 60).padStart(2, '0')}_${String(i + 1).padStart(4, '0')}_W.JPG`;
      const content = `load test photo ${i}\n`.repeat(64);
      const fingerprint = md5(content);
      const objectKey = `${s.object_key_prefix}/${FLIGHT}/${name}`;
      await s3.send(new PutObjectCommand({ Bucket: s.bucket, Key: objectKey, Body: content }));
      const cb = await call(svc, 'POST', p.callback, {
        body: {
          result: 0,
          name,
          object_key: objectKey,
          fingerprint,
          path: FLIGHT,
          sub_file_type: 0,
          metadata: {
            absolute_altitude: 112.5,
            relative_altitude: 80,
            gimbal_yaw_degree: -12.4,
            created_time: `2024-03-01T08:12:${String(second % 60).padStart(2, '0')}+08:00`,
            shoot_position: { lat: 22.543 + i * 1e-4, lng: 113.958 + i * 1e-4 },
          },
          ext: {
            ...EXT,
            file_group_id: 'load-mission-1',
            tinny_fingerprint: `${fingerprint}_2024_3_1_8_12_${second % 60}`,
          },
        },
      });
      if (cb.status !== 200 || cb.body?.code !== 0) {
        throw new Error(`upload-callback for ${name} failed: HTTP ${cb.status} ${JSON.stringify(cb.body)}`);
      }
      media.push({ fingerprint, name, path: FLIGHT, objectKey });
    }
  } finally {
    s3.destroy();
  }
  const unknown = Array.from({ length: known }, (_, i) => ({
    fingerprint: md5(`never uploaded ${i} ${randomBytes(8).toString('hex')}`),
    name: `DJI_20240301090000_${String(i + 1).padStart(4, '0')}_W.JPG`,
    path: 'DJI_202403010900_002_LoadTest',
  }));
  return { known: media, unknown };
}

// ---------------------------------------------------------------- scenarios

/** What the agent sends (its own query builder, from dist/): paging, filters, order_by. */
export const WAYLINE_QUERIES = Object.freeze([
  { page: 1, page_size: 10 },
  { page: 3, page_size: 20, order_by: 'name asc', favorited: true },
  { page: 1, page_size: 50, order_by: 'create_time desc', template_type: [1, 2] },
  {
    page: 2,
    page_size: 10,
    order_by: 'update_time asc',
    drone_model_keys: ['0-67-1', '0-89-0'],
    payload_model_key: ['1-53-0', '1-43-0'],
  },
  { page: 1, page_size: 100, order_by: 'name desc', action_type: 1 },
  { page: 500, page_size: 10 },
]);

/** Counters of a run's answer checks; `fail` counts a wrong answer and keeps a few examples. */
function checker(kind) {
  const state = { checked: 0, fullyChecked: 0, wrong: 0, examples: [], samples: {}, hits: 0, misses: 0 };
  const fail = (reason, status, body) => {
    state.wrong++;
    if (state.examples.length < 5)
      state.examples.push({ kind, reason, status, body: String(body).slice(0, 300) });
  };
  return { state, fail };
}

function parse(body) {
  try {
    return JSON.parse(body);
  } catch {
    return undefined;
  }
}

/** Checks a waylines page against its query: envelope, paging echo, page length. */
export function waylinePageProblem(query, body) {
  if (!body || typeof body !== 'object') return 'not JSON';
  if (body.code !== 0) return `code ${JSON.stringify(body.code)}: ${body.message}`;
  const d = body.data;
  if (!d || !Array.isArray(d.list) || !d.pagination) return 'no data.list / data.pagination';
  const page = query.page ?? 1;
  const size = query.page_size ?? 10;
  if (d.pagination.page !== page || d.pagination.page_size !== size)
    return 'pagination does not echo the query';
  if (!Number.isInteger(d.pagination.total)) return 'pagination.total is not an integer';
  const expected = Math.max(0, Math.min(size, d.pagination.total - (page - 1) * size));
  if (d.list.length !== expected) return `list has ${d.list.length} items, expected ${expected}`;
  return null;
}

const FULL_CHECK_EVERY = 64;

function waylinesScenario(svc, q) {
  const { state, fail } = checker('waylines');
  const base = paths(svc.workspaceId).waylines;
  const requests = WAYLINE_QUERIES.map((query, i) => {
    const qs = q.buildQuery(query);
    let seen = 0;
    return {
      method: 'GET',
      path: `${base}?${qs}`,
      headers: { 'x-auth-token': svc.token },
      onResponse(status, body) {
        state.checked++;
        seen++;
        if (status !== 200) return fail(`HTTP ${status}`, status, body);
        // Every answer: the envelope's code (the service writes `code` first).
        // A sample (the first of each query, then every 64th): the whole page.
        const full = seen === 1 || seen % FULL_CHECK_EVERY === 0;
        if (!full && body.startsWith('{"code":0,')) return undefined;
        const parsed = parse(body);
        state.fullyChecked++;
        const problem = waylinePageProblem(query, parsed);
        if (problem) return fail(problem, status, body);
        if (state.samples[i] === undefined) state.samples[i] = { query, qs, status, body: parsed };
        return undefined;
      },
    };
  });
  return {
    name: 'waylines',
    endpoint: `GET ${base.replace(svc.workspaceId, '{ws}')}`,
    requests,
    state,
    expectStatus: 200,
  };
}

function fastUploadScenario(svc, seeds, codes) {
  const { state, fail } = checker('fast-upload');
  const url = paths(svc.workspaceId).fastUpload;
  const requests = [];
  const n = Math.max(seeds.known.length, seeds.unknown.length);
  for (let i = 0; i < n; i++) {
    for (const [isKnown, m] of [
      [true, seeds.known[i]],
      [false, seeds.unknown[i]],
    ]) {
      if (!m) continue;
      // A third of the known ones in upper case: the service compares case-insensitively.
      const fingerprint = isKnown && i % 3 === 2 ? m.fingerprint.toUpperCase() : m.fingerprint;
      const body = {
        fingerprint,
        name: m.name,
        path: m.path,
        ext: { ...EXT, tinny_fingerprint: `${m.fingerprint}_2024_3_1_8_12_0` },
      };
      requests.push({
        method: 'POST',
        path: url,
        headers: { 'x-auth-token': svc.token, 'content-type': 'application/json' },
        body: JSON.stringify(body),
        onResponse(status, text) {
          state.checked++;
          state.fullyChecked++;
          if (status !== 200) return fail(`HTTP ${status}`, status, text);
          const parsed = parse(text);
          if (!parsed) return fail('not JSON', status, text);
          if (isKnown) {
            state.hits += parsed.code === 0 ? 1 : 0;
            if (parsed.code !== 0)
              return fail(`known fingerprint answered code ${parsed.code}`, status, text);
            state.samples.known ??= { request: body, status, body: parsed };
          } else {
            state.misses += parsed.code === codes.FINGERPRINT_UNKNOWN ? 1 : 0;
            if (parsed.code !== codes.FINGERPRINT_UNKNOWN) {
              return fail(`unknown fingerprint answered code ${parsed.code}`, status, text);
            }
            state.samples.unknown ??= { request: body, status, body: parsed };
          }
          return undefined;
        },
      });
    }
  }
  return {
    name: 'fast-upload',
    endpoint: `POST ${url.replace(svc.workspaceId, '{ws}')}`,
    requests,
    state,
    expectStatus: 200,
  };
}

function badTokenScenario(svc, seeds, codes, q) {
  const { state, fail } = checker('bad-token');
  const p = paths(svc.workspaceId);
  const bad = randomBytes(32).toString('base64url'); // shaped like a real token, unknown to the service
  const onResponse = (what) => (status, text) => {
    state.checked++;
    state.fullyChecked++;
    if (status !== 401) return fail(`HTTP ${status}, expected 401`, status, text);
    const parsed = parse(text);
    if (!parsed || parsed.code !== codes.TOKEN_INVALID)
      return fail(`code ${parsed?.code}, expected ${codes.TOKEN_INVALID}`, status, text);
    state.samples[what] ??= { status, body: parsed };
    return undefined;
  };
  const fp = seeds.known[0] ?? seeds.unknown[0];
  const requests = [
    {
      method: 'GET',
      path: `${p.waylines}?${q.buildQuery(WAYLINE_QUERIES[0])}`,
      headers: { 'x-auth-token': bad },
      onResponse: onResponse('waylines'),
    },
    {
      method: 'POST',
      path: p.fastUpload,
      headers: { 'x-auth-token': bad, 'content-type': 'application/json' },
      body: JSON.stringify({ fingerprint: fp.fingerprint, name: fp.name, path: fp.path, ext: EXT }),
      onResponse: onResponse('fast-upload'),
    },
  ];
  return {
    name: 'bad-token',
    endpoint: 'GET waylines + POST fast-upload, unknown token',
    requests,
    state,
    expectStatus: 401,
  };
}

// ---------------------------------------------------------------- running

function cannon(opts) {
  return new Promise((resolve, reject) => {
    autocannon(opts, (err, result) => (err ? reject(err) : resolve(result)));
  });
}

/** Resets the service's VmHWM (Linux: 5 > clear_refs) so the next peak is this run's. */
function resetPeakRss(pid) {
  try {
    fs.writeFileSync(`/proc/${pid}/clear_refs`, '5');
    return true;
  } catch {
    return false;
  }
}

const round = (x, d = 2) =>
  typeof x === 'number' && Number.isFinite(x) ? Math.round(x * 10 ** d) / 10 ** d : null;

async function runScenario(svc, makeScenario, { duration, connections, warmup }) {
  const base = { url: svc.baseUrl, connections, pipelining: 1, timeout: 10 };
  if (warmup > 0) {
    // The same requests with their own counters: the JIT and SQLite's page cache warm up; figures discarded.
    await cannon({ ...base, duration: warmup, requests: makeScenario().requests });
  }
  const sc = makeScenario();
  const perRun = resetPeakRss(svc.pid);
  const svcCpu0 = cpuSeconds(svc.pid);
  const loader0 = process.cpuUsage();
  const t0 = performance.now();
  const r = await cannon({ ...base, duration, requests: sc.requests });
  const wallS = (performance.now() - t0) / 1000;
  const loader = process.cpuUsage(loader0);
  const svcCpu1 = cpuSeconds(svc.pid);
  const svcCpuS = svcCpu0 !== null && svcCpu1 !== null ? svcCpu1 - svcCpu0 : null;
  const statusCodes = Object.fromEntries(Object.entries(r.statusCodeStats).map(([k, v]) => [k, v.count]));
  const answered = Object.values(statusCodes).reduce((a, b) => a + b, 0);
  const unexpectedStatus = Object.entries(statusCodes)
    .filter(([code]) => Number(code) !== sc.expectStatus)
    .reduce((a, [, n]) => a + n, 0);
  return {
    name: sc.name,
    endpoint: sc.endpoint,
    connections,
    durationS: r.duration,
    requestsPerSec: round(r.requests.average, 1),
    latencyMs: {
      mean: round(r.latency.mean),
      p50: round(r.latency.p50),
      p90: round(r.latency.p90),
      p99: round(r.latency.p99),
      max: round(r.latency.max),
    },
    requests: r.requests.total,
    answered,
    errors: r.errors,
    timeouts: r.timeouts,
    non2xx: r.non2xx,
    status5xx: r['5xx'],
    statusCodes,
    expectStatus: sc.expectStatus,
    unexpectedStatus,
    envelope: {
      checked: sc.state.checked,
      fullyChecked: sc.state.fullyChecked,
      wrong: sc.state.wrong,
      examples: sc.state.examples,
      ...(sc.name === 'fast-upload' ? { hits: sc.state.hits, misses: sc.state.misses } : {}),
    },
    samples: sc.state.samples,
    service: {
      cpuS: round(svcCpuS),
      cores: round(svcCpuS === null ? null : svcCpuS / wallS),
      peakRssMiB: round(peakRssMiB(svc.pid), 1),
      peakRssScope: perRun ? 'run' : 'process lifetime',
    },
    loaderCpuS: round((loader.user + loader.system) / 1e6),
  };
}

/** Why a run fails the load test (empty = it held). */
export function runProblems(run) {
  const p = [];
  if (run.answered === 0) p.push('no answers at all');
  if (run.errors > 0) p.push(`${run.errors} errors (connection errors or timeouts)`);
  if (run.timeouts > 0) p.push(`${run.timeouts} timeouts`);
  if (run.status5xx > 0) p.push(`${run.status5xx} answers with HTTP 5xx`);
  if (run.unexpectedStatus > 0) {
    p.push(
      `${run.unexpectedStatus} answers with a status other than ${run.expectStatus} (${JSON.stringify(run.statusCodes)})`,
    );
  }
  if (run.envelope.wrong > 0) {
    p.push(`${run.envelope.wrong} wrong answers, e.g. ${run.envelope.examples[0]?.reason ?? '?'}`);
  }
  if (run.envelope.checked !== run.answered) {
    p.push(`checked ${run.envelope.checked} answers of ${run.answered}`);
  }
  return p;
}

/** Error and fatal lines of the service log (pino JSON, level >= 50), at most `max`. */
function serviceLogErrors(logFile, max = 5) {
  let text;
  try {
    text = fs.readFileSync(logFile, 'utf8');
  } catch {
    return { count: 0, examples: [] };
  }
  const lines = text.split('\n').filter((l) => {
    if (!l.trim()) return false;
    // The line `serve` writes for a person at every start (where to sign in) is not an error.
    if (l.startsWith('Serving http')) return false;
    try {
      return JSON.parse(l).level >= 50;
    } catch {
      return true; // not pino: a crash trace
    }
  });
  return { count: lines.length, examples: lines.slice(0, max).map((l) => l.slice(0, 400)) };
}

function logTail(logFile, lines = 20) {
  try {
    return fs
      .readFileSync(logFile, 'utf8')
      .trimEnd()
      .split('\n')
      .slice(-lines)
      .map((l) => l.slice(0, 400));
  } catch {
    return [];
  }
}

/**
 * A started and seeded service, ready to be loaded. `run()` can be called more
 * than once; `close()` stops the service and removes the temp dir (unless keep).
 */
export async function openSession(options = {}) {
  const o = { ...DEFAULTS, ...options };
  const log = o.log ?? quietLog;
  const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'dms-load-'));
  const dataDir = path.join(tmp, 'service');
  const logFile = path.join(tmp, 'service.log');
  let svc = null;
  const close = async () => {
    await svc?.stop();
    if (!o.keep) fs.rmSync(tmp, { recursive: true, force: true });
  };
  try {
    if (!fs.existsSync(BIN)) throw new Error(`${BIN} is missing: run "npm run build" first.`);
    const [{ buildWaylineQuery }, codes] = await Promise.all([
      import(DIST('core/api/query.js')),
      serviceCodes(),
    ]);
    log(`importing ${o.waylines} waylines into ${dataDir}`);
    if (o.waylines > 0) {
      const { MODEL_COMBOS } = await import(DIST('service/seed.js'));
      await importWaylines(dataDir, loadWaylines(o.waylines, MODEL_COMBOS), tmp);
    }
    svc = await startServiceProcess({
      dataDir,
      logFile,
      logLevel: o.logLevel,
      nodeArgs: o.serviceNodeArgs ?? [],
    });
    log(
      `service pid ${svc.pid} at ${svc.baseUrl} (log level ${o.logLevel}); seeding ${o.known} media records`,
    );
    const seeds = await seedMedia(svc, o.known);
    const q = { buildQuery: buildWaylineQuery };
    const build = {
      waylines: () => waylinesScenario(svc, q),
      'fast-upload': () => fastUploadScenario(svc, seeds, codes),
      'bad-token': () => badTokenScenario(svc, seeds, codes, q),
    };
    return {
      service: svc,
      seeds,
      codes,
      tmp,
      async run(runOptions = {}) {
        const r = { ...o, ...runOptions };
        const unknownScenario = r.scenarios.find((s) => !build[s]);
        if (unknownScenario)
          throw new Error(`unknown scenario ${unknownScenario} (use ${Object.keys(build).join(', ')})`);
        const runs = [];
        for (const name of r.scenarios) {
          log(
            `${name}: ${r.connections} connections, ${r.duration} s${r.warmup > 0 ? ` (after ${r.warmup} s warm-up)` : ''}`,
          );
          const run = await runScenario(svc, build[name], r);
          run.problems = runProblems(run);
          runs.push(run);
          if (!svc.alive()) {
            const how = svc.child.signalCode ?? `exit code ${svc.child.exitCode}`;
            run.problems.push(`the service process died during the run (${how})`);
            break; // nothing left to load
          }
          await sleep(200); // let the closed connections drain before the next run
        }
        const alive = svc.alive();
        let answering = false;
        if (alive) {
          const after = await call(
            svc,
            'GET',
            `${paths(svc.workspaceId).waylines}?${buildWaylineQuery({})}`,
          ).catch(() => null);
          answering = after?.status === 200 && after.body?.code === 0;
        }
        const logErrors = serviceLogErrors(logFile);
        const problems = runs.flatMap((x) => x.problems.map((p) => `${x.name}: ${p}`));
        if (!alive) problems.push('the service process is not running after the load');
        else if (!answering)
          problems.push('the service does not answer a plain waylines request after the load');
        if (logErrors.count > 0)
          problems.push(
            `the service logged ${logErrors.count} error lines (${logFile}), first: ${logErrors.examples[0]}`,
          );
        return {
          machine: {
            cpus: os.cpus().length,
            loadavg: os.loadavg().map((x) => round(x)),
            node: process.version,
          },
          settings: {
            connections: r.connections,
            duration: r.duration,
            warmup: r.warmup,
            waylines: o.waylines,
            known: seeds.known.length,
            unknown: seeds.unknown.length,
            logLevel: o.logLevel,
          },
          service: {
            pid: svc.pid,
            baseUrl: svc.baseUrl,
            alive,
            answering,
            logErrors,
            // What the service said, when something went wrong (the temp dir goes unless --keep).
            logTail: problems.length > 0 ? logTail(logFile) : [],
            logFile: o.keep ? logFile : null,
          },
          runs,
          problems,
          ok: problems.length === 0,
        };
      },
      close,
    };
  } catch (err) {
    await close();
    throw err;
  }
}

/** Starts, seeds, loads, stops: what `node test/load/load.mjs` does. */
export async function runLoad(options = {}) {
  const session = await openSession(options);
  try {
    return await session.run();
  } finally {
    await session.close();
  }
}

const num = (x, d = 1) => (x === null || x === undefined ? 'n/a' : x.toFixed(d));

/** The Markdown table of a report, plus one line per problem. */
export function formatReport(report) {
  const rows = report.runs.map((r) => [
    r.name,
    String(r.connections),
    num(r.durationS),
    num(r.requestsPerSec, 0),
    num(r.latencyMs.p50),
    num(r.latencyMs.p99),
    num(r.latencyMs.max),
    String(r.requests),
    String(r.errors),
    String(r.timeouts),
    `${r.non2xx}${r.expectStatus !== 200 ? ` (${r.expectStatus} expected)` : ''}`,
    `${r.envelope.wrong}/${r.envelope.checked}`,
    `${num(r.service.cpuS)} (${num(r.service.cores, 2)})`,
    num(r.service.peakRssMiB),
    num(r.loaderCpuS),
  ]);
  const header = [
    'Endpoint',
    'Conn.',
    'Duration s',
    'Req/s (mean)',
    'p50 ms',
    'p99 ms',
    'Max ms',
    'Requests',
    'Errors',
    'Timeouts',
    'Non-2xx',
    'Wrong answers / checked',
    'Service CPU s (cores)',
    'Service peak RSS MiB',
    'Loader CPU s',
  ];
  const m = report.machine;
  const lines = [
    table(header, rows),
    '',
    `Machine: ${m.cpus} cores, load average ${m.loadavg.join(' ')}, Node ${m.node}. ` +
      `Service log level ${report.settings.logLevel}; ${report.settings.waylines} imported waylines (+ demo), ` +
      `${report.settings.known} known and ${report.settings.unknown} unknown fingerprints.`,
  ];
  const fu = report.runs.find((r) => r.name === 'fast-upload');
  if (fu)
    lines.push(
      `fast-upload: ${fu.envelope.hits} hits (code 0), ${fu.envelope.misses} misses (fingerprint unknown).`,
    );
  lines.push(
    report.ok
      ? 'Result: the service held (no errors, no timeouts, every answer as expected, still answering).'
      : `Result: FAILED\n${report.problems.map((p) => `  - ${p}`).join('\n')}`,
  );
  if (!report.ok && report.service.logTail.length > 0) {
    lines.push(`Service log (last lines):\n${report.service.logTail.map((l) => `  ${l}`).join('\n')}`);
  }
  if (report.service.logFile)
    lines.push(`Service data and log kept in ${path.dirname(report.service.logFile)}`);
  return lines.join('\n');
}
