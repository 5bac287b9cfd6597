/**
 * Exactly-once, tightened: the check before re-posting a callback against a
 * stand-in of DJI's sample server (which records every callback, and whose
 * fast-upload breaks once a fingerprint is recorded twice), with a real
 * s3rver bucket and the real engine in its long-running mode.
 */
import type { StsResult } from '../../main/core/api/types.js';
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { ApiClient } from '../../main/core/api/client.js';
import { Queue } from '../../main/core/queue/queue.js';
import { UNCLEAR_ANSWER_TRIES } from '../../main/core/sync/step-errors.js';
import { startEngine } from '../faults/rig.js';
import {
  startSampleBucket,
  startSampleServer,
  type RecordedCall,
  type SampleServer,
} from '../support/sample-server.js';
import { makeCard, syncOnce, tempDir, until } from '../support/harness.js';

let dir: string;
let bucket: Awaited<ReturnType<typeof startSampleBucket>>;
let sts: StsResult;
const servers: SampleServer[] = [];

beforeAll(async () => {
  dir = tempDir('dms-once-');
  bucket = await startSampleBucket(path.join(dir, 's3'));
  sts = bucket.sts;
});
afterAll(async () => {
  await Promise.all(servers.map((s) => s.close()));
  await bucket.close();
  fs.rmSync(dir, { recursive: true, force: true });
});

async function server(): Promise<SampleServer> {
  const s = await startSampleServer({ sts });
  servers.push(s);
  return s;
}
const client = (s: SampleServer, timeoutMs = 30_000) =>
  new ApiClient({ baseUrl: s.baseUrl, workspaceId: s.workspaceId, token: 'sample-token', timeoutMs });
const at = (s: SampleServer, leaf: string): RecordedCall[] =>
  s.calls.filter((c) => c.path.endsWith(`/${leaf}`));

it('a callback that timed out is checked only after the settle time, and never posted twice', async () => {
  const s = await server();
  const times = new Map<RecordedCall, number>();
  let slow = 0;
  // The server stores the first callback but answers after the client gave up (a slow commit).
  s.setHook((call) => {
    times.set(call, Date.now());
    return call.path.endsWith('/upload-callback') && slow++ === 0
      ? { passThrough: true, delayMs: 1500 }
      : undefined;
  });
  const card = makeCard(path.join(dir, 'card-settle'), 'DJI_202209021517_001_Waypoint1', ['M3T/M3T_IR.JPG']);
  const run = await syncOnce({
    queueFile: path.join(dir, 'state-settle', 'queue.db'),
    api: client(s, 500),
    roots: [card],
    config: { callbackSettleSeconds: 3 },
  });
  expect(run.events.at(-1)?.outcome).toBe('uploaded');
  expect(s.media).toHaveLength(1);
  const [callback] = at(s, 'upload-callback');
  const check = at(s, 'fast-upload')[1]!;
  expect(at(s, 'upload-callback')).toHaveLength(1);
  expect(times.get(check)! - times.get(callback!)!).toBeGreaterThanOrEqual(3000);
});

it('a check answered "found: 2" (the server holds the file twice already) is taken as known: no third record', async () => {
  const s = await server();
  let cut = 0;
  s.setHook((call) => {
    if (call.path.endsWith('/upload-callback') && cut++ === 0) return { passThrough: true, destroy: true };
    // The sample server's answer once a fingerprint is recorded twice.
    if (call.path.endsWith('/fast-upload') && cut > 0) {
      return {
        body: {
          code: -1,
          message:
            'nested exception is org.apache.ibatis.exceptions.TooManyResultsException: Expected one result (or null) to be returned by selectOne(), but found: 2',
        },
      };
    }
    return undefined;
  });
  const card = makeCard(path.join(dir, 'card-twice'), 'DJI_202209021517_001_Waypoint1', ['M3T/M3T_IR.JPG']);
  const run = await syncOnce({
    queueFile: path.join(dir, 'state-twice', 'queue.db'),
    api: client(s),
    roots: [card],
  });
  expect(run.events.at(-1)?.outcome).toBe('uploaded');
  expect(at(s, 'upload-callback')).toHaveLength(1);
  expect(s.media).toHaveLength(1);
});

it('a check answered neither "known" nor "unknown" is retried for that file only, then the file fails with the server\'s words', async () => {
  const s = await server();
  let cut = 0;
  let firstCheckAt = Infinity;
  const lost = 'M3T_IR.JPG';
  s.setHook((call) => {
    const name = (call.body as { name?: string } | undefined)?.name;
    if (call.path.endsWith('/upload-callback') && name === lost && cut++ === 0)
      return { passThrough: true, destroy: true };
    if (call.path.endsWith('/fast-upload') && name === lost && cut > 0) {
      firstCheckAt = Math.min(firstCheckAt, Date.now());
      return { body: { code: -1, message: 'database is busy, try later' } };
    }
    return undefined;
  });
  const card = makeCard(path.join(dir, 'card-unclear'), 'DJI_202209021517_001_Waypoint1', [
    'M3T/M3T_IR.JPG',
    'M30T/M30T_IR.JPG',
  ]);
  const queueFile = path.join(dir, 'state-unclear', 'queue.db');
  const queue = new Queue(queueFile);
  const run = await startEngine({ queue, api: client(s), roots: [card] });
  try {
    await until('the lost file failed', () => queue.counts().failed.files === 1, 30_000);
    await until('the other file done', () => queue.counts().done.files === 1);
  } finally {
    await run.stop();
  }
  const [failed] = queue.list({ states: ['failed'] });
  queue.close();
  expect(failed?.relPath).toMatch(/M3T_IR\.JPG$/);
  expect(failed?.errorMessage).toMatch(
    /could not say whether it already has M3T_IR\.JPG .*"database is busy, try later".*It was not posted again/,
  );
  // One callback only; the checks were bounded; their answers never put the engine offline
  // (the cut connection itself may: that is the network).
  expect(at(s, 'upload-callback').filter((c) => (c.body as { name: string }).name === lost)).toHaveLength(1);
  // (the fast-upload before the upload, then one check per try after the lost callback)
  expect(at(s, 'fast-upload').filter((c) => (c.body as { name: string }).name === lost)).toHaveLength(
    UNCLEAR_ANSWER_TRIES,
  );
  expect(run.states.filter((x) => x.at >= firstCheckAt).map((x) => x.state)).not.toContain('offline');
});
