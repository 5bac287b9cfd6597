/**
 * The agent's whole flow against the service's external bucket mode on a
 * real S3 engine (Ceph RGW, see rgw.ts): the real CLI syncs a card of real
 * DJI media plus a large multipart video with RGW's STS credentials; a
 * second card with the same content is recognised by fast-upload; an agent
 * killed with SIGKILL mid-multipart resumes with only the parts RGW lacks.
 */
import fs from 'node:fs';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { startService, type RunningService } from '../../../main/service/index.js';
import { tempDir } from '../../support/harness.js';
import {
  BIN,
  expectCardInBucket,
  makeDjiCard,
  MiB,
  newCrew,
  objectEtag,
  ownerS3,
  partsInBucket,
  queueRows,
  rgwBucketConfig,
  runSync,
  syncAll,
} from './peer.js';
import { startRgw, type Rgw } from './rgw.js';

let rgw: Rgw;
let svc: RunningService;
let dir: string;

beforeAll(async () => {
  expect(fs.existsSync(BIN), 'run npm run build first').toBe(true);
  dir = tempDir('dms-peer-agent-');
  rgw = await startRgw();
  svc = await startService({
    dataDir: path.join(dir, 'svc'),
    logger: false,
    externalBucket: rgwBucketConfig(rgw),
  });
});
afterAll(async () => {
  await svc?.close();
  await rgw?.stop();
  fs.rmSync(dir, { recursive: true, force: true });
});

function stateDir(name: string, config: object = {}): string {
  const state = path.join(dir, name);
  fs.mkdirSync(state, { recursive: true });
  fs.writeFileSync(path.join(state, 'config.json'), JSON.stringify(config));
  return state;
}

it('a fresh card: every object byte-identical in RGW, one callback per file; the same content again is fast-uploaded', async () => {
  const crew = await newCrew(svc, 'fresh card');
  const card = path.join(dir, 'card-fresh');
  // 9 parts of 8 MiB and a short last one.
  const video = 64 * MiB + 54_321;
  const files = makeDjiCard(card, video);
  const size = files.reduce((n, f) => n + fs.statSync(f).size, 0);
  const t0 = Date.now();
  const first = await syncAll(svc, crew, stateDir('state-fresh'), card);
  const ms = Date.now() - t0;
  console.log(
    `fresh card: ${files.length} files, ${(size / MiB).toFixed(1)} MiB in ${ms} ms; rgw ${rgw.rssMiB()} MiB`,
  );
  expect(first).toMatchObject({
    uploaded: files.length,
    fast_uploaded: 0,
    failed: 0,
    pending: 0,
    bytes_sent: size,
  });
  const rows = await expectCardInBucket(rgw, svc, crew, path.join(dir, 'state-fresh'), files);

  // The video went up in parts: RGW's ETag of a multipart object ends in -<parts>.
  const s3 = ownerS3(rgw);
  try {
    const videoRow = rows.find((r) => r.abs_path.endsWith('.MP4'))!;
    expect(await objectEtag(s3, rgw.bucket, videoRow.object_key!)).toMatch(/^[0-9a-f]{32}-9$/);
  } finally {
    s3.destroy();
  }

  // A second card with the same content, on a fresh queue: nothing is sent again.
  const copy = path.join(dir, 'card-copy');
  fs.cpSync(card, copy, { recursive: true });
  const second = await syncAll(svc, crew, stateDir('state-copy'), copy);
  expect(second).toMatchObject({ uploaded: 0, fast_uploaded: files.length, failed: 0, bytes_sent: 0 });
  // Same names in the same flight folder: still one record per file, no second callback.
  const records = await svc.admin.mediaRecords(crew.ws);
  expect(records.map((m) => `${m.source} ${m.name}`).sort()).toEqual(
    files.map((f) => `callback ${path.basename(f)}`).sort(),
  );
});

it('SIGKILL mid-multipart: the restart sends only the parts RGW lacks, the object is intact, one callback', async () => {
  const crew = await newCrew(svc, 'killed agent');
  const card = path.join(dir, 'card-kill');
  const size = 48 * MiB + 12_345;
  const files = makeDjiCard(card, size);
  const video = files.find((f) => f.endsWith('.MP4'))!;
  // 5 MiB parts, two at a time, one file at a time, at 16 MiB/s: killed well before the end.
  const state = stateDir('state-kill', {
    partSizeMiB: 5,
    concurrency: { files: 1, parts: 2 },
    bandwidthLimitKiBps: 16 * 1024,
  });
  const videoRow = () => queueRows(state).find((r) => r.abs_path === video);

  const first = runSync(svc, crew, state, card);
  const deadline = Date.now() + 60_000;
  while ((videoRow()?.parts ?? 0) < 3 && Date.now() < deadline) await sleep(20);
  first.child.kill('SIGKILL');
  await first.done;
  const atKill = videoRow()!;
  expect(atKill.parts).toBeGreaterThanOrEqual(3);
  expect(atKill.state).not.toBe('done');

  // What RGW holds: at least what the queue recorded (a part acknowledged just
  // before the kill may be in the bucket and not in the queue).
  const s3 = ownerS3(rgw);
  let held: number[];
  try {
    held = await partsInBucket(s3, rgw.bucket, atKill.object_key!, atKill.upload_id!);
  } finally {
    s3.destroy();
  }
  const total = Math.ceil(size / (5 * MiB));
  console.log(`killed with ${atKill.parts} parts in the queue, ${held.length} of ${total} in RGW`);
  expect(held.length).toBeGreaterThanOrEqual(atKill.parts);
  expect(held.length).toBeLessThan(total);
  expect((await svc.admin.mediaRecords(crew.ws)).filter((m) => m.name === path.basename(video))).toHaveLength(
    0,
  );

  const { code, out, err } = await runSync(svc, crew, state, card).done;
  expect(code, `${out}\n${err}`).toBe(0);
  await expectCardInBucket(rgw, svc, crew, state, files);
  // Bytes the second run sent for the video: exactly the parts RGW did not hold.
  expect(videoRow()!.bytes_sent).toBe(size - held.length * 5 * MiB);
});
