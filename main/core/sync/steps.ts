import { createHash } from 'node:crypto';
import fs from 'node:fs/promises';
import path from 'node:path';
import type { ApiClient } from '../api/client.js';
import { DmsError, toDmsError } from '../errors.js';
import { md5File, tinyFingerprint } from '../media/fingerprint.js';
import { flightFolderOf } from '../media/flight.js';
import { readMediaInfo } from '../media/metadata.js';
import type { Queue, QueueRow } from '../queue/queue.js';
import { buildObjectKey } from '../storage/keys.js';
import { DEFAULT_MULTIPART_THRESHOLD, readRangeWithMd5 } from '../storage/parts.js';
import type { Uploader } from '../storage/types.js';
import type { StsCache } from './sts-cache.js';
import { callbackBody, fastUploadBody, type FileInfo } from './file-info.js';

/** Everything a step needs; owned by the engine. */
export interface StepContext {
  queue: Queue;
  api: ApiClient;
  sts: StsCache;
  uploaderFor: (provider: string) => Uploader;
  aircraftDefault?: string;
  signal: AbortSignal;
  onBytes: (bytes: number, sent: boolean) => void;
  /**
   * Small files read whole by the hash step, kept for the upload step of the
   * same row (the engine bounds and clears it): one read per file instead of three.
   */
  contents: Map<number, Buffer>;
}

/** Files below this are read whole into memory, hashed here, and kept for their upload. */
export const READ_WHOLE_BELOW = 1024 * 1024;
/**
 * Files that go up in one PUT (below the multipart threshold: photos) are
 * also read whole, in a hash worker, while the bytes kept for rows in flight
 * stay under this budget: the photo is then read and hashed once instead of
 * twice (fingerprint, then Content-MD5 at upload). Beyond it, the streamed path.
 */
export const KEEP_BUDGET_BYTES = 48 * 1024 * 1024;

function keptBytes(contents: Map<number, Buffer>): number {
  let n = 0;
  for (const b of contents.values()) n += b.length;
  return n;
}

/** Thrown when the file on disk is no longer the version this row describes. */
export class FileChangedError extends DmsError {
  constructor(rel: string) {
    super('source-missing', `${rel} changed on disk; it will be read again.`);
  }
}

/** The file cannot be opened or stat'ed: gone (card pulled) or unreadable for now. */
function missing(row: QueueRow, err: unknown): DmsError {
  const code = (err as { code?: string }).code;
  return new DmsError('source-missing', `${row.relPath} is not there any more (was the card removed?).`, {
    cause: err,
    retryable: code !== 'ENOENT',
  });
}

/** Checks the file is still the version the row was made for. */
async function assertUnchanged(row: QueueRow): Promise<void> {
  let st;
  try {
    st = await fs.stat(row.absPath);
  } catch (err) {
    throw missing(row, err);
  }
  if (st.size !== row.size || Math.trunc(st.mtimeMs) !== row.mtimeMs) throw new FileChangedError(row.relPath);
}

