/**
 * The field case of a slow uplink (4G, Starlink) with the bandwidth limit
 * set: the agent's real uploader (BucketAccess: its bandwidth limiter, its
 * S3 uploader) sending several files at once to the real reference service
 * over HTTP. The service runs with short timeouts, the same rules as its
 * defaults (a connection must send its request's headers in time, an idle
 * keep-alive connection is closed), so the test takes seconds, not minutes.
 */
import { createHash } from 'node:crypto';
import diagnostics from 'node:diagnostics_channel';
import { rm } from 'node:fs/promises';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ApiClient } from '../../main/core/api/client.js';
import { parseConfig } from '../../main/core/config.js';
import { BucketAccess } from '../../main/core/sync/bucket.js';
import { getSts, startTemp } from '../service/helpers.js';
import { getObject } from '../support/harness.js';
import { createUploader } from '../../main/core/storage/index.js';
import { MiB, makeFile, startUplink, tempDir, type TempFile } from './harness.js';

const LIMIT_KIBPS = 128;
const FILE_BYTES = 200 * 1024;
const FILES = 6;
const AT_ONCE = 3;

let svc: Awaited<ReturnType<typeof startTemp>>;
let dir: string;
let files: TempFile[];
beforeAll(async () => {
  svc = await startTemp({
    // 1.5 s for a connection's headers, 1 s (plus Node's 1 s) for an idle keep-alive connection.
    limits: { headersTimeoutMs: 1500, keepAliveTimeoutMs: 1000, idleTimeoutMs: 3000 },
  });
  dir = await tempDir();
  files = await Promise.all(
    Array.from({ length: FILES }, (_, i) => makeFile(dir, `DJI_000${i + 1}.JPG`, FILE_BYTES)),
  );
});
afterAll(async () => {
  await svc.stop();
  await rm(dir, { recursive: true, force: true });
});

/** Uploads `list` with `atOnce` uploads in flight, counting the PUTs started; each outcome is 'uploaded' or the error's message. */
async function uploadAll(
  bucket: BucketAccess,
  list: Array<{ file: TempFile; key: string }>,
  atOnce: number,
): Promise<{ outcomes: string[]; puts: number }> {
  const target = await bucket.sts.get();
  const up = bucket.uploaderFor(target.provider);
  // Every PUT the uploader starts: one per file means none had to be sent again.
  let puts = 0;
  const onRequest = (m: unknown): void => {
    if ((m as { request: { method: string } }).request.method === 'PUT') puts++;
  };
  diagnostics.subscribe('undici:request:create', onRequest);
  const outcomes: string[] = [];
  try {
    const next = list.entries();
    const lane = async (): Promise<void> => {
      for (const [i, { file, key }] of next) {
        outcomes[i] = await up
          .upload({ filePath: file.path, size: file.size, key, md5Hex: file.md5Hex })
          .then(
            () => 'uploaded',
            (err: Error) => err.message,
          );
      }
    };
    await Promise.all(Array.from({ length: atOnce }, lane));
  } finally {
    diagnostics.unsubscribe('undici:request:create', onRequest);
  }
  return { outcomes, puts };
}

