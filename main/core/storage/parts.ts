/**
 * Provider-independent pieces of an upload: part geometry, reading one range
 * of the source file with its MD5, a paced body stream, and a bounded worker pool that
 * waits for everything in flight before it settles.
 */
import { open, type FileHandle } from 'node:fs/promises';
import { Readable } from 'node:stream';
import { DmsError, toDmsError } from '../errors.js';
import { SourceChangedSignal, readRangeMd5 } from '../hash/hash-worker.js';
import { WORKER_MIN_BYTES, WorkersUnavailable, readRangeInWorker, useHashWorkers } from '../hash/workers.js';
import { adoptBody, takeBody } from './body-pool.js';
import { fileChangedError } from './bucket-errors.js';

export const MiB = 1024 * 1024;
export const MAX_PARTS = 10_000;
/** S3's minimum for every part but the last (OSS accepts smaller; one rule for both). */
export const MIN_PART_SIZE = 5 * MiB;
export const DEFAULT_PART_SIZE = 8 * MiB;
export const DEFAULT_MULTIPART_THRESHOLD = 16 * MiB;
export const DEFAULT_PART_CONCURRENCY = 4;
/** The largest slice of a body handed over at once (paced by the throttle, with progress). */
export const CHUNK_SIZE = 256 * 1024;

/** Part size for a new multipart upload: the preference, raised to fit in 10,000 parts. */
export function choosePartSize(size: number, preferred: number = DEFAULT_PART_SIZE): number {
  const needed = Math.ceil(Math.ceil(size / MAX_PARTS) / MiB) * MiB;
  return Math.max(preferred, MIN_PART_SIZE, needed);
}

export function partCount(size: number, partSize: number): number {
  return Math.max(1, Math.ceil(size / partSize));
}

/** Byte range of part `n` (1-based). */
export function partRange(n: number, size: number, partSize: number): { offset: number; length: number } {
  const offset = (n - 1) * partSize;
  return { offset, length: Math.max(0, Math.min(partSize, size - offset)) };
}

/**
 * `length` bytes at `offset` of a file that must be `expectedSize` bytes
 * long, with their MD5 (raw digest): read and hashed in a worker thread
 * (hash/workers.ts) unless the range is small or there is no worker, else
 * here, by the same code (readRangeMd5 of hash/hash-worker.ts), into
 * memory of body-pool.ts from 1 MiB on (give it back with giveBody). The file is
 * opened for each read: a deleted or replaced file is never uploaded. A file
 * of another size, or one that ends early, is `fileChangedError`; what the
 * file system says is `source-missing`.
 */
export async function readRangeWithMd5(
  filePath: string,
  offset: number,
  length: number,
  expectedSize: number,
): Promise<{ body: Buffer; md5: Buffer }> {
  try {
    if (useHashWorkers(length)) {
      try {
        const read = await readRangeInWorker(filePath, offset, length, expectedSize, takeBody(length));
        return { body: adoptBody(read.body), md5: read.md5 };
      } catch (err) {
        if (!(err instanceof WorkersUnavailable)) throw err;
      }
    }
    const body = length >= WORKER_MIN_BYTES ? takeBody(length) : Buffer.allocUnsafe(length);
    return await readRangeMd5(filePath, offset, expectedSize, body);
  } catch (err) {
    if (err instanceof SourceChangedSignal) throw fileChangedError();
    throw toDmsError(err, 'source-missing');
  }
}

/**
 * The bandwidth limit: waits for the caller's turn and resolves with how
 * many of `upTo` bytes may be handed over now (at least 1). Rejecting
 * (e.g. on abort) fails the request. See sync/bandwidth.ts.
 */
export type Throttle = (upTo: number, signal?: AbortSignal) => Promise<number>;

