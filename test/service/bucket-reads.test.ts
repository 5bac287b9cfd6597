/**
 * Reads and protocol details of the embedded bucket, as S3 gives them and
 * ceph/s3-tests checks them: conditional GET and HEAD (If-Match,
 * If-None-Match, If-Modified-Since, If-Unmodified-Since, If-Range), HEAD
 * with a Range (206), GetObject's response-* overrides, x-amz-request-id on
 * every answer (the same id as in an error's body), and Expect values other
 * than 100-continue served in S3's terms rather than Node's bare 417.
 */
import { GetObjectCommand, HeadObjectCommand, type S3Client } from '@aws-sdk/client-s3';
import { createHash, createHmac } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { getSts, md5Hex, s3From, startTemp, type Loose } from './helpers.js';
import { rawS3, send } from './s3-raw.js';

let s: Awaited<ReturnType<typeof startTemp>>;
let sts: Loose;
let client: S3Client;
let key: string;
let etag: string;
let lastModified: Date;
const BODY = 'bar, thirty bytes of content..';

const path = (k: string): string => `/media/${k.split('/').map(encodeURIComponent).join('/')}`;
const get = (headers: Record<string, string>, method = 'GET', query?: Record<string, string>) =>
  rawS3(sts, { method, path: path(key), headers, ...(query ? { query } : {}) });
const httpDate = (ms: number): string => new Date(ms).toUTCString();

beforeAll(async () => {
  s = await startTemp();
  sts = await getSts(s);
  client = s3From(sts);
  key = `${sts.object_key_prefix}/read/foo.txt`;
  expect((await rawS3(sts, { method: 'PUT', path: path(key), body: BODY })).status).toBe(200);
  etag = `"${md5Hex(BODY)}"`;
  lastModified = (await client.send(new HeadObjectCommand({ Bucket: sts.bucket, Key: key }))).LastModified!;
});
afterAll(async () => {
  client.destroy();
  await s.stop();
});

describe('conditional GET and HEAD', () => {
  it('If-Match: the body when the ETag is listed, else 412 PreconditionFailed', async () => {
    for (const method of ['GET', 'HEAD']) {
      expect((await get({ 'if-match': etag }, method)).status).toBe(200);
      expect((await get({ 'if-match': `"x", ${etag}` }, method)).status).toBe(200);
      expect((await get({ 'if-match': '*' }, method)).status).toBe(200);
      const failed = await get({ 'if-match': '"ABCORZ"' }, method);
      expect([method, failed.status, failed.code]).toEqual([method, 412, 'PreconditionFailed']);
      expect(failed.bytes.includes(Buffer.from(BODY))).toBe(false);
    }
  });

  it('If-None-Match: 304 with the ETag and no body when listed, else the body', async () => {
    for (const method of ['GET', 'HEAD']) {
      const same = await get({ 'if-none-match': etag }, method);
      expect([method, same.status, same.body, same.headers.etag]).toEqual([method, 304, '', etag]);
      expect((await get({ 'if-none-match': 'ABCORZ' }, method)).status).toBe(200);
    }
    // The SDK reads the 304 as an error named NotModified.
    await expect(
      client.send(new GetObjectCommand({ Bucket: sts.bucket, Key: key, IfNoneMatch: etag })),
    ).rejects.toMatchObject({ $metadata: { httpStatusCode: 304 } });
  });

  it('If-Modified-Since and If-Unmodified-Since compare whole seconds of Last-Modified', async () => {
    const at = lastModified.getTime();
    expect((await get({ 'if-modified-since': httpDate(at) })).status).toBe(304);
    expect((await get({ 'if-modified-since': httpDate(at + 5000) })).status).toBe(304);
    expect((await get({ 'if-modified-since': 'Sat, 29 Oct 1994 19:43:31 GMT' })).body).toBe(BODY);
    const old = await get({ 'if-unmodified-since': 'Sat, 29 Oct 1994 19:43:31 GMT' });
    expect([old.status, old.code]).toEqual([412, 'PreconditionFailed']);
    expect((await get({ 'if-unmodified-since': httpDate(at) })).body).toBe(BODY);
    expect((await get({ 'if-unmodified-since': 'Sat, 29 Oct 2100 19:43:31 GMT' })).body).toBe(BODY);
  });

  it('follows the order of S3 and RFC 9110 when several are given', async () => {
    const past = 'Sat, 29 Oct 1994 19:43:31 GMT';
    // If-Match holds: If-Unmodified-Since is not looked at.
    expect((await get({ 'if-match': etag, 'if-unmodified-since': past })).status).toBe(200);
    // If-None-Match does not hold (another ETag): If-Modified-Since is not looked at.
    expect(
      (await get({ 'if-none-match': '"other"', 'if-modified-since': httpDate(Date.now() + 60_000) })).status,
    ).toBe(200);
    expect((await get({ 'if-match': '"other"', 'if-none-match': etag })).status).toBe(412);
  });

  it('If-Range: the range while the object is the one the client saw, else the whole object', async () => {
    const partial = await get({ range: 'bytes=0-2', 'if-range': etag });
    expect([partial.status, partial.body]).toEqual([206, 'bar']);
    const changed = await get({ range: 'bytes=0-2', 'if-range': '"another"' });
    expect([changed.status, changed.body]).toEqual([200, BODY]);
  });
});

