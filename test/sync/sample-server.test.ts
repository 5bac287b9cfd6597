import type { StsResult } from '../../main/core/api/types.js';
import crypto from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ApiClient } from '../../main/core/api/client.js';
import { Queue } from '../../main/core/queue/queue.js';
import { startSampleBucket, startSampleServer, type SampleServer } from '../support/sample-server.js';
import { FIXTURES, getObject, makeCard, syncOnce, tempDir } from '../support/harness.js';

// The engine against a stand-in that refuses what DJI's sample server refuses
// (the whole required-fields table of service-facts.md, the device enum, the
// time pattern, no body on sts; 401 with an empty body, code -1 without data,
// data "" / code "0", the callback's data as a bare string), with a real
// s3rver as the bucket.

/** Every real DJI photo in the fixtures (the same bytes as shared/fixtures/dji). */
const PHOTOS = fs
  .readdirSync(FIXTURES, { recursive: true, encoding: 'utf8' })
  .filter((f) => /\.jpe?g$/i.test(f))
  .sort();
/** Cameras in DJI's cloud device list: each must reach exactly one accepted callback. */
const CLOUD = PHOTOS.filter((f) => !f.startsWith('M2EA'));
const H20T = PHOTOS.filter((f) => f.startsWith('ZH20T'));

let dir: string;
let server: SampleServer;
let bucket: Awaited<ReturnType<typeof startSampleBucket>>;
let bucketSts: StsResult;

beforeAll(async () => {
  dir = tempDir('dms-sample-');
  bucket = await startSampleBucket(path.join(dir, 's3'));
  bucketSts = bucket.sts;
  server = await startSampleServer({ sts: bucketSts, style: { stringCode: true, emptyData: '' } });
});
afterAll(async () => {
  await server.close();
  await bucket.close();
  fs.rmSync(dir, { recursive: true, force: true });
});

const api = () =>
  new ApiClient({ baseUrl: server.baseUrl, workspaceId: server.workspaceId, token: 'sample-token' });
const calls = (leaf: string) => server.calls.filter((c) => c.path.endsWith(`/${leaf}`));
const body = (c: { body: unknown }) => c.body as { name: string; ext: { sn?: string } };

