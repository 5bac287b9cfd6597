/**
 * Round trips on the critical path of a one-shot sync (issue 31, rows 7i/7a):
 * on a 4G or satellite uplink each sequential request costs 0.3–0.6 s, so
 * what can go at once must. The real reference service and its bucket behind
 * the fault rig's recording proxies, every request held `DELAY_MS` there (a
 * long round trip), the real agent (`sync`'s syncOnce), a real SQLite queue.
 * Counted from the proxies' records, not timed: the longest chain of
 * requests one after the other (each started after the previous answered)
 * before the file's first byte goes to the bucket, and after its last.
 */
import path from 'node:path';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { Agent } from '../../main/core/agent.js';
import { parseConfig } from '../../main/core/config.js';
import { Queue } from '../../main/core/queue/queue.js';
import { syncLanes } from '../../main/core/sync/peers.js';
import { makeCard, startRig, type Rig } from '../faults/rig.js';
import type { ProxyRecord } from '../faults/proxy.js';

const DELAY_MS = 300;
let rig: Rig;

beforeAll(async () => {
  rig = await startRig({ prefix: 'dms-round-trips-' });
});
afterAll(async () => {
  await rig.close();
});

/** The longest chain of requests each started after the one before answered (earliest answer first). */
function chain(records: readonly ProxyRecord[]): string[] {
  const done = records
    .filter((r) => r.endedAt !== null)
    .sort((a, b) => (a.endedAt as number) - (b.endedAt as number));
  const out: string[] = [];
  let after = -Infinity;
  for (const r of done) {
    if (r.startedAt < after) continue;
    out.push(r.op);
    after = r.endedAt as number;
  }
  return out;
}

it('sync sends a new card file after one round trip (fast-upload): waylines and bucket credentials asked meanwhile', async () => {
  const w = await rig.workspace('round-trips');
  const root = path.join(rig.dir, 'card');
  makeCard(root, 'DJI_202401011200_001_Survey', [{ name: 'DJI_20240101120000_0001_W.JPG', size: 300_000 }]);
  const queue = new Queue(path.join(rig.dir, 'state', 'queue.db'));
  const config = parseConfig({});
  const target = { key: `${rig.service.url}#${w.ws}`, label: 'rig', workspaceId: w.ws };
  const lanes = syncLanes({ queue, api: w.api(), target, config });
  const agent = new Agent({
    queue,
    api: w.api(),
    config,
    lanes,
    manifestsDir: path.join(rig.dir, 'state', 'm'),
  });
  // Every request to the service and to the bucket held DELAY_MS before it is passed on (bounded rules).
  const held = { kind: 'delay', ms: DELAY_MS } as const;
  const since = Date.now();
  const rules = [rig.service, rig.bucket].map((p) =>
    p.inject({ name: 'long round trip', fault: held, forMs: 120_000 }),
  );
  try {
    const { result } = await agent.syncOnce([root]);
    expect(result.uploaded.files).toBe(1);
  } finally {
    for (const r of rules) r.stop();
    await agent.stop();
    queue.close();
  }
  const records = [...rig.service.records, ...rig.bucket.records].filter((r) => r.startedAt >= since);
  const put = records.find((r) => r.op === 'PutObject' && r.key?.endsWith('.JPG'));
  expect(put).toBeDefined();
  const before = chain(records.filter((r) => r.endedAt !== null && r.endedAt <= put!.startedAt));
  // One round trip stands between the card and the file's bytes: fast-upload, with the credentials and the
  // waylines asked meanwhile (before: waylines, then fast-upload, then sts, one after the other).
  expect(before, JSON.stringify(before)).toHaveLength(1);
  expect(records.filter((r) => r.op === 'sts')).toHaveLength(1);
  // After the bytes: the callback, then the card's manifest files at once (not one after the other).
  const after = chain(records.filter((r) => r.startedAt >= (put!.endedAt as number)));
  expect(after).toEqual(['upload-callback', 'PutObject']);
});
