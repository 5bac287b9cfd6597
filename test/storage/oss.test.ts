/**
 * OSS uploader. NOTE: these tests run against a MOCKED ali-oss client
 * (oss-fake.ts), because Alibaba's cloud cannot run here. They check our
 * side of the contract (calls, bodies, Content-MD5, resume, refresh, error
 * classification), not OSS itself.
 */
import { createHash, randomBytes } from 'node:crypto';
import { rm, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DmsError } from '../../main/core/errors.js';
import { createUploader } from '../../main/core/storage/index.js';
import type {
  BucketTarget,
  MultipartState,
  TargetProvider,
  UploaderOptions,
} from '../../main/core/storage/types.js';
import { fakeCloud, fakeFactory, ossError, ossNetworkError } from './oss-fake.js';
import type { FakeCloud } from './oss-fake.js';
import { MiB, tempDir } from './harness.js';
import { failure } from '../support/harness.js';

let dir: string;
const files: Record<string, { path: string; size: number; md5Hex: string; data: Buffer }> = {};

async function makeFile(name: string, size: number) {
  const data = randomBytes(size);
  const file = {
    path: path.join(dir, name),
    size,
    md5Hex: createHash('md5').update(data).digest('hex'),
    data,
  };
  await writeFile(file.path, data);
  files[name] = file;
  return file;
}

beforeAll(async () => {
  dir = await tempDir();
  await makeFile('small.jpg', 200 * 1024);
  await makeFile('big.mp4', 12 * MiB); // 3 parts of 5 MiB (5, 5, 2)
});
afterAll(() => rm(dir, { recursive: true, force: true }));

function target(creds: Partial<BucketTarget['credentials']> = {}): BucketTarget {
  return {
    provider: 'ali',
    bucket: 'drone-media',
    endpoint: 'https://oss-cn-hangzhou.aliyuncs.com',
    region: 'oss-cn-hangzhou',
    objectKeyPrefix: 'ws/',
    credentials: {
      accessKeyId: 'GOOD',
      secretAccessKey: 'oss-secret-value',
      sessionToken: 'NEW-TOKEN',
      expiresAt: Date.now() + 3600_000,
      ...creds,
    },
  };
}

function setup(opts: Partial<UploaderOptions> & { target?: TargetProvider } = {}) {
  const cloud = fakeCloud();
  const up = createUploader('ali', {
    target: () => Promise.resolve(target()),
    multipartThreshold: 6 * MiB,
    partSize: 5 * MiB,
    createClient: fakeFactory(cloud),
    ...opts,
  });
  return { cloud, up };
}

const uploadedParts = (cloud: FakeCloud) =>
  cloud.calls
    .filter((c) => c.method === 'uploadPart')
    .map((c) => c.partNo!)
    .sort((a, b) => a - b);

