/**
 * What the embedded bucket does not do, it refuses out loud with S3's own
 * error and status, and stores nothing: server-side encryption (SSE-S3,
 * SSE-KMS, SSE-C), object lock, ACLs other than "only the owner", tags,
 * other storage classes, website redirects, checking the bucket owner,
 * requester pays, and any x-amz-* header it does not know, as a header or
 * as a presigned URL's query parameter. Also conditions and ranges on
 * operations that have none. The table is the one of docs/embedded-bucket.md.
 */
import { CreateMultipartUploadCommand, PutObjectCommand, type S3Client } from '@aws-sdk/client-s3';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { getSts, s3From, startTemp, type Loose } from './helpers.js';
import { rawS3, send, signer } from './s3-raw.js';

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
const head = async (key: string): Promise<number> =>
  (await rawS3(sts, { method: 'HEAD', path: path(key) })).status;

/** [header, value, status, code] of PutObject. */
const REFUSED: [string, string, number, string][] = [
  ['x-amz-server-side-encryption', 'AES256', 501, 'NotImplemented'],
  ['x-amz-server-side-encryption', 'aws:kms', 501, 'NotImplemented'],
  ['x-amz-server-side-encryption-aws-kms-key-id', 'testkey-1', 501, 'NotImplemented'],
  ['x-amz-server-side-encryption-customer-algorithm', 'AES256', 501, 'NotImplemented'],
  [
    'x-amz-server-side-encryption-customer-key',
    'pO3upElrwuEXSoFwCfnZPdSsmt/xWeFa0N9KgDijwVs=',
    501,
    'NotImplemented',
  ],
  ['x-amz-object-lock-mode', 'GOVERNANCE', 400, 'InvalidRequest'],
  ['x-amz-object-lock-retain-until-date', '2030-01-01T00:00:00Z', 400, 'InvalidRequest'],
  ['x-amz-object-lock-legal-hold', 'ON', 400, 'InvalidRequest'],
  ['x-amz-acl', 'public-read', 400, 'AccessControlListNotSupported'],
  ['x-amz-acl', 'authenticated-read', 400, 'AccessControlListNotSupported'],
  [
    'x-amz-grant-read',
    'uri="http://acs.amazonaws.com/groups/global/AllUsers"',
    400,
    'AccessControlListNotSupported',
  ],
  ['x-amz-grant-full-control', 'id=someone', 400, 'AccessControlListNotSupported'],
  ['x-amz-tagging', 'project=a', 501, 'NotImplemented'],
  ['x-amz-storage-class', 'GLACIER', 400, 'InvalidStorageClass'],
  ['x-amz-website-redirect-location', '/other', 501, 'NotImplemented'],
  ['x-amz-expected-bucket-owner', '123456789012', 501, 'NotImplemented'],
  ['x-amz-request-payer', 'requester', 501, 'NotImplemented'],
  ['x-amz-copy-source-range', 'bytes=0-1', 501, 'NotImplemented'],
  ['x-amz-something-new', '1', 501, 'NotImplemented'],
  ['if-modified-since', 'Sat, 29 Oct 1994 19:43:31 GMT', 501, 'NotImplemented'],
  ['range', 'bytes=0-1', 501, 'NotImplemented'],
  ['if-range', '"x"', 501, 'NotImplemented'],
];

