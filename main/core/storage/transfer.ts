/**
 * The upload algorithm, independent of the provider: one PUT for small files,
 * a resumable multipart upload for large ones. Providers (s3.ts, oss.ts) only
 * implement StorageBackend and throw DmsError (see bucket-errors.ts).
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { DmsError, isDmsError } from '../errors.js';
import { fileChangedError, isNoSuchUpload } from './bucket-errors.js';
import { giveBody } from './body-pool.js';
import {
  DEFAULT_MULTIPART_THRESHOLD,
  DEFAULT_PART_CONCURRENCY,
  DEFAULT_PART_SIZE,
  MAX_PARTS,
  choosePartSize,
  partCount,
  partRange,
  readRangeWithMd5,
  runPool,
  type BodySource,
} from './parts.js';
import type { FinishedPart, UploaderOptions, UploadRequest, UploadResult } from './types.js';

/** A single PUT's answer: the ETag, and whether the body was written (false: this file was already there). */
export interface PutAnswer {
  etag: string | undefined;
  written: boolean;
}

export interface StorageBackend {
  /** One PUT with Content-Length and Content-MD5; `onChunk` gets bytes handed over so far. */
  putObject(
    req: UploadRequest,
    body: BodySource,
    md5: string,
    onChunk: (sent: number) => void,
  ): Promise<PutAnswer>;
  createMultipart(req: UploadRequest): Promise<string>;
  uploadPart(
    req: UploadRequest,
    uploadId: string,
    partNumber: number,
    body: Buffer,
    md5: string,
    signal: AbortSignal,
  ): Promise<string>;
  /** Parts the bucket holds for this upload (all pages). */
  listParts(req: UploadRequest, uploadId: string): Promise<FinishedPart[]>;
  completeMultipart(req: UploadRequest, uploadId: string, parts: FinishedPart[]): Promise<string | undefined>;
}

export interface TransferConfig {
  multipartThreshold: number;
  partSize: number;
  partConcurrency: number;
}

export function resolveConfig(opts: UploaderOptions): TransferConfig {
  const positive = (v: number | undefined, d: number): number =>
    v !== undefined && v > 0 ? Math.floor(v) : d;
  return {
    multipartThreshold: positive(opts.multipartThreshold, DEFAULT_MULTIPART_THRESHOLD),
    partSize: positive(opts.partSize, DEFAULT_PART_SIZE),
    partConcurrency: positive(opts.partConcurrency, DEFAULT_PART_CONCURRENCY),
  };
}

interface OpenUpload {
  uploadId: string;
  partSize: number;
  done: Map<number, FinishedPart>;
  /** Created by this call (a NoSuchUpload then is a real error, not a stale id). */
  fresh: boolean;
}

/** Kinds worth one immediate, transparent retry of a single part. */
const TRANSIENT = new Set(['network', 'timeout', 'server', 'throttled']);

/**
 * A body read for one request, given back once that request is answered
 * (body-pool.ts: its memory serves the next body). Without it a sent photo
 * or part waited for a garbage collection, which V8 starts only when 64 MiB
 * of such memory has grown since the last one: in the offload bench 44-84
 * MiB of sent bodies sat in the main thread at the peak of RSS.
 */
const release = giveBody;

/**
 * Answers meaning "this bucket will not list parts": not implemented
 * (s3rver answers 405 MethodNotAllowed), or not allowed — STS policies often
 * grant PutObject without ListMultipartUploadParts. The stored state is
 * then trusted; a wrong guess fails Complete with InvalidPart, and the
 * upload then starts over (uploadMultipart).
 */
function cannotList(err: unknown): boolean {
  if (!(err instanceof DmsError)) return false;
  const code = String(err.serverCode);
  return (
    ['NotImplemented', 'MethodNotAllowed', 'XNotImplemented', 'AccessDenied'].includes(code) ||
    err.status === 405 ||
    err.status === 501
  );
}