export interface PaceOptions {
  throttle?: Throttle | undefined;
  signal?: AbortSignal | undefined;
  /** Called with the total bytes handed to the socket so far. */
  onChunk?: ((sentSoFar: number) => void) | undefined;
  /**
   * A stream even without throttle or progress. undici (s3-put.ts) counts
   * its headers timeout from the start of a request whose body is a Buffer,
   * however long the socket takes to send it, but from the last write of a
   * streamed one: only a stream keeps a slow upload from being cut.
   */
  stream?: boolean;
  /**
   * A body of which less than STALL_BYTES_PER_SECOND went in the last
   * `stallMs` (waits for the bandwidth limit not counted) fails with a
   * 'timeout': the connection is dropped and the part sent again on a new
   * one, instead of trickling (or hanging) for minutes. Streams only.
   */
  stallMs?: number | undefined;
}

/** Below this rate for the stall window, a connection counts as stalled (1 KiB/s). */
export const STALL_BYTES_PER_SECOND = 1024;

/**
 * A body read from a file as it is sent, never whole in memory: for a file
 * the agent wrote itself (a card's manifest and report), whose MD5 is known
 * before it is sent. A card file is never sent this way: its content is
 * checked against its fingerprint before it leaves (transfer.ts).
 */
export interface FileBody {
  file: string;
  length: number;
}

/** What a PUT sends (its `length` is the Content-Length): bytes in memory, or a file read as it goes. */
export type BodySource = Buffer | FileBody;

/**
 * The next `n` bytes of a file from `offset`, read into a new buffer (the
 * socket may still hold the previous one). A file that ends early is
 * `fileChangedError`; what the file system says is `source-missing`.
 */
function fileReader(body: FileBody): { read(offset: number, n: number): Promise<Buffer>; close(): void } {
  let fd: Promise<FileHandle> | undefined;
  return {
    async read(offset, n) {
      try {
        fd ??= open(body.file, 'r');
        const buf = Buffer.allocUnsafe(n);
        const { bytesRead } = await (await fd).read(buf, 0, n, offset);
        if (bytesRead === 0) throw new SourceChangedSignal();
        return buf.subarray(0, bytesRead);
      } catch (err) {
        if (err instanceof SourceChangedSignal) throw fileChangedError();
        throw toDmsError(err, 'source-missing');
      }
    },
    close() {
      fd?.then((h) => h.close()).catch(() => undefined);
    },
  };
}

/**
 * A request body that hands `source` over in slices of at most CHUNK_SIZE,
 * as many bytes as the throttle grants each time, and that dies on abort (so
 * a request stuck behind the throttle or a slow socket ends at once). Without
 * a throttle or progress a Buffer is returned as it is (the SDKs send it as
 * is), unless `stream` asks for a stream (then handed over without waiting).
 * A FileBody is always a stream, read slice by slice as the socket takes it.
 *
 * Resolves once the first slice is granted, so call it before the request
 * is made: an HTTP client (undici, node:http) takes a connection for the
 * request at once but writes the request line and headers only with the
 * first body bytes. A body still waiting for its turn would hold a silent
 * connection, which servers cut (the bucket answered 408 after its 10-s
 * headers timeout; a reused keep-alive connection was closed after 5 s).
 */
