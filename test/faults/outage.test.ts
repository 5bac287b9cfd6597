/**
 * Issue 7, outages (the quick part): the default backoff, a PUT cut
 * mid-body, and a large queue facing a server that is down. The outage
 * runs themselves (every kind, compressed to seconds and for minutes) are
 * in outage.slow.test.ts.
 */
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { backoffDelay, DEFAULT_BACKOFF, Queue } from '../../main/core/queue/queue.js';
import {
  expectPromiseKept,
  findSecrets,
  KiB,
  makeCard,
  startEngine,
  startRig,
  syncUntilDone,
  type Rig,
} from './rig.js';

let rig: Rig;
beforeAll(async () => {
  rig = await startRig({ prefix: 'dms-faults-outage-' });
});
afterAll(async () => {
  await rig?.close();
});

it('the default backoff is capped at 5 minutes and jittered', () => {
  expect(DEFAULT_BACKOFF).toEqual({ baseMs: 2_000, capMs: 300_000 });
  const delays = Array.from({ length: 40 }, (_, i) => backoffDelay(i + 1));
  expect(Math.max(...delays)).toBeLessThanOrEqual(300_000);
  expect(delays.slice(-5).every((d) => d >= 150_000)).toBe(true);
  expect(backoffDelay(1, DEFAULT_BACKOFF, () => 0)).toBe(1_000);
  expect(backoffDelay(1, DEFAULT_BACKOFF, () => 1)).toBe(2_000);
});

it('a PutObject cut mid-body, then retried: the object is complete and byte-identical', async () => {
  const w = await rig.workspace('cut-put');
  const root = path.join(rig.dir, 'card-cut-put');
  const files = makeCard(root, 'DJI_202301011200_001_Outage', [
    { name: 'DJI_20230101120000_0001_W.JPG', size: 160 * KiB },
  ]);
  const queueFile = path.join(rig.dir, 'state-cut-put', 'queue.db');
  const since = rig.bucket.records.length;
  // The connection dies after half the body went: what a dropped Wi-Fi does.
  const cut = rig.bucket.inject({
    name: 'cut-put',
    match: (r) => r.op === 'PutObject',
    fault: { kind: 'reset', at: 'mid-request' },
    times: 1,
  });
  // The next bucket request comes a moment later (as after any real backoff): the bucket has settled by then.
  rig.bucket.inject({
    name: 'settle',
    match: (r) => r.op !== 'PutObject' || cut.applied > 0,
    fault: { kind: 'delay', ms: 500 },
    times: 1,
  });
  const queue = new Queue(queueFile);
  try {
    await syncUntilDone({ queue, api: w.api(), roots: [root], files: 1 });
  } finally {
    queue.close();
  }
  expect(cut.applied).toBe(1);
  const ops = rig.bucket.records
    .filter((r) => r.id > since)
    .map((r) => `${r.op} ${r.upstreamStatus ?? 'cut'}`);
  console.log('cut PutObject, then:', ops.join(', '));
  await expectPromiseKept({ rig, w, files, queueFile, oneCallbackEach: true });
});

it('a server down (HTTP 503) for 6 s with 600 files queued: the agent backs off as a whole, it does not try every file', async () => {
  const w = await rig.workspace('queue-storm');
  const root = path.join(rig.dir, 'card-queue-storm');
  makeCard(
    root,
    'DJI_202301011200_001_Outage',
    Array.from({ length: 600 }, (_, i) => ({
      name: `DJI_20230101120000_${String(i + 1).padStart(5, '0')}_W.JPG`,
      size: 2 * KiB,
    })),
  );
  const queue = new Queue(path.join(rig.dir, 'state-queue-storm', 'queue.db'));
  const since = rig.service.records.length;
  const down = rig.service.inject({
    name: 'down',
    fault: {
      kind: 'respond',
      status: 503,
      body: '<html><body>503 Service Unavailable</body></html>',
      headers: { 'content-type': 'text/html' },
    },
    forMs: 6_000,
  });
  // The engine's own default backoff (2 s, doubling, capped at 5 min).
  const run = await startEngine({ queue, api: w.api(), roots: [root], backoff: DEFAULT_BACKOFF });
  try {
    await new Promise((r) => setTimeout(r, 6_000));
  } finally {
    down.stop();
    await run.stop();
    queue.close();
  }
  const requests = rig.service.records.filter((r) => r.id > since).length;
  const perFile = new Set(rig.service.records.filter((r) => r.id > since).map((r) => r.requestBody ?? ''))
    .size;
  console.log(
    `503 for 6 s with 600 files queued: ${requests} requests (${perFile} different files tried), engine states ${JSON.stringify([...new Set(run.states.map((s) => s.state))])}`,
  );
  // What a backing-off client sends: the rows in flight (files x 2 + 4 = 10) a few times each
  // (after 1-2 s, then 2-4 s...), not one attempt for every file of the queue.
  expect(requests).toBeLessThanOrEqual(60);
});

it('no token or STS secret in anything the agent wrote', () => {
  const dirs = ['state-cut-put', 'state-queue-storm']
    .map((d) => path.join(rig.dir, d))
    .filter((d) => fs.existsSync(d));
  expect(dirs.length).toBeGreaterThan(0);
  expect(findSecrets(dirs, rig.secrets)).toEqual([]);
});
