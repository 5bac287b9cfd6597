/**
 * Never a byte twice: a card the workspace already holds, synced again from
 * a fresh queue (a new laptop, a queue set aside), sends no file's bytes.
 * Sidecars (SRT, LRF, MISC/) have no fast-upload: their content-addressed key
 * is looked at first. Real parts: the engine, the reference service and its
 * embedded bucket over HTTP behind the fault proxy (which counts the body
 * bytes that reach the bucket), real SQLite queues, real files.
 */
import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { Queue } from '../../main/core/queue/queue.js';
import { makeCard, MiB, startRig, syncUntilDone, type Rig } from '../faults/rig.js';

let rig: Rig;
beforeAll(async () => {
  rig = await startRig({ prefix: 'dms-known-' });
});
afterAll(async () => {
  await rig.close();
});

/** A card with photos, a video and its sidecars, and MISC/: 9 files. */
function card(root: string): number {
  const old = Date.now() / 1000 - 3600;
  makeCard(root, 'DJI_202301011200_001_Survey', [
    { name: 'DJI_20230101120000_0001_W.JPG', size: 300_000 },
    { name: 'DJI_20230101120001_0002_W.JPG', size: 310_000 },
    { name: 'DJI_20230101120100_0003_W.MP4', size: 17 * MiB },
    { name: 'DJI_20230101120100_0003_W.SRT', size: 40_000 },
    { name: 'DJI_20230101120100_0003_W.LRF', size: 1 * MiB },
    { name: 'DJI_20230101120200_0004_W.LRF', size: 18 * MiB },
  ]);
  for (const [rel, size] of [
    ['MISC/IDX/DJI_0001.IDX', 5_000],
    ['MISC/THM/100/DJI_0001.JPG', 20_000],
    ['MISC/LOG/FLY001.DAT', 200_000],
  ] as const) {
    const abs = path.join(root, rel);
    fs.mkdirSync(path.dirname(abs), { recursive: true });
    fs.writeFileSync(abs, randomBytes(size));
    fs.utimesSync(abs, old, old);
  }
  return 9;
}

/** Body bytes of PUTs (objects and parts) that reached the bucket since record `since`. */
const bodyBytes = (since: number): number =>
  rig.bucket.records
    .filter((r) => r.id > since && (r.op === 'PutObject' || r.op === 'UploadPart'))
    .reduce((n, r) => n + r.requestBytes, 0);

it('a fresh-state re-run of a known card (sidecars included) sends no file bytes, and says so', async () => {
  const ws = await rig.workspace('known');
  const root = path.join(rig.dir, 'known', 'card');
  const files = card(root);
  const first = new Queue(path.join(rig.dir, 'known', 'state-1', 'queue.db'));
  const since1 = rig.bucket.records.at(-1)?.id ?? 0;
  const run1 = await syncUntilDone({ queue: first, api: ws.api(), roots: [root], files, timeoutMs: 60_000 });
  first.close();
  const sent1 = bodyBytes(since1);
  expect(sent1).toBeGreaterThan(36 * MiB);
  // What crossed the link, as the run says it: the bytes the bucket took.
  expect(run1.engine.progress.bytesSent).toBe(sent1);

  const fresh = new Queue(path.join(rig.dir, 'known', 'state-2', 'queue.db'));
  const since2 = rig.bucket.records.at(-1)?.id ?? 0;
  const run2 = await syncUntilDone({ queue: fresh, api: ws.api(), roots: [root], files, timeoutMs: 60_000 });
  try {
    expect(fresh.counts().done.files).toBe(files);
    expect(bodyBytes(since2)).toBe(0);
    expect(run2.engine.progress.bytesSent).toBe(0);
    expect(run2.events.filter((e) => e.error)).toEqual([]);
  } finally {
    fresh.close();
  }
}, 120_000);

it('a bucket that refuses a known file early and cuts the connection is not "the network is down"', async () => {
  const ws = await rig.workspace('refused');
  const root = path.join(rig.dir, 'refused', 'card');
  const files = card(root);
  const first = new Queue(path.join(rig.dir, 'refused', 'state-1', 'queue.db'));
  await syncUntilDone({ queue: first, api: ws.api(), roots: [root], files, timeoutMs: 60_000 });
  first.close();
  // The first look at each key misses (another agent's upload lands just after it), and the
  // bucket then refuses the PUT at once and closes, as S3 gates do: the agent sees a cut connection.
  const looked = new Set<string>();
  const miss = rig.bucket.inject({
    name: 'first look misses',
    match: (r) => r.op === 'HeadObject',
    fault: (r) => {
      if (looked.has(r.key ?? '')) return null;
      looked.add(r.key ?? '');
      return { kind: 'respond', status: 404, body: '' };
    },
    forMs: 60_000,
  });
  const refuse = rig.bucket.inject({
    name: 'early refusal',
    match: (r) => r.op === 'PutObject',
    fault: { kind: 'reset', at: 'arrival' },
    forMs: 60_000,
  });
  const fresh = new Queue(path.join(rig.dir, 'refused', 'state-2', 'queue.db'));
  try {
    const since = rig.bucket.records.at(-1)?.id ?? 0;
    const run = await syncUntilDone({ queue: fresh, api: ws.api(), roots: [root], files, timeoutMs: 60_000 });
    const refused = rig.bucket.records.filter((r) => r.id > since && r.fault.startsWith('early refusal'));
    expect(refused.length).toBeGreaterThanOrEqual(4);
    expect(fresh.counts().done.files).toBe(files);
    expect(run.events.filter((e) => e.error)).toEqual([]);
    expect(run.states.filter((s) => s.state === 'offline' || s.kind === 'network')).toEqual([]);
  } finally {
    miss.stop();
    refuse.stop();
    fresh.close();
  }
}, 120_000);
