/**
 * Resuming multipart uploads across uploader instances (as after a restart),
 * against a real s3rver over HTTP behind a recording proxy.
 *
 * s3rver has no ListParts (it answers 405 MethodNotAllowed) and never says
 * NoSuchUpload: where a test needs those answers, the proxy gives them —
 * ListParts is then built from s3rver's own upload directory, so it tells
 * the truth about what s3rver really holds.
 */
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { rm } from 'node:fs/promises';
import path from 'node:path';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import type { DmsError } from '../../main/core/errors.js';
import { createUploader } from '../../main/core/storage/index.js';
import type { FinishedPart, MultipartState, UploaderOptions } from '../../main/core/storage/types.js';
import {
  BUCKET,
  MiB,
  fixedTarget,
  makeFile,
  objectDigest,
  s3ErrorXml,
  startProxy,
  startS3rver,
  tempDir,
} from './harness.js';
import type { Canned, ProxyHandle, S3rverHandle, TempFile } from './harness.js';

let s3: S3rverHandle;
let proxy: ProxyHandle;
let dir: string;
let file: TempFile; // 40 MiB = 8 parts of 5 MiB

beforeAll(async () => {
  s3 = await startS3rver();
  proxy = await startProxy(s3.port);
  dir = await tempDir();
  file = await makeFile(dir, 'flight.mp4', 40 * MiB);
});
afterAll(async () => {
  await proxy.close();
  await s3.close();
  await rm(dir, { recursive: true, force: true });
});
beforeEach(() => {
  proxy.intercept = undefined;
});

const uploader = (opts: Partial<UploaderOptions> = {}) =>
  createUploader('minio', { target: fixedTarget(proxy.endpoint), partSize: 5 * MiB, ...opts });
const sorted = (ns: Iterable<number>): number[] => [...ns].sort((a, b) => a - b);

/** Starts an upload and aborts it once `stopAfter` parts are acknowledged; returns what the queue would have stored. */
async function interrupted(
  key: string,
  stopAfter: number,
  opts: Partial<UploaderOptions> = {},
): Promise<MultipartState> {
  const state: MultipartState = { uploadId: '', partSize: 0, parts: [] };
  const ac = new AbortController();
  const up = uploader(opts);
  const err = await up
    .upload({
      filePath: file.path,
      size: file.size,
      key,
      signal: ac.signal,
      onMultipartStarted: (s) => void Object.assign(state, s),
      onPartDone: (p) => {
        state.parts.push(p);
        if (state.parts.length === stopAfter) ac.abort();
      },
    })
    .catch((e: unknown) => e);
  up.close();
  expect((err as DmsError).kind).toBe('cancelled');
  expect(state.parts.length).toBeGreaterThanOrEqual(stopAfter);
  return state;
}

/** UploadPart numbers the proxy saw since `from`. */
const partsSentSince = (from: number): number[] =>
  sorted(proxy.seen.slice(from).flatMap((s) => (s.partNumber !== undefined ? [s.partNumber] : [])));
const createsSince = (from: number): number =>
  proxy.seen.slice(from).filter((s) => s.method === 'POST' && s.url.searchParams.has('uploads')).length;

/** A ListParts answer built from what s3rver really holds for this upload. */
function listPartsFromDisk(uploadId: string): Canned {
  const uploadDir = path.join(s3.directory, BUCKET, '._S3rver_uploads', uploadId);
  if (!existsSync(uploadDir)) return { status: 404, body: s3ErrorXml('NoSuchUpload') };
  const parts = readdirSync(uploadDir)
    .filter((f) => /^\d+$/.test(f) && existsSync(path.join(uploadDir, `${f}.md5`)))
    .map((f) => {
      const etag = readFileSync(path.join(uploadDir, `${f}.md5`), 'utf8');
      return `<Part><PartNumber>${f}</PartNumber><ETag>"${etag}"</ETag><Size>${statSync(path.join(uploadDir, f)).size}</Size></Part>`;
    });
  return {
    status: 200,
    body: `<?xml version="1.0" encoding="UTF-8"?><ListPartsResult><Bucket>${BUCKET}</Bucket><UploadId>${uploadId}</UploadId><IsTruncated>false</IsTruncated>${parts.join('')}</ListPartsResult>`,
  };
}

const isListParts = (method: string | undefined, url: URL): boolean =>
  method === 'GET' && url.searchParams.has('uploadId');

