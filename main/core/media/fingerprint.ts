import { DmsError, isAbortError, toDmsError } from '../errors.js';
import { md5OfFile } from '../hash/hash-worker.js';
import { WorkersUnavailable, hashFileInWorker, useHashWorkers } from '../hash/workers.js';
import type { CaptureTime } from './capture-time.js';
import { isValidCaptureTime, parseExifDateTime } from './capture-time.js';

export interface Md5Options {
  signal?: AbortSignal;
  /** Called after each read with the number of bytes just read (a delta, not a total). */
  onBytes?: (n: number) => void;
  /** Read size in bytes; default 4 MiB. */
  highWaterMark?: number;
  /** The file's size if known: small files are hashed on this thread, larger ones in a worker. */
  sizeHint?: number;
}

export const DEFAULT_READ_SIZE = 4 * 1024 * 1024;

function cancelled(signal: AbortSignal): DmsError {
  return new DmsError('cancelled', 'Fingerprinting was cancelled.', { cause: signal.reason });
}

/**
 * Streamed MD5 of a file's content, lowercase hex (the `fingerprint` of the
 * contract), by md5OfFile (hash/hash-worker.ts): in a worker thread, beside
 * the event loop, unless the file is small or there is no worker; then on
 * this thread. Either way two buffers whatever the file size, so a 4 GB video
 * never sits in memory.
 *
 * Abort is checked between reads (at most one read, 4 MiB by default, runs on
 * after the signal). Errors: ENOENT/EIO/ENXIO/ENODEV and permission errors →
 * `source-missing` (card pulled, unreadable file); abort → `cancelled`.
 */
export async function md5File(path: string, opts: Md5Options = {}): Promise<string> {
  const { signal, onBytes } = opts;
  const size = opts.highWaterMark ?? DEFAULT_READ_SIZE;
  if (!Number.isInteger(size) || size <= 0) {
    throw new DmsError('invalid-input', `highWaterMark must be a positive integer, got ${size}.`);
  }
  if (signal?.aborted) throw cancelled(signal);
  // A file known to be small gets a buffer of its size, not 4 MiB: thousands
  // of small files would otherwise allocate gigabytes for the collector.
  const bufferSize = readSizeFor(size, opts.sizeHint);
  try {
    if (useHashWorkers(opts.sizeHint)) {
      try {
        return await hashFileInWorker(path, bufferSize, {
          ...(signal ? { signal } : {}),
          ...(onBytes ? { onBytes } : {}),
          abortReason: () => cancelled(signal as AbortSignal),
        });
      } catch (err) {
        if (!(err instanceof WorkersUnavailable)) throw err;
      }
    }
    const md5 = await md5OfFile(path, {
      bufferSize,
      stopped: () => signal?.aborted === true,
      ...(onBytes ? { onBytes } : {}),
    });
    if (md5 === null) throw cancelled(signal as AbortSignal);
    return md5;
  } catch (err) {
    throw classifyReadError(err, path);
  }
}

/** The read size: `readSize`, or less for a file known to be smaller (one read then holds it all). */
function readSizeFor(readSize: number, sizeHint: number | undefined): number {
  if (sizeHint === undefined || !Number.isSafeInteger(sizeHint) || sizeHint <= 0) return readSize;
  // +1: the whole file and a byte to spare, should it have grown meanwhile.
  return Math.min(readSize, sizeHint + 1);
}

function classifyReadError(err: unknown, path: string): DmsError {
  if (err instanceof DmsError) return err;
  if (isAbortError(err)) return toDmsError(err);
  // Anything else the file system says while reading a card means we cannot
  // read this file now; EISDIR and the like are our caller's mistake.
  const code = (err as { code?: unknown } | null)?.code;
  if (code === 'EISDIR') {
    return new DmsError('invalid-input', `Not a file: ${path}`, { cause: err });
  }
  return toDmsError(err, 'source-missing');
}

/** What tinyFingerprint accepts as the capture time. */
export type CaptureTimeLike = CaptureTime | Date | string;

function toCaptureTime(created: CaptureTimeLike): CaptureTime | undefined {
  if (created instanceof Date) {
    if (Number.isNaN(created.getTime())) return undefined;
    // A Date has no wall clock of its own: use this machine's, the same
    // convention as the created_time fallback when a file carries no offset.
    return {
      year: created.getFullYear(),
      month: created.getMonth() + 1,
      day: created.getDate(),
      hour: created.getHours(),
      minute: created.getMinutes(),
      second: created.getSeconds(),
    };
  }
  // Strings are read digit by digit ("2022-08-31T15:16:16+02:00" → 15:16:16),
  // never through Date, so the digits stay those of the camera.
  if (typeof created === 'string') return parseExifDateTime(created);
  return isValidCaptureTime(created) ? created : undefined;
}

/**
 * Our own definition of `tinny_fingerprint` (the contract spells it so; DJI
 * never published its algorithm): the file's content MD5 in lowercase hex,
 * then the capture time's wall-clock digits (those of DateTimeOriginal, no zone
 * conversion) joined by "_" and NOT zero-padded:
 *   297f490b0252690d3f93841818567cc6_2022_8_31_15_16_16
 * This is the shape of every published example, and it is stable: the same
 * file always gives the same value, on any machine, in any zone.
 */
export function tinyFingerprint(md5: string, created: CaptureTimeLike): string {
  if (!/^[0-9a-f]{32}$/i.test(md5)) {
    throw new DmsError('invalid-input', `Not an MD5 hex digest: "${md5}".`);
  }
  const t = toCaptureTime(created);
  if (!t) {
    throw new DmsError('invalid-input', 'tinyFingerprint needs a valid capture time.');
  }
  return [md5.toLowerCase(), t.year, t.month, t.day, t.hour, t.minute, t.second].join('_');
}
