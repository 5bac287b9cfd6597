/**
 * Issue 7 soak (`npm run test:faults` only): 10,000 small files (1-8 KiB)
 * through the real engine while both proxies inject random faults of every
 * kind, plus short windows where the service or the bucket refuses
 * connections. Zero lost, zero duplicates; the figures are printed.
 * SOAK_FILES overrides the count (e.g. for a quick local run).
 *
 * The fault decisions (which request gets a fault, which one) and the file
 * sizes come from a printed seed: DMS_FAULT_SEED=<seed> replays them (the
 * timing, and so which request meets which decision, still varies).
 */
import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { Queue } from '../../main/core/queue/queue.js';
import type { Fault, ProxyRequest } from './proxy.js';
import {
  duplicateBodies,
  findSecrets,
  forwardedCallbacks,
  KiB,
  md5,
  queueRows,
  startEngine,
  startRig,
  until,
  type Rig,
} from './rig.js';
import { flightFolderOf } from '../../main/core/media/flight-folder.js';
import { getObject } from '../support/harness.js';
import { faultSeed, intBetween, seededRandom, subSeed } from '../support/seeded-random.js';

const FILES = Number(process.env.SOAK_FILES ?? 10_000);
const PER_FOLDER = 500;
/** Probability that a request gets a fault. */
const P = 0.04;
const SEED = faultSeed('soak');
/** Goes with every failure, to replay the run. */
const REPLAY = `fault seed ${SEED}: re-run with DMS_FAULT_SEED=${SEED}`;

let rig: Rig;
beforeAll(async () => {
  rig = await startRig({ prefix: 'dms-faults-soak-' });
});
afterAll(async () => {
  await rig?.close(); // 10,000 objects and files to remove
}, 300_000);

const HTML =
  '<html><head><title>502 Bad Gateway</title></head><body><h1>502 Bad Gateway</h1><hr>nginx</body></html>';
const XML = (code: string, status: string) =>
  `<?xml version="1.0" encoding="UTF-8"?>\n<Error><Code>${code}</Code><Message>${status}</Message></Error>`;
const envelope = (fn: (e: Record<string, unknown>) => Record<string, unknown>): Fault => ({
  kind: 'rewrite',
  fn: (body) => ({ body: JSON.stringify(fn(JSON.parse(body) as Record<string, unknown>)) }),
});

const SERVICE_FAULTS: Array<{ name: string; fault: Fault; only?: string }> = [
  {
    name: 'http-503-html',
    fault: { kind: 'respond', status: 503, body: HTML, headers: { 'content-type': 'text/html' } },
  },
  {
    name: 'http-500-envelope',
    fault: {
      kind: 'respond',
      status: 500,
      body: JSON.stringify({ code: 500000, message: 'internal error' }),
    },
  },
  {
    name: 'http-429-retry-after',
    fault: {
      kind: 'respond',
      status: 429,
      body: JSON.stringify({ code: 429000, message: 'slow down' }),
      headers: { 'retry-after': '1' },
    },
  },
  { name: 'reset-on-arrival', fault: { kind: 'reset', at: 'arrival' } },
  { name: 'reset-mid-answer', fault: { kind: 'reset', at: 'mid-response' } },
  { name: 'answer-dropped', fault: { kind: 'drop-answer' } },
  { name: 'answer-past-timeout', fault: { kind: 'late-answer', ms: 1_800 } },
  {
    name: 'html-with-200',
    fault: { kind: 'respond', status: 200, body: HTML, headers: { 'content-type': 'text/html' } },
  },
  {
    name: 'truncated-json',
    fault: { kind: 'rewrite', fn: (b) => ({ body: b.slice(0, Math.floor(b.length / 2)) }) },
  },
  { name: 'code-as-string', fault: envelope((e) => ({ ...e, code: String(e['code']) })) },
  {
    name: 'unknown-code-200',
    fault: {
      kind: 'respond',
      status: 200,
      body: JSON.stringify({ code: 123456, message: 'maintenance window' }),
    },
  },
  {
    name: 'sts-without-credentials',
    only: 'sts',
    fault: envelope((e) => ({ ...e, data: { ...(e['data'] as object), credentials: undefined } })),
  },
  { name: 'data-missing', fault: envelope((e) => ({ code: e['code'], message: e['message'] })) },
];

