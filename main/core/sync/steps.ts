/**
 * The steps of a file's way to the server. Each does its I/O (the disk, the
 * server, the bucket) and returns what happened, as a change of the
 * transition table (queue/transitions.ts); the engine applies it through the
 * store. No step writes a file's state: they read the store (a flight's
 * serial, the parts of an upload), and the upload step writes only its part
 * log, through the PartLog the engine hands it.
 */
import { createHash } from 'node:crypto';
import { existsSync } from 'node:fs';
import fs from 'node:fs/promises';
import path from 'node:path';
import type { ApiClient } from '../api/client.js';
import type { Config } from '../config.js';
import { DmsError, notActedOn, toDmsError } from '../errors.js';
import { isInside } from '../media/discover.js';
import { md5File, tinyFingerprint } from '../media/fingerprint.js';
import { flightFolderOf } from '../media/flight-folder.js';
import type * as Metadata from '../media/metadata.js';
import type { MediaInfo } from '../media/metadata.js';
import { sidecarNames } from '../media/video.js';
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
import { buildObjectKey, isUnderPrefix } from '../storage/keys.js';
import { DEFAULT_MULTIPART_THRESHOLD, readRangeWithMd5 } from '../storage/parts.js';
import { copyAndVerify, type CopyJob, type CopyResult } from '../copies/copy-file.js';
import type { FinishedPart, SlotTicket, Uploader } from '../storage/types.js';
import type { LaneName } from '../queue/lanes.js';
import type { PartSlots } from './part-slots.js';
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
  /** Where to read a row's file from: a verified local copy still intact, else the card. */
  place: (row: QueueRow) => Place;
  /** Whose part goes next on the link (lane by lane, as many as fill it); none: no wait. */
  slots?: PartSlots;
  /** A row's lane now (a flagged frame moves while its parts wait); none: the lane it was taken in. */
  laneOf?: (id: number) => LaneName | null;
}

/**
 * Where a file is read from: the card (or watched folder), or a verified
 * local copy of it. `root` is the card's (or the copy's card folder), `size`
 * and `mtimeMs` what the file must still be there.
 */
export interface Place {
  path: string;
  root: string;
  relPath: string;
  size: number;
  mtimeMs: number;
  /** The destination's label when this is a local copy. */
  copyOn?: string;
}

/** A file of `relPath` at `path` (on its card, or in a copy of the card's folder): its root is what precedes relPath. */
export function placeAt(
  path: string,
  file: { relPath: string; size: number; mtimeMs: number },
  copyOn?: string,
): Place {
  return {
    path,
    root: path.slice(0, path.length - file.relPath.length - 1),
    relPath: file.relPath,
    size: file.size,
    mtimeMs: file.mtimeMs,
    ...(copyOn !== undefined ? { copyOn } : {}),
  };
}

