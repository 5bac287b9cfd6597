/**
 * One card file to every destination: read once (the same read feeds the
 * MD5 and every copy), each copy written under a temporary name (around the
 * page cache with O_DIRECT where the file system allows it; else through the
 * cache, and the record says so), flushed to
 * disk, given the card file's time and renamed into place; then each copy is
 * read back from the disk (O_DIRECT on Linux; through the OS's cache where
 * the system refuses that, and the record says so) and its MD5 compared with
 * the card's. A destination that fails stops with its reason; the others go on.
 */
import fs from 'node:fs';
import path from 'node:path';
import { DmsError } from '../errors.js';
import {
  copyFileTo,
  readBackDigest,
  SourceChangedSignal,
  type CopyTarget as WorkerTarget,
  type WriteMode,
} from '../hash/hash-worker.js';
import { copyInWorker, readBackInWorker, useHashWorkers, WorkersUnavailable } from '../hash/workers.js';
import type { CopyOutcome, Destination } from '../queue/copies.js';
import { destinationProblem, lookAt } from './destinations.js';

/** Reads and writes of this size: large enough for a disk, small enough for two at once in memory. */
const BUFFER = 4 * 1024 * 1024;

export interface CopyJob {
  /** The card file. */
  source: string;
  relPath: string;
  size: number;
  mtimeMs: number;
  /** Where it goes: each destination, the card's folder on it, and the volume it was written on (if ever). */
  targets: ReadonlyArray<CopyTarget>;
  signal?: AbortSignal;
  onBytes?: (n: number) => void;
}

export interface CopyTargetOf {
  destination: Destination;
  root: string;
  volume?: string | null;
}
type CopyTarget = CopyTargetOf;

/** What a copy came to on one destination, and where the copy is. */
export type PlacedOutcome = CopyOutcome & { path: string };

export interface CopyResult {
  /** MD5 of the card file as read. */
  md5: string;
  /** XXH3-64 of the card file as read (each copy's read-back was compared with it). */
  xxh3: string;
  /** One per target: verified, its bytes other than the card's, or its destination stopped. */
  outcomes: PlacedOutcome[];
  /** Destinations that failed for a reason that stops the whole card there (full, unplugged, read-only). */
  stopped: Array<{ destination: Destination; message: string }>;
}

const stopped = (reason: unknown) => () =>
  reason instanceof Error ? reason : new DmsError('cancelled', 'The copy was stopped.');

type Fail = (i: number, err: unknown, stops: boolean) => void;

/**
 * Each copy written, read back from the disk and compared with the card's
 * bytes as they were read (XXH3 of both; the record keeps the card's MD5): verified (its size and time as it now is on the disk), or failed.
 */
export async function readBack(
  job: Pick<CopyJob, 'targets' | 'size'>,
  digest: { md5: string; xxh3: string },
  written: ReadonlyArray<{ i: number; final: string; mode?: WriteMode | null }>,
  outcomes: Array<PlacedOutcome | null>,
  fail: Fail,
): Promise<void> {
  for (const { i, final, mode } of written) {
    const dest = job.targets[i] as CopyTarget;
    try {
      const back = useHashWorkers(job.size)
        ? await readBackInWorker(final, BUFFER).catch((err: unknown) => {
            if (err instanceof WorkersUnavailable) return readBackDigest(final, BUFFER);
            throw err;
          })
        : readBackDigest(final, BUFFER);
      const st = fs.statSync(final);
      if (back.xxh3 !== digest.xxh3 || st.size !== job.size) {
        fail(i, null, false);
        continue;
      }
      outcomes[i] = {
        destinationId: dest.destination.id,
        type: 'verified',
        path: final,
        copy: {
          md5: digest.md5,
          // "md5:<hex>": read back with MD5 (no XXH3 module), the MD5 above says it all.
          xxh3: digest.xxh3.startsWith('md5:') ? null : digest.xxh3,
          copySize: st.size,
          copyMtimeMs: Math.trunc(st.mtimeMs),
          readBack: back.readBack,
          written: mode ?? 'cache',
        },
      };
    } catch (err) {
      // Gone with its drive (or unreadable): the destination stopped, never "other bytes".
      fail(i, err, true);
    }
  }
}

