/**
 * Request bodies go through a few buffers, however many files and parts are
 * uploaded (storage/body-pool.ts): each body's memory is given back when its
 * request is answered (or its kept photo dropped) and read into again, not
 * freed and allocated anew. Freed bodies, allocated by the range workers,
 * stayed in glibc's per-thread arenas: about 190 MiB of the 415 MiB peak of
 * the offload bench's card with no local destination (issue 33, row 6d).
 * Real files, the real uploader, a real S3 server (s3rver), the real range
 * workers; a freed body is seen through ArrayBuffer.prototype.transfer(0),
 * the one call that frees a body at once. A body the caller kept from the
 * fingerprint is its own: neither freed nor taken into the pool.
 */
import { readFile } from 'node:fs/promises';
import { afterAll, afterEach, beforeAll, beforeEach, expect, it } from 'vitest';
import { bodyPoolStats, giveBody, takeBody } from '../../main/core/storage/body-pool.js';
import { createUploader } from '../../main/core/storage/index.js';
import { readRangeWithMd5 } from '../../main/core/storage/parts.js';
import { KeptBytes } from '../../main/core/sync/kept.js';
import {
  MiB,
  fixedTarget,
  makeFile,
  objectDigest,
  startS3rver,
  tempDir,
  type S3rverHandle,
} from './harness.js';

type Transfer = (this: ArrayBuffer, length?: number) => ArrayBuffer;
const proto = ArrayBuffer.prototype as unknown as { transfer: Transfer };
const original = proto.transfer;
/** How many ArrayBuffers of 1 MiB or more were freed (transfer(0)) during a test. */
let freed = 0;

let s3: S3rverHandle;
let dir: string;
beforeAll(async () => {
  s3 = await startS3rver();
  dir = await tempDir();
});
afterAll(async () => {
  await s3.close();
});
beforeEach(() => {
  freed = 0;
  proto.transfer = function (this: ArrayBuffer, length?: number) {
    if (length === 0 && this.byteLength >= MiB) freed += 1;
    return original.call(this, length);
  };
});
afterEach(() => {
  proto.transfer = original;
});

const uploader = () =>
  createUploader('minio', {
    target: fixedTarget(s3.endpoint),
    multipartThreshold: 16 * MiB,
    partSize: 5 * MiB,
    partConcurrency: 2,
  });

it('uploads 12 photos and a 4-part video through at most 3 buffers, none freed', async () => {
  const up = uploader();
  try {
    const before = bodyPoolStats().allocated;
    const files = [];
    // Photos of different sizes: a reused buffer longer than a photo sends only the photo.
    for (let i = 0; i < 12; i++) files.push(await makeFile(dir, `p${i}.jpg`, (1 + (i % 6)) * MiB + 7 * i));
    files.push(await makeFile(dir, 'video.mp4', 17 * MiB));
    for (const f of files) {
      const key = `ws/pool/${f.path.slice(dir.length + 1)}`;
      await up.upload({ filePath: f.path, size: f.size, key, md5Hex: f.md5Hex });
      expect(await objectDigest(s3.endpoint, key)).toEqual({ size: f.size, md5Hex: f.md5Hex });
    }
    // One photo in flight at a time, then two parts at once (a third may be
    // read while the second's buffer is given back): 16 bodies in 3 buffers.
    expect(bodyPoolStats().allocated - before).toBeLessThanOrEqual(3);
    expect(freed).toBe(0);
  } finally {
    up.close();
  }
});

it('leaves a body the caller kept from the fingerprint as it is: neither freed nor given to the pool', async () => {
  const up = uploader();
  try {
    const f = await makeFile(dir, 'kept.jpg', 2 * MiB);
    const kept = await readFile(f.path);
    await up.upload({
      filePath: f.path,
      size: f.size,
      key: 'ws/r/kept.jpg',
      md5Hex: f.md5Hex,
      content: kept,
    });
    expect(freed).toBe(0);
    expect(kept.length).toBe(2 * MiB);
  } finally {
    up.close();
  }
});

it('a photo kept from the fingerprint is read into again once its row is dropped', async () => {
  const a = await makeFile(dir, 'kept-a.jpg', 3 * MiB);
  const b = await makeFile(dir, 'kept-b.jpg', 3 * MiB + 5);
  const kept = new KeptBytes();
  const first = await readRangeWithMd5(a.path, 0, a.size, a.size);
  expect(first.md5.toString('hex')).toBe(a.md5Hex);
  kept.set(1, first.body);
  const allocated = bodyPoolStats().allocated;
  kept.delete(1);
  const second = await readRangeWithMd5(b.path, 0, b.size, b.size);
  expect(second.md5.toString('hex')).toBe(b.md5Hex);
  expect(second.body.length).toBe(b.size);
  expect(bodyPoolStats().allocated).toBe(allocated);
  expect(freed).toBe(0);
  giveBody(second.body);
});

it("a card's videos' parts, fewer at once than its photos were, go round the buffers given back last", () => {
  // A card's photos: 10 bodies of 5 MiB at once (kept photos and photos
  // being sent), each in a buffer of 8 MiB of which it touches 5 MiB; then
  // its videos: 8 MiB parts, 2 at once here (6 in the offload bench). Pages
  // a body never touched are not resident: the parts must go round the same
  // two buffers, not touch all ten in turn (issue 33, row 6d: its peak of
  // RSS came when the videos' parts touched the photos' buffers whole).
  const photos = Array.from({ length: 10 }, (_, i) => takeBody(5 * MiB + i));
  photos.forEach((b) => b.fill(1));
  for (const b of photos) giveBody(b);
  const allocated = bodyPoolStats().allocated;
  const used = new Set<ArrayBufferLike>();
  for (let round = 0; round < 10; round++) {
    const parts = [takeBody(8 * MiB), takeBody(8 * MiB)];
    for (const p of parts) {
      p.fill(2);
      used.add(p.buffer);
    }
    for (const p of parts) giveBody(p);
  }
  expect(bodyPoolStats().allocated).toBe(allocated);
  expect(used.size).toBe(2);
});
