/**
 * A body read for one request is freed as soon as that request is answered
 * (transfer.ts release(): its ArrayBuffer detached), not when a garbage
 * collection gets to it: in the offload bench 44-84 MiB of sent bodies sat in
 * the main thread at the peak of RSS (issue 29, row 6c). Real files, the real
 * uploader, a real S3 server (s3rver); what is freed is seen through
 * ArrayBuffer.prototype.transfer, the one call that frees a body at once.
 */
import { readFile } from 'node:fs/promises';
import { afterAll, afterEach, beforeAll, beforeEach, expect, it } from 'vitest';
import { createUploader } from '../../main/core/storage/index.js';
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
/** The sizes of the ArrayBuffers freed (transfer(0)) during a test. */
let freed: number[] = [];

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
  freed = [];
  proto.transfer = function (this: ArrayBuffer, length?: number) {
    if (length === 0) freed.push(this.byteLength);
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

it('frees each body once its request is answered: a photo, each part of a video', async () => {
  const up = uploader();
  try {
    const photo = await makeFile(dir, 'photo.jpg', 5 * MiB + 3);
    await up.upload({ filePath: photo.path, size: photo.size, key: 'ws/r/photo.jpg', md5Hex: photo.md5Hex });
    expect(freed).toEqual([5 * MiB + 3]);
    freed = [];
    const video = await makeFile(dir, 'video.mp4', 17 * MiB);
    const res = await up.upload({
      filePath: video.path,
      size: video.size,
      key: 'ws/r/video.mp4',
      md5Hex: video.md5Hex,
    });
    expect(res.multipart).toBe(true);
    expect(freed.sort((a, b) => a - b)).toEqual([2 * MiB, 5 * MiB, 5 * MiB, 5 * MiB]);
    // Freed after the bucket had every byte: both objects are whole.
    expect(await objectDigest(s3.endpoint, 'ws/r/photo.jpg')).toEqual({
      size: photo.size,
      md5Hex: photo.md5Hex,
    });
    expect(await objectDigest(s3.endpoint, 'ws/r/video.mp4')).toEqual({
      size: video.size,
      md5Hex: video.md5Hex,
    });
  } finally {
    up.close();
  }
});

it('leaves a body the caller kept from the fingerprint as it is', async () => {
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
    expect(freed).toEqual([]);
    expect(kept.length).toBe(2 * MiB);
  } finally {
    up.close();
  }
});
