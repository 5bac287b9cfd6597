/**
 * Writes to the embedded bucket do what they say, as S3 (and Ceph RGW, in
 * ceph/s3-tests) do, or are refused: conditional PutObject and
 * CompleteMultipartUpload (If-None-Match: * is how a careful client writes
 * exactly once), a repeated CompleteMultipartUpload answered as the first
 * one, the headers S3 keeps with an object (PUT and CreateMultipartUpload)
 * given back on GET and HEAD, and the flexible checksums current SDKs send
 * by default, verified. Through the AWS SDK v3 and raw signed requests.
 */
import type { S3Client } from '@aws-sdk/client-s3';
import {
  CompleteMultipartUploadCommand,
  CreateMultipartUploadCommand,
  GetObjectCommand,
  HeadObjectCommand,
  ListPartsCommand,
  PutObjectCommand,
  UploadPartCommand,
  type CompletedPart,
} from '@aws-sdk/client-s3';
import { createHash, randomBytes } from 'node:crypto';
import { crc32 } from 'node:zlib';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { getSts, md5Hex, s3From, startTemp, type Loose } from './helpers.js';
import { rawS3, sdkDefaultsClient } from './s3-raw.js';

const MiB = 1024 * 1024;
let s: Awaited<ReturnType<typeof startTemp>>;
let sts: Loose;
let client: S3Client;
let prefix: string;

beforeAll(async () => {
  s = await startTemp();
  sts = await getSts(s);
  client = s3From(sts);
  prefix = sts.object_key_prefix;
});
afterAll(async () => {
  client.destroy();
  await s.stop();
});

const path = (key: string): string => `/media/${key.split('/').map(encodeURIComponent).join('/')}`;
const put = (key: string, body: string | Buffer, headers: Record<string, string> = {}) =>
  rawS3(sts, { method: 'PUT', path: path(key), body, headers });
async function read(key: string): Promise<string> {
  const r = await rawS3(sts, { method: 'GET', path: path(key) });
  expect(r.status).toBe(200);
  return r.body;
}

/** A multipart upload of `parts` (all but the last 5 MiB), not completed. */
async function partsUploaded(
  Key: string,
  sizes: number[],
): Promise<{ UploadId: string; Parts: CompletedPart[] }> {
  const { UploadId } = await client.send(new CreateMultipartUploadCommand({ Bucket: sts.bucket, Key }));
  const Parts: CompletedPart[] = [];
  for (const [i, size] of sizes.entries()) {
    const out = await client.send(
      new UploadPartCommand({
        Bucket: sts.bucket,
        Key,
        UploadId,
        PartNumber: i + 1,
        Body: Buffer.alloc(size, i + 1),
      }),
    );
    Parts.push({ PartNumber: i + 1, ETag: out.ETag! });
  }
  return { UploadId: UploadId!, Parts };
}

describe('a conditional PutObject', () => {
  it('with If-None-Match: * writes a new key once and refuses to overwrite it (412), leaving it as it was', async () => {
    const key = `${prefix}/once/a.jpg`;
    expect((await put(key, 'first', { 'if-none-match': '*' })).status).toBe(200);
    const again = await put(key, 'second', { 'if-none-match': '*' });
    expect([again.status, again.code]).toEqual([412, 'PreconditionFailed']);
    expect(await read(key)).toBe('first');
    // The same through the SDK's own parameter.
    await expect(
      client.send(new PutObjectCommand({ Bucket: sts.bucket, Key: key, Body: 'third', IfNoneMatch: '*' })),
    ).rejects.toMatchObject({ name: 'PreconditionFailed', $metadata: { httpStatusCode: 412 } });
    expect(await read(key)).toBe('first');
  });

  it('lets exactly one of two writers racing with If-None-Match: * win', async () => {
    const key = `${prefix}/once/race.mp4`;
    const bodies = [randomBytes(2 * MiB), randomBytes(2 * MiB)];
    const answers = await Promise.all(bodies.map((b) => put(key, b, { 'if-none-match': '*' })));
    expect(answers.map((a) => a.status).sort()).toEqual([200, 412]);
    const winner = bodies[answers.findIndex((a) => a.status === 200)]!;
    const stored = await rawS3(sts, { method: 'GET', path: path(key) });
    expect(stored.bytes.equals(winner)).toBe(true);
  });

  it('with If-None-Match: <ETag> refuses only that ETag; If-Match needs the key (404) and its ETag (412)', async () => {
    const key = `${prefix}/once/b.jpg`;
    expect((await put(key, 'bar')).status).toBe(200);
    const etag = md5Hex('bar');
    expect((await put(key, 'zar', { 'if-none-match': etag })).status).toBe(412);
    expect((await put(key, 'zar', { 'if-none-match': '"ABCORZ"' })).status).toBe(200);
    expect(await read(key)).toBe('zar');
    const wrong = await put(key, 'car', { 'if-match': `"${etag}"` });
    expect([wrong.status, wrong.code]).toEqual([412, 'PreconditionFailed']);
    expect((await put(key, 'car', { 'if-match': `"${md5Hex('zar')}"` })).status).toBe(200);
    expect((await put(key, 'dar', { 'if-match': '*' })).status).toBe(200);
    expect(await read(key)).toBe('dar');
    const missing = await put(`${prefix}/once/none.jpg`, 'x', { 'if-match': '*' });
    expect([missing.status, missing.code]).toEqual([404, 'NoSuchKey']);
    expect((await rawS3(sts, { method: 'HEAD', path: path(`${prefix}/once/none.jpg`) })).status).toBe(404);
  });

  it('is refused before its body is read when the condition already fails (the client waiting for 100 Continue sends nothing)', async () => {
    const key = `${prefix}/once/c.jpg`;
    await put(key, 'kept');
    const r = await put(key, randomBytes(MiB), { 'if-none-match': '*', expect: '100-continue' });
    expect([r.status, r.code]).toEqual([412, 'PreconditionFailed']);
    expect(r.headers.connection).toBe('close');
  });
});

