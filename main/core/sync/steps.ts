/**
 * The steps of a file's way to the server. Each does its I/O (the disk, the
 * server, the bucket) and returns what happened, as a change of the
 * transition table (queue/transitions.ts); the engine applies it through the
 * store. No step writes a file's state: they read the store (a flight's
 * serial, the parts of an upload), and the upload step writes only its part
 * log, through the PartLog the engine hands it.
 */
import { createHash } from 'node:crypto';
import fs from 'node:fs/promises';
import path from 'node:path';
import type { ApiClient } from '../api/client.js';
import type { Config } from '../config.js';
import { DmsError, notActedOn, toDmsError } from '../errors.js';
import { isInside } from '../media/discover.js';
import { md5File, tinyFingerprint } from '../media/fingerprint.js';
import { flightFolderOf } from '../media/flight-folder.js';
import { readMediaInfo, type MediaInfo } from '../media/metadata.js';
import { parseMrk } from '../media/mrk.js';
import { rtkKindOf } from '../media/rtk-files.js';
import type { FileInfo } from '../queue/file-info.js';
import type { Queue } from '../queue/queue.js';
import {
  checkedObject,
  type CheckedRow,
  type DiscoveredRow,
  type HashedRow,
  type QueueRow,
  type UploadedRow,
  type Verification,
} from '../queue/rows.js';
import type { Change } from '../queue/transitions.js';
import { buildObjectKey } from '../storage/keys.js';
import { DEFAULT_MULTIPART_THRESHOLD, readRangeWithMd5 } from '../storage/parts.js';
import type { FinishedPart } from '../storage/types.js';
import { fastUploadVerdict } from './answers.js';
import type { BucketAccess } from './bucket.js';
import type { KeptBytes } from './kept.js';
import { aircraftSerial, callbackBody, fastUploadBody, type FileRef } from './requests.js';
import {
  CallbackNotActedOn,
  CallbackOutcomeUnknown,
  FileChangedError,
  UnclearAnswerError,
} from './step-errors.js';

/** What steps may read of the store: never write. */
export type StoreReader = Pick<Queue, 'flights' | 'parts'>;

/** Everything a step needs; owned by the engine. */
export interface StepContext {
  queue: StoreReader;
  api: ApiClient;
  bucket: BucketAccess;
  config: Config;
  signal: AbortSignal;
  onBytes: (bytes: number, sent: boolean) => void;
  /**
   * Bytes read by the hash step, kept for the upload step of the same row
   * (the engine clears them): one read per file instead of two or three.
   */
  kept: KeptBytes;
}

/**
 * The part log of one upload in progress: where the object is being written
 * and which parts the bucket acknowledged, recorded as they happen so a
 * restart sends only what is missing. Each call is a change of the row
 * through the store; `row` is the row as it now stands.
 */
export interface PartLog {
  readonly row: CheckedRow;
  record(
    change: Extract<
      Change,
      { type: 'upload-begun' | 'multipart-started' | 'multipart-reset' | 'upload-reset' }
    >,
  ): void;
  partDone(part: FinishedPart): void;
}

/** Files below this are read whole into memory, hashed here, and kept for their upload. */
export const READ_WHOLE_BELOW = 1024 * 1024;

/** The file cannot be opened or stat'ed: gone (card pulled) or unreadable for now. */
function missing(row: QueueRow, err: unknown): DmsError {
  const code = (err as { code?: string }).code;
  return new DmsError('source-missing', `${row.relPath} is not there any more (was the card removed?).`, {
    cause: err,
    retryable: code !== 'ENOENT',
  });
}

/** The card or folder a row was found under: its absolute path minus the relative one. */
const rootOf = (row: QueueRow): string => row.absPath.slice(0, row.absPath.length - row.relPath.length - 1);

/**
 * Its contents are not trusted: a file swapped for a link since the scan
 * must not lead the read out of it.
 */
async function assertInsideSource(row: QueueRow): Promise<void> {
  const root = rootOf(row);
  let real: string;
  let realRoot: string;
  try {
    [real, realRoot] = await Promise.all([fs.realpath(row.absPath), fs.realpath(root)]);
  } catch (err) {
    throw missing(row, err);
  }
  if (!isInside(real, realRoot)) {
    throw new DmsError(
      'invalid-input',
      `${row.relPath} is now a link to ${real}, outside ${root}: it was not read or sent.`,
      {
        retryable: false,
      },
    );
  }
}

