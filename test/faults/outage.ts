/**
 * Outages for the fault suites: the service and the bucket unreachable,
 * answering 5xx or 429, answering too late, or cutting connections, phase
 * after phase, while the real engine syncs a card. Measures what the
 * promise is about: the queue waits with capped backoff (never scheduling a
 * retry further than the cap, no request storm) and finishes once the
 * service is back, with no duplicate.
 */
import path from 'node:path';
import { expect } from 'vitest';
import { Queue, type BackoffPolicy } from '../../main/core/queue/queue.js';
import type { Fault, ProxyRequest } from './proxy.js';
import {
  duplicateBodies,
  expectPromiseKept,
  KiB,
  makeCard,
  MiB,
  startEngine,
  until,
  type Rig,
} from './rig.js';

export type OutageKind = 'refused' | 'http-5xx' | 'throttled-429' | 'slow-past-timeout' | 'resets';

const XML_500 =
  '<?xml version="1.0" encoding="UTF-8"?>\n<Error><Code>InternalError</Code><Message>We encountered an internal error. Please try again.</Message></Error>';
const HTML_503 =
  '<html><head><title>503 Service Temporarily Unavailable</title></head><body><h1>503 Service Temporarily Unavailable</h1></body></html>';

export interface OutageReport {
  phases: Array<{
    kind: OutageKind;
    ms: number;
    serviceRequests: number;
    bucketRequests: number;
    faults: number;
  }>;
  outageMs: number;
  /** From the end of the outage to the last file done. */
  recoveryMs: number;
  /** The furthest retry the queue scheduled during the outage, from the moment it was seen. */
  maxScheduledMs: number;
  states: string[];
  duplicateBytes: number;
  requestsDuringOutage: number;
  errorKinds: Record<string, number>;
}

/** Starts one outage phase on both proxies; returns a function that ends it. */
async function begin(
  rig: Rig,
  kind: OutageKind,
  ms: number,
  timeoutMs: number,
): Promise<{ end: () => Promise<void>; applied: () => number }> {
  const rules: Array<{ applied: number; stop(): void }> = [];
  const add = (
    proxy: 'service' | 'bucket',
    name: string,
    fault: Fault | ((r: ProxyRequest) => Fault | null),
  ) => rules.push(rig[proxy].inject({ name: `${kind}/${name}`, fault, forMs: ms + 1_000 }));
  if (kind === 'refused') {
    await rig.service.refuse();
    await rig.bucket.refuse();
    return {
      end: async () => {
        await rig.service.accept();
        await rig.bucket.accept();
      },
      applied: () => 1,
    };
  }
  if (kind === 'http-5xx') {
    add('service', '503', {
      kind: 'respond',
      status: 503,
      body: HTML_503,
      headers: { 'content-type': 'text/html' },
    });
    add('bucket', '500', {
      kind: 'respond',
      status: 500,
      body: XML_500,
      headers: { 'content-type': 'application/xml' },
    });
  } else if (kind === 'throttled-429') {
    add('service', '429', {
      kind: 'respond',
      status: 429,
      body: JSON.stringify({ code: 429000, message: 'Too many requests' }),
      headers: { 'retry-after': '1' },
    });
    add('bucket', 'slowdown', {
      kind: 'respond',
      status: 503,
      body: XML_500.replace('InternalError', 'SlowDown'),
      headers: { 'content-type': 'application/xml', 'retry-after': '1' },
    });
  } else if (kind === 'slow-past-timeout') {
    // The server does the work; its answer comes after the client's deadline.
    add('service', 'late', { kind: 'late-answer', ms: timeoutMs + 700 });
    add('bucket', 'slow', { kind: 'delay', ms: 400 });
  } else {
    let n = 0;
    const cycle: Fault[] = [
      { kind: 'reset', at: 'arrival' },
      { kind: 'reset', at: 'mid-response' },
      { kind: 'drop-answer' },
    ];
    add('service', 'reset', () => cycle[n++ % cycle.length]!);
    let m = 0;
    // Parts are cut mid-body. A PutObject cut mid-body has a test of its own
    // (outage.test.ts: the embedded bucket keeps the partial object).
    add('bucket', 'reset', (r) =>
      r.op === 'UploadPart' ? { kind: 'reset', at: 'mid-request' } : cycle[m++ % 2]!,
    );
  }
  return {
    end: () => {
      for (const r of rules) r.stop();
      return Promise.resolve();
    },
    applied: () => rules.reduce((s, r) => s + r.applied, 0),
  };
}

