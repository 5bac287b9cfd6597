/**
 * The legitimate flows against the embedded bucket, with the credentials of
 * the service's sts endpoint: the agent's own uploader (single PUT,
 * multipart, resume reconciled through the bucket's real ListParts, an
 * upload id the bucket does not know), and the AWS SDK v3 (put, get with a
 * range, head, list with pagination and a delimiter, multipart with ListParts
 * and Abort, presigned URLs). rclone: rclone.peer.test.ts.
 */
import type { S3Client } from '@aws-sdk/client-s3';
import {
  AbortMultipartUploadCommand,
  CreateMultipartUploadCommand,
  GetObjectCommand,
  HeadObjectCommand,
  ListObjectsV2Command,
  ListPartsCommand,
  PutObjectCommand,
  UploadPartCommand,
} from '@aws-sdk/client-s3';
import { randomBytes } from 'node:crypto';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { DmsError } from '../../main/core/errors.js';
import { createUploader } from '../../main/core/storage/index.js';
import type { MultipartState, UploaderOptions } from '../../main/core/storage/types.js';
import { StsCache } from '../../main/core/sync/sts-cache.js';
import { call, getSts, md5Hex, paths, removeDir, s3From, startTemp, tempDir, type Loose } from './helpers.js';
import { sdkDefaultsClient, send, signer } from './s3-raw.js';

const MiB = 1024 * 1024;
let s: Awaited<ReturnType<typeof startTemp>>;
let dir: string;
let big: { path: string; size: number; md5Hex: string };
let prefix: string;

beforeAll(async () => {
  s = await startTemp();
  dir = tempDir();
  const content = randomBytes(20 * MiB + 123); // 5 parts of 5 MiB
  big = { path: join(dir, 'flight.mp4'), size: content.length, md5Hex: md5Hex(content) };
  writeFileSync(big.path, content);
  prefix = s.bucket.objectKeyPrefix;
});
afterAll(async () => {
  await s.stop();
  removeDir(dir);
});

const uploader = (opts: Partial<UploaderOptions> = {}) =>
  createUploader('minio', {
    // The engine's own path from the sts endpoint to a bucket target.
    target: new StsCache(() => getSts(s)).get,
    partSize: 5 * MiB,
    multipartThreshold: 8 * MiB,
    ...opts,
  });

/** The callback accepts a fingerprint only if it is the stored object's MD5. */
async function storedMd5Is(key: string, md5: string): Promise<boolean> {
  const r = await call(s, 'POST', paths(s.workspaceId).callback, {
    body: { result: 0, name: key.split('/').pop(), object_key: key, fingerprint: md5 },
  });
  return r.body.code === 0;
}