/** Checks the file is still the version the row was made for (and still on its card). */
async function assertUnchanged(row: QueueRow): Promise<void> {
  await assertInsideSource(row);
  let st;
  try {
    st = await fs.stat(row.absPath);
  } catch (err) {
    throw missing(row, err);
  }
  if (st.size !== row.size || Math.trunc(st.mtimeMs) !== row.mtimeMs) throw new FileChangedError(row.relPath);
}

/** discovered -> hashed: content MD5 (one streamed read) and metadata (media) or the exposure log (an MRK). */
export async function hashStep(
  ctx: StepContext,
  row: DiscoveredRow,
): Promise<Extract<Change, { type: 'hashed' }>> {
  const mediaOpts = {
    relPath: row.relPath,
    root: rootOf(row),
    ...(ctx.config.aircraftDefault ? { aircraftDefault: ctx.config.aircraftDefault } : {}),
  };
  // RTK/PPK files carry no picture metadata: only their content is fingerprinted.
  const describe = (content?: Buffer): Promise<MediaInfo | null> =>
    row.kind === 'rtk'
      ? Promise.resolve(null)
      : readMediaInfo(row.absPath, { ...mediaOpts, ...(content ? { content } : {}) });
  let md5: string;
  let media: MediaInfo | null;
  let kept: Buffer | undefined;
  await assertInsideSource(row);
  if (row.size < READ_WHOLE_BELOW) {
    kept = await readWhole(row);
    md5 = createHash('md5').update(kept).digest('hex');
    ctx.onBytes(kept.length, false);
    media = await describe(kept);
  } else if (row.size < DEFAULT_MULTIPART_THRESHOLD && ctx.kept.worthKeeping(row.size)) {
    // Files that go up in one PUT (photos) are read whole in a hash worker
    // and kept, while it pays (kept.ts); else the streamed path below.
    await assertUnchanged(row);
    const { body, md5: digest } = await readRangeWithMd5(row.absPath, 0, row.size, row.size);
    md5 = digest.toString('hex');
    ctx.onBytes(body.length, false);
    media = await describe(body);
    await assertUnchanged(row);
    kept = body;
  } else {
    await assertUnchanged(row);
    [md5, media] = await Promise.all([
      md5File(row.absPath, { signal: ctx.signal, onBytes: (n) => ctx.onBytes(n, false), sizeHint: row.size }),
      describe(),
    ]);
    // The file must not have changed while we read it, or the fingerprint
    // would describe content that no longer exists.
    await assertUnchanged(row);
  }
  if (kept) ctx.kept.set(row.id, kept);
  const name = path.posix.basename(row.relPath);
  // The exposure log, kept for the flight's report (also once the card is gone).
  const mrk =
    rtkKindOf(name) === 'mrk'
      ? parseMrk((kept ?? (await fs.readFile(row.absPath))).toString('latin1'))
      : undefined;
  const flight = flightFolderOf(row.relPath);
  const metadata = { ...media?.metadata };
  if (!metadata.created_time) metadata.created_time = isoWithOffset(new Date(row.mtimeMs));
  const info: FileInfo = {
    name,
    path: flight.path,
    ...(flight.missionName ? { missionName: flight.missionName } : {}),
    fileGroupId: flight.fileGroupId,
    metadata,
    subFileType: media?.subFileType ?? 0,
    isOriginal: media?.isOriginal ?? true,
    ...(media?.droneModelKey ? { droneModelKey: media.droneModelKey } : {}),
    ...(media?.payloadModelKey ? { payloadModelKey: media.payloadModelKey } : {}),
    ...(media?.sn ? { sn: media.sn } : {}),
    ...(media?.cameraSerial ? { cameraSerial: media.cameraSerial } : {}),
    ...(media?.cameraModel ? { cameraModel: media.cameraModel } : {}),
    ...(media?.unsupportedReason ? { unsupportedReason: media.unsupportedReason } : {}),
    ...(media?.warnings.length ? { warnings: media.warnings } : {}),
  };
  const tiny = tinyFingerprint(md5, media?.captureTime ?? new Date(row.mtimeMs));
  return { type: 'hashed', fingerprint: md5, tinyFingerprint: tiny, info, ...(mrk ? { mrk } : {}) };
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
    const same = (st: { size: number; mtimeMs: number }) =>
      st.size === row.size && Math.trunc(st.mtimeMs) === row.mtimeMs;
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

/** Asks the server about a file's content: its verdict, and the answer's words. */
async function askServer(ctx: StepContext, row: FileRef & { id: number }) {
  const sn = aircraftSerial(row, ctx.queue, ctx.config);
  const answer = await ctx.api.fastUpload(fastUploadBody(row, sn), { signal: ctx.signal });
  return {
    verdict: fastUploadVerdict(answer),
    code: answer.known ? 0 : answer.code,
    message: answer.known ? '' : answer.message,
  };
}

/**
 * hashed -> done (the server already has it) or fast-upload-checked. A server
 * that refuses the request as described (a camera outside its device list, a
 * required field it rejects) will refuse the callback too: the file is failed
 * here, before any byte is sent. An unclear answer means upload: no callback
 * was posted for this file yet, so nothing can be recorded twice.
 */
export async function fastUploadStep(ctx: StepContext, row: HashedRow): Promise<Change> {
  const { verdict, code, message } = await askServer(ctx, row);
  if (verdict === 'known') {
    ctx.kept.answered('known');
    return { type: 'known', verified: vouched(row.size) };
  }
  if (verdict === 'refused') throw refusedBeforeUpload(row.info, code, message);
  ctx.kept.answered('unknown');
  return { type: 'not-known' };
}

function refusedBeforeUpload(info: FileInfo, code: number | string, message: string): DmsError {
  const why = info.unsupportedReason ? ` ${info.unsupportedReason}.` : '';
  const todo = info.unsupportedReason
    ? ' Upload it another way, or ask the administrator of the server to accept this camera.'
    : ' Fix the cause (for example the aircraft or its serial in the settings), then choose Retry.';
  const text = `The server refuses ${info.name}: "${message}". Nothing of it was uploaded.${why}${todo}`;
  return new DmsError('rejected', text, {
    serverCode: code,
    serverMessage: message,
    retryable: false,
    plain: text,
  });
}

/**
 * A row that waited for another row with the same content, which is now
 * done: ask the server before uploading or posting anything of our own.
 * 'known' when the server holds it, else null (go on as usual).
 */
export async function twinStep(ctx: StepContext, row: CheckedRow | UploadedRow): Promise<Change | null> {
  const { verdict } = await askServer(ctx, row);
  return verdict === 'known' ? { type: 'known', verified: vouched(row.size) } : null;
}

/** fast-upload-checked / uploading -> uploaded, resuming stored parts. */
export async function uploadStep(ctx: StepContext, log: PartLog): Promise<Change> {
  const row = log.row;
  const content = ctx.kept.get(row.id);
  // Bytes kept from the hash step are the fingerprinted version whatever the
  // disk holds now: the check after the upload is the one that matters.
  if (!content) await assertUnchanged(row);
  const target = await ctx.bucket.sts.get({ signal: ctx.signal });
  const uploader = ctx.bucket.uploaderFor(target.provider);
  const fresh = buildObjectKey({
    prefix: target.objectKeyPrefix,
    fingerprint: row.fingerprint,
    relPath: row.relPath,
    ...(row.info.path ? { flightFolder: row.info.path } : {}),
  });
  // A key under another prefix (the server's storage was reconfigured) is
  // never reused, nor its upload id: start afresh under the current one.
  if (row.objectKey !== null && !row.objectKey.startsWith(`${target.objectKeyPrefix}/`))
    log.record({ type: 'upload-reset' });
  const key = log.row.objectKey ?? fresh;
  const multipart = log.row.multipart;
  // After a crash between "multipart complete" and our record of it, the
  // object is already there under its content-addressed key: nothing to send
  // again. Only for multipart: such an object exists only once Complete
  // succeeded, whereas a cut single PUT can leave a truncated object behind
  // on some stores (s3rver), which must never be taken for the file.
  if (log.row.state === 'uploading' && multipart && (await uploader.exists(key, ctx.signal))) {
    return { type: 'uploaded', objectKey: key, bytesSent: 0, verified: null };
  }
  // (A small file's single PUT takes milliseconds and is simply sent again
  // after a crash: recording "uploading" first would cost a commit per file.)
  if (!content && log.row.objectKey !== key) log.record({ type: 'upload-begun', objectKey: key });
  const resume = multipart ? { ...multipart, parts: ctx.queue.parts(row.id) } : null;
  const result = await uploader.upload({
    filePath: row.absPath,
    size: row.size,
    key,
    md5Hex: row.fingerprint,
    ...(content ? { content } : {}),
    resume,
    onMultipartStarted: (s) =>
      log.record({ type: 'multipart-started', objectKey: key, uploadId: s.uploadId, partSize: s.partSize }),
    onPartDone: (p) => log.partDone(p),
    onMultipartReset: () => log.record({ type: 'multipart-reset' }),
    onProgress: (n) => ctx.onBytes(n, true),
    signal: ctx.signal,
  });
  // Changed during the upload: the object holds a mix or the old content.
  // Never record it; the new version gets a row (and key) of its own.
  await assertUnchanged(row);
  // The store checked the Content-MD5 of a single PUT (its ETag is that MD5);
  // a completed multipart holds the parts it acknowledged: the size.
  const etag = result.etag?.replace(/"/g, '').toLowerCase();
  const checksum = !result.multipart && etag === row.fingerprint.toLowerCase() ? 'match' : 'not-given';
  return {
    type: 'uploaded',
    objectKey: key,
    bytesSent: result.bytesSent,
    verified: { at: Date.now(), by: 'bucket', found: true, size: row.size, checksum },
  };
}

/**
 * Before re-posting a callback whose answer was lost: an earlier one may
 * have been stored. Servers in the wild record every callback and break on
 * duplicates: ask first. 'recorded' when the server holds the file, null on a
 * definite "this fingerprint is not known" (post again); anything else is an
 * UnclearAnswerError (never post on it).
 */
export async function checkBeforeRepost(ctx: StepContext, row: UploadedRow): Promise<Change | null> {
  const { verdict, code, message } = await askServer(ctx, row);
  if (verdict === 'known') return { type: 'recorded' };
  if (verdict !== 'unknown') throw new UnclearAnswerError(row.info.name, code, message);
  return null;
}

/**
 * uploaded -> done: the callback. The engine recorded 'callback-sent' just
 * before: if the answer is lost, the next try asks first (checkBeforeRepost).
 */
export async function callbackStep(ctx: StepContext, row: UploadedRow): Promise<Change> {
  const sn = aircraftSerial(row, ctx.queue, ctx.config);
  try {
    await ctx.api.uploadCallback(callbackBody(row, sn, row.objectKey), { signal: ctx.signal });
  } catch (err) {
    const e = toDmsError(err);
    // A refusal, or a request that never reached the server, is a definite
    // answer: nothing was stored, no check needed next time.
    if (notActedOn(e)) throw new CallbackNotActedOn(e);
    // Cut, timed out, a 5xx, an unreadable answer, or stopped by us while on
    // its way: the server may have it.
    throw new CallbackOutcomeUnknown(e);
  }
  return { type: 'recorded' };
}

/** The object as the bucket has it now (see checkedObject). */
export async function checkObject(
  ctx: StepContext,
  key: string,
  size: number,
  md5: string,
): Promise<Verification> {
  return checkedObject(await ctx.bucket.stat(key, ctx.signal), size, md5, Date.now());
}

/** The server said it holds this content (fast-upload "known"): no key of ours to look at, its word. */
export function vouched(size: number): Verification {
  return { at: Date.now(), by: 'server', found: true, size, checksum: 'match' };
}

/**
 * uploaded -> done for an RTK/PPK file: no callback (the contract's callback
 * is for media, and the sample server requires media metadata these files do
 * not have: it is never faked); the object is checked in the bucket instead.
 */
export async function storeStep(ctx: StepContext, row: UploadedRow): Promise<Change> {
  const v = await checkObject(ctx, row.objectKey, row.size, row.fingerprint);
  if (!v.found || v.size !== row.size || v.checksum === 'mismatch') {
    throw new DmsError(
      'storage',
      `${row.info.name} is not in the bucket as it was sent (${v.found ? `size ${v.size}, checksum ${v.checksum}` : 'not found'}); it will be sent again.`,
    );
  }
  return { type: 'stored', verified: v };
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