export async function runOutage(opts: {
  rig: Rig;
  name: string;
  phases: Array<{ kind: OutageKind; ms: number }>;
  backoff: BackoffPolicy;
  timeoutMs: number;
  /** Files before the outage starts. */
  warmupFiles?: number;
}): Promise<OutageReport> {
  const { rig } = opts;
  const w = await rig.workspace(opts.name);
  const root = path.join(rig.dir, `card-${opts.name}`);
  const files = makeCard(root, 'DJI_202301011200_001_Outage', [
    ...Array.from({ length: 12 }, (_, i) => ({
      name: `DJI_20230101120000_${String(i + 1).padStart(4, '0')}_W.JPG`,
      size: 150 * KiB + i * 1000,
    })),
    { name: 'DJI_20230101120100_0013_W.MP4', size: 26 * MiB },
  ]);
  const queueFile = path.join(rig.dir, `state-${opts.name}`, 'queue.db');
  const queue = new Queue(queueFile);
  const sSince = rig.service.records.length;
  const bSince = rig.bucket.records.length;
  // Slow enough that the outage lands mid-card.
  const run = await startEngine({
    queue,
    api: w.api({ timeoutMs: opts.timeoutMs }),
    roots: [root],
    backoff: opts.backoff,
    config: { partSizeMiB: 5, concurrency: { files: 2, parts: 2 }, bandwidthLimitKiBps: 3 * 1024 },
  });
  const report: OutageReport = {
    phases: [],
    outageMs: 0,
    recoveryMs: 0,
    maxScheduledMs: 0,
    states: [],
    duplicateBytes: 0,
    requestsDuringOutage: 0,
    errorKinds: {},
  };
  // Watches how far ahead the queue schedules retries.
  const sampler = setInterval(() => {
    const now = Date.now();
    for (const r of queue.list({
      states: ['discovered', 'hashed', 'fast-upload-checked', 'uploading', 'uploaded'],
      limit: 1000,
    })) {
      report.maxScheduledMs = Math.max(report.maxScheduledMs, r.nextAttemptAt - now);
    }
  }, 100);
  try {
    await until('warm-up', () => queue.counts().done.files >= (opts.warmupFiles ?? 2), 20_000);
    const t0 = Date.now();
    const s0 = rig.service.records.length;
    const b0 = rig.bucket.records.length;
    for (const p of opts.phases) {
      const ps = rig.service.records.length;
      const pb = rig.bucket.records.length;
      const phase = await begin(rig, p.kind, p.ms, opts.timeoutMs);
      await new Promise((r) => setTimeout(r, p.ms));
      await phase.end();
      report.phases.push({
        kind: p.kind,
        ms: p.ms,
        serviceRequests: rig.service.records.length - ps,
        bucketRequests: rig.bucket.records.length - pb,
        faults: phase.applied(),
      });
    }
    const back = Date.now();
    report.outageMs = back - t0;
    report.requestsDuringOutage = rig.service.records.length - s0 + rig.bucket.records.length - b0;
    expect(queue.counts().done.files, 'the outage landed mid-card').toBeLessThan(files.length);
    await until(
      'every file done after the outage',
      () => queue.counts().done.files === files.length,
      opts.backoff.capMs + 60_000,
      50,
    );
    report.recoveryMs = Date.now() - back;
  } finally {
    clearInterval(sampler);
    await run.stop();
    queue.close();
  }
  report.states = [...new Set(run.states.map((s) => s.state))];
  for (const e of run.events)
    if (e.error) report.errorKinds[e.error.kind] = (report.errorKinds[e.error.kind] ?? 0) + 1;
  report.duplicateBytes = duplicateBodies(rig.bucket, bSince).bytes;
  await expectPromiseKept({ rig, w, files, queueFile, oneCallbackEach: true });
  void sSince;
  return report;
}

/** What every outage run must show. */
export function expectCappedAndRecovered(r: OutageReport, backoff: BackoffPolicy, files = 13): void {
  // Capped: no retry scheduled further than the cap (Retry-After of 1 s is below it).
  expect(r.maxScheduledMs).toBeLessThanOrEqual(backoff.capMs + 250);
  // Finished once the service was back: within one capped wait, plus the work left.
  expect(r.recoveryMs).toBeLessThanOrEqual(backoff.capMs + 25_000);
  // No request storm: each file tries at most about once per half cap (full jitter), plus the ramp-up.
  const perFileAttempts = r.outageMs / (backoff.capMs / 2) + Math.log2(backoff.capMs / backoff.baseMs) + 2;
  // Up to 4 requests per attempt (fast-upload check, STS, HEAD, PUT or callback).
  expect(r.requestsDuringOutage).toBeLessThanOrEqual(Math.ceil(files * perFileAttempts * 4));
  expect(r.states).toContain('offline');
  // A part the bucket accepted while the connection was cut may go again: at most two parts (two lanes).
  expect(r.duplicateBytes).toBeLessThanOrEqual(2 * 5 * MiB);
}
