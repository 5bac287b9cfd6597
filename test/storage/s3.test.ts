/**
 * S3 uploader against a real s3rver over HTTP: bytes, multipart, progress,
 * credentials, failures and cancellation. Resume lives in s3-resume.test.ts.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { rm, writeFile } from 'node:fs/promises';
import path from 'node:path';
import diagnostics from 'node:diagnostics_channel';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { plainMessage } from '../../main/core/errors.js';
import { createUploader } from '../../main/core/storage/index.js';
import type { BucketTarget, TargetProvider, UploaderOptions } from '../../main/core/storage/types.js';
import {
  MiB,
  PROXY_FORWARD_HEADER,
  closedPort,
  fixedTarget,
  makeFile,
  makeTarget,
  objectDigest,
  s3ErrorXml,
  startProxy,
  startS3rver,
  tempDir,
} from './harness.js';
import type { ProxyHandle, S3rverHandle, TempFile } from './harness.js';
import { failure } from '../support/harness.js';

let s3: S3rverHandle;
let proxy: ProxyHandle;
let dir: string;
let small: TempFile;
let big: TempFile; // 40 MiB

beforeAll(async () => {
  s3 = await startS3rver();
  proxy = await startProxy(s3.port);
  dir = await tempDir();
  small = await makeFile(dir, 'small.jpg', 300 * 1024 + 7);
  big = await makeFile(dir, 'big.mp4', 40 * MiB);
});

afterAll(async () => {
  await proxy.close();
  await s3.close();
  await rm(dir, { recursive: true, force: true });
});

const uploader = (opts: Partial<UploaderOptions> = {}, endpoint = s3.endpoint) =>
  createUploader('minio', { target: fixedTarget(endpoint), ...opts });

/**
 * Counts the HTTP requests this process starts towards `endpoint`, by undici
 * (parts) and by node:http (the SDK's calls), from now until stop(). The
 * proxy's own requests upstream carry its marker and are not counted.
 */
function countClientRequests(endpoint: string): { count(): number; stop(): void } {
  const { host } = new URL(endpoint);
  let n = 0;
  const onUndici = (m: unknown): void => {
    const { origin } = (m as { request: { origin?: string | URL } }).request;
    if (origin !== undefined && new URL(origin).host === host) n++;
  };
  const onHttp = (m: unknown): void => {
    const req = (m as { request: { getHeader(name: string): string | undefined } }).request;
    if (req.getHeader('host') === host && req.getHeader(PROXY_FORWARD_HEADER) === undefined) n++;
  };
  diagnostics.subscribe('undici:request:create', onUndici);
  diagnostics.subscribe('http.client.request.start', onHttp);
  return {
    count: () => n,
    stop: () => {
      diagnostics.unsubscribe('undici:request:create', onUndici);
      diagnostics.unsubscribe('http.client.request.start', onHttp);
    },
  };
}