describe("the agent's uploader", () => {
  it('uploads a small file with one PUT and a big one in parts; exists() sees them', async () => {
    const small = join(dir, 'DJI_0001.JPG');
    writeFileSync(small, 'a small photo');
    const up = uploader();
    try {
      const one = await up.upload({
        filePath: small,
        size: 13,
        key: `${prefix}/a/DJI_0001.JPG`,
        md5Hex: md5Hex('a small photo'),
      });
      expect(one).toMatchObject({ multipart: false, bytesSent: 13, etag: `"${md5Hex('a small photo')}"` });
      const multi = await up.upload({ filePath: big.path, size: big.size, key: `${prefix}/a/flight.mp4` });
      expect(multi).toMatchObject({ multipart: true, bytesSent: big.size });
      expect(multi.etag).toMatch(/^"[0-9a-f]{32}-5"$/);
      expect(await up.exists(`${prefix}/a/flight.mp4`)).toBe(true);
      expect(await up.exists(`${prefix}/a/missing.mp4`)).toBe(false);
    } finally {
      up.close();
    }
    expect(await storedMd5Is(`${prefix}/a/DJI_0001.JPG`, md5Hex('a small photo'))).toBe(true);
    expect(await storedMd5Is(`${prefix}/a/flight.mp4`, big.md5Hex)).toBe(true);
  });

  it('resumes after an interruption, reconciling its stored parts with the bucket through ListParts', async () => {
    const key = `${prefix}/resume/flight.mp4`;
    const state: MultipartState = { uploadId: '', partSize: 0, parts: [] };
    const ac = new AbortController();
    const first = uploader({ partConcurrency: 1 });
    const err = await first
      .upload({
        filePath: big.path,
        size: big.size,
        key,
        signal: ac.signal,
        onMultipartStarted: (st) => void Object.assign(state, st),
        onPartDone: (p) => {
          state.parts.push(p);
          if (state.parts.length === 3) ac.abort();
        },
      })
      .catch((e: unknown) => e);
    first.close();
    expect((err as DmsError).kind).toBe('cancelled');
    expect(state.parts.map((p) => p.partNumber)).toEqual([1, 2, 3]);

    // The queue lost part 2 (crash after the ack) and believes in a part 4 the bucket never got.
    const stored: MultipartState = {
      ...state,
      parts: [
        ...state.parts.filter((p) => p.partNumber !== 2),
        { partNumber: 4, etag: '"deadbeef"', size: 5 * MiB },
      ],
    };
    const done: number[] = [];
    const second = uploader();
    try {
      const res = await second.upload({
        filePath: big.path,
        size: big.size,
        key,
        resume: stored,
        onPartDone: (p) => void done.push(p.partNumber),
      });
      // Parts 4 and 5 sent; 2 found in the bucket and recorded; 1 and 3 reused.
      expect(res.bytesSent).toBe(big.size - 3 * 5 * MiB);
      expect(done.sort()).toEqual([2, 4, 5]);
    } finally {
      second.close();
    }
    expect(await storedMd5Is(key, big.md5Hex)).toBe(true);
  });

  it('starts afresh when the bucket does not know the stored upload id', async () => {
    const key = `${prefix}/resume/unknown.mp4`;
    const events: string[] = [];
    const up = uploader();
    try {
      const res = await up.upload({
        filePath: big.path,
        size: big.size,
        key,
        resume: {
          uploadId: 'not-one-of-ours',
          partSize: 5 * MiB,
          parts: [{ partNumber: 1, etag: '"x"', size: 5 * MiB }],
        },
        onMultipartReset: () => void events.push('reset'),
        onMultipartStarted: () => void events.push('started'),
      });
      expect(events).toEqual(['reset', 'started']);
      expect(res.bytesSent).toBe(big.size);
    } finally {
      up.close();
    }
    expect(await storedMd5Is(key, big.md5Hex)).toBe(true);
  });
});

describe("the agent's conditional writes (If-None-Match: *)", () => {
  const sdk = async () => s3From(await getSts(s));

  it('a PUT sent again (its first answer lost) finds its own object and leaves it as it was', async () => {
    const file = join(dir, 'again.JPG');
    writeFileSync(file, 'a photo sent twice');
    const key = `${prefix}/again/again.JPG`;
    const up = uploader();
    const client = await sdk();
    try {
      const req = { filePath: file, size: 18, key, md5Hex: md5Hex('a photo sent twice') };
      const first = await up.upload(req);
      const before = await client.send(new HeadObjectCommand({ Bucket: 'media', Key: key }));
      // Last-Modified has whole seconds: a second write would show.
      await new Promise((r) => setTimeout(r, 1100));
      const second = await up.upload(req);
      expect(second.etag).toBe(first.etag);
      const after = await client.send(new HeadObjectCommand({ Bucket: 'media', Key: key }));
      expect(after.LastModified).toEqual(before.LastModified);
    } finally {
      up.close();
      client.destroy();
    }
  });

  it('a PUT does not replace another object found at its key; the error says so and is not retried', async () => {
    const file = join(dir, 'taken.JPG');
    writeFileSync(file, 'our photo');
    const key = `${prefix}/taken/taken.JPG`;
    const client = await sdk();
    const up = uploader();
    try {
      await client.send(new PutObjectCommand({ Bucket: 'media', Key: key, Body: 'another writer' }));
      const err = (await up
        .upload({ filePath: file, size: 9, key, md5Hex: md5Hex('our photo') })
        .catch((e: unknown) => e)) as DmsError;
      expect(err).toMatchObject({ kind: 'storage', retryable: false, serverCode: 'PreconditionFailed' });
      expect(err.plain).toMatch(/left as it is/);
      const kept = await client.send(new GetObjectCommand({ Bucket: 'media', Key: key }));
      expect(await kept.Body!.transformToString()).toBe('another writer');
    } finally {
      up.close();
      client.destroy();
    }
  });

  it('a multipart Complete does not replace an object another writer completed while the parts went up', async () => {
    const key = `${prefix}/taken/flight.mp4`;
    const client = await sdk();
    const up = uploader();
    try {
      const err = (await up
        .upload({
          filePath: big.path,
          size: big.size,
          key,
          // Another writer finishes first, while this upload is under way.
          onMultipartStarted: async () =>
            void (await client.send(new PutObjectCommand({ Bucket: 'media', Key: key, Body: 'first' }))),
        })
        .catch((e: unknown) => e)) as DmsError;
      expect(err).toMatchObject({ kind: 'storage', retryable: false, serverCode: 'PreconditionFailed' });
      const kept = await client.send(new GetObjectCommand({ Bucket: 'media', Key: key }));
      expect(await kept.Body!.transformToString()).toBe('first');
    } finally {
      up.close();
      client.destroy();
    }
  });
});

