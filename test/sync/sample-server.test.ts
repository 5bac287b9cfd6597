import fs from 'node:fs';
import path from 'node:path';
import S3rver from 's3rver';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { ApiClient } from '../../main/core/api/client.js';
import { Queue } from '../../main/core/queue/queue.js';
import { SAMPLE_STS, startSampleServer, type SampleServer } from '../support/sample-server.js';
import { DJI_FILES, FIXTURES, getObject, makeCard, syncOnce, tempDir } from '../support/harness.js';

// The engine against a stand-in that answers like DJI's sample server
// (401 with empty body, code -1 without data, data "" / code "0", callback
// data as a bare string, strict required fields and model-key enum), with a
// real s3rver as the bucket.
let dir: string;
let server: SampleServer;
let s3: S3rver;
let bucketSts: typeof SAMPLE_STS;

beforeAll(async () => {
  dir = tempDir('dms-sample-');
  s3 = new S3rver({ address: '127.0.0.1', port: 0, silent: true, directory: path.join(dir, 's3'), configureBuckets: [{ name: 'cloud-bucket', configs: [] }] });
  const { port } = await s3.run();
  bucketSts = {
    ...SAMPLE_STS,
    endpoint: `http://127.0.0.1:${port}`,
    credentials: { ...SAMPLE_STS.credentials, access_key_id: 'S3RVER', access_key_secret: 'S3RVER' },
  };
  server = await startSampleServer({
    sts: bucketSts,
    style: { stringCode: true, emptyData: '' },
  });
});
afterAll(async () => {
  await server.close();
  await s3.close();
  fs.rmSync(dir, { recursive: true, force: true });
});

it('syncs real DJI files through the sample server quirks, once each', async () => {
  const card = makeCard(path.join(dir, 'card'), 'DJI_202208311455_008_Waypoint1', [...DJI_FILES, 'M2EA/M2EA_IR.JPG']);
  const api = new ApiClient({ baseUrl: server.baseUrl, workspaceId: server.workspaceId, token: 'sample-token' });
  const queueFile = path.join(dir, 'state', 'queue.db');
  const run = await syncOnce({ queueFile, api, roots: [card] });

  expect(run.events.filter((e) => e.outcome === 'uploaded')).toHaveLength(DJI_FILES.length);
  // One callback per file: the sample server has no dedupe and breaks on duplicates.
  const callbacks = server.calls.filter((c) => c.path.endsWith('/upload-callback'));
  const names = callbacks.map((c) => (c.body as { name: string }).name);
  expect(new Set(names).size).toBe(names.length);
  expect(server.media).toHaveLength(DJI_FILES.length);
  for (const m of server.media) {
    expect(m.body.path).toBe('DJI_202208311455_008_Waypoint1');
    const original = DJI_FILES.find((f) => path.basename(f) === m.name)!;
    expect((await getObject(bucketSts, m.objectKey)).equals(fs.readFileSync(path.join(FIXTURES, original)))).toBe(true);
  }
  // The waylines call always carries order_by (the sample server requires it).
  await api.listWaylines({});
  expect(server.calls.at(-1)!.query.get('order_by')).toBe('update_time desc');

  // Mavic 2 Enterprise Advanced is not in the cloud device list: refused with a clear reason, kept for the user.
  const failed = run.events.find((e) => e.relPath.endsWith('M2EA_IR.JPG'))!;
  expect(failed.outcome).toBe('failed');
  const q = new Queue(queueFile);
  const row = q.list({ states: ['failed'] })[0]!;
  expect(row.errorKind).toBe('rejected');
  expect(row.errorMessage).toMatch(/model|device|Mavic 2/i);
  q.close();

  // Re-run: nothing is re-sent, the failed file waits for `retry`.
  const before = server.calls.length;
  await syncOnce({ queueFile, api, roots: [card] });
  expect(server.calls.length).toBe(before);
});