const unquote = (etag: string): string => etag.replace(/"/g, '');

export async function transfer(
  b: StorageBackend,
  req: UploadRequest,
  cfg: TransferConfig,
): Promise<UploadResult> {
  if (!Number.isSafeInteger(req.size) || req.size < 0 || req.key === '' || req.key.startsWith('/')) {
    throw new DmsError('invalid-input', `Invalid upload request for "${req.key}".`, { retryable: false });
  }
  if (req.streamed === true && req.md5Hex === undefined) {
    // Its Content-MD5 goes before its body: a streamed file without one would have to be read whole first.
    throw new DmsError('invalid-input', `A streamed upload of "${req.key}" needs its MD5 first.`, {
      retryable: false,
    });
  }
  if (req.signal?.aborted === true) throw new DmsError('cancelled', 'The upload was cancelled.');
  const multipart =
    req.streamed !== true &&
    req.size > 0 &&
    (req.size >= cfg.multipartThreshold || (req.resume ?? null) !== null);
  return multipart ? uploadMultipart(b, req, cfg) : uploadSmall(b, req);
}

async function uploadSmall(b: StorageBackend, req: UploadRequest): Promise<UploadResult> {
  // Small files are read whole (bounded by the threshold): the body can be
  // sent again after a credential refresh, and the content is checked
  // against the fingerprint before it leaves, not after.
  // One MD5 pass (off the event loop when possible) serves both the check and the Content-MD5 header.
  // Content kept from fingerprinting is by construction what md5Hex describes.
  const kept = req.content !== undefined && req.md5Hex !== undefined && req.content.length === req.size;
  // A file the agent wrote itself, with its MD5 worked out before: read as it is sent.
  const streamed = req.streamed === true; // with its md5Hex (transfer() refuses one without)
  const { body, md5: digest }: { body: BodySource; md5: Buffer } = kept
    ? { body: req.content as Buffer, md5: Buffer.from(req.md5Hex as string, 'hex') }
    : streamed
      ? { body: { file: req.filePath, length: req.size }, md5: Buffer.from(req.md5Hex as string, 'hex') }
      : await readRangeWithMd5(req.filePath, 0, req.size, req.size);
  if (req.md5Hex !== undefined && digest.toString('hex') !== req.md5Hex.toLowerCase()) {
    throw fileChangedError();
  }
  // Progress only moves forward, even if the body is sent twice.
  let reported = 0;
  const report = (sent: number): void => {
    if (sent > reported) {
      req.onProgress?.(sent - reported);
      reported = sent;
    }
  };
  const ticket = await req.slot?.(req.size, req.signal);
  let answer: PutAnswer;
  try {
    answer = await b.putObject(req, body, digest.toString('base64'), report);
  } catch (err) {
    ticket?.release();
    throw err;
  }
  // Refused because this file is already there: only what went before the refusal crossed the link.
  if (answer.written) report(req.size);
  ticket?.done(reported);
  // Content kept from the fingerprint belongs to the caller.
  if (!kept && Buffer.isBuffer(body)) release(body);
  const { etag } = answer;
  return { key: req.key, ...(etag !== undefined ? { etag } : {}), bytesSent: reported, multipart: false };
}

async function uploadMultipart(
  b: StorageBackend,
  req: UploadRequest,
  cfg: TransferConfig,
): Promise<UploadResult> {
  const stats = { bytesSent: 0 };
  const open = await openUpload(b, req, cfg);
  try {
    return await sendParts(b, req, cfg, open, stats);
  } catch (err) {
    // The stored upload id expired or was aborted by a bucket lifecycle rule,
    // or a part we trusted without ListParts is not there (InvalidPart on
    // Complete): start over once rather than fail the same way forever.
    const stale = isNoSuchUpload(err) || (err instanceof DmsError && err.serverCode === 'InvalidPart');
    if (!stale || open.fresh || req.signal?.aborted === true) throw err;
    return await sendParts(b, req, cfg, await reset(b, req, cfg), stats);
  }
}

async function startFresh(b: StorageBackend, req: UploadRequest, cfg: TransferConfig): Promise<OpenUpload> {
  const partSize = choosePartSize(req.size, cfg.partSize);
  const uploadId = await b.createMultipart(req);
  await req.onMultipartStarted?.({ uploadId, partSize });
  return { uploadId, partSize, done: new Map(), fresh: true };
}

async function reset(b: StorageBackend, req: UploadRequest, cfg: TransferConfig): Promise<OpenUpload> {
  await req.onMultipartReset?.();
  return startFresh(b, req, cfg);
}

async function openUpload(b: StorageBackend, req: UploadRequest, cfg: TransferConfig): Promise<OpenUpload> {
  const r = req.resume;
  if (!r) return startFresh(b, req, cfg);
  // The stored part size is kept even if we would choose another one now:
  // parts already in the bucket only line up with their own part size.
  const usable =
    typeof r.uploadId === 'string' &&
    r.uploadId !== '' &&
    Number.isSafeInteger(r.partSize) &&
    r.partSize > 0 &&
    Math.ceil(req.size / r.partSize) <= MAX_PARTS;
  if (!usable) return reset(b, req, cfg);
  const count = partCount(req.size, r.partSize);
  // A part is reusable only if it has exactly the length its number implies.
  const fits = (p: FinishedPart): boolean =>
    Number.isSafeInteger(p.partNumber) &&
    p.partNumber >= 1 &&
    p.partNumber <= count &&
    typeof p.etag === 'string' &&
    p.etag !== '' &&
    p.size === partRange(p.partNumber, req.size, r.partSize).length;

  let listed: FinishedPart[] | null;
  try {
    listed = await b.listParts(req, r.uploadId);
  } catch (err) {
    if (isNoSuchUpload(err)) return reset(b, req, cfg);
    if (!cannotList(err)) throw err;
    listed = null;
  }
  const done = new Map<number, FinishedPart>();
  if (listed === null) {
    // The bucket cannot tell (s3rver, some gateways): trust what we recorded.
    for (const p of r.parts) if (fits(p)) done.set(p.partNumber, p);
  } else {
    // The bucket is the truth: recorded parts it lacks are sent again, and
    // parts it has that we never recorded (crash after the ack) are reused.
    const recorded = new Map(r.parts.map((p) => [p.partNumber, p]));
    for (const p of listed) {
      if (!fits(p)) continue;
      done.set(p.partNumber, p);
      const rec = recorded.get(p.partNumber);
      if (rec === undefined || unquote(rec.etag) !== unquote(p.etag)) await req.onPartDone?.(p);
    }
  }
  return { uploadId: r.uploadId, partSize: r.partSize, done, fresh: false };
}

async function sendParts(
  b: StorageBackend,
  req: UploadRequest,
  cfg: TransferConfig,
  open: OpenUpload,
  stats: { bytesSent: number },
): Promise<UploadResult> {
  const { uploadId, partSize, done } = open;
  const count = partCount(req.size, partSize);
  function* missing(): Generator<number> {
    for (let n = 1; n <= count; n++) if (!done.has(n)) yield n;
  }
  // Memory stays at partConcurrency × partSize: a part is read only when a lane is free.
  await runPool(missing(), cfg.partConcurrency, req.signal, async (n, signal) => {
    const { offset, length } = partRange(n, req.size, partSize);
    // Its turn on the link first (what goes first, as many as fill the link); read only then.
    const ticket = await req.slot?.(length, signal);
    let etag: string;
    try {
      const read = await readRangeWithMd5(req.filePath, offset, length, req.size);
      const body = read.body;
      const md5 = read.md5.toString('base64');
      try {
        etag = await b.uploadPart(req, uploadId, n, body, md5, signal);
      } catch (err) {
        if (signal.aborted || !isDmsError(err) || !TRANSIENT.has(err.kind)) throw err;
        await sleep(250, undefined, { signal });
        etag = await b.uploadPart(req, uploadId, n, body, md5, signal);
      }
      release(body);
    } catch (err) {
      ticket?.release();
      throw err;
    }
    ticket?.done(length);
    const part: FinishedPart = { partNumber: n, etag, size: length };
    done.set(n, part);
    stats.bytesSent += length;
    req.onProgress?.(length);
    await req.onPartDone?.(part);
  });
  if (req.signal?.aborted === true) throw new DmsError('cancelled', 'The upload was cancelled.');
  const parts = [...done.values()].sort((x, y) => x.partNumber - y.partNumber);
  const etag = await b.completeMultipart(req, uploadId, parts);
  return {
    key: req.key,
    ...(etag !== undefined ? { etag } : {}),
    bytesSent: stats.bytesSent,
    multipart: true,
  };
}