describe('against a stand-in that enforces the whole required-fields table', () => {
  it('every photo of a cloud camera reaches one accepted callback; the H20T ones carry an sn; the rest is refused before upload', async () => {
    expect(H20T.length).toBeGreaterThan(0);
    // One flight folder per aircraft, as on real cards (a flight's files share its aircraft serial).
    const card = path.join(dir, 'card-a');
    const folders = new Map<string, string>();
    for (const f of PHOTOS) {
      const folder = f.startsWith('ZH20T')
        ? 'DJI_202209021517_001_Waypoint1'
        : f.startsWith('M2EA')
          ? '100MEDIA'
          : `DJI_202404241446_00${folders.size + 2}_${path.dirname(f)}`;
      folders.set(f, folder);
      makeCard(card, folder, [f]);
    }
    const queueFile = path.join(dir, 'state', 'queue.db');
    const before = server.calls.length;
    const run = await syncOnce({ queueFile, api: api(), roots: [card] });

    expect(run.events.filter((e) => e.outcome === 'uploaded')).toHaveLength(CLOUD.length);
    // One callback per file: the sample server has no dedupe and breaks on duplicates.
    const posted = calls('upload-callback').map((c) => body(c).name);
    expect(posted.sort()).toEqual(CLOUD.map((f) => path.basename(f)).sort());
    expect(server.media).toHaveLength(CLOUD.length);
    for (const m of server.media) {
      const original = CLOUD.find((f) => path.basename(f) === m.name)!;
      expect(m.body.path).toBe(folders.get(original));
      expect(
        (await getObject(bucketSts, m.objectKey)).equals(fs.readFileSync(path.join(FIXTURES, original))),
      ).toBe(true);
    }
    // The H20T does not record its aircraft: `sn` is still sent, on both requests (here "": nothing configured).
    for (const leaf of ['fast-upload', 'upload-callback']) {
      const h20t = server.calls
        .slice(before)
        .filter((c) => c.path.endsWith(leaf) && H20T.some((f) => path.basename(f) === body(c).name));
      expect(h20t.length).toBeGreaterThanOrEqual(H20T.length);
      for (const c of h20t) expect(body(c).ext.sn).toBe('');
    }
    // Mavic 2 Enterprise Advanced is outside the device list: refused at fast-upload, nothing of it sent.
    const m2ea = run.events.find((e) => e.relPath.endsWith('M2EA_IR.JPG'))!;
    expect(m2ea.outcome).toBe('failed');
    expect(m2ea.error?.message).toMatch(/Nothing of it was uploaded/);
    expect(m2ea.error?.message).toMatch(/Mavic 2 Enterprise Advanced is not in DJI's cloud device list/);
    expect(m2ea.error?.plain).toMatch(/another way|administrator/);
    const q = new Queue(queueFile);
    const failed = q.list({ states: ['failed'] });
    expect(failed.map((r) => r.relPath)).toEqual([expect.stringMatching(/M2EA_IR\.JPG$/)]);
    expect(failed[0]!.bytesSent).toBe(0);
    expect(failed[0]!.errorKind).toBe('rejected');
    q.close();
    expect(run.bytesSent).toBe(CLOUD.reduce((n, f) => n + fs.statSync(path.join(FIXTURES, f)).size, 0));

    // Re-run: nothing is re-sent, the failed file waits for `retry`.
    const calledBefore = server.calls.length;
    await syncOnce({ queueFile, api: api(), roots: [card] });
    expect(server.calls.length).toBe(calledBefore);
  });

  it('fast-upload confirms each on a second card: no byte, no second record', async () => {
    const card = makeCard(path.join(dir, 'card-b'), 'DJI_202209021517_001_Waypoint1', CLOUD);
    const records = server.media.length;
    const run = await syncOnce({
      queueFile: path.join(dir, 'state-b', 'queue.db'),
      api: api(),
      roots: [card],
    });
    expect(run.events.map((e) => e.outcome)).toEqual(CLOUD.map(() => 'fast-uploaded'));
    expect(run.bytesSent).toBe(0);
    expect(server.media).toHaveLength(records);
  });

  it('sends the serial the crew set for the aircraft when the photo does not carry one', async () => {
    const card = makeCard(path.join(dir, 'card-c'), 'DJI_202209021600_002', ['ZH20T/DJI_H20T.jpg']);
    const from = server.calls.length;
    await syncOnce({
      queueFile: path.join(dir, 'state-c', 'queue.db'),
      api: api(),
      roots: [card],
      config: { aircraftSerial: '1ZNBJ7R00C00PH' },
    });
    const sent = server.calls.slice(from).filter((c) => c.path.endsWith('/fast-upload'));
    expect(sent.map((c) => body(c).ext.sn)).toEqual(['1ZNBJ7R00C00PH']);
  });

  it('a lost callback answer still gives exactly one record', async () => {
    const fresh = await startSampleServer({ sts: bucketSts });
    try {
      // The first callback is stored, but its connection is cut before the answer.
      let cut = 0;
      fresh.setHook((call) =>
        call.path.endsWith('/upload-callback') && cut++ === 0
          ? { passThrough: true, destroy: true }
          : undefined,
      );
      const card = makeCard(path.join(dir, 'card-d'), 'DJI_202209021517_001_Waypoint1', ['M3T/M3T_IR.JPG']);
      const client = new ApiClient({
        baseUrl: fresh.baseUrl,
        workspaceId: fresh.workspaceId,
        token: 'sample-token',
      });
      const run = await syncOnce({
        queueFile: path.join(dir, 'state-d', 'queue.db'),
        api: client,
        roots: [card],
      });
      expect(run.events.at(-1)?.outcome).toBe('uploaded');
      expect(cut).toBeGreaterThan(0);
      expect(fresh.media).toHaveLength(1);
      expect(fresh.calls.filter((c) => c.path.endsWith('/upload-callback'))).toHaveLength(1);
      // ... and the check before re-posting asked fast-upload, which said "known".
      expect(fresh.calls.filter((c) => c.path.endsWith('/fast-upload'))).toHaveLength(2);
    } finally {
      await fresh.close();
    }
  });

  it('a video with its .SRT beside a photo reaches one accepted callback, its position from the SRT', async () => {
    // An M30T flight: a real photo, a video (random bytes: nothing in an MP4 is read) and a real
    // SRT (the Phantom 4 RTK sample: the only fixture form with a gimbal heading, which the table requires).
    const card = makeCard(path.join(dir, 'card-video'), 'DJI_202404241446_009', ['M30T/M30T_IR.JPG']);
    const folder = path.join(card, 'DCIM', 'DJI_202404241446_009');
    const video = path.join(folder, 'DJI_20240424144700_0002_W.MP4');
    fs.writeFileSync(video, crypto.randomBytes(3 * 1024 * 1024 + 17));
    fs.copyFileSync(
      path.join(FIXTURES, 'SRT', 'p4_rtk.SRT'),
      path.join(folder, 'DJI_20240424144700_0002_W.SRT'),
    );
    const records = server.media.length;
    const run = await syncOnce({
      queueFile: path.join(dir, 'state-video', 'queue.db'),
      api: api(),
      roots: [card],
    });
    const outcome = run.events.find((e) => e.relPath.endsWith('.MP4'));
    expect(outcome?.outcome, outcome?.error?.message).toBe('uploaded');
    // The SRT is the video's flight log: kept, stored beside it in the bucket, never posted as media.
    expect(run.events.find((e) => e.relPath.endsWith('.SRT'))?.outcome).toBe('stored');
    expect(server.media.slice(records).filter((m) => m.name.endsWith('.SRT'))).toEqual([]);
    const added = server.media.slice(records).filter((m) => m.name.endsWith('.MP4'));
    expect(added).toHaveLength(1);
    const b = added[0]!.body as {
      metadata: Record<string, unknown>;
      ext: Record<string, unknown>;
    };
    // p4_rtk.SRT cue 1: GPS (-58.851745, -34.237922, 15), H 85.80m, G.PRY (.., .., 110.4°)
    expect(b.metadata).toMatchObject({
      shoot_position: { lat: -34.237922, lng: -58.851745 },
      absolute_altitude: 15,
      relative_altitude: 85.8,
      gimbal_yaw_degree: 110.4,
    });
    expect(b.metadata['created_time']).toMatch(/^2024-04-24T14:47:00[+-]\d\d:\d\d$/);
    // Aircraft, camera and serial of the M30T photo beside it.
    expect(b.ext).toMatchObject({
      drone_model_key: '0-67-1',
      payload_model_key: '1-53-0',
      sn: '1581F62HD232T00CPV1Q',
    });
    expect((await getObject(bucketSts, added[0]!.objectKey)).equals(fs.readFileSync(video))).toBe(true);
  });

  it('waylines always carry order_by (the sample server requires it)', async () => {
    await api().listWaylines({});
    expect(server.calls.at(-1)!.query.get('order_by')).toBe('update_time desc');
  });
});