describe('ranges', () => {
  it('HEAD with a Range answers 206 with the range and its length, as S3 does', async () => {
    const head = await get({ range: 'bytes=4-9' }, 'HEAD');
    expect([head.status, head.headers['content-length'], head.headers['content-range']]).toEqual([
      206,
      '6',
      `bytes 4-9/${BODY.length}`,
    ]);
    const sdk = await client.send(new HeadObjectCommand({ Bucket: sts.bucket, Key: key, Range: 'bytes=-5' }));
    expect([sdk.ContentLength, sdk.ContentRange]).toEqual([5, `bytes 25-29/${BODY.length}`]);
    const outside = await get({ range: 'bytes=100-200' }, 'HEAD');
    expect([outside.status, outside.headers['x-amz-error-code']]).toEqual([416, 'InvalidRange']);
  });
});

describe('response-* overrides of GetObject', () => {
  it('set the answer headers they name', async () => {
    const r = await get({}, 'GET', {
      'response-content-type': 'foo/bar',
      'response-content-disposition': 'attachment; filename="x.txt"',
      'response-content-language': 'de',
      'response-content-encoding': 'identity',
      'response-cache-control': 'no-cache',
      'response-expires': 'Thu, 01 Jan 2037 00:00:00 GMT',
    });
    expect(r.status).toBe(200);
    expect(r.headers).toMatchObject({
      'content-type': 'foo/bar',
      'content-disposition': 'attachment; filename="x.txt"',
      'content-language': 'de',
      'content-encoding': 'identity',
      'cache-control': 'no-cache',
      expires: 'Thu, 01 Jan 2037 00:00:00 GMT',
    });
  });
});

describe('protocol details', () => {
  it('every answer carries x-amz-request-id; an error gives the same id in its body', async () => {
    const ok = await get({});
    expect(ok.headers['x-amz-request-id']).toMatch(/^[0-9A-F]{16}$/);
    const missing = await rawS3(sts, { method: 'GET', path: path(`${key}.missing`) });
    expect(missing.status).toBe(404);
    expect(missing.body).toContain(`<RequestId>${missing.headers['x-amz-request-id'] as string}</RequestId>`);
    const head = await rawS3(sts, { method: 'HEAD', path: path(`${key}.missing`) });
    expect(head.headers['x-amz-request-id']).toMatch(/^[0-9A-F]{16}$/);
  });

  it('takes the time of a request from its Date header when it has no x-amz-date, as SigV4 allows (botocore does so)', async () => {
    // Signed by hand, the way botocore signs when a Date header is set: no SDK here adds one.
    const endpoint = new URL(sts.endpoint);
    const now = new Date(Math.floor(Date.now() / 1000) * 1000);
    const basic = now.toISOString().replace(/[-:]/g, '').replace('.000', '');
    const scope = `${basic.slice(0, 8)}/${sts.region}/s3/aws4_request`;
    const headers: Record<string, string> = {
      date: now.toUTCString(),
      host: endpoint.host,
      'x-amz-content-sha256': 'UNSIGNED-PAYLOAD',
      'x-amz-security-token': sts.credentials.security_token,
    };
    const names = Object.keys(headers).sort();
    const canonical = [
      'GET',
      path(key),
      '',
      ...names.map((n) => `${n}:${headers[n]}`),
      '',
      names.join(';'),
      'UNSIGNED-PAYLOAD',
    ].join('\n');
    const hmac = (k: Buffer | string, d: string): Buffer => createHmac('sha256', k).update(d).digest();
    const signingKey = ['s3', 'aws4_request'].reduce(
      (k, part) => hmac(k, part),
      hmac(
        hmac(`AWS4${sts.credentials.access_key_secret as string}`, basic.slice(0, 8)),
        sts.region as string,
      ),
    );
    const toSign = [
      'AWS4-HMAC-SHA256',
      basic,
      scope,
      createHash('sha256').update(canonical).digest('hex'),
    ].join('\n');
    const authorization = `AWS4-HMAC-SHA256 Credential=${sts.credentials.access_key_id as string}/${scope}, SignedHeaders=${names.join(';')}, Signature=${hmac(signingKey, toSign).toString('hex')}`;
    const r = await send(endpoint, 'GET', path(key), { ...headers, authorization });
    expect([r.status, r.body]).toEqual([200, BODY]);
    // The Date header is then part of the signature: another date does not pass.
    const moved = await send(endpoint, 'GET', path(key), {
      ...headers,
      date: new Date(now.getTime() + 1000).toUTCString(),
      authorization,
    });
    expect([moved.status, moved.code]).toEqual([403, 'SignatureDoesNotMatch']);
  });

  it('serves a PUT whose Expect is not 100-continue as S3 does; its refusals stay S3 errors', async () => {
    for (const expectation of ['200', '']) {
      const k = `${sts.object_key_prefix}/read/expect-${expectation || 'empty'}.txt`;
      const r = await rawS3(sts, {
        method: 'PUT',
        path: path(k),
        body: 'x',
        headers: { expect: expectation },
      });
      expect([expectation, r.status]).toEqual([expectation, 200]);
    }
    const refused = await rawS3(sts, {
      method: 'PUT',
      path: path(`${sts.object_key_prefix}/read/expect-refused.txt`),
      body: 'x',
      headers: { expect: 'something-else', 'x-amz-tagging': 'a=b' },
    });
    expect([refused.status, refused.code]).toEqual([501, 'NotImplemented']);
  });
});