describe('the AWS SDK v3', () => {
  let sts: Loose;
  let client: S3Client;
  beforeAll(async () => {
    sts = await getSts(s);
    client = s3From(sts);
  });
  afterAll(() => client.destroy());

  it('puts, heads, gets (whole and a range) and lists with pagination and a delimiter', async () => {
    const body = randomBytes(3000);
    const keys = [
      'list/a.jpg',
      'list/b.jpg',
      'list/sub/c.jpg',
      'list/sub/d.jpg',
      'list/é + ü.jpg',
      'list/🚁.jpg',
    ];
    for (const k of keys) {
      await client.send(
        new PutObjectCommand({
          Bucket: sts.bucket,
          Key: `${prefix}/${k}`,
          Body: body,
          ContentType: 'image/jpeg',
        }),
      );
    }
    const head = await client.send(
      new HeadObjectCommand({ Bucket: sts.bucket, Key: `${prefix}/list/a.jpg` }),
    );
    expect(head).toMatchObject({ ContentLength: 3000, ContentType: 'image/jpeg', ETag: `"${md5Hex(body)}"` });
    const got = await client.send(
      new GetObjectCommand({ Bucket: sts.bucket, Key: `${prefix}/list/é + ü.jpg` }),
    );
    expect(Buffer.from(await got.Body!.transformToByteArray()).equals(body)).toBe(true);
    const part = await client.send(
      new GetObjectCommand({ Bucket: sts.bucket, Key: `${prefix}/list/a.jpg`, Range: 'bytes=100-199' }),
    );
    expect(part.ContentRange).toBe('bytes 100-199/3000');
    expect(Buffer.from(await part.Body!.transformToByteArray()).equals(body.subarray(100, 200))).toBe(true);

    const seen: string[] = [];
    let token: string | undefined;
    do {
      const page = await client.send(
        new ListObjectsV2Command({
          Bucket: sts.bucket,
          Prefix: `${prefix}/list/`,
          MaxKeys: 2,
          ContinuationToken: token,
        }),
      );
      seen.push(...(page.Contents ?? []).map((o) => o.Key!.slice(prefix.length + 1)));
      token = page.NextContinuationToken;
    } while (token);
    expect(seen).toEqual([...keys].sort((a, b) => Buffer.compare(Buffer.from(a), Buffer.from(b))));
    const folders = await client.send(
      new ListObjectsV2Command({ Bucket: sts.bucket, Prefix: `${prefix}/list/`, Delimiter: '/' }),
    );
    expect(folders.CommonPrefixes?.map((p) => p.Prefix)).toEqual([`${prefix}/list/sub/`]);
    expect(folders.Contents?.map((o) => o.Key)).toEqual(
      ['list/a.jpg', 'list/b.jpg', 'list/é + ü.jpg', 'list/🚁.jpg'].map((k) => `${prefix}/${k}`),
    );
  });

  it('lists the parts of a multipart upload and aborts it', async () => {
    const Key = `${prefix}/abort/x.mp4`;
    const { UploadId } = await client.send(new CreateMultipartUploadCommand({ Bucket: sts.bucket, Key }));
    for (const PartNumber of [1, 2]) {
      await client.send(
        new UploadPartCommand({
          Bucket: sts.bucket,
          Key,
          UploadId,
          PartNumber,
          Body: Buffer.alloc(1000, PartNumber),
        }),
      );
    }
    const listed = await client.send(new ListPartsCommand({ Bucket: sts.bucket, Key, UploadId }));
    expect(listed.Parts?.map((p) => [p.PartNumber, p.Size, p.ETag])).toEqual([
      [1, 1000, `"${md5Hex(Buffer.alloc(1000, 1))}"`],
      [2, 1000, `"${md5Hex(Buffer.alloc(1000, 2))}"`],
    ]);
    await client.send(new AbortMultipartUploadCommand({ Bucket: sts.bucket, Key, UploadId }));
    await expect(
      client.send(new ListPartsCommand({ Bucket: sts.bucket, Key, UploadId })),
    ).rejects.toMatchObject({
      name: 'NoSuchUpload',
    });
  });

  it('accepts presigned URLs, refuses them tampered with or expired', async () => {
    const endpoint = new URL(sts.endpoint);
    const presign = (method: string, key: string, expiresIn: number) =>
      signer(sts).presign(
        {
          method,
          protocol: 'http:',
          hostname: endpoint.hostname,
          port: Number(endpoint.port),
          path: `/media/${key}`,
          query: {},
          // As the SDK's S3 presigner does: the URL signs no payload.
          headers: { host: endpoint.host, 'x-amz-content-sha256': 'UNSIGNED-PAYLOAD' },
        },
        { expiresIn },
      );
    const url = (r: { path: string; query?: Record<string, string | string[] | null> }) =>
      `${r.path}?${new URLSearchParams(r.query as Record<string, string>).toString()}`;
    const key = `${prefix}/presigned.txt`;
    const put = await presign('PUT', key, 60);
    const body = Buffer.from('sent with a presigned URL');
    const headers = { host: endpoint.host, 'content-length': String(body.length) };
    const sent = await send(endpoint, 'PUT', url(put), headers, body);
    expect([sent.status, sent.body]).toEqual([200, '']);
    const get = await presign('GET', key, 60);
    expect((await send(endpoint, 'GET', url(get), { host: endpoint.host })).body).toBe(body.toString());

    const tampered = url(get).replace('presigned.txt', 'other.txt');
    const t = await send(endpoint, 'GET', tampered, { host: endpoint.host });
    expect([t.status, t.code]).toEqual([403, 'SignatureDoesNotMatch']);
    const short = await presign('GET', key, 1);
    await new Promise((r) => setTimeout(r, 2100));
    const late = await send(endpoint, 'GET', url(short), { host: endpoint.host });
    expect([late.status, late.code]).toEqual([403, 'AccessDenied']);
    expect(late.body).toContain('expired');
  });

  it('refuses an aws-chunked body (the SDK default checksums) with a clear NotImplemented', async () => {
    const defaults = sdkDefaultsClient(sts);
    try {
      const { Readable } = await import('node:stream');
      const err = await defaults
        .send(
          new PutObjectCommand({
            Bucket: sts.bucket,
            Key: `${prefix}/chunked.bin`,
            Body: Readable.from([Buffer.from('abc')]),
            ContentLength: 3,
          }),
        )
        .catch((e: unknown) => e as Error);
      expect((err as Error).name).toBe('NotImplemented');
      expect((err as Error).message).toContain('aws-chunked');
    } finally {
      defaults.destroy();
    }
  });
});