/** The copy (worker or this thread), then the read-back of each copy. */
export async function copyAndVerify(job: CopyJob): Promise<CopyResult> {
  const outcomes: Array<PlacedOutcome | null> = job.targets.map(() => null);
  const halt: CopyResult['stopped'] = [];
  const fail = (i: number, err: unknown, stops: boolean): void => {
    const t = job.targets[i] as CopyTarget;
    const reason = stops
      ? destinationProblem(t.destination, err, t.volume ?? null)
      : `The copy of ${job.relPath} on ${t.destination.label} differs from the card after it was written: not verified.`;
    outcomes[i] = {
      destinationId: t.destination.id,
      type: stops ? 'stopped' : 'differs',
      reason,
      path: path.join(t.root, job.relPath),
    };
    if (stops) halt.push({ destination: t.destination, message: reason });
  };
  const targets: WorkerTarget[] = [];
  const index: number[] = [];
  job.targets.forEach((t, i) => {
    const final = path.join(t.root, job.relPath);
    try {
      // The destination itself must be there, on the drive it was written on: an unplugged drive's
      // mount point is never made again, nor written as a bare folder (that would put the copy on the
      // laptop's own disk); only the card's folders inside it are made.
      const st = fs.statSync(t.destination.path);
      if (!st.isDirectory())
        throw Object.assign(new Error(`${t.destination.path} is not a folder`), { code: 'ENOTDIR' });
      if (t.volume && String(st.dev) !== t.volume && lookAt(t.destination, t.volume) === 'unplugged')
        throw Object.assign(new Error(`${t.destination.path}: its drive is gone`), { code: 'ENODEV' });
      fs.mkdirSync(path.dirname(final), { recursive: true });
      targets.push({ temp: `${final}.dms-partial`, final });
      index.push(i);
    } catch (err) {
      fail(i, err, true);
    }
  });
  const expected = { size: job.size, mtimeMs: job.mtimeMs };
  let md5: string;
  let xxh3: string;
  let errors: Array<unknown>;
  let modes: Array<WriteMode | null>;
  try {
    if (useHashWorkers(job.size)) {
      try {
        ({
          md5,
          xxh3,
          errors,
          written: modes,
        } = await copyInWorker(job.source, targets, expected, {
          bufferSize: BUFFER,
          ...(job.signal ? { signal: job.signal } : {}),
          ...(job.onBytes ? { onBytes: job.onBytes } : {}),
          abortReason: stopped(job.signal?.reason),
        }));
      } catch (err) {
        if (!(err instanceof WorkersUnavailable)) throw err;
        ({ md5, xxh3, errors, written: modes } = await copyHere(job, targets));
      }
    } else ({ md5, xxh3, errors, written: modes } = await copyHere(job, targets));
  } catch (err) {
    if (err instanceof SourceChangedSignal)
      throw new DmsError(
        'source-missing',
        `${job.relPath} changed while it was read; it will be read again.`,
      );
    throw err;
  }
  for (const [k, err] of errors.entries()) if (err) fail(index[k] as number, err, true);
  const written = targets.flatMap((t, k) =>
    outcomes[index[k] as number] === null ? [{ i: index[k] as number, final: t.final, mode: modes[k] }] : [],
  );
  await readBack(job, { md5, xxh3 }, written, outcomes, fail);
  return { md5, xxh3, outcomes: outcomes as PlacedOutcome[], stopped: halt };
}

/** The same copy on this thread (small files, or no worker). */
async function copyHere(
  job: CopyJob,
  targets: WorkerTarget[],
): Promise<{ md5: string; xxh3: string; errors: Array<unknown>; written: Array<WriteMode | null> }> {
  const out = await copyFileTo(job.source, targets, {
    size: job.size,
    mtimeMs: job.mtimeMs,
    bufferSize: Math.min(BUFFER, Math.max(64 * 1024, job.size)),
    stopped: () => job.signal?.aborted === true,
    ...(job.onBytes ? { onBytes: job.onBytes } : {}),
  });
  if (out === null) throw stopped(job.signal?.reason)();
  return { md5: out.md5, xxh3: out.xxh3, errors: out.errors, written: out.written };
}