/** discovered -> hashed: content MD5 (one streamed read) and metadata. */
export async function hashStep(ctx: StepContext, row: QueueRow): Promise<void> {
  const mediaOpts = { relPath: row.relPath, ...(ctx.aircraftDefault ? { aircraftDefault: ctx.aircraftDefault } : {}) };
  let md5: string;
  let media: Awaited<ReturnType<typeof readMediaInfo>>;
  if (row.size < READ_WHOLE_BELOW) {
    const content = await readWhole(row);
    md5 = createHash('md5').update(content).digest('hex');
    ctx.onBytes(content.length, false);
    media = await readMediaInfo(row.absPath, { ...mediaOpts, content });
    ctx.contents.set(row.id, content);
  } else if (row.size < DEFAULT_MULTIPART_THRESHOLD && keptBytes(ctx.contents) + row.size <= KEEP_BUDGET_BYTES) {
    await assertUnchanged(row);
    const { body, md5: digest } = await readRangeWithMd5(row.absPath, 0, row.size, row.size);
    md5 = digest.toString('hex');
    ctx.onBytes(body.length, false);
    media = await readMediaInfo(row.absPath, { ...mediaOpts, content: body });
    await assertUnchanged(row);
    ctx.contents.set(row.id, body);
  } else {
    await assertUnchanged(row);
    [md5, media] = await Promise.all([
      md5File(row.absPath, { signal: ctx.signal, onBytes: (n) => ctx.onBytes(n, false), sizeHint: row.size }),
      readMediaInfo(row.absPath, mediaOpts),
    ]);
    // The file must not have changed while we read it, or the fingerprint
    // would describe content that no longer exists.
    await assertUnchanged(row);
  }
  const flight = flightFolderOf(row.relPath);
  const metadata = { ...media.metadata };
  if (!metadata.created_time) metadata.created_time = isoWithOffset(new Date(row.mtimeMs));
  const info: FileInfo = {
    name: path.posix.basename(row.relPath),
    path: flight.path,
    ...(flight.missionName ? { missionName: flight.missionName } : {}),
    fileGroupId: flight.fileGroupId,
    metadata,
    subFileType: media.subFileType,
    isOriginal: media.isOriginal,
    ...(media.droneModelKey ? { droneModelKey: media.droneModelKey } : {}),
    ...(media.payloadModelKey ? { payloadModelKey: media.payloadModelKey } : {}),
    ...(media.sn ? { sn: media.sn } : {}),
    ...(media.cameraModel ? { cameraModel: media.cameraModel } : {}),
    ...(media.unsupportedReason ? { unsupportedReason: media.unsupportedReason } : {}),
    ...(media.warnings.length ? { warnings: media.warnings } : {}),
  };
  const tiny = tinyFingerprint(md5, media.captureTime ?? new Date(row.mtimeMs));
  ctx.queue.setHashed(row.id, md5, tiny, info);
}

/**
 * A small file's bytes in one read, checked against the row's version
 * (size and mtime) on the open descriptor before and after the read: the
 * same guarantee as assertUnchanged() around a streamed read, in fewer calls.
 */
async function readWhole(row: QueueRow): Promise<Buffer> {
  let handle;
  try {
    handle = await fs.open(row.absPath, 'r');
  } catch (err) {
    throw missing(row, err);
  }
  try {
    const same = (st: { size: number; mtimeMs: number }) => st.size === row.size && Math.trunc(st.mtimeMs) === row.mtimeMs;
    if (!same(await handle.stat())) throw new FileChangedError(row.relPath);
    const buf = Buffer.allocUnsafe(row.size);
    let got = 0;
    while (got < row.size) {
      const { bytesRead } = await handle.read(buf, got, row.size - got, got);
      if (bytesRead === 0) throw new FileChangedError(row.relPath); // shorter than it was
      got += bytesRead;
    }
    // Same size and mtime after the read: no byte was added or rewritten meanwhile.
    if (!same(await handle.stat())) throw new FileChangedError(row.relPath);
    return buf;
  } catch (err) {
    throw err instanceof DmsError ? err : toDmsError(err, 'source-missing');
  } finally {
    await handle.close().catch(() => undefined);
  }
}

/** hashed -> done (server already has it) or fast-upload-checked. */
export async function fastUploadStep(ctx: StepContext, row: QueueRow): Promise<'known' | 'unknown'> {
  const info = row.info as FileInfo;
  const outcome = await ctx.api.fastUpload(fastUploadBody(info, row.fingerprint!, row.tinyFingerprint!), {
    signal: ctx.signal,
  });
  if (outcome.known) {
    ctx.queue.setDone(row.id, 'fast-uploaded');
    return 'known';
  }
  ctx.queue.setFastUploadChecked(row.id);
  return 'unknown';
}