/** A row's file on its card. */
export function cardPlace(row: QueueRow): Place {
  return placeAt(row.absPath, row);
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

/**
 * The file cannot be opened or stat'ed: gone (card pulled, or a moment's
 * hiccup: the disk is looked at again), or there and refused to us.
 */
function missing(row: Place, err: unknown): DmsError {
  const code = (err as { code?: string }).code;
  if (row.copyOn !== undefined)
    return new DmsError('source-missing', `The copy of ${row.relPath} on ${row.copyOn} cannot be read now.`, {
      cause: err,
    });
  if (code === 'EACCES' || code === 'EPERM') {
    const text = `${row.relPath} cannot be read: permission denied. It is on the card, but Drone Media Sync may not open it; copy it off by hand, or fix its permissions on a computer, then choose Retry.`;
    return new DmsError('invalid-input', text, { cause: err, retryable: false, plain: text });
  }
  return new DmsError('source-missing', `${row.relPath} is not there any more (was the card removed?).`, {
    cause: err,
    retryable: code !== 'ENOENT',
  });
}

/** How long a card root's real path is taken as looked up (a root re-pointed meanwhile is looked up again). */
const REAL_ROOT_MS = 30_000;
/** Card roots' real paths, one lookup per root (not per file: two walks per small file showed in profiles). */
const realRoots = new Map<string, { at: number; real: Promise<string> }>();

function realRootOf(root: string, fresh: boolean): Promise<string> {
  const hit = realRoots.get(root);
  if (!fresh && hit && Date.now() - hit.at < REAL_ROOT_MS) return hit.real;
  if (realRoots.size >= 64) realRoots.clear();
  const entry = { at: Date.now(), real: fs.realpath(root) };
  realRoots.set(root, entry);
  entry.real.catch(() => {
    if (realRoots.get(root) === entry) realRoots.delete(root);
  });
  return entry.real;
}

/**
 * Its contents are not trusted: a file swapped for a link since the scan
 * must not lead the read out of it. The root's real path is looked up once
 * per root; a file outside it is checked against a fresh lookup before it
 * is refused.
 */
async function assertInsideSource(row: Place): Promise<void> {
  const root = row.root;
  let real: string;
  let realRoot: string;
  try {
    [real, realRoot] = await Promise.all([fs.realpath(row.path), realRootOf(root, false)]);
    if (!isInside(real, realRoot)) realRoot = await realRootOf(root, true);
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

/** Checks the file is still the version the row was made for (and still on its card, or its copy intact). */
async function assertUnchanged(row: Place): Promise<void> {
  await assertInsideSource(row);
  await assertSameVersion(row);
}

/**
 * The version check alone (size and mtime): for a file that is not read
 * again (its bytes were kept from the hash step), where it leads does not
 * matter, only whether the card still holds the version that was sent.
 */
async function assertSameVersion(row: Place): Promise<void> {
  let st;
  try {
    st = await fs.stat(row.path);
  } catch (err) {
    throw missing(row, err);
  }
  if (st.size !== row.size || Math.trunc(st.mtimeMs) !== row.mtimeMs) throw changed(row);
}

/** The card's file changed (read its new version), or a local copy did (read it from elsewhere). */
function changed(row: Place): DmsError {
  if (row.copyOn === undefined) return new FileChangedError(row.relPath);
  return new DmsError(
    'source-missing',
    `The copy of ${row.relPath} on ${row.copyOn} changed since it was verified.`,
  );
}

/** discovered -> hashed: content MD5 (one streamed read) and metadata (media) or the exposure log (an MRK). */
export async function hashStep(
  ctx: StepContext,
  row: DiscoveredRow,
  /** The card's file, or a verified copy of this version (a card copied before: it is not read again). */
  from: Place = cardPlace(row),
): Promise<Extract<Change, { type: 'hashed' }>> {
  const describe = (content?: Buffer) => describeFile(ctx, row, from, content);
  let md5: string;
  let media: MediaInfo | null;
  let kept: Buffer | undefined;
  await assertInsideSource(from);
  if (row.size < READ_WHOLE_BELOW) {
    kept = await readWhole(from);
    md5 = createHash('md5').update(kept).digest('hex');
    ctx.onBytes(kept.length, false);
    media = await describe(kept);
  } else if (row.size < DEFAULT_MULTIPART_THRESHOLD && ctx.kept.worthKeeping(row.size)) {
    // Files that go up in one PUT (photos) are read whole in a hash worker
    // and kept, while it pays (kept.ts); else the streamed path below.
    await assertUnchanged(from);
    const { body, md5: digest } = await readRangeWithMd5(from.path, 0, row.size, row.size);
    md5 = digest.toString('hex');
    ctx.onBytes(body.length, false);
    media = await describe(body);
    await assertUnchanged(from);
    kept = body;
  } else {
    await assertUnchanged(from);
    [md5, media] = await Promise.all([
      md5File(from.path, { signal: ctx.signal, onBytes: (n) => ctx.onBytes(n, false), sizeHint: row.size }),
      describe(),
    ]);
    // The file must not have changed while we read it, or the fingerprint
    // would describe content that no longer exists.
    await assertUnchanged(from);
  }
  if (kept) ctx.kept.set(row.id, kept);
  return hashedChange(row, md5, media, kept ?? from.path);
}

/**
 * discovered -> hashed with local copies: the card file is read once, that
 * read feeding the MD5 and every destination; each copy is read back from
 * the disk and verified. Metadata and the exposure log come from a verified
 * copy (the card is not read again); the copies' records travel with the
 * change, into the store in the same transaction.
 */
export async function copyStep(
  ctx: StepContext,
  row: DiscoveredRow,
  targets: CopyJob['targets'],
): Promise<{ change: Extract<Change, { type: 'hashed' }>; stopped: CopyResult['stopped'] }> {
  const from = cardPlace(row);
  await assertUnchanged(from);
  let result: CopyResult;
  try {
    result = await copyAndVerify({
      source: row.absPath,
      relPath: row.relPath,
      size: row.size,
      mtimeMs: row.mtimeMs,
      targets,
      signal: ctx.signal,
      onBytes: (n) => ctx.onBytes(n, false),
    });
  } catch (err) {
    const code = (err as { code?: string }).code;
    if (code === 'ENOENT' || code === 'EACCES' || code === 'EPERM' || code === 'EIO')
      throw missing(from, err);
    throw err;
  }
  const copy = result.outcomes.find((r) => r.type === 'verified');
  const on = targets.find((t) => t.destination.id === copy?.destinationId)?.destination.label;
  // Metadata read where the file now is, verified: the card is not read twice.
  const place: Place = copy && on !== undefined ? placeAt(copy.path, from, on) : from;
  const media = await describeFile(ctx, row, place);
  const change = await hashedChange(row, result.md5, media, place.path);
  return {
    change: { ...change, copies: result.outcomes.map(({ path: _where, ...outcome }) => outcome) },
    stopped: result.stopped,
  };
}

/**
 * The metadata reader (exifr, the frame and preview checks: 26 modules),
 * loaded when a file is first described: a card with nothing to do never
 * loads it (issue 33, its start).
 */
let metadata: Promise<typeof Metadata> | undefined;
const metadataReader = (): Promise<typeof Metadata> => (metadata ??= import('../media/metadata.js'));

/** What the requests say of a file: its media metadata (photos, videos), none for RTK and other files. */
async function describeFile(
  ctx: StepContext,
  row: DiscoveredRow,
  at: Place,
  content?: Buffer,
): Promise<MediaInfo | null> {
  if (row.kind !== 'media') return null;
  // A video is described from beside it (its SRT, photos of its folder): from the copy once the
  // copies of those are there (the card's are not read twice), else from the card.
  const beside =
    at.copyOn !== undefined && !(await sidecarsCopied(at.path, row.absPath)) ? cardPlace(row) : at;
  const { readMediaInfo } = await metadataReader();
  return readMediaInfo(beside.path, {
    relPath: row.relPath,
    root: beside.root,
    ...(ctx.config.aircraftDefault ? { aircraftDefault: ctx.config.aircraftDefault } : {}),
    ...(content ? { content } : {}),
  });
}

/** Whether the side-cars beside a video on its card (its SRT, the photos tried) all sit beside its copy. */
async function sidecarsCopied(copy: string, card: string): Promise<boolean> {
  if (!/\.(mp4|mov)$/i.test(copy)) return true;
  const dir = path.dirname(copy);
  return (await sidecarNames(card)).every((name) => existsSync(path.join(dir, name)));
}

/** The 'hashed' change: fingerprint, what the requests say of the file, the exposure log of an MRK. */
async function hashedChange(
  row: DiscoveredRow,
  md5: string,
  media: MediaInfo | null,
  content: Buffer | string,
): Promise<Extract<Change, { type: 'hashed' }>> {
  const name = path.posix.basename(row.relPath);
  // The exposure log, kept for the flight's report (also once the card is gone).
  const mrk =
    rtkKindOf(name) === 'mrk'
      ? parseMrk((typeof content === 'string' ? await fs.readFile(content) : content).toString('latin1'))
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
    ...(media?.frame ? { frame: media.frame } : {}),
  };
  const tiny = tinyFingerprint(md5, media?.captureTime ?? new Date(row.mtimeMs));
  return { type: 'hashed', fingerprint: md5, tinyFingerprint: tiny, info, ...(mrk ? { mrk } : {}) };
}

/**
 * A small file's bytes in one read, checked against the row's version
 * (size and mtime) on the open descriptor after the read: the same guarantee
 * as assertUnchanged() around a streamed read, in fewer calls. No check
 * before the read: a file changed before it (or during it) has another size
 * or mtime after it, and one shorter than the row ends the read early.
 */
async function readWhole(row: Place): Promise<Buffer> {
  let handle;
  try {
    handle = await fs.open(row.path, 'r');
  } catch (err) {
    throw missing(row, err);
  }
  try {
    const same = (st: { size: number; mtimeMs: number }) =>
      st.size === row.size && Math.trunc(st.mtimeMs) === row.mtimeMs;
    const buf = Buffer.allocUnsafe(row.size);
    let got = 0;
    while (got < row.size) {
      const { bytesRead } = await handle.read(buf, got, row.size - got, got);
      if (bytesRead === 0) throw changed(row); // shorter than it was
      got += bytesRead;
    }
    // Same size and mtime after the read: no byte was added or rewritten meanwhile.
    if (!same(await handle.stat())) throw changed(row);
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
  // The queue keeps the technical words (the server's, and why); the window puts them in its own
  // sentence ("The server refused this file: …"), so they must not say "The server refuses" again.
  return new DmsError('rejected', `"${message}" (code ${code}).${why}`, {
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
  // A verified local copy once there is one: the card can be pulled.
  const from = ctx.place(row);
  // Bytes kept from the hash step are the fingerprinted version whatever the
  // disk holds now: the check after the upload is the one that matters.
  if (!content) await assertUnchanged(from);
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
  if (row.objectKey !== null && !isUnderPrefix(target.objectKeyPrefix, row.objectKey))
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
  // Look first: files other than media (SRT logs, LRF previews, MISC/, RTK
  // files) have no fast-upload, so a fresh queue would send them again. Their
  // key is content-addressed: an object there of this size (and MD5, where
  // its ETag is one) is this file. Media asked fast-upload already.
  if (!multipart && row.kind !== 'media') {
    const there = await alreadyAtKey(uploader, key, row.size, row.fingerprint, ctx.signal);
    if (there) return { type: 'uploaded', objectKey: key, bytesSent: 0, verified: there };
  }
  // (A small file's single PUT takes milliseconds and is simply sent again
  // after a crash: recording "uploading" first would cost a commit per file.)
  if (!content && log.row.objectKey !== key) log.record({ type: 'upload-begun', objectKey: key });
  const resume = multipart ? { ...multipart, parts: ctx.queue.parts(row.id) } : null;
  const result = await uploader.upload({
    filePath: from.path,
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
    ...(ctx.slots
      ? { slot: slotOf(ctx.slots, row.lane, ctx.laneOf && (() => ctx.laneOf?.(row.id) ?? row.lane)) }
      : {}),
    signal: ctx.signal,
  });
  // Changed during the upload: the object holds a mix or the old content.
  // Never record it; the new version gets a row (and key) of its own. Bytes
  // kept from the hash step were not read here: the version check suffices
  // (two fewer realpath walks per small file).
  await (content ? assertSameVersion(from) : assertUnchanged(from));
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

/** A part's turn on the link, for a row of `lane`. */
const slotOf =
  (slots: PartSlots, lane: LaneName, laneNow?: () => LaneName) =>
  (bytes: number, signal?: AbortSignal): Promise<SlotTicket> =>
    slots.take(lane, bytes, signal, laneNow);

/** The bucket's object at `key` when it is this file (size, and MD5 where the ETag is one), else null. */
async function alreadyAtKey(
  uploader: Uploader,
  key: string,
  size: number,
  md5Hex: string,
  signal: AbortSignal,
): Promise<Verification | null> {
  const found = await uploader.stat(key, signal);
  if (!found || found.size !== size) return null;
  const plain = found.etag !== null && /^[0-9a-f]{32}$/i.test(found.etag);
  if (plain && found.etag?.toLowerCase() !== md5Hex.toLowerCase()) return null;
  return { at: Date.now(), by: 'bucket', found: true, size, checksum: plain ? 'match' : 'not-given' };
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
  let recorded: string;
  try {
    recorded = (await ctx.api.uploadCallback(callbackBody(row, sn, row.objectKey), { signal: ctx.signal }))
      .object_key;
  } catch (err) {
    const e = toDmsError(err);
    // A refusal, or a request that never reached the server, is a definite
    // answer: nothing was stored, no check needed next time.
    if (notActedOn(e)) throw new CallbackNotActedOn(e);
    // Cut, timed out, a 5xx, an unreadable answer, or stopped by us while on
    // its way: the server may have it.
    throw new CallbackOutcomeUnknown(e);
  }
  // Another key than ours: the record points at an object we did not upload or check; kept, and said.
  return recorded === row.objectKey ? { type: 'recorded' } : { type: 'recorded', serverKey: recorded };
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

/**
 * The server said it holds this content (fast-upload "known"): no key of ours
 * to look at, its word only. Never a checksum: nothing was compared.
 */
export function vouched(size: number): Verification {
  return { at: Date.now(), by: 'server', found: true, size, checksum: 'not-given' };
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
