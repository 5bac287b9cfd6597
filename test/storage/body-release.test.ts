/**
 * A body the caller kept from the fingerprint is its own: the uploader sends
 * it and neither frees it nor gives it to the body pool (transfer.ts
 * release(); the bodies the uploader reads itself: body-pool.test.ts). Real
 * files, the real uploader, a real S3 server (s3rver); what is freed is seen
 * through ArrayBuffer.prototype.transfer, the one call that frees a body at
 * once.
 */
import { readFile } from 'node:fs/promises';
import { afterAll, afterEach, beforeAll, beforeEach, expect, it } from 'vitest';
import { createUploader } from '../../main/core/storage/index.js';
import { MiB, fixedTarget, makeFile, startS3rver, tempDir, type S3rverHandle } from './harness.js';

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