describe('PutObject with a header the bucket does not honour', () => {
  it('is refused with S3 error and status, and nothing is stored', async () => {
    for (const [i, [header, value, status, code]] of REFUSED.entries()) {
      const key = `${prefix}/refused/${i}.txt`;
      const r = await rawS3(sts, { method: 'PUT', path: path(key), body: 'x', headers: { [header]: value } });
      expect([header, value, r.status, r.code]).toEqual([header, value, status, code]);
      expect(r.body).toContain(`<RequestId>${r.headers['x-amz-request-id'] as string}</RequestId>`);
      expect(await head(key)).toBe(404);
    }
  });

  it('is refused the same when the header comes as a presigned URL query parameter', async () => {
    const endpoint = new URL(sts.endpoint);
    const key = `${prefix}/refused/presigned.txt`;
    const signed = await signer(sts).presign(
      {
        method: 'PUT',
        protocol: 'http:',
        hostname: endpoint.hostname,
        port: Number(endpoint.port),
        path: path(key),
        query: { 'x-amz-acl': 'public-read' },
        // As the SDK's S3 presigner does: the URL signs no payload.
        headers: { host: endpoint.host, 'x-amz-content-sha256': 'UNSIGNED-PAYLOAD' },
      },
      { expiresIn: 60 },
    );
    const url = `${signed.path}?${new URLSearchParams(signed.query as Record<string, string>).toString()}`;
    const r = await send(
      endpoint,
      'PUT',
      url,
      { host: endpoint.host, 'content-length': '1' },
      Buffer.from('x'),
    );
    expect([r.status, r.code]).toEqual([400, 'AccessControlListNotSupported']);
    expect(await head(key)).toBe(404);
  });

  it('accepts what says what the bucket does anyway: a private ACL, the STANDARD class', async () => {
    for (const [header, value] of [
      ['x-amz-acl', 'private'],
      ['x-amz-acl', 'bucket-owner-full-control'],
      ['x-amz-storage-class', 'STANDARD'],
    ]) {
      const key = `${prefix}/accepted/${value}.txt`;
      const r = await rawS3(sts, {
        method: 'PUT',
        path: path(key),
        body: 'x',
        headers: { [header!]: value! },
      });
      expect([header, r.status]).toEqual([header, 200]);
    }
  });
});

describe('other operations', () => {
  it('CreateMultipartUpload refuses encryption, tags and object lock through the SDK', async () => {
    const Key = `${prefix}/refused/multi.mp4`;
    for (const [params, name] of [
      [{ ServerSideEncryption: 'AES256' }, 'NotImplemented'],
      [{ Tagging: 'a=b' }, 'NotImplemented'],
      [{ ObjectLockMode: 'GOVERNANCE', ObjectLockRetainUntilDate: new Date('2030-01-01') }, 'InvalidRequest'],
      [{ ACL: 'public-read' }, 'AccessControlListNotSupported'],
    ] as const) {
      await expect(
        client.send(new CreateMultipartUploadCommand({ Bucket: sts.bucket, Key, ...params })),
      ).rejects.toMatchObject({ name });
    }
    await expect(
      client.send(
        new PutObjectCommand({
          Bucket: sts.bucket,
          Key,
          Body: 'x',
          SSECustomerAlgorithm: 'AES256',
          SSECustomerKey: 'k'.repeat(32),
        }),
      ),
    ).rejects.toMatchObject({ name: 'NotImplemented', $metadata: { httpStatusCode: 501 } });
  });

  it('UploadPart, ListParts and listings refuse headers they do not honour (metadata, conditions)', async () => {
    const created = await rawS3(sts, {
      method: 'POST',
      path: path(`${prefix}/refused/parts.mp4`),
      query: { uploads: '' },
    });
    const uploadId = /<UploadId>([^<]+)</.exec(created.body)![1]!;
    const part = await rawS3(sts, {
      method: 'PUT',
      path: path(`${prefix}/refused/parts.mp4`),
      query: { partNumber: '1', uploadId },
      body: 'x',
      headers: { 'x-amz-meta-lost': 'would be dropped' },
    });
    expect([part.status, part.code]).toEqual([501, 'NotImplemented']);
    const parts = await rawS3(sts, {
      method: 'GET',
      path: path(`${prefix}/refused/parts.mp4`),
      query: { uploadId },
      headers: { 'if-match': '"x"' },
    });
    expect([parts.status, parts.code]).toEqual([501, 'NotImplemented']);
    const list = await rawS3(sts, {
      method: 'GET',
      path: '/media',
      query: { 'list-type': '2', prefix: `${prefix}/` },
      headers: { 'x-amz-expected-bucket-owner': '1' },
    });
    expect([list.status, list.code]).toEqual([501, 'NotImplemented']);
    const get = await rawS3(sts, {
      method: 'GET',
      path: path(`${prefix}/accepted/private.txt`),
      headers: { 'x-amz-server-side-encryption-customer-algorithm': 'AES256' },
    });
    expect([get.status, get.code]).toEqual([501, 'NotImplemented']);
  });
});
