/**
 * Memory stays bounded by partConcurrency × partSize, whatever the file size:
 * a 200 MiB multipart upload to a real s3rver must not grow the process
 * (which also runs s3rver) by anything close to the file size.
 */
import { rm } from 'node:fs/promises';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { createUploader } from '../../main/core/storage/index.js';
import { MiB, fixedTarget, makeFile, objectDigest, startS3rver, tempDir } from './harness.js';
import type { S3rverHandle, TempFile } from './harness.js';

let s3: S3rverHandle;
let dir: string;
let file: TempFile;

beforeAll(async () => {
  s3 = await startS3rver();
  dir = await tempDir();
  file = await makeFile(dir, 'long-flight.mp4', 200 * MiB);
});
afterAll(async () => {
  await s3.close();
  await rm(dir, { recursive: true, force: true });
});

it('a 200 MiB multipart upload keeps RSS growth well under the file size', async () => {
  const up = createUploader('minio', {
    target: fixedTarget(s3.endpoint),
    partSize: 8 * MiB,
    partConcurrency: 4,
  });
  const baseline = process.memoryUsage().rss;
  let peak = baseline;
  const sampler = setInterval(() => {
    peak = Math.max(peak, process.memoryUsage().rss);
  }, 10);
  try {
    const res = await up.upload({
      filePath: file.path,
      size: file.size,
      key: 'ws/mem/long-flight.mp4',
      md5Hex: file.md5Hex,
    });
    expect(res).toMatchObject({ multipart: true, bytesSent: file.size });
  } finally {
    clearInterval(sampler);
    up.close();
  }
  const growthMiB = (peak - baseline) / MiB;
  // 4 parts × 8 MiB in flight, plus socket and SDK buffers: loose bound, far from 200 MiB.
  expect(growthMiB).toBeLessThan(160);
  expect(await objectDigest(s3.endpoint, 'ws/mem/long-flight.mp4')).toEqual({
    size: file.size,
    md5Hex: file.md5Hex,
  });
});
