/**
 * Never stuck: a connection that stalls mid-part is dropped after the stall
 * window (the setting stallSeconds, 2 s here instead of 30) and the part is
 * sent again on a new connection; only the parts in flight are sent again,
 * one object, one callback. Real parts: the engine, the reference service
 * and its embedded bucket over HTTP behind the fault proxy, which holds the
 * stalled request's body unread (its socket buffers fill, nothing moves).
 */
import path from 'node:path';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { Queue } from '../../main/core/queue/queue.js';
import { forwardedCallbacks, makeCard, MiB, startRig, syncUntilDone, type Rig } from '../faults/rig.js';

let rig: Rig;
beforeAll(async () => {
  rig = await startRig({ prefix: 'dms-stall-' });
});
afterAll(async () => {
  await rig.close();
});

it('a stalled part is dropped after the stall window and sent again on a new connection, once', async () => {
  const ws = await rig.workspace('stall');
  const root = path.join(rig.dir, 'stall', 'card');
  makeCard(root, 'DJI_202301011200_001_Survey', [
    // 4 parts of 5 MiB: far more than the loopback's socket buffers hold.
    { name: 'DJI_20230101120000_0001_W.MP4', size: 20 * MiB },
    { name: 'DJI_20230101120001_0002_W.JPG', size: 200_000 },
  ]);
  // The first part: the proxy reads nothing of it for a minute (a dead route, a stalled uplink).
  const stall = rig.bucket.inject({
    name: 'stall',
    match: (r) => r.op === 'UploadPart' && r.partNumber === 1,
    fault: { kind: 'delay', ms: 60_000 },
    times: 1,
  });
  const since = rig.bucket.records.at(-1)?.id ?? 0;
  const calls = rig.service.records.at(-1)?.id ?? 0;
  const queue = new Queue(path.join(rig.dir, 'stall', 'queue.db'));
  try {
    const run = await syncUntilDone({
      queue,
      api: ws.api(),
      roots: [root],
      files: 2,
      config: { stallSeconds: 2, partSizeMiB: 5 },
      timeoutMs: 30_000,
    });
    expect(stall.applied).toBe(1);
    expect(run.events.filter((e) => e.error)).toEqual([]);
    const parts = rig.bucket.records.filter((r) => r.id > since && r.op === 'UploadPart');
    const inFlight = run.engine.slots.width;
    // Each part answered once; sent again: the stalled one (at most the parts in flight).
    const answered = parts.filter((r) => r.clientStatus === 200).map((r) => r.partNumber);
    expect([...answered].sort()).toEqual([1, 2, 3, 4]);
    expect(parts.length - 4).toBeGreaterThanOrEqual(1);
    expect(parts.length - 4).toBeLessThanOrEqual(Math.max(1, inFlight));
    // One object, one callback.
    const completes = rig.bucket.records.filter((r) => r.id > since && r.op === 'CompleteMultipartUpload');
    expect(completes.filter((r) => r.clientStatus === 200)).toHaveLength(1);
    expect([...forwardedCallbacks(rig.service, calls).values()]).toEqual([1, 1]);
    console.log(
      `stalled part dropped and the card done in ${(run.ms / 1000).toFixed(1)} s (stall window 2 s)`,
    );
  } finally {
    stall.stop();
    queue.close();
  }
}, 90_000);