describe('S3 uploader (s3rver)', () => {
  it('uploads a small file with one PutObject + Content-MD5, byte-identical, paced and with progress', async () => {
    let throttled = 0;
    const throttle = (n: number): Promise<number> => {
      throttled += n;
      return Promise.resolve(n);
    };
    const up = uploader({ throttle }, proxy.endpoint);
    const from = proxy.seen.length;
    let progress = 0;
    const res = await up.upload({
      filePath: small.path,
      size: small.size,
      key: 'ws/a/small.jpg',
      md5Hex: small.md5Hex,
      contentType: 'image/jpeg',
      onProgress: (n) => (progress += n),
    });
    up.close();
    expect(res).toMatchObject({ key: 'ws/a/small.jpg', multipart: false, bytesSent: small.size });
    expect(res.etag?.replace(/"/g, '')).toBe(small.md5Hex);
    expect(progress).toBe(small.size);
    expect(throttled).toBe(small.size);
    const puts = proxy.seen.slice(from);
    expect(puts.map((p) => p.method)).toEqual(['PUT']);
    expect(puts[0]!.contentMd5).toBe(Buffer.from(small.md5Hex, 'hex').toString('base64'));
    expect(await objectDigest(s3.endpoint, 'ws/a/small.jpg')).toEqual({
      size: small.size,
      md5Hex: small.md5Hex,
    });
  });

  it('uploads 40 MiB as 8 parts of 5 MiB, byte-identical, with callbacks in order', async () => {
    const up = uploader({ partSize: 5 * MiB });
    const started: unknown[] = [];
    const parts: number[] = [];
    let progress = 0;
    const res = await up.upload({
      filePath: big.path,
      size: big.size,
      key: 'ws/a/big.mp4',
      onMultipartStarted: (s) => void started.push(s),
      onPartDone: (p) => void parts.push(p.partNumber),
      onProgress: (n) => (progress += n),
    });
    up.close();
    expect(res).toMatchObject({ multipart: true, bytesSent: big.size });
    expect(started).toEqual([{ uploadId: expect.any(String), partSize: 5 * MiB }]);
    expect(parts.sort((a, b) => a - b)).toEqual([1, 2, 3, 4, 5, 6, 7, 8]);
    expect(progress).toBe(big.size);
    expect(await objectDigest(s3.endpoint, 'ws/a/big.mp4')).toEqual({ size: big.size, md5Hex: big.md5Hex });
  });

  it('a file the agent wrote (streamed): 40 MiB in one PutObject with its Content-MD5, read as it is sent, byte-identical', async () => {
    let throttled = 0;
    const up = uploader(
      {
        throttle: (n: number) => {
          throttled += n;
          return Promise.resolve(n);
        },
      },
      proxy.endpoint,
    );
    const from = proxy.seen.length;
    let progress = 0;
    const res = await up.upload({
      filePath: big.path,
      size: big.size,
      key: 'ws/manifests/report.json',
      md5Hex: big.md5Hex,
      streamed: true,
      replace: true,
      contentType: 'application/json',
      onProgress: (n) => (progress += n),
    });
    up.close();
    // Above the multipart threshold (16 MiB), yet one PUT: nothing of it is read whole first.
    expect(res).toMatchObject({ multipart: false, bytesSent: big.size });
    expect(progress).toBe(big.size);
    expect(throttled).toBe(big.size);
    const puts = proxy.seen.slice(from);
    expect(puts.map((p) => p.method)).toEqual(['PUT']);
    expect(puts[0]!.contentMd5).toBe(Buffer.from(big.md5Hex, 'hex').toString('base64'));
    expect(await objectDigest(s3.endpoint, 'ws/manifests/report.json')).toEqual({
      size: big.size,
      md5Hex: big.md5Hex,
    });
  });

  it('a streamed upload without its MD5 is refused before anything is read or sent', async () => {
    const up = uploader({}, proxy.endpoint);
    const from = proxy.seen.length;
    await expect(
      up.upload({ filePath: big.path, size: big.size, key: 'ws/manifests/no-md5.json', streamed: true }),
    ).rejects.toMatchObject({ kind: 'invalid-input', message: expect.stringContaining('needs its MD5') });
    up.close();
    expect(proxy.seen.slice(from)).toEqual([]);
  });

  it('exists() tells present from absent objects', async () => {
    const up = uploader();
    await up.upload({ filePath: small.path, size: small.size, key: 'ws/exists/x.jpg' });
    expect(await up.exists('ws/exists/x.jpg')).toBe(true);
    expect(await up.exists('ws/exists/nope.jpg')).toBe(false);
    up.close();
  });

  it('refreshes credentials once when the bucket does not know the key id, then succeeds', async () => {
    const calls: Array<{ forceRefresh?: boolean }> = [];
    let current: BucketTarget = makeTarget(s3.endpoint, { accessKeyId: 'WRONG' });
    const target: TargetProvider = (o) => {
      calls.push({ ...(o.forceRefresh ? { forceRefresh: true } : {}) });
      if (o.forceRefresh) current = makeTarget(s3.endpoint);
      return Promise.resolve(current);
    };
    const up = createUploader('minio', { target });
    await up.upload({ filePath: small.path, size: small.size, key: 'ws/cred/ok.jpg', md5Hex: small.md5Hex });
    await up.upload({ filePath: small.path, size: small.size, key: 'ws/cred/ok2.jpg' });
    up.close();
    expect(calls.filter((c) => c.forceRefresh)).toHaveLength(1);
    expect(calls).toHaveLength(3); // first try, forced refresh, second upload
    expect(await objectDigest(s3.endpoint, 'ws/cred/ok.jpg')).toEqual({
      size: small.size,
      md5Hex: small.md5Hex,
    });
  });

  it('AccessDenied once (what Ceph RGW answers for an expired session token): one refresh, the request again, success', async () => {
    let forced = 0;
    const target: TargetProvider = (o) => {
      if (o.forceRefresh) forced++;
      return Promise.resolve(makeTarget(proxy.endpoint));
    };
    let refused = 0;
    proxy.intercept = () =>
      refused++ === 0 ? { status: 403, body: s3ErrorXml('AccessDenied', 'Access Denied') } : undefined;
    const up = createUploader('minio', { target });
    try {
      await up.upload({
        filePath: small.path,
        size: small.size,
        key: 'ws/cred/denied-once.jpg',
        md5Hex: small.md5Hex,
      });
    } finally {
      proxy.intercept = undefined;
      up.close();
    }
    expect(forced).toBe(1);
    expect(await objectDigest(s3.endpoint, 'ws/cred/denied-once.jpg')).toEqual({
      size: small.size,
      md5Hex: small.md5Hex,
    });
  });

  it('RequestTimeTooSkewed (the laptop clock behind): signed again with the bucket time, by later clients too', async () => {
    // The proxy plays a bucket whose clock is 10 min ahead and which refuses
    // signatures over 5 min off it (s3rver behind it, on this machine's clock,
    // allows 15 min: it takes the corrected requests).
    const ahead = 10 * 60_000;
    const skews: number[] = [];
    proxy.intercept = (req) => {
      const d = /^(\d{4})(\d\d)(\d\d)T(\d\d)(\d\d)(\d\d)Z$/.exec(String(req.headers['x-amz-date']))!;
      const skew = Date.UTC(+d[1]!, +d[2]! - 1, +d[3]!, +d[4]!, +d[5]!, +d[6]!) - Date.now();
      skews.push(Math.round(skew / 60_000) + 0); // + 0: no -0
      if (Math.abs(skew - ahead) <= 5 * 60_000) return undefined;
      const date = new Date(Date.now() + ahead).toUTCString();
      return { status: 403, body: s3ErrorXml('RequestTimeTooSkewed'), headers: { date } };
    };
    let keys = 0;
    // Each call hands out new credentials: every upload gets a new client.
    const target: TargetProvider = () =>
      Promise.resolve(makeTarget(proxy.endpoint, { sessionToken: `token-${keys++}` }));
    const up = createUploader('minio', { target });
    try {
      await up.upload({
        filePath: small.path,
        size: small.size,
        key: 'ws/clock/a.jpg',
        md5Hex: small.md5Hex,
      });
      await up.upload({
        filePath: small.path,
        size: small.size,
        key: 'ws/clock/b.jpg',
        md5Hex: small.md5Hex,
      });
    } finally {
      proxy.intercept = undefined;
      up.close();
    }
    // Refused once, then in the bucket's time, and the next client starts with it.
    expect(skews).toEqual([0, 10, 10]);
    expect(await objectDigest(s3.endpoint, 'ws/clock/b.jpg')).toEqual({
      size: small.size,
      md5Hex: small.md5Hex,
    });
  });

  it('RequestTimeTooSkewed again after the retry: reported once, saying to set the computer clock', async () => {
    let refused = 0;
    proxy.intercept = () => (refused++, { status: 403, body: s3ErrorXml('RequestTimeTooSkewed') });
    const up = uploader({}, proxy.endpoint);
    const err = await failure(
      up.upload({ filePath: small.path, size: small.size, key: 'ws/clock/never.jpg' }),
    );
    proxy.intercept = undefined;
    up.close();
    expect(refused).toBe(2);
    expect(err).toMatchObject({ kind: 'storage', serverCode: 'RequestTimeTooSkewed', retryable: false });
    expect(plainMessage(err)).toMatch(/clock is wrong.*Set the right date, time and time zone/);
  });

  it('refreshes credentials about to expire (within REFRESH_MARGIN_MS) before a request', async () => {
    let forced = 0;
    const target: TargetProvider = (o) => {
      if (o.forceRefresh) forced++;
      return Promise.resolve(makeTarget(s3.endpoint, {}, o.forceRefresh ? 3600_000 : 1_000));
    };
    const up = createUploader('minio', { target });
    await up.upload({ filePath: small.path, size: small.size, key: 'ws/cred/early.jpg' });
    up.close();
    expect(forced).toBe(1);
  });

  it('does not refresh short-lived credentials that still have time (no STS call per request)', async () => {
    let forced = 0;
    const target: TargetProvider = (o) => {
      if (o.forceRefresh) forced++;
      return Promise.resolve(makeTarget(s3.endpoint, {}, 10_000));
    };
    const up = createUploader('minio', { target });
    await up.upload({ filePath: small.path, size: small.size, key: 'ws/cred/short.jpg' });
    up.close();
    expect(forced).toBe(0);
  });

  it('wrong credentials forever: one refresh, then a storage error without secrets', async () => {
    let forced = 0;
    const secret = {
      accessKeyId: 'NOPE',
      secretAccessKey: 'very-secret-key-xyz',
      sessionToken: 'very-secret-token-abc',
    };
    const target: TargetProvider = (o) => {
      if (o.forceRefresh) forced++;
      return Promise.resolve(makeTarget(s3.endpoint, secret));
    };
    const up = createUploader('minio', { target });
    const err = await failure(up.upload({ filePath: big.path, size: big.size, key: 'ws/cred/never.mp4' }));
    up.close();
    expect(err.kind).toBe('storage');
    expect(err.serverCode).toBe('InvalidAccessKeyId');
    expect(forced).toBe(1);
    const everything = `${err.message} ${JSON.stringify(err)} ${String(err.cause)} ${err.stack ?? ''}`;
    expect(everything).not.toContain(secret.secretAccessKey);
    expect(everything).not.toContain(secret.sessionToken);
  });

  it('reports a missing bucket as a non-retryable storage error', async () => {
    const up = createUploader('minio', {
      target: () => Promise.resolve({ ...makeTarget(s3.endpoint), bucket: 'no-such-bucket' }),
    });
    const err = await failure(up.upload({ filePath: small.path, size: small.size, key: 'ws/x.jpg' }));
    up.close();
    expect(err).toMatchObject({ kind: 'storage', serverCode: 'NoSuchBucket', retryable: false });
  });

  it('classifies SlowDown, 5xx, AccessDenied and RequestTimeout answers', async () => {
    const up = uploader({}, proxy.endpoint);
    const cases: Array<[number, string, string, boolean]> = [
      [503, 'SlowDown', 'throttled', true],
      [500, 'InternalError', 'server', true],
      [403, 'AccessDenied', 'storage', false],
      [400, 'RequestTimeout', 'timeout', true],
    ];
    for (const [status, code, kind, retryable] of cases) {
      proxy.intercept = () => ({ status, body: s3ErrorXml(code) });
      const err = await failure(
        up.upload({ filePath: small.path, size: small.size, key: 'ws/faults/x.jpg' }),
      );
      expect(err).toMatchObject({
        kind,
        retryable,
        status,
        serverCode: code,
        method: 'PutObject',
        path: 'ws/faults/x.jpg',
      });
      // The bucket was reached; the request stalled on the way (S3's words for a body that stopped coming).
      if (code === 'RequestTimeout') {
        expect([err.message, plainMessage(err)]).toEqual([
          'The bucket stopped waiting for the rest of the request during PutObject (RequestTimeout (HTTP 400)): nothing arrived for too long.',
          'The storage bucket stopped waiting for an upload that stalled (a slow or interrupted connection). It will be retried by itself.',
        ]);
      }
    }
    proxy.intercept = undefined;
    up.close();
  });

  it('a store that refuses If-None-Match (501) gets each write again without it, and is not asked with it again', async () => {
    // Stands in for stores that do not implement conditional writes and say so.
    let refused = 0;
    let conditional = 0;
    proxy.intercept = (req) => {
      if (req.headers['if-none-match'] === undefined) return undefined;
      conditional++;
      refused++;
      return {
        status: 501,
        body: s3ErrorXml(
          'NotImplemented',
          'A header you provided implies functionality that is not implemented',
        ),
      };
    };
    const up = uploader({ multipartThreshold: 16 * MiB, partSize: 8 * MiB }, proxy.endpoint);
    try {
      await up.upload({
        filePath: small.path,
        size: small.size,
        key: 'ws/nc/small.jpg',
        md5Hex: small.md5Hex,
      });
      await up.upload({ filePath: big.path, size: big.size, key: 'ws/nc/big.mp4' });
      await up.upload({
        filePath: small.path,
        size: small.size,
        key: 'ws/nc/small.jpg',
        md5Hex: small.md5Hex,
      });
    } finally {
      proxy.intercept = undefined;
      up.close();
    }
    expect([refused, conditional]).toEqual([1, 1]);
    expect(await objectDigest(s3.endpoint, 'ws/nc/small.jpg')).toEqual({
      size: small.size,
      md5Hex: small.md5Hex,
    });
    expect(await objectDigest(s3.endpoint, 'ws/nc/big.mp4')).toEqual({ size: big.size, md5Hex: big.md5Hex });
  });

  it('a store that ignores If-None-Match (s3rver here, Ceph RGW 16) is written as before: the last upload replaces the object', async () => {
    const other = await makeFile(dir, 'other.jpg', 1000);
    const up = uploader();
    try {
      await up.upload({ filePath: small.path, size: small.size, key: 'ws/ignored/x.jpg' });
      await up.upload({ filePath: other.path, size: other.size, key: 'ws/ignored/x.jpg' });
    } finally {
      up.close();
    }
    expect(await objectDigest(s3.endpoint, 'ws/ignored/x.jpg')).toEqual({
      size: other.size,
      md5Hex: other.md5Hex,
    });
  });

  it('bucket down (closed port) → network', async () => {
    const up = uploader({}, `http://127.0.0.1:${await closedPort()}`);
    const err = await failure(up.upload({ filePath: small.path, size: small.size, key: 'ws/down.jpg' }));
    expect(err.kind).toBe('network');
    expect((await failure(up.upload({ filePath: big.path, size: big.size, key: 'ws/down.mp4' }))).kind).toBe(
      'network',
    );
    up.close();
  });

  it('a bucket that takes each request and never answers (a connection whose address went away): every kind of request is given up after the stall time, as a timeout, to be tried again', async () => {
    // What a dead kept-alive connection looks like from the agent: bytes written, nothing back.
    // The SDK's requests (head, create) and the PUTs on undici alike: none may wait forever.
    const held = new Set<http.ServerResponse>();
    const silent = http.createServer((_req, res) => void held.add(res));
    await new Promise<void>((resolve) => silent.listen(0, '127.0.0.1', resolve));
    const { port } = silent.address() as AddressInfo;
    const up = uploader({ stallTimeoutMs: 500 }, `http://127.0.0.1:${port}`);
    try {
      const head = await failure(up.stat('ws/silent.jpg'));
      const create = await failure(up.upload({ filePath: big.path, size: big.size, key: 'ws/silent.mp4' }));
      const put = await failure(up.upload({ filePath: small.path, size: small.size, key: 'ws/silent.jpg' }));
      for (const err of [head, create, put]) {
        expect(err.kind).toBe('timeout');
        expect(err.retryable).toBe(true);
      }
      console.log([head, create, put].map((e) => plainMessage(e)).join('\n'));
      expect(held.size).toBeGreaterThanOrEqual(3);
    } finally {
      up.close();
      silent.closeAllConnections();
      await new Promise((resolve) => silent.close(resolve));
    }
  });

  it('abort mid-upload → cancelled, in-flight parts cut, nothing written after the promise settles', async () => {
    const ac = new AbortController();
    let chunks = 0;
    let late = 0;
    let settled = false;
    const note = (): void => {
      if (settled) late++;
    };
    // The abort comes from the throttle after 30 chunks of 256 KiB: three
    // 5 MiB parts are then each half-way through their body.
    const throttle = (n: number): Promise<number> => {
      note();
      if (++chunks === 30) ac.abort();
      return new Promise((r) => setTimeout(() => r(n), 1));
    };
    const up = uploader({ partSize: 5 * MiB, partConcurrency: 3, throttle }, proxy.endpoint);
    const before = proxy.seen.length;
    // Requests are counted where they leave the uploader (undici for parts,
    // node:http for the SDK's calls), not where the proxy parses them: a
    // request sent just before the promise settled can reach the proxy (same
    // process, busy event loop) just after, which is not a late request.
    const sent = countClientRequests(proxy.endpoint);
    const p = up.upload({
      filePath: big.path,
      size: big.size,
      key: 'ws/abort/big.mp4',
      signal: ac.signal,
      onPartDone: note,
      onProgress: note,
    });
    const err = await failure(p);
    settled = true;
    expect(err.kind).toBe('cancelled');
    const parts = proxy.seen.slice(before).filter((s) => s.partNumber !== undefined);
    expect(parts.length).toBeGreaterThan(0);
    expect(parts.some((s) => s.bytes < 5 * MiB)).toBe(true);
    // No new request after the promise settled, and no chunk handed over
    // (the throttle sees every chunk). Bytes the kernel had already
    // accepted may still drain for a moment, so the byte count is compared
    // once that is over: it must then stay still.
    const requests = sent.count();
    await new Promise((r) => setTimeout(r, 200));
    const bytes = proxy.bytesIn();
    await new Promise((r) => setTimeout(r, 300));
    sent.stop();
    // The counter sees the uploader's traffic (every part the proxy saw, at least) ...
    expect(requests).toBeGreaterThanOrEqual(parts.length);
    // ... and nothing started after the promise settled.
    expect(sent.count()).toBe(requests);
    expect(proxy.seen.length - before).toBeLessThanOrEqual(requests);
    expect(proxy.bytesIn()).toBe(bytes);
    expect(late).toBe(0);
    expect(await up.exists('ws/abort/big.mp4')).toBe(false);
    up.close();
  });

  it('source file deleted mid-upload → source-missing', async () => {
    const doomed = await makeFile(dir, 'doomed.mp4', 40 * MiB);
    const up = uploader({ partSize: 5 * MiB, partConcurrency: 2 });
    const err = await failure(
      up.upload({
        filePath: doomed.path,
        size: doomed.size,
        key: 'ws/gone.mp4',
        onPartDone: () => rm(doomed.path, { force: true }),
      }),
    );
    up.close();
    expect(err.kind).toBe('source-missing');
  });

  it('a file that changed since it was measured → source-missing "changed", retryable', async () => {
    const file = path.join(dir, 'changing.jpg');
    await writeFile(file, 'hello world');
    const up = uploader();
    const bySize = await failure(up.upload({ filePath: file, size: 5, key: 'ws/changed.jpg' }));
    expect(bySize).toMatchObject({
      kind: 'source-missing',
      retryable: true,
      message: 'the file changed while it was being uploaded',
    });
    const byMd5 = await failure(
      up.upload({ filePath: file, size: 11, key: 'ws/changed.jpg', md5Hex: small.md5Hex }),
    );
    expect(byMd5.message).toContain('changed');
    up.close();
  });
});