/** fast-upload-checked / uploading -> uploaded, resuming stored parts. */
export async function uploadStep(ctx: StepContext, row: QueueRow): Promise<void> {
  const content = ctx.contents.get(row.id);
  // Bytes kept from the hash step are the fingerprinted version whatever the
  // disk holds now: the check after the upload is the one that matters.
  if (!content) await assertUnchanged(row);
  const target = await ctx.sts.get({ signal: ctx.signal });
  const uploader = ctx.uploaderFor(target.provider);
  const info = row.info as FileInfo;
  const key =
    row.objectKey ??
    buildObjectKey({
      prefix: target.objectKeyPrefix,
      fingerprint: row.fingerprint!,
      relPath: row.relPath,
      ...(info.path ? { flightFolder: info.path } : {}),
    });
  // After a crash between "multipart complete" and our record of it, the
  // object is already there under its content-addressed key: nothing to send
  // again. Only for multipart: such an object exists only once Complete
  // succeeded, whereas a cut single PUT can leave a truncated object behind
  // on some stores (s3rver), which must never be taken for the file.
  if (row.state === 'uploading' && row.uploadId && (await uploader.exists(key, ctx.signal))) {
    ctx.queue.setUploaded(row.id, key);
    return;
  }
  // (A small file's single PUT takes milliseconds and is simply sent again
  // after a crash: recording "uploading" first would cost a commit per file.)
  if (!content && row.objectKey !== key) ctx.queue.setUploading(row.id, key);
  const resume = row.uploadId && row.partSize ? { uploadId: row.uploadId, partSize: row.partSize, parts: ctx.queue.parts(row.id) } : null;
  const result = await uploader.upload({
    filePath: row.absPath,
    size: row.size,
    key,
    md5Hex: row.fingerprint!,
    ...(content ? { content } : {}),
    resume,
    onMultipartStarted: (s) => ctx.queue.setMultipartStarted(row.id, key, s.uploadId, s.partSize),
    onPartDone: (p) => ctx.queue.addPart(row.id, p),
    onMultipartReset: () => ctx.queue.resetMultipart(row.id),
    onProgress: (n) => ctx.onBytes(n, true),
    signal: ctx.signal,
  });
  // Changed during the upload: the object holds a mix or the old content.
  // Never record it; the new version gets a row (and key) of its own.
  await assertUnchanged(row);
  ctx.queue.setUploaded(row.id, key, result.bytesSent);
}

/** uploaded -> done: the callback, exactly once even when an answer is lost. */
export async function callbackStep(ctx: StepContext, row: QueueRow): Promise<'posted' | 'already-recorded'> {
  const info = row.info as FileInfo;
  if (row.callbackUnknown) {
    // An earlier callback may have been stored with its answer lost. Servers
    // in the wild record every callback and break on duplicates: ask first.
    const check = await ctx.api.fastUpload(fastUploadBody(info, row.fingerprint!, row.tinyFingerprint!), {
      signal: ctx.signal,
    });
    if (check.known) {
      ctx.queue.setDone(row.id, 'uploaded');
      return 'already-recorded';
    }
    // Re-post only on a definite "this fingerprint is not known". Any other
    // refusal (a server error wrapped in an envelope) leaves the outcome of
    // the first callback unknown: try the check again later instead.
    if (!isUnknownFingerprint(check.code, check.message)) {
      throw new DmsError('server', `The server could not say whether it already has ${info.name}: ${check.message}`, {
        serverCode: check.code,
        serverMessage: check.message,
      });
    }
  }
  ctx.queue.setCallbackUnknown(row.id);
  try {
    await ctx.api.uploadCallback(callbackBody(info, row.fingerprint!, row.tinyFingerprint!, row.objectKey!), {
      signal: ctx.signal,
    });
  } catch (err) {
    // A refusal is a definite answer: nothing was stored, no check needed next time.
    if (err instanceof DmsError && err.kind === 'rejected') ctx.queue.clearCallbackUnknown(row.id);
    throw err;
  }
  ctx.queue.setDone(row.id, 'uploaded');
  return 'posted';
}

/**
 * The answers servers give for an unknown fingerprint: the reference
 * service's 404001, and the sample server's -1 "<fingerprint>don't exist.".
 */
export function isUnknownFingerprint(code: number | string, message: string): boolean {
  if (Number(code) === 404001) return true;
  return /don'?t exist|does not exist|not (be )?found|not known|unknown fingerprint/i.test(message);
}

/** `YYYY-MM-DDTHH:mm:ss±hh:mm` in the machine's zone (fallback capture time). */
export function isoWithOffset(d: Date): string {
  const off = -d.getTimezoneOffset();
  const pad = (n: number) => String(Math.trunc(Math.abs(n))).padStart(2, '0');
  const sign = off >= 0 ? '+' : '-';
  return (
    `${d.getFullYear()}-${pad(d.getMonth() + 1)}-${pad(d.getDate())}T${pad(d.getHours())}:${pad(d.getMinutes())}:${pad(d.getSeconds())}` +
    `${sign}${pad(off / 60)}:${pad(off % 60)}`
  );
}