describe('S3 multipart resume', () => {
  it('a new uploader sends only the missing parts (ListParts unsupported: stored state trusted)', async () => {
    const key = 'ws/resume/a.mp4';
    const state = await interrupted(key, 3, { partConcurrency: 2 });
    const recorded = new Set(state.parts.map((p) => p.partNumber));
    const from = proxy.seen.length;
    const started: unknown[] = [];
    const done: FinishedPart[] = [];
    const up = uploader({ partSize: 8 * MiB }); // a different preference: the stored 5 MiB must win
    const res = await up.upload({
      filePath: file.path,
      size: file.size,
      key,
      resume: state,
      onMultipartStarted: (s) => void started.push(s),
      onPartDone: (p) => void done.push(p),
    });
    up.close();
    const missing = [1, 2, 3, 4, 5, 6, 7, 8].filter((n) => !recorded.has(n));
    expect(partsSentSince(from)).toEqual(missing);
    expect(
      proxy.seen
        .slice(from)
        .filter((s) => s.partNumber !== undefined)
        .every((s) => s.contentMd5 !== undefined),
    ).toBe(true);
    expect(sorted(done.map((p) => p.partNumber))).toEqual(missing);
    expect(res.bytesSent).toBe(missing.length * 5 * MiB);
    expect(createsSince(from)).toBe(0);
    expect(started).toEqual([]);
    expect(await objectDigest(s3.endpoint, key)).toEqual({ size: file.size, md5Hex: file.md5Hex });
  });

  it('reconciles with ListParts: reuses unrecorded parts the bucket has, re-sends recorded parts it lacks', async () => {
    const key = 'ws/resume/b.mp4';
    // One lane: exactly parts 1..3 are in the bucket when the abort lands.
    const state = await interrupted(key, 3, { partConcurrency: 1 });
    expect(sorted(state.parts.map((p) => p.partNumber))).toEqual([1, 2, 3]);
    // The queue lost part 2 (crash after the ack) and believes in a part 4 the bucket never got.
    const stored: MultipartState = {
      ...state,
      parts: [
        ...state.parts.filter((p) => p.partNumber !== 2),
        { partNumber: 4, etag: '"deadbeef"', size: 5 * MiB },
      ],
    };
    proxy.intercept = (req, url) =>
      isListParts(req.method, url) ? listPartsFromDisk(state.uploadId) : undefined;
    const from = proxy.seen.length;
    const done: number[] = [];
    const up = uploader();
    const res = await up.upload({
      filePath: file.path,
      size: file.size,
      key,
      resume: stored,
      onPartDone: (p) => void done.push(p.partNumber),
    });
    up.close();
    expect(partsSentSince(from)).toEqual([4, 5, 6, 7, 8]);
    expect(sorted(done)).toEqual([2, 4, 5, 6, 7, 8]); // part 2 is now recorded too
    expect(res.bytesSent).toBe(5 * 5 * MiB);
    expect(await objectDigest(s3.endpoint, key)).toEqual({ size: file.size, md5Hex: file.md5Hex });
  });

  it('an upload id the bucket no longer knows (NoSuchUpload on ListParts) → reset and fresh upload', async () => {
    const key = 'ws/resume/c.mp4';
    proxy.intercept = (_req, url) =>
      url.searchParams.get('uploadId') === 'gone'
        ? { status: 404, body: s3ErrorXml('NoSuchUpload') }
        : undefined;
    const events: string[] = [];
    const from = proxy.seen.length;
    const up = uploader();
    const res = await up.upload({
      filePath: file.path,
      size: file.size,
      key,
      resume: { uploadId: 'gone', partSize: 5 * MiB, parts: [{ partNumber: 1, etag: '"x"', size: 5 * MiB }] },
      onMultipartReset: () => void events.push('reset'),
      onMultipartStarted: (s) =>
        void events.push(`started:${s.partSize}:${s.uploadId === 'gone' ? 'old' : 'new'}`),
    });
    up.close();
    expect(events).toEqual(['reset', `started:${5 * MiB}:new`]);
    expect(partsSentSince(from)).toEqual([1, 2, 3, 4, 5, 6, 7, 8]);
    expect(res.bytesSent).toBe(file.size);
    expect(await objectDigest(s3.endpoint, key)).toEqual({ size: file.size, md5Hex: file.md5Hex });
  });

  it('NoSuchUpload while sending parts of a resumed upload → reset once, then a fresh upload', async () => {
    const key = 'ws/resume/d.mp4';
    proxy.intercept = (req, url) => {
      if (url.searchParams.get('uploadId') !== 'expired') return undefined;
      // Like s3rver: no ListParts; the parts then meet the expired id.
      return isListParts(req.method, url)
        ? { status: 405, body: s3ErrorXml('MethodNotAllowed') }
        : { status: 404, body: s3ErrorXml('NoSuchUpload') };
    };
    let resets = 0;
    const up = uploader();
    const res = await up.upload({
      filePath: file.path,
      size: file.size,
      key,
      resume: {
        uploadId: 'expired',
        partSize: 5 * MiB,
        parts: [{ partNumber: 1, etag: '"x"', size: 5 * MiB }],
      },
      onMultipartReset: () => void resets++,
    });
    up.close();
    expect(resets).toBe(1);
    expect(res.multipart).toBe(true);
    expect(await objectDigest(s3.endpoint, key)).toEqual({ size: file.size, md5Hex: file.md5Hex });
  });

  it('a stored part size of 6 MiB is kept (parts must line up), whatever the new preference', async () => {
    const key = 'ws/resume/e.mp4';
    const state = await interrupted(key, 2, { partSize: 6 * MiB, partConcurrency: 1 });
    expect(state.partSize).toBe(6 * MiB);
    const from = proxy.seen.length;
    const up = uploader({ partSize: 5 * MiB });
    await up.upload({ filePath: file.path, size: file.size, key, resume: state });
    up.close();
    const bodies = proxy.seen.slice(from).filter((s) => s.partNumber !== undefined);
    expect(sorted(bodies.map((s) => s.partNumber!))).toEqual([3, 4, 5, 6, 7]);
    expect(bodies.filter((s) => s.partNumber !== 7).every((s) => s.bytes === 6 * MiB)).toBe(true);
    expect(await objectDigest(s3.endpoint, key)).toEqual({ size: file.size, md5Hex: file.md5Hex });
  });
});