const BUCKET_FAULTS: Array<{ name: string; fault: Fault }> = [
  {
    name: 'http-500-xml',
    fault: {
      kind: 'respond',
      status: 500,
      body: XML('InternalError', 'internal'),
      headers: { 'content-type': 'application/xml' },
    },
  },
  {
    name: 'slowdown-503',
    fault: {
      kind: 'respond',
      status: 503,
      body: XML('SlowDown', 'slow down'),
      headers: { 'content-type': 'application/xml', 'retry-after': '1' },
    },
  },
  {
    name: 'expired-token',
    fault: {
      kind: 'respond',
      status: 400,
      body: XML('ExpiredToken', 'The provided token has expired.'),
      headers: { 'content-type': 'application/xml' },
    },
  },
  { name: 'reset-on-arrival', fault: { kind: 'reset', at: 'arrival' } },
  { name: 'reset-mid-request', fault: { kind: 'reset', at: 'mid-request' } },
  { name: 'reset-mid-answer', fault: { kind: 'reset', at: 'mid-response' } },
  { name: 'answer-dropped', fault: { kind: 'drop-answer' } },
  { name: 'delay-300ms', fault: { kind: 'delay', ms: 300 } },
  {
    name: 'html-502',
    fault: { kind: 'respond', status: 502, body: HTML, headers: { 'content-type': 'text/html' } },
  },
];

function pick<T>(rand: () => number, list: readonly T[]): T {
  return list[intBetween(rand, 0, list.length)]!;
}