describe('CompleteMultipartUpload', () => {
  it('with If-None-Match: * refuses to replace an existing object, and the upload stays open', async () => {
    const Key = `${prefix}/mp/exists.mp4`;
    await put(Key, 'already here');
    const { UploadId, Parts } = await partsUploaded(Key, [5 * MiB, 10]);
    await expect(
      client.send(
        new CompleteMultipartUploadCommand({
          Bucket: sts.bucket,
          Key,
          UploadId,
          MultipartUpload: { Parts },
          IfNoneMatch: '*',
        }),
      ),
    ).rejects.toMatchObject({ name: 'PreconditionFailed' });
    expect(await read(Key)).toBe('already here');
    const listed = await client.send(new ListPartsCommand({ Bucket: sts.bucket, Key, UploadId }));
    expect(listed.Parts?.length).toBe(2);
    const done = await client.send(
      new CompleteMultipartUploadCommand({ Bucket: sts.bucket, Key, UploadId, MultipartUpload: { Parts } }),
    );
    expect(done.ETag).toMatch(/-2"$/);
  });

  it('answers a repeated Complete of the same parts as the first (200, same ETag); other parts or a replaced object: NoSuchUpload', async () => {
    const Key = `${prefix}/mp/twice.mp4`;
    const { UploadId, Parts } = await partsUploaded(Key, [5 * MiB, 1000]);
    const complete = (parts: CompletedPart[]) =>
      client.send(
        new CompleteMultipartUploadCommand({
          Bucket: sts.bucket,
          Key,
          UploadId,
          MultipartUpload: { Parts: parts },
        }),
      );
    const first = await complete(Parts);
    const second = await complete(Parts);
    expect(second).toMatchObject({ ETag: first.ETag, Key, Bucket: sts.bucket });
    // Even with If-None-Match: * (the object it made is the one there).
    const conditional = await client.send(
      new CompleteMultipartUploadCommand({
        Bucket: sts.bucket,
        Key,
        UploadId,
        MultipartUpload: { Parts },
        IfNoneMatch: '*',
      }),
    );
    expect(conditional.ETag).toBe(first.ETag);
    await expect(complete(Parts.slice(0, 1))).rejects.toMatchObject({ name: 'NoSuchUpload' });
    await put(Key, 'replaced by a single PUT');
    await expect(complete(Parts)).rejects.toMatchObject({ name: 'NoSuchUpload' });
  });
});

describe('headers kept with an object', () => {
  const kept = {
    CacheControl: 'max-age=3600',
    ContentDisposition: 'attachment; filename="DJI_0001.JPG"',
    ContentEncoding: 'gzip',
    ContentLanguage: 'fr',
    ContentType: 'image/jpeg',
    Expires: new Date('2030-01-02T03:04:05Z'),
    Metadata: { flight: 'A12', 'camera-serial': '1ZNBJ7R0010' },
  };

  it('are stored on PutObject and given back on GET and HEAD; a new PUT replaces them all', async () => {
    const Key = `${prefix}/meta/single.jpg`;
    await client.send(new PutObjectCommand({ Bucket: sts.bucket, Key, Body: 'x', ...kept }));
    for (const out of [
      await client.send(new HeadObjectCommand({ Bucket: sts.bucket, Key })),
      await client.send(new GetObjectCommand({ Bucket: sts.bucket, Key })),
    ]) {
      expect(out).toMatchObject(kept);
    }
    await client.send(new PutObjectCommand({ Bucket: sts.bucket, Key, Body: 'y', Metadata: { other: '1' } }));
    const head = await client.send(new HeadObjectCommand({ Bucket: sts.bucket, Key }));
    expect(head.Metadata).toEqual({ other: '1' });
    expect([head.CacheControl, head.ContentEncoding, head.Expires]).toEqual([
      undefined,
      undefined,
      undefined,
    ]);
  });

  it('are stored on CreateMultipartUpload and given back once completed', async () => {
    const Key = `${prefix}/meta/multi.mp4`;
    const { UploadId } = await client.send(
      new CreateMultipartUploadCommand({ Bucket: sts.bucket, Key, ...kept }),
    );
    const part = await client.send(
      new UploadPartCommand({ Bucket: sts.bucket, Key, UploadId, PartNumber: 1, Body: 'only part' }),
    );
    await client.send(
      new CompleteMultipartUploadCommand({
        Bucket: sts.bucket,
        Key,
        UploadId,
        MultipartUpload: { Parts: [{ PartNumber: 1, ETag: part.ETag! }] },
      }),
    );
    expect(await client.send(new HeadObjectCommand({ Bucket: sts.bucket, Key }))).toMatchObject(kept);
  });

  it('drops aws-chunked from Content-Encoding (it names the request framing), as S3 does', async () => {
    const key = `${prefix}/meta/encoding.txt`;
    for (const [sent, storedAs] of [
      ['gzip, aws-chunked', 'gzip'],
      ['aws-chunked, deflate, gzip', 'deflate, gzip'],
      ['aws-chunked', undefined],
    ] as const) {
      expect((await put(key, 'x', { 'content-encoding': sent })).status).toBe(200);
      const head = await rawS3(sts, { method: 'HEAD', path: path(key) });
      expect([sent, head.headers['content-encoding']]).toEqual([sent, storedAs]);
    }
  });

  it('keeps non-ASCII metadata byte for byte, signed as UTF-8 the way botocore sends it', async () => {
    const key = `${prefix}/meta/unicode.txt`;
    const r = await rawS3(sts, {
      method: 'PUT',
      path: path(key),
      body: 'x',
      headers: { 'x-amz-meta-meta1': 'Hello Worldé 🚁' },
      utf8Headers: true,
    });
    expect(r.status).toBe(200);
    const head = await rawS3(sts, { method: 'HEAD', path: path(key) });
    // Node reads header bytes as latin1: the UTF-8 bytes come back unchanged.
    expect(Buffer.from(head.headers['x-amz-meta-meta1'] as string, 'latin1').toString('utf8')).toBe(
      'Hello Worldé 🚁',
    );
  });

  it('refuses user metadata over 2 KiB with MetadataTooLarge, storing nothing', async () => {
    const key = `${prefix}/meta/too-big.txt`;
    const r = await put(key, 'x', { 'x-amz-meta-big': 'v'.repeat(2100) });
    expect([r.status, r.code]).toEqual([400, 'MetadataTooLarge']);
    expect((await rawS3(sts, { method: 'HEAD', path: path(key) })).status).toBe(404);
  });
});

describe('flexible checksums', () => {
  const b64 = (alg: 'sha1' | 'sha256', data: Buffer): string => createHash(alg).update(data).digest('base64');
  const crc = (data: Buffer): string => {
    const out = Buffer.alloc(4);
    out.writeUInt32BE(crc32(data) >>> 0);
    return out.toString('base64');
  };

  it('the AWS SDK with its default (CRC32) puts, and gets the checksum back with ChecksumMode ENABLED', async () => {
    const defaults = sdkDefaultsClient(sts);
    try {
      const Key = `${prefix}/sum/default.jpg`;
      const body = randomBytes(5000);
      const out = await defaults.send(new PutObjectCommand({ Bucket: sts.bucket, Key, Body: body }));
      expect(out.ChecksumCRC32).toBe(crc(body));
      const plain = await defaults.send(new HeadObjectCommand({ Bucket: sts.bucket, Key }));
      expect(plain.ChecksumCRC32).toBeUndefined();
      const head = await defaults.send(
        new HeadObjectCommand({ Bucket: sts.bucket, Key, ChecksumMode: 'ENABLED' }),
      );
      expect(head.ChecksumCRC32).toBe(crc(body));
    } finally {
      defaults.destroy();
    }
  });

  it('refuses a body that does not match its CRC32, SHA1 or SHA256 (BadDigest) and stores nothing', async () => {
    const body = Buffer.from('the body sent');
    const other = Buffer.from('another body');
    for (const [header, good, bad] of [
      ['x-amz-checksum-crc32', crc(body), crc(other)],
      ['x-amz-checksum-sha1', b64('sha1', body), b64('sha1', other)],
      ['x-amz-checksum-sha256', b64('sha256', body), b64('sha256', other)],
    ] as const) {
      const key = `${prefix}/sum/${header}.txt`;
      const refused = await put(key, body, { [header]: bad });
      expect([header, refused.status, refused.code]).toEqual([header, 400, 'BadDigest']);
      expect((await rawS3(sts, { method: 'HEAD', path: path(key) })).status).toBe(404);
      const ok = await put(key, body, { [header]: good });
      expect([header, ok.status, ok.headers[header]]).toEqual([header, 200, good]);
    }
    const invalid = await put(`${prefix}/sum/invalid.txt`, body, { 'x-amz-checksum-sha256': 'bad' });
    expect([invalid.status, invalid.code]).toEqual([400, 'InvalidRequest']);
  });

  it('keeps a part checksum, shows it in ListParts and holds the part list of Complete to it', async () => {
    const Key = `${prefix}/sum/parts.mp4`;
    const body = randomBytes(1000);
    const { UploadId } = await client.send(new CreateMultipartUploadCommand({ Bucket: sts.bucket, Key }));
    const part = await client.send(
      new UploadPartCommand({
        Bucket: sts.bucket,
        Key,
        UploadId,
        PartNumber: 1,
        Body: body,
        ChecksumAlgorithm: 'SHA256',
      }),
    );
    expect(part.ChecksumSHA256).toBe(b64('sha256', body));
    const listed = await client.send(new ListPartsCommand({ Bucket: sts.bucket, Key, UploadId }));
    expect(listed.Parts?.[0]?.ChecksumSHA256).toBe(b64('sha256', body));
    const complete = (ChecksumSHA256: string) =>
      client.send(
        new CompleteMultipartUploadCommand({
          Bucket: sts.bucket,
          Key,
          UploadId,
          MultipartUpload: { Parts: [{ PartNumber: 1, ETag: part.ETag!, ChecksumSHA256 }] },
        }),
      );
    await expect(complete(b64('sha256', Buffer.from('not it')))).rejects.toMatchObject({
      name: 'InvalidPart',
    });
    await complete(b64('sha256', body));
  });

  /** A multipart upload created with `checksum`, its parts sent with their checksums, completed. */
  async function withChecksum(Key: string, bodies: Buffer[], ChecksumType?: 'COMPOSITE' | 'FULL_OBJECT') {
    const { UploadId } = await client.send(
      new CreateMultipartUploadCommand({
        Bucket: sts.bucket,
        Key,
        ChecksumAlgorithm: 'CRC32',
        ...(ChecksumType ? { ChecksumType } : {}),
      }),
    );
    const Parts: CompletedPart[] = [];
    for (const [i, Body] of bodies.entries()) {
      const out = await client.send(
        new UploadPartCommand({
          Bucket: sts.bucket,
          Key,
          UploadId,
          PartNumber: i + 1,
          Body,
          ChecksumAlgorithm: 'CRC32',
        }),
      );
      Parts.push({ PartNumber: i + 1, ETag: out.ETag!, ChecksumCRC32: out.ChecksumCRC32! });
    }
    return client.send(
      new CompleteMultipartUploadCommand({ Bucket: sts.bucket, Key, UploadId, MultipartUpload: { Parts } }),
    );
  }

  it('a multipart upload created with a checksum algorithm (boto3 and the AWS CLI do so for big files) gets the COMPOSITE checksum of its parts', async () => {
    const Key = `${prefix}/sum/composite.mp4`;
    const bodies = [randomBytes(5 * MiB), randomBytes(1234)];
    const done = await withChecksum(Key, bodies);
    const composite = crc(Buffer.concat(bodies.map((b) => Buffer.from(crc(b), 'base64'))));
    expect([done.ChecksumCRC32, done.ChecksumType]).toEqual([`${composite}-2`, 'COMPOSITE']);
    const head = await client.send(
      new HeadObjectCommand({ Bucket: sts.bucket, Key, ChecksumMode: 'ENABLED' }),
    );
    expect([head.ChecksumCRC32, head.ChecksumType]).toEqual([`${composite}-2`, 'COMPOSITE']);
  });

  it('FULL_OBJECT CRC32: the checksum of the whole object, computed as the parts are put together', async () => {
    const Key = `${prefix}/sum/full.mp4`;
    const bodies = [randomBytes(5 * MiB), randomBytes(777)];
    const done = await withChecksum(Key, bodies, 'FULL_OBJECT');
    expect([done.ChecksumCRC32, done.ChecksumType]).toEqual([crc(Buffer.concat(bodies)), 'FULL_OBJECT']);
  });

  it('Complete holds the object to the checksum the client expects of it: BadDigest, and the upload stays open', async () => {
    const Key = `${prefix}/sum/expected.mp4`;
    const body = randomBytes(3000);
    const { UploadId } = await client.send(
      new CreateMultipartUploadCommand({ Bucket: sts.bucket, Key, ChecksumAlgorithm: 'SHA256' }),
    );
    const part = await client.send(
      new UploadPartCommand({
        Bucket: sts.bucket,
        Key,
        UploadId,
        PartNumber: 1,
        Body: body,
        ChecksumAlgorithm: 'SHA256',
      }),
    );
    const complete = (ChecksumSHA256: string) =>
      client.send(
        new CompleteMultipartUploadCommand({
          Bucket: sts.bucket,
          Key,
          UploadId,
          ChecksumSHA256,
          MultipartUpload: {
            Parts: [{ PartNumber: 1, ETag: part.ETag!, ChecksumSHA256: part.ChecksumSHA256! }],
          },
        }),
      );
    const composite = `${b64('sha256', Buffer.from(part.ChecksumSHA256!, 'base64'))}-1`;
    // COMPOSITE is known from the part list: refused at once, a plain 400 (not an <Error> in a 200).
    await expect(complete(`${b64('sha256', Buffer.from('other'))}-1`)).rejects.toMatchObject({
      name: 'BadDigest',
      $metadata: { httpStatusCode: 400 },
    });
    expect((await rawS3(sts, { method: 'HEAD', path: path(Key) })).status).toBe(404);
    expect((await complete(composite)).ChecksumSHA256).toBe(composite);
  });

  it('such an upload refuses a part without its checksum, and a part list without them', async () => {
    const Key = `${prefix}/sum/missing.mp4`;
    const { UploadId } = await client.send(
      new CreateMultipartUploadCommand({ Bucket: sts.bucket, Key, ChecksumAlgorithm: 'SHA256' }),
    );
    await expect(
      client.send(new UploadPartCommand({ Bucket: sts.bucket, Key, UploadId, PartNumber: 1, Body: 'x' })),
    ).rejects.toMatchObject({ name: 'InvalidRequest', $metadata: { httpStatusCode: 400 } });
    const part = await client.send(
      new UploadPartCommand({
        Bucket: sts.bucket,
        Key,
        UploadId,
        PartNumber: 1,
        Body: 'x',
        ChecksumAlgorithm: 'SHA256',
      }),
    );
    await expect(
      client.send(
        new CompleteMultipartUploadCommand({
          Bucket: sts.bucket,
          Key,
          UploadId,
          MultipartUpload: { Parts: [{ PartNumber: 1, ETag: part.ETag! }] },
        }),
      ),
    ).rejects.toMatchObject({ name: 'InvalidRequest' });
  });

  it('refuses the checksums it does not compute (501), and FULL_OBJECT with SHA (400, as S3)', async () => {
    const key = `${prefix}/sum/unsupported.txt`;
    for (const header of ['x-amz-checksum-crc32c', 'x-amz-checksum-crc64nvme']) {
      const r = await put(key, 'x', { [header]: 'AAAAAA==' });
      expect([header, r.status, r.code]).toEqual([header, 501, 'NotImplemented']);
    }
    await expect(
      client.send(
        new CreateMultipartUploadCommand({ Bucket: sts.bucket, Key: key, ChecksumAlgorithm: 'CRC32C' }),
      ),
    ).rejects.toMatchObject({ name: 'NotImplemented', $metadata: { httpStatusCode: 501 } });
    await expect(
      client.send(
        new CreateMultipartUploadCommand({
          Bucket: sts.bucket,
          Key: key,
          ChecksumAlgorithm: 'SHA256',
          ChecksumType: 'FULL_OBJECT',
        }),
      ),
    ).rejects.toMatchObject({ name: 'InvalidRequest', $metadata: { httpStatusCode: 400 } });
  });
});
