/**
 * transfer(): the bodies it reads from the file are freed once their
 * request is answered. The bucket here is a StorageBackend that checks each
 * body against its Content-MD5 and keeps the Buffer it was handed, so that
 * the test can look at it afterwards (the S3 wire itself is s3-put.test.ts's).
 */
import { createHash, randomBytes } from 'node:crypto';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { transfer, type StorageBackend } from './transfer.js';
import type { FinishedPart, UploadRequest } from './types.js';

const MiB = 1024 * 1024;
let tmp: string;

beforeAll(async () => {
  tmp = await mkdtemp(join(tmpdir(), 'dms-transfer-'));
});
afterAll(async () => {
  await rm(tmp, { recursive: true, force: true });
});

/** A bucket that takes every request, checks its body's MD5, and keeps the Buffers handed to it. */
function recordingBucket(): StorageBackend & { bodies: Buffer[] } {
  const bodies: Buffer[] = [];
  const take = (body: Buffer, md5: string): void => {
    expect(createHash('md5').update(body).digest('base64')).toBe(md5);
    bodies.push(body);
  };
  return {
    bodies,
    putObject: (_req, body, md5, onChunk) => {
      take(body, md5);
      onChunk(body.length);
      return Promise.resolve({ etag: 'e', written: true });
    },
    createMultipart: () => Promise.resolve('upload-1'),
    uploadPart: (_req, _id, n, body, md5) => {
      take(body, md5);
      return Promise.resolve(`etag-${n}`);
    },
    listParts: (): Promise<FinishedPart[]> => Promise.resolve([]),
    completeMultipart: () => Promise.resolve('e-multi'),
  };
}

async function cardFile(name: string, size: number): Promise<UploadRequest> {
  const filePath = join(tmp, name);
  const data = randomBytes(size);
  await writeFile(filePath, data);
  return { filePath, size, key: `ws/${name}`, md5Hex: createHash('md5').update(data).digest('hex') };
}

describe('transfer', () => {
  it('frees each body read from the file once its request is answered (a photo, the parts of a video)', async () => {
    const cfg = { multipartThreshold: 16 * MiB, partSize: 5 * MiB, partConcurrency: 2 };
    const photo = recordingBucket();
    await transfer(photo, await cardFile('photo.jpg', 5 * MiB + 3), cfg);
    const video = recordingBucket();
    await transfer(video, await cardFile('video.mp4', 17 * MiB), cfg);
    expect(photo.bodies.map((b) => b.length)).toEqual([0]);
    expect(video.bodies.map((b) => b.length)).toEqual([0, 0, 0, 0]);
    // Freed, not waiting for a garbage collection: the memory of each is gone.
    for (const b of [...photo.bodies, ...video.bodies]) expect(b.buffer.byteLength).toBe(0);
  });

  it('leaves a body the caller kept from the fingerprint as it is', async () => {
    const req = await cardFile('kept.jpg', 2 * MiB);
    const kept = await readFile(req.filePath);
    const bucket = recordingBucket();
    await transfer(
      bucket,
      { ...req, content: kept },
      { multipartThreshold: 16 * MiB, partSize: 5 * MiB, partConcurrency: 2 },
    );
    expect(bucket.bodies).toHaveLength(1);
    expect(kept.length).toBe(2 * MiB);
  });
});