describe('OSS uploader (mocked ali-oss client)', () => {
  it('puts a small file with Content-MD5 and builds the client from the STS target', async () => {
    const { cloud, up } = setup({ throttle: (n) => Promise.resolve(n) });
    const f = files['small.jpg']!;
    let progress = 0;
    const res = await up.upload({
      filePath: f.path,
      size: f.size,
      key: 'ws/a/small.jpg',
      md5Hex: f.md5Hex,
      onProgress: (n) => (progress += n),
    });
    expect(res).toMatchObject({ multipart: false, bytesSent: f.size });
    expect(progress).toBe(f.size);
    expect(cloud.objects.get('ws/a/small.jpg')?.equals(f.data)).toBe(true);
    expect(cloud.clientOptions[0]).toMatchObject({
      accessKeyId: 'GOOD',
      accessKeySecret: 'oss-secret-value',
      stsToken: 'NEW-TOKEN',
      bucket: 'drone-media',
      region: 'oss-cn-hangzhou',
      endpoint: 'https://oss-cn-hangzhou.aliyuncs.com',
      secure: true,
    });
  });

  it('uploads a large file in parts, byte-identical', async () => {
    const { cloud, up } = setup();
    const f = files['big.mp4']!;
    const started: unknown[] = [];
    const res = await up.upload({
      filePath: f.path,
      size: f.size,
      key: 'ws/a/big.mp4',
      onMultipartStarted: (s) => void started.push(s),
    });
    expect(res).toMatchObject({ multipart: true, bytesSent: f.size, etag: '"MULTI-3"' });
    expect(started).toEqual([{ uploadId: expect.any(String), partSize: 5 * MiB }]);
    expect(uploadedParts(cloud)).toEqual([1, 2, 3]);
    expect(cloud.objects.get('ws/a/big.mp4')?.equals(f.data)).toBe(true);
  });

  it('resumes in a new uploader: ListParts (paged) wins over the stored state', async () => {
    const { cloud, up } = setup({ partConcurrency: 1 });
    const f = files['big.mp4']!;
    const state: MultipartState = { uploadId: '', partSize: 0, parts: [] };
    const ac = new AbortController();
    const err = await failure(
      up.upload({
        filePath: f.path,
        size: f.size,
        key: 'ws/r/big.mp4',
        signal: ac.signal,
        onMultipartStarted: (s) => void Object.assign(state, s),
        onPartDone: (p) => {
          state.parts.push(p);
          if (state.parts.length === 2) ac.abort();
        },
      }),
    );
    expect(err.kind).toBe('cancelled');
    cloud.calls.length = 0;
    // Part 2 was acknowledged but its record lost: the bucket still has it.
    const stored = { ...state, parts: state.parts.filter((p) => p.partNumber === 1) };
    const done: number[] = [];
    const again = createUploader('ali', {
      target: () => Promise.resolve(target()),
      partSize: 8 * MiB,
      createClient: fakeFactory(cloud),
    });
    const res = await again.upload({
      filePath: f.path,
      size: f.size,
      key: 'ws/r/big.mp4',
      resume: stored,
      onPartDone: (p) => void done.push(p.partNumber),
    });
    expect(uploadedParts(cloud)).toEqual([3]);
    expect(done.sort()).toEqual([2, 3]);
    expect(res.bytesSent).toBe(2 * MiB);
    expect(cloud.objects.get('ws/r/big.mp4')?.equals(f.data)).toBe(true);
  });

  it('NoSuchUpload on resume → onMultipartReset and a fresh upload', async () => {
    const { cloud, up } = setup();
    const f = files['big.mp4']!;
    const events: string[] = [];
    await up.upload({
      filePath: f.path,
      size: f.size,
      key: 'ws/r/gone.mp4',
      resume: { uploadId: 'gone', partSize: 5 * MiB, parts: [{ partNumber: 1, etag: '"X"', size: 5 * MiB }] },
      onMultipartReset: () => void events.push('reset'),
      onMultipartStarted: () => void events.push('started'),
    });
    expect(events).toEqual(['reset', 'started']);
    expect(uploadedParts(cloud)).toEqual([1, 2, 3]);
    expect(cloud.objects.get('ws/r/gone.mp4')?.equals(f.data)).toBe(true);
  });

  it('ListParts denied → stored state trusted; a trusted part the bucket lacks (InvalidPart) → start over once', async () => {
    const { cloud, up } = setup();
    const f = files['big.mp4']!;
    const first = f.data.subarray(0, 5 * MiB);
    const etag1 = `"${createHash('md5').update(first).digest('hex').toUpperCase()}"`;
    cloud.uploads.set('u1', { name: 'ws/r/denied.mp4', parts: new Map([[1, { buf: first, etag: etag1 }]]) });
    cloud.failNext.push({ method: 'listParts', err: ossError('AccessDenied', 403) });
    const events: string[] = [];
    await up.upload({
      filePath: f.path,
      size: f.size,
      key: 'ws/r/denied.mp4',
      resume: {
        uploadId: 'u1',
        partSize: 5 * MiB,
        parts: [
          { partNumber: 1, etag: etag1, size: 5 * MiB },
          { partNumber: 2, etag: '"NEVER-UPLOADED"', size: 5 * MiB },
        ],
      },
      onMultipartReset: () => void events.push('reset'),
      onMultipartStarted: () => void events.push('started'),
    });
    // First only part 3 (1 and 2 trusted), then after InvalidPart a full fresh upload.
    const sent = cloud.calls.filter((c) => c.method === 'uploadPart').map((c) => c.partNo!);
    expect(sent[0]).toBe(3);
    expect(sent.slice(1).sort()).toEqual([1, 2, 3]);
    expect(events).toEqual(['reset', 'started']);
    expect(cloud.objects.get('ws/r/denied.mp4')?.equals(f.data)).toBe(true);
  });

  it('SecurityTokenExpired → one forced refresh, a new client, success', async () => {
    let forced = 0;
    const provider: TargetProvider = (o) => {
      if (o.forceRefresh) forced++;
      return Promise.resolve(target({ sessionToken: forced > 0 ? 'NEW-TOKEN' : 'OLD-TOKEN' }));
    };
    const { cloud, up } = setup({ target: provider });
    cloud.expiredTokens.add('OLD-TOKEN');
    const f = files['big.mp4']!;
    await up.upload({ filePath: f.path, size: f.size, key: 'ws/t/big.mp4' });
    expect(forced).toBe(1);
    expect(cloud.clientOptions.map((o) => o.stsToken)).toEqual(['OLD-TOKEN', 'NEW-TOKEN']);
    expect(cloud.objects.get('ws/t/big.mp4')?.equals(f.data)).toBe(true);
  });

  it('wrong credentials forever → storage error after one refresh, secrets redacted', async () => {
    let forced = 0;
    const secret = {
      accessKeyId: 'BAD',
      secretAccessKey: 'oss-secret-never-shown',
      sessionToken: 'oss-token-never-shown',
    };
    const { up } = setup({
      target: (o) => {
        if (o.forceRefresh) forced++;
        return Promise.resolve(target(secret));
      },
    });
    const f = files['small.jpg']!;
    const err = await failure(up.upload({ filePath: f.path, size: f.size, key: 'ws/bad.jpg' }));
    expect(err).toMatchObject({ kind: 'storage', serverCode: 'InvalidAccessKeyId', status: 403 });
    expect(forced).toBe(1);
    const text = `${err.message} ${JSON.stringify(err)} ${String(err.cause)} ${JSON.stringify(err.cause)}`;
    expect(text).not.toContain(secret.sessionToken);
    expect(text).not.toContain(secret.secretAccessKey);
  });

  it('classifies network failures and bucket refusals', async () => {
    const { cloud, up } = setup();
    const f = files['small.jpg']!;
    const cases: Array<[Error, string]> = [
      [ossNetworkError('RequestError'), 'network'],
      [ossNetworkError('ConnectionTimeoutError'), 'network'],
      [ossNetworkError('ResponseTimeoutError'), 'timeout'],
    ];
    for (const [e, kind] of cases) {
      cloud.failNext.push({ method: 'put', err: e });
      expect((await failure(up.upload({ filePath: f.path, size: f.size, key: 'ws/n.jpg' }))).kind).toBe(kind);
    }
    cloud.validKeys.clear();
    cloud.validKeys.add('SOMEONE-ELSE');
    const denied = await failure(up.exists('ws/a/small.jpg'));
    expect(denied.kind).toBe('storage');
  });

  it('exists(): head → true / 404 → false', async () => {
    const { up } = setup();
    const f = files['small.jpg']!;
    await up.upload({ filePath: f.path, size: f.size, key: 'ws/e.jpg' });
    expect(await up.exists('ws/e.jpg')).toBe(true);
    expect(await up.exists('ws/none.jpg')).toBe(false);
  });

  it('writes nothing outside the prefix and nothing with wrong storage settings (issue 22)', async () => {
    const f = files['small.jpg']!;
    const big = files['big.mp4']!;
    const { cloud, up } = setup();
    for (const key of ['other/a.jpg', 'ws/../../etc/manifests/report.json', 'ws//a.jpg']) {
      for (const req of [
        { filePath: f.path, size: f.size, key },
        { filePath: big.path, size: big.size, key },
      ]) {
        const err = await failure(up.upload(req));
        expect(err.message).toMatch(/^Refused to write the object/);
      }
    }
    expect(cloud.calls).toEqual([]);
    for (const bad of [
      { bucket: 'drone.media' },
      { objectKeyPrefix: '../../etc' },
      { endpoint: 'ftp://x' },
    ]) {
      const hostile = setup({ target: () => Promise.resolve({ ...target(), ...bad }) });
      const key = `${bad.objectKeyPrefix ?? 'ws'}/a.jpg`;
      const err = await failure(hostile.up.upload({ filePath: f.path, size: f.size, key }));
      expect(err.message).toMatch(
        /^The server's storage settings are wrong: (bucket|object_key_prefix|endpoint) /,
      );
      expect(hostile.cloud.calls).toEqual([]);
      expect(hostile.cloud.clientOptions).toEqual([]); // no client was even built
    }
  });

  it('createUploader picks the implementation by provider', async () => {
    const cloud = fakeCloud();
    const opts = { target: () => Promise.resolve(target()), createClient: fakeFactory(cloud) };
    expect(await createUploader('ali', opts).exists('ws/x')).toBe(false);
    expect(cloud.clientOptions).toHaveLength(1);
    const s3 = createUploader('aws', opts);
    expect(typeof s3.upload).toBe('function');
    s3.close();
    expect(() => createUploader('gcs' as never, opts)).toThrow(DmsError);
  });
});