it(
  `soak: ${FILES} files under random faults of every kind: zero lost, zero duplicates`,
  async () => {
    const w = await rig.workspace('soak');
    const root = path.join(rig.dir, 'card');
    const files: Array<{ rel: string; abs: string; folder: string; name: string }> = [];
    const old = Date.now() / 1000 - 3600;
    const sizes = seededRandom(subSeed(SEED, 'sizes'));
    for (let i = 0; i < FILES; i++) {
      const folder = `DJI_202301${String(1 + Math.floor(i / PER_FOLDER / 24)).padStart(2, '0')}${String(Math.floor(i / PER_FOLDER) % 24).padStart(2, '0')}00_${String(Math.floor(i / PER_FOLDER) + 1).padStart(3, '0')}_Soak`;
      const name = `DJI_20230101120000_${String(i + 1).padStart(5, '0')}_W.JPG`;
      const dir = path.join(root, 'DCIM', folder);
      if (i % PER_FOLDER === 0) fs.mkdirSync(dir, { recursive: true });
      const abs = path.join(dir, name);
      fs.writeFileSync(abs, randomBytes(intBetween(sizes, 1 * KiB, 8 * KiB + 1)));
      fs.utimesSync(abs, old, old);
      files.push({ rel: `DCIM/${folder}/${name}`, abs, folder, name });
    }
    const queueFile = path.join(rig.dir, 'state', 'queue.db');
    const queue = new Queue(queueFile);
    const t0 = Date.now();
    const limitMs = 25 * 60_000;

    // Random faults on both sides, bounded in count and time; one seeded stream of decisions per side.
    const serviceRand = seededRandom(subSeed(SEED, 'service'));
    const bucketRand = seededRandom(subSeed(SEED, 'bucket'));
    const byKind = new Map<string, number>();
    const count = (k: string) => byKind.set(k, (byKind.get(k) ?? 0) + 1);
    const serviceRule = rig.service.inject({
      name: 'soak',
      fault: (r: ProxyRequest) => {
        if (serviceRand() >= P) return null;
        const f = pick(serviceRand, SERVICE_FAULTS);
        if (f.only && f.only !== r.op) return null;
        count(`service ${f.name} (${r.op})`);
        return f.fault;
      },
      times: Math.ceil(FILES * 0.4),
      forMs: limitMs,
    });
    const bucketRule = rig.bucket.inject({
      name: 'soak',
      fault: (r: ProxyRequest) => {
        if (bucketRand() >= P) return null;
        const f = pick(bucketRand, BUCKET_FAULTS);
        count(`bucket ${f.name} (${r.op})`);
        return f.fault;
      },
      times: Math.ceil(FILES * 0.4),
      forMs: limitMs,
    });
    // Outage windows: the service or the bucket refuses connections for 1.5 s, at most 12 times.
    let windows = 0;
    const outages = setInterval(() => {
      if (windows >= 12) return;
      windows++;
      const which = windows % 2 === 0 ? rig.service : rig.bucket;
      count(`${which === rig.service ? 'service' : 'bucket'} refused-1.5s`);
      void which.refuse().then(() => setTimeout(() => void which.accept(), 1_500));
    }, 12_000);

    const run = await startEngine({
      queue,
      api: w.api({ timeoutMs: 1_500 }),
      roots: [root],
      backoff: { baseMs: 200, capMs: 3_000 },
      config: { concurrency: { files: 8, parts: 2 } },
    });
    // A person pressing Retry now and then: files the server refused (an unknown code) go back in line.
    let retried = 0;
    const retrier = setInterval(() => {
      retried += queue.retry({ all: true }).length;
      run.engine.wake();
    }, 3_000);
    let timedOut: Error | null = null;
    try {
      await until(`${FILES} files done`, () => queue.counts().done.files === FILES, limitMs, 500);
    } catch (err) {
      timedOut = err as Error;
    } finally {
      clearInterval(retrier);
      clearInterval(outages);
      serviceRule.stop();
      bucketRule.stop();
      await rig.service.accept();
      await rig.bucket.accept();
      await run.stop();
      queue.close();
    }
    const ms = Date.now() - t0;

    // Figures.
    const errorKinds: Record<string, number> = {};
    const hadError = new Set<number>();
    for (const e of run.events) {
      if (!e.error) continue;
      errorKinds[e.error.kind] = (errorKinds[e.error.kind] ?? 0) + 1;
      hadError.add(e.id);
    }
    const rows = queueRows(queueFile);
    const recovered = rows.filter((r) => r.state === 'done').length;
    const injected = [...byKind.values()].reduce((a, b) => a + b, 0);

    // Zero lost: every file done, one record each with the right fingerprint, the object byte-identical.
    const violations: string[] = [];
    const records = await rig.svc.admin.mediaRecords(w.ws);
    const byName = new Map<string, number>();
    for (const r of records) byName.set(`${r.path}/${r.name}`, (byName.get(`${r.path}/${r.name}`) ?? 0) + 1);
    const sts = await w.direct().getSts();
    const recIndex = new Map(records.map((r) => [`${r.path}/${r.name}`, r]));
    let checked = 0;
    const lanes = Array.from({ length: 16 }, async (_, lane) => {
      for (let i = lane; i < files.length; i += 16) {
        const f = files[i]!;
        const key = `${flightFolderOf(f.rel).path}/${f.name}`;
        const rec = recIndex.get(key);
        const n = byName.get(key) ?? 0;
        if (n !== 1 || !rec) {
          violations.push(`${f.rel}: ${n} records`);
          continue;
        }
        const content = fs.readFileSync(f.abs);
        if (rec.fingerprint !== md5(content)) violations.push(`${f.rel}: wrong fingerprint`);
        const body = await getObject(sts, rec.object_key).catch(() => null);
        if (!body) violations.push(`${f.rel}: object missing`);
        else if (!body.equals(content))
          violations.push(`${f.rel}: object differs (${body.length} bytes for ${content.length})`);
        checked++;
      }
    });
    await Promise.all(lanes);
    const cbs = forwardedCallbacks(rig.service);
    const dupCallbacks = [...cbs.values()].filter((n) => n > 1).length;
    const dupBodies = duplicateBodies(rig.bucket);
    const notDone = rows.filter((r) => r.state !== 'done');

    const figures = {
      seed: SEED,
      files: FILES,
      seconds: Math.round(ms / 1000),
      filesPerSecond: Math.round((FILES / ms) * 1000),
      requests: { service: rig.service.records.length, bucket: rig.bucket.records.length },
      faultsInjected: injected,
      faultsByKind: Object.fromEntries([...byKind.entries()].sort()),
      fileErrorsByKind: errorKinds,
      filesThatSawAnError: hadError.size,
      recovered: `${recovered}/${FILES} done`,
      retriedByHand: retried,
      lost: notDone.length,
      records: records.length,
      duplicateCallbacks: dupCallbacks,
      bodiesAcceptedTwice: dupBodies.repeats.length,
      objectsChecked: checked,
      violations: violations.length,
    };
    console.log(`SOAK FIGURES\n${JSON.stringify(figures, null, 2)}`);
    if (violations.length) console.log(`first violations:\n  ${violations.slice(0, 20).join('\n  ')}`);

    expect(timedOut, REPLAY).toBeNull();
    expect(
      notDone.map((r) => `${r.rel_path}: ${r.state}`),
      REPLAY,
    ).toEqual([]);
    expect(records, REPLAY).toHaveLength(FILES);
    expect(dupCallbacks, REPLAY).toBe(0);
    expect(injected, REPLAY).toBeGreaterThan(FILES * P);
    expect(violations, REPLAY).toEqual([]);
    expect(findSecrets([path.dirname(queueFile)], rig.secrets), REPLAY).toEqual([]);
  },
  40 * 60_000,
);