describe('a slow uplink with the bandwidth limit set', () => {
  it(`${FILES} files, ${AT_ONCE} at a time, at ${LIMIT_KIBPS} KiB/s: each uploaded by its first PUT, none cut`, async () => {
    const api = new ApiClient({ baseUrl: svc.baseUrl, workspaceId: svc.workspaceId, token: svc.token });
    const bucket = new BucketAccess(
      api,
      parseConfig({ bandwidthLimitKiBps: LIMIT_KIBPS, concurrency: { files: AT_ONCE, parts: 2 } }),
    );
    const target = await bucket.sts.get();
    const key = (i: number): string => `${target.objectKeyPrefix}/slow/${i}.jpg`;
    const started = Date.now();
    const { outcomes, puts } = await uploadAll(
      bucket,
      files.map((file, i) => ({ file, key: key(i) })),
      AT_ONCE,
    ).finally(() => bucket.close());
    const elapsed = Date.now() - started;
    expect(outcomes).toEqual(Array(FILES).fill('uploaded'));
    expect(puts).toBe(FILES);
    // The limit held (the limiter may start with one second's worth at once): this was the slow case.
    const total = FILES * FILE_BYTES;
    const rate = LIMIT_KIBPS * 1024;
    expect(elapsed).toBeGreaterThanOrEqual(((total - rate) / rate) * 1000 * 0.95);
    const sts = await getSts(svc);
    for (const [i, f] of files.entries()) {
      const body = await getObject(sts, key(i));
      expect(createHash('md5').update(body).digest('hex')).toBe(f.md5Hex);
    }
  });

  it('the most uploads at once the settings allow (16 files of 16 parts): no more connections than the bucket takes from one address', async () => {
    // 100 files at once, each sent in two turns of the limit (2 KiB at 64 KiB/s), so that all are
    // under way together; the bucket keeps its default of 64 connections per client address.
    const small = await Promise.all(
      Array.from({ length: 100 }, (_, i) => makeFile(dir, `small-${i}.jpg`, 4 * 1024)),
    );
    // A service with the default limits (30 s of silence before a connection is cut, and so on).
    const plain = await startTemp();
    const api = new ApiClient({ baseUrl: plain.baseUrl, workspaceId: plain.workspaceId, token: plain.token });
    const bucket = new BucketAccess(
      api,
      parseConfig({ bandwidthLimitKiBps: 64, concurrency: { files: 16, parts: 16 } }),
    );
    try {
      const target = await bucket.sts.get();
      const { outcomes, puts } = await uploadAll(
        bucket,
        small.map((file, i) => ({ file, key: `${target.objectKeyPrefix}/many/${i}.jpg` })),
        small.length,
      );
      expect(outcomes).toEqual(Array(small.length).fill('uploaded'));
      expect(puts).toBe(small.length);
    } finally {
      bucket.close();
      await plain.stop();
    }
  });

  it('no bandwidth limit, one part taking longer than the uploader waits without progress: it keeps going and arrives', async () => {
    // One part of 12 MiB up a 1 MiB/s uplink: 12 s, where the uploader gives a request up after 8 s
    // without progress (120 s by default: the same race with a 64 MiB part on 4 Mbit/s).
    const big = await makeFile(dir, 'DJI_0007.MP4', 12 * MiB);
    const api = new ApiClient({ baseUrl: svc.baseUrl, workspaceId: svc.workspaceId, token: svc.token });
    const bucket = new BucketAccess(api, parseConfig({}));
    const direct = new URL((await bucket.sts.get()).endpoint);
    const uplink = await startUplink({ host: direct.hostname, port: Number(direct.port) }, MiB);
    const up = createUploader('minio', {
      target: async (o) => ({ ...(await bucket.sts.get(o)), endpoint: uplink.endpoint }),
      multipartThreshold: MiB,
      partSize: 12 * MiB,
      stallTimeoutMs: 8000,
    });
    let puts = 0;
    const onRequest = (m: unknown): void => {
      if ((m as { request: { method: string } }).request.method === 'PUT') puts++;
    };
    diagnostics.subscribe('undici:request:create', onRequest);
    try {
      const target = await bucket.sts.get();
      const key = `${target.objectKeyPrefix}/uplink/DJI_0007.MP4`;
      const res = await up
        .upload({ filePath: big.path, size: big.size, key, md5Hex: big.md5Hex })
        .catch((err: Error) => err.message);
      expect(res).toMatchObject({ multipart: true, bytesSent: big.size });
      // Sent once: the one transparent retry of a part was not needed.
      expect(puts).toBe(1);
      const body = await getObject(await getSts(svc), key);
      expect(createHash('md5').update(body).digest('hex')).toBe(big.md5Hex);
    } finally {
      diagnostics.unsubscribe('undici:request:create', onRequest);
      up.close();
      bucket.close();
      await uplink.close();
    }
  });
});