export async function pacedBody(source: BodySource, opts: PaceOptions): Promise<Buffer | Readable> {
  const { throttle } = opts;
  const paced = throttle !== undefined || opts.onChunk !== undefined;
  const buf = Buffer.isBuffer(source) ? source : null;
  if (buf !== null && !paced && opts.stream !== true) return buf;
  const { length } = source;
  const file = Buffer.isBuffer(source) ? null : fileReader(source);
  let waitingForGrant = false;
  const grant = (upTo: number): Promise<number> =>
    throttle ? throttle(upTo, opts.signal) : Promise.resolve(upTo);
  const nextSize = (from: number): number => Math.min(CHUNK_SIZE, length - from);
  let offset = 0;
  // Granted ahead of the request (see above); none for an empty body.
  let granted: number | undefined = length > 0 && paced ? await grant(nextSize(0)) : undefined;
  const stream = new Readable({
    highWaterMark: CHUNK_SIZE,
    read() {
      if (offset >= length) {
        this.push(null);
        return;
      }
      if (!paced && buf !== null) {
        const chunk = buf.subarray(offset, offset + CHUNK_SIZE);
        offset += chunk.length;
        this.push(chunk);
        return;
      }
      const ready = granted !== undefined ? Promise.resolve(granted) : grant(nextSize(offset));
      granted = undefined;
      waitingForGrant = paced;
      ready
        .then((n) => {
          waitingForGrant = false;
          const size = Math.max(1, n);
          return buf !== null ? buf.subarray(offset, offset + size) : file?.read(offset, size);
        })
        .then(
          (chunk) => {
            if (stream.destroyed || chunk === undefined) return;
            offset += chunk.length;
            opts.onChunk?.(offset);
            this.push(chunk);
          },
          (err: unknown) => stream.destroy(err instanceof Error ? err : new Error(String(err))),
        );
    },
  });
  if (file !== null) stream.once('close', () => file.close());
  // The request fails through its own abort signal; if the HTTP client has
  // already let go of the body, an unobserved 'error' would crash the process.
  stream.on('error', () => {});
  if (opts.stallMs !== undefined && opts.stallMs > 0)
    watchStall(
      stream,
      opts.stallMs,
      () => offset,
      () => waitingForGrant,
    );
  const { signal } = opts;
  if (signal) {
    const onAbort = (): void => {
      stream.destroy(new DmsError('cancelled', 'The upload was cancelled.'));
    };
    if (signal.aborted) onAbort();
    else signal.addEventListener('abort', onAbort, { once: true });
    stream.once('close', () => signal.removeEventListener('abort', onAbort));
  }
  return stream;
}

/**
 * Fails `stream` with a 'timeout' when less than STALL_BYTES_PER_SECOND of it
 * went in the last `stallMs`: a connection that stalled (a dead route after
 * a link switch, a congested uplink) is dropped, not waited on.
 */
function watchStall(stream: Readable, stallMs: number, sent: () => number, throttled: () => boolean): void {
  let markAt = Date.now();
  let markSent = sent();
  const timer = setInterval(
    () => {
      const now = Date.now();
      // Waiting for the user's bandwidth limit is not a stall.
      if (throttled()) {
        markAt = now;
        markSent = sent();
        return;
      }
      if (now - markAt < stallMs) return;
      if (sent() - markSent < (STALL_BYTES_PER_SECOND * (now - markAt)) / 1000) {
        stream.destroy(
          new DmsError(
            'timeout',
            `The connection to the bucket stalled (less than 1 KB/s for ${Math.round(stallMs / 1000)} s); it was dropped and the part is sent again.`,
          ),
        );
        return;
      }
      markAt = now;
      markSent = sent();
    },
    Math.max(50, Math.floor(stallMs / 4)),
  );
  timer.unref();
  stream.once('close', () => clearInterval(timer));
}

/**
 * Runs `worker` over `items` with at most `concurrency` at once. On the
 * first failure (or when `signal` aborts) no new item starts and the
 * others are aborted through the signal they were given; the pool settles
 * only once every started worker has settled, so nothing is still writing
 * when the caller sees the outcome. Rejects with the first failure, or
 * with `cancelled` when the caller aborted.
 */
export async function runPool<T>(
  items: Iterable<T>,
  concurrency: number,
  signal: AbortSignal | undefined,
  worker: (item: T, signal: AbortSignal) => Promise<void>,
): Promise<void> {
  const inner = new AbortController();
  const onAbort = (): void => inner.abort(signal?.reason);
  if (signal?.aborted === true) inner.abort(signal.reason);
  signal?.addEventListener('abort', onAbort, { once: true });
  const iterator = items[Symbol.iterator]();
  let failure: { err: unknown } | undefined;
  const lane = async (): Promise<void> => {
    while (!inner.signal.aborted) {
      const next = iterator.next();
      if (next.done === true) return;
      try {
        await worker(next.value, inner.signal);
      } catch (err) {
        failure ??= { err };
        inner.abort(err);
        return;
      }
    }
  };
  try {
    await Promise.allSettled(Array.from({ length: Math.max(1, concurrency) }, lane));
  } finally {
    signal?.removeEventListener('abort', onAbort);
  }
  if (signal?.aborted === true) throw new DmsError('cancelled', 'The upload was cancelled.');
  if (failure) throw failure.err;
}
