/**
 * The attacks of the issue "a bucket and an API that hold against their own
 * users", items 1-5, each as a member of workspace B with valid STS
 * credentials for B and nothing more, signing their own requests. After each
 * one: nothing was written or deleted outside the bucket (a canary folder
 * next to the data dir and a listing of the whole temp root), workspace A's
 * object is byte-identical, and the service still serves B.
 */
import { createHash, randomBytes } from 'node:crypto';
import { mkdirSync, readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { startService, type RunningService } from '../../main/service/index.js';
import { call, getSts, paths, putObject, removeDir, tempDir, type Loose } from './helpers.js';
import { rawS3 } from './s3-raw.js';

let root: string;
let dataDir: string;
let canary: string;
let s: RunningService;
/** The victim's workspace (the default one) and the attacker's. */
let A: { sts: Loose; victimKey: string };
let B: { ws: string; token: string; sts: Loose };
const VICTIM = randomBytes(20_000);

/** Every file under `dir` (relative path -> sha256), skipping `skip` (relative folders or files). */
function tree(dir: string, skip: (rel: string) => boolean): Record<string, string> {
  const out: Record<string, string> = {};
  const walk = (d: string): void => {
    for (const e of readdirSync(d, { withFileTypes: true })) {
      const full = join(d, e.name);
      const rel = relative(dir, full);
      if (skip(rel)) continue;
      if (e.isDirectory()) {
        out[`${rel}/`] = 'dir';
        walk(full);
      } else out[rel] = createHash('sha256').update(readFileSync(full)).digest('hex');
    }
  };
  walk(dir);
  return out;
}

/** The temp root outside the bucket folder and the database files (which the service writes). */
const outsideBucket = (): Record<string, string> =>
  tree(root, (rel) => rel === join('data', 'bucket') || rel.startsWith(join('data', 'service.db')));
let baseline: Record<string, string>;

const encodePath = (key: string): string => `/media/${key.split('/').map(encodeURIComponent).join('/')}`;

async function getAs(sts: Loose, key: string) {
  return rawS3(sts, { method: 'GET', path: encodePath(key) });
}

beforeAll(async () => {
  root = tempDir();
  dataDir = join(root, 'data');
  canary = join(root, 'canary');
  mkdirSync(join(canary, 'dir'), { recursive: true });
  writeFileSync(join(canary, 'dir', 'keep.txt'), 'must survive');
  s = await startService({ dataDir, logger: false });
  const victimKey = await putObject(s, 'victim.jpg', VICTIM);
  A = { sts: await getSts(s), victimKey };
  const ws = await s.admin.createWorkspace('Attackers');
  const token = await s.admin.createToken({ workspaceId: ws });
  B = { ws, token, sts: await getSts(s, ws, token) };
  baseline = outsideBucket();
});

afterEach(async () => {
  expect(outsideBucket()).toEqual(baseline);
  expect(readFileSync(join(canary, 'dir', 'keep.txt'), 'utf8')).toBe('must survive');
  const victim = await getAs(A.sts, A.victimKey);
  expect(victim.status).toBe(200);
  expect(victim.bytes.equals(VICTIM)).toBe(true);
  // The service still answers B: the API and a put/get round trip.
  expect((await call({ baseUrl: s.baseUrl, token: B.token }, 'GET', paths(B.ws).waylines)).body.code).toBe(0);
  const key = `${B.sts.object_key_prefix}/still-${randomBytes(4).toString('hex')}.txt`;
  expect((await rawS3(B.sts, { method: 'PUT', path: encodePath(key), body: 'ok' })).status).toBe(200);
  expect((await getAs(B.sts, key)).body).toBe('ok');
});

afterAll(async () => {
  await s.close();
  removeDir(root);
});

describe('1. a request signed with a wrong secret', () => {
  it('is refused with SignatureDoesNotMatch: nothing written, nothing read', async () => {
    const secret = `${B.sts.credentials.access_key_secret.slice(0, -4)}AAAA`;
    const key = `${B.sts.object_key_prefix}/forged.jpg`;
    const put = await rawS3(B.sts, { method: 'PUT', path: encodePath(key), body: 'forged', secret });
    expect([put.status, put.code]).toEqual([403, 'SignatureDoesNotMatch']);
    expect((await rawS3(B.sts, { method: 'HEAD', path: encodePath(key) })).status).toBe(404);
    // Reading with A's key id and session token but a guessed secret.
    const read = await rawS3(A.sts, { method: 'GET', path: encodePath(A.victimKey), secret });
    expect([read.status, read.code]).toEqual([403, 'SignatureDoesNotMatch']);
    expect(read.bytes.includes(VICTIM.subarray(0, 64))).toBe(false);
    // And with no session token at all.
    const noToken = await rawS3(B.sts, { method: 'PUT', path: encodePath(key), body: 'x', noToken: true });
    expect([noToken.status, noToken.code]).toEqual([400, 'InvalidToken']);
  });
});

describe('1. bytes that are not the ones signed or summed', () => {
  it('are refused (BadDigest, XAmzContentSHA256Mismatch) and not stored', async () => {
    const key = `${B.sts.object_key_prefix}/tampered.jpg`;
    const md5 = createHash('md5').update('the original').digest('base64');
    const badMd5 = await rawS3(B.sts, {
      method: 'PUT',
      path: encodePath(key),
      headers: { 'content-md5': md5 },
      body: 'the tampered',
    });
    expect([badMd5.status, badMd5.code]).toEqual([400, 'BadDigest']);
    const sha = createHash('sha256').update('the original').digest('hex');
    const badSha = await rawS3(B.sts, {
      method: 'PUT',
      path: encodePath(key),
      headers: { 'x-amz-content-sha256': sha },
      body: 'the tampered',
    });
    expect([badSha.status, badSha.code]).toEqual([400, 'XAmzContentSHA256Mismatch']);
    expect((await rawS3(B.sts, { method: 'HEAD', path: encodePath(key) })).status).toBe(404);
    expect(readdirSync(join(dataDir, 'bucket', 'tmp'))).toEqual([]);
    // The same with the right bytes is stored.
    const good = await rawS3(B.sts, {
      method: 'PUT',
      path: encodePath(key),
      headers: { 'content-md5': md5, 'x-amz-content-sha256': sha },
      body: 'the original',
    });
    expect(good.status).toBe(200);
  });
});

describe('2. UploadPart with a traversing uploadId', () => {
  it('is refused with NoSuchUpload and writes no file anywhere', async () => {
    const uploads = join(dataDir, 'bucket', 'uploads');
    for (const uploadId of [
      relative(uploads, join(canary, 'dir')),
      '../../../../dir',
      `${'A'.repeat(40)}/..`,
    ]) {
      const r = await rawS3(B.sts, {
        method: 'PUT',
        path: encodePath(`${B.sts.object_key_prefix}/x`),
        query: { partNumber: '1', uploadId },
        body: 'written anywhere?',
      });
      expect([r.status, r.code]).toEqual([404, 'NoSuchUpload']);
    }
    for (const partNumber of ['0', '10001', '-1', '1e3']) {
      const r = await rawS3(B.sts, {
        method: 'PUT',
        path: encodePath(`${B.sts.object_key_prefix}/x`),
        query: { partNumber, uploadId: 'A'.repeat(43) },
        body: 'x',
      });
      expect([r.status, r.code]).toEqual([400, 'InvalidArgument']);
    }
  });
});

describe('3. CompleteMultipartUpload with a traversing uploadId', () => {
  it('is refused with NoSuchUpload and deletes nothing', async () => {
    const uploads = join(dataDir, 'bucket', 'uploads');
    const body =
      '<CompleteMultipartUpload><Part><PartNumber>1</PartNumber><ETag>"d41d8cd98f00b204e9800998ecf8427e"</ETag></Part></CompleteMultipartUpload>';
    for (const uploadId of [relative(uploads, join(canary, 'dir')), '../../../..', '.']) {
      const r = await rawS3(B.sts, {
        method: 'POST',
        path: encodePath(`${B.sts.object_key_prefix}/x`),
        query: { uploadId },
        body,
      });
      expect([r.status, r.code]).toEqual([404, 'NoSuchUpload']);
      const abort = await rawS3(B.sts, {
        method: 'DELETE',
        path: encodePath(`${B.sts.object_key_prefix}/x`),
        query: { uploadId },
      });
      expect([abort.status, abort.code]).toEqual([404, 'NoSuchUpload']);
    }
    expect(statSync(join(canary, 'dir')).isDirectory()).toBe(true);
  });
});

describe('4. reaching another workspace', () => {
  it("cannot use A's multipart upload to write A's key or its own", async () => {
    const key = `${A.sts.object_key_prefix}/in-progress.mp4`;
    const created = await rawS3(A.sts, { method: 'POST', path: encodePath(key), query: { uploads: '' } });
    const uploadId = /<UploadId>([^<]+)<\/UploadId>/.exec(created.body)?.[1] ?? '';
    expect(uploadId).toMatch(/^[\w-]{43}$/);
    const part = await rawS3(A.sts, {
      method: 'PUT',
      path: encodePath(key),
      query: { partNumber: '1', uploadId },
      body: 'A part 1',
    });
    expect(part.status).toBe(200);

    // B with A's upload id: on B's own key the id is not B's; on A's key the prefix is not B's.
    const own = await rawS3(B.sts, {
      method: 'PUT',
      path: encodePath(`${B.sts.object_key_prefix}/in-progress.mp4`),
      query: { partNumber: '1', uploadId },
      body: 'B overwrites',
    });
    expect([own.status, own.code]).toEqual([404, 'NoSuchUpload']);
    for (const method of ['PUT', 'POST', 'DELETE', 'GET']) {
      const r = await rawS3(B.sts, {
        method,
        path: encodePath(key),
        query: method === 'PUT' ? { partNumber: '1', uploadId } : { uploadId },
        ...(method === 'PUT' || method === 'POST' ? { body: 'B overwrites' } : {}),
      });
      expect([method, r.status, r.code]).toEqual([method, 403, 'AccessDenied']);
    }
    // A's upload is untouched: its part is still the one A sent.
    const parts = await rawS3(A.sts, { method: 'GET', path: encodePath(key), query: { uploadId } });
    expect(parts.body).toContain(
      `<ETag>&quot;${createHash('md5').update('A part 1').digest('hex')}&quot;</ETag>`,
    );
    expect(
      (await rawS3(A.sts, { method: 'DELETE', path: encodePath(key), query: { uploadId } })).status,
    ).toBe(204);
  });

  it("cannot copy A's object with x-amz-copy-source", async () => {
    const key = `${B.sts.object_key_prefix}/stolen.jpg`;
    for (const source of [`/media/${A.victimKey}`, `media/${encodeURIComponent(A.victimKey)}`]) {
      const r = await rawS3(B.sts, {
        method: 'PUT',
        path: encodePath(key),
        headers: { 'x-amz-copy-source': source },
        body: '',
      });
      expect([r.status, r.code]).toEqual([501, 'NotImplemented']);
      expect(r.bytes.includes(VICTIM.subarray(0, 64))).toBe(false);
    }
    expect((await rawS3(B.sts, { method: 'HEAD', path: encodePath(key) })).status).toBe(404);
  });

  it("cannot list the bucket, nor A's prefix; its own listing shows only its keys", async () => {
    const queries: Record<string, string>[] = [
      {},
      { 'list-type': '2' },
      { prefix: '' },
      { prefix: `${A.sts.object_key_prefix}/` },
      { prefix: A.sts.object_key_prefix },
    ];
    for (const query of queries) {
      const r = await rawS3(B.sts, { method: 'GET', path: '/media', query });
      expect([JSON.stringify(query), r.status, r.code]).toEqual([JSON.stringify(query), 403, 'AccessDenied']);
      expect(r.body).not.toContain(A.victimKey);
    }
    const mine = await rawS3(B.sts, {
      method: 'GET',
      path: '/media',
      query: { 'list-type': '2', prefix: `${B.sts.object_key_prefix}/` },
    });
    expect(mine.status).toBe(200);
    expect(mine.body).not.toContain(A.sts.object_key_prefix);
    // Another bucket name, and bucket-level writes.
    expect(
      (
        await rawS3(B.sts, {
          method: 'GET',
          path: '/other',
          query: { prefix: `${B.sts.object_key_prefix}/` },
        })
      ).code,
    ).toBe('AccessDenied');
    for (const method of ['PUT', 'DELETE', 'POST']) {
      const r = await rawS3(B.sts, { method, path: '/media', body: '' });
      expect([method, r.status, r.code]).toEqual([method, 403, 'AccessDenied']);
    }
  });
});

describe('5. a Host header naming another bucket', () => {
  it('is refused, and no key other than the path names is ever written', async () => {
    const key = `${B.sts.object_key_prefix}/host.jpg`;
    for (const host of [
      'media.s3.amazonaws.com',
      `media.localhost:${new URL(B.sts.endpoint).port}`,
      'evil.example',
    ]) {
      const r = await rawS3(B.sts, { method: 'PUT', path: encodePath(key), body: 'x', host });
      expect([host, r.status, r.code]).toEqual([host, 403, 'AccessDenied']);
    }
    expect((await rawS3(B.sts, { method: 'HEAD', path: encodePath(key) })).status).toBe(404);
    const listing = await rawS3(B.sts, {
      method: 'GET',
      path: '/media',
      query: { 'list-type': '2', prefix: `${B.sts.object_key_prefix}/` },
    });
    expect(listing.body).not.toContain('host.jpg');
  });
});
