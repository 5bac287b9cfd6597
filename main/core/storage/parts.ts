/**
 * Provider-independent pieces of an upload: part geometry, reading one range
 * of the source file with its MD5, a paced body stream, and a bounded worker pool that
 * waits for everything in flight before it settles.
 */
import { Readable } from 'node:stream';
import { DmsError, toDmsError } from '../errors.js';
import { SourceChangedSignal, readRangeMd5 } from '../hash/hash-worker.js';
import { WorkersUnavailable, readRangeInWorker, useHashWorkers } from '../hash/workers.js';
import { fileChangedError } from './bucket-errors.js';

export const MiB = 1024 * 1024;
export const MAX_PARTS = 10_000;
/** S3's minimum for every part but the last (OSS accepts smaller; one rule for both). */
export const MIN_PART_SIZE = 5 * MiB;
export const DEFAULT_PART_SIZE = 8 * MiB;
export const DEFAULT_MULTIPART_THRESHOLD = 16 * MiB;
export const DEFAULT_PART_CONCURRENCY = 4;
/** Granularity of pacing (throttle) and of streamed progress. */
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
 * here, by the same code (readRangeMd5 of hash/hash-worker.ts). The file is
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
        return await readRangeInWorker(filePath, offset, length, expectedSize);
      } catch (err) {
        if (!(err instanceof WorkersUnavailable)) throw err;
      }
    }
    return await readRangeMd5(filePath, offset, expectedSize, Buffer.allocUnsafe(length));
  } catch (err) {
    if (err instanceof SourceChangedSignal) throw fileChangedError();
    throw toDmsError(err, 'source-missing');
  }
}

export interface PaceOptions {
  throttle?: ((bytes: number, signal?: AbortSignal) => Promise<void>) | undefined;
  signal?: AbortSignal | undefined;
  /** Called with the total bytes handed to the socket so far. */
  onChunk?: ((sentSoFar: number) => void) | undefined;
  /**
   * A stream even without throttle or progress. The S3 SDK signs a stream
   * body as UNSIGNED-PAYLOAD instead of hashing a Buffer body with SHA-256
   * first: a second full pass over every byte, on the event loop, that adds
   * nothing when Content-MD5 (checked by the bucket) is sent anyway.
   */
  stream?: boolean;
}

/**
 * A request body that hands `buf` over in CHUNK_SIZE slices, awaiting the
 * throttle before each one, and that dies on abort (so a request stuck
 * behind the throttle or a slow socket ends at once). Without a throttle
 * or progress the plain Buffer is returned (the SDKs send it as is), unless
 * `stream` asks for a stream (then handed over without waiting).
 */
export function pacedBody(buf: Buffer, opts: PaceOptions): Buffer | Readable {
  const paced = opts.throttle !== undefined || opts.onChunk !== undefined;
  if (!paced && opts.stream !== true) return buf;
  let offset = 0;
  const stream = new Readable({
    highWaterMark: CHUNK_SIZE,
    read() {
      if (offset >= buf.length) {
        this.push(null);
        return;
      }
      const chunk = buf.subarray(offset, offset + CHUNK_SIZE);
      offset += chunk.length;
      if (!paced) {
        this.push(chunk);
        return;
      }
      const sent = offset;
      const wait = opts.throttle ? opts.throttle(chunk.length, opts.signal) : Promise.resolve();
      wait.then(
        () => {
          if (stream.destroyed) return;
          opts.onChunk?.(sent);
          this.push(chunk);
        },
        (err: unknown) => stream.destroy(err instanceof Error ? err : new Error(String(err))),
      );
    },
  });
  // The request fails through its own abort signal; if the HTTP client has
  // already let go of the body, an unobserved 'error' would crash the process.
  stream.on('error', () => {});
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
