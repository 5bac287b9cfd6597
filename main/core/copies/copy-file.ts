/**
 * One card file to every destination: read once (the same read feeds the
 * MD5 and every copy), each copy written under a temporary name (past the
 * OS's cache where it allows), flushed to disk, given the card file's time
 * and renamed into place; then each copy is read back from the disk
 * (O_DIRECT on Linux; through the OS's cache where the system refuses that,
 * and the record says so) and compared with the card file as read: its bytes
 * when they were kept (files up to KEEP_BYTES), else their SHA-1. A
 * destination that fails stops with its reason; the others go on.
 */
import fs from 'node:fs';
import path from 'node:path';
import { DmsError } from '../errors.js';
import {
  copyAndCheck,
  pageAlignedBuffers,
  SourceChangedSignal,
  type CopyCheck,
  type CopyTarget,
} from '../hash/hash-worker.js';
import { copyInWorker, useHashWorkers, WorkersUnavailable } from '../hash/workers.js';
import type { CopyRecord, Destination } from '../queue/copies.js';
import { destinationProblem } from './destinations.js';

/** Reads and writes of this size: large enough for a disk, small enough for two at once in memory. */
const BUFFER = 4 * 1024 * 1024;

export interface CopyJob {
  /** The card file. */
  source: string;
  relPath: string;
  size: number;
  mtimeMs: number;
  /** Where it goes: each destination and the card's folder on it. */
  targets: ReadonlyArray<{ destination: Destination; root: string }>;
  signal?: AbortSignal;
  onBytes?: (n: number) => void;
}

export interface CopyResult {
  /** MD5 of the card file as read. */
  md5: string;
  /** One per target: verified, or failed with its reason. */
  records: CopyRecord[];
  /** Destinations that failed for a reason that stops the whole card there (full, unplugged, read-only). */
  stopped: Array<{ destination: Destination; message: string }>;
}

const stopped = (reason: unknown) => () =>
  reason instanceof Error ? reason : new DmsError('cancelled', 'The copy was stopped.');

type CopyChecked = { md5: string; errors: Array<unknown>; checks: Array<CopyCheck | null> };

/** The copy and its read-backs (worker or this thread), then a record per destination. */
export async function copyAndVerify(job: CopyJob): Promise<CopyResult> {
  const at = Date.now();
  const records: Array<CopyRecord | null> = job.targets.map(() => null);
  const halt: CopyResult['stopped'] = [];
  const fail = (i: number, err: unknown, stops: boolean): void => {
    const t = job.targets[i] as CopyJob['targets'][number];
    const message = stops
      ? destinationProblem(t.destination, err)
      : `The copy of ${job.relPath} on ${t.destination.label} differs from the card after it was written: not verified.`;
    records[i] = {
      destinationId: t.destination.id,
      path: path.join(t.root, job.relPath),
      state: 'failed',
      md5: null,
      copySize: null,
      copyMtimeMs: null,
      readBack: null,
      at,
      error: message,
    };
    if (stops) halt.push({ destination: t.destination, message });
  };
  const targets: CopyTarget[] = [];
  const index: number[] = [];
  job.targets.forEach((t, i) => {
    const final = path.join(t.root, job.relPath);
    try {
      // The destination itself must be there: an unplugged drive's mount point is never made again
      // (that would write the copy onto the laptop's own disk); only the card's folders inside it are.
      if (!fs.statSync(t.destination.path).isDirectory())
        throw Object.assign(new Error(`${t.destination.path} is not a folder`), { code: 'ENOTDIR' });
      fs.mkdirSync(path.dirname(final), { recursive: true });
      targets.push({ temp: `${final}.dms-partial`, final });
      index.push(i);
    } catch (err) {
      fail(i, err, true);
    }
  });
  const expected = { size: job.size, mtimeMs: job.mtimeMs };
  let out: CopyChecked;
  try {
    if (useHashWorkers(job.size)) {
      try {
        out = await copyInWorker(job.source, targets, expected, {
          bufferSize: BUFFER,
          ...(job.signal ? { signal: job.signal } : {}),
          ...(job.onBytes ? { onBytes: job.onBytes } : {}),
          abortReason: stopped(job.signal?.reason),
        });
      } catch (err) {
        if (!(err instanceof WorkersUnavailable)) throw err;
        out = await copyHere(job, targets);
      }
    } else out = await copyHere(job, targets);
  } catch (err) {
    if (err instanceof SourceChangedSignal)
      throw new DmsError(
        'source-missing',
        `${job.relPath} changed while it was read; it will be read again.`,
      );
    throw err;
  }
  targets.forEach((t, k) => {
    const i = index[k] as number;
    const err = out.errors[k];
    const check = out.checks[k];
    if (err) return fail(i, err, true);
    if (!check?.same) return fail(i, null, false);
    try {
      const st = fs.statSync(t.final);
      if (st.size !== job.size) return fail(i, null, false);
      records[i] = {
        destinationId: (job.targets[i] as CopyJob['targets'][number]).destination.id,
        path: t.final,
        state: 'verified',
        md5: out.md5,
        copySize: st.size,
        copyMtimeMs: Math.trunc(st.mtimeMs),
        readBack: check.readBack,
        at: Date.now(),
        error: null,
      };
    } catch (e) {
      fail(i, e, true);
    }
  });
  return { md5: out.md5, records: records as CopyRecord[], stopped: halt };
}

/** This thread's read-back buffers (page-aligned, for O_DIRECT) not in use: one pair per copy at a time. */
const spareBuffers: Array<[Buffer, Buffer]> = [];

/** The same copy and read-backs on this thread (small files, or no worker). */
async function copyHere(job: CopyJob, targets: CopyTarget[]): Promise<CopyChecked> {
  const bufferSize = Math.min(BUFFER, Math.max(64 * 1024, job.size));
  const readBuffers = spareBuffers.pop() ?? pageAlignedBuffers(BUFFER);
  const out = await copyAndCheck(job.source, targets, {
    size: job.size,
    mtimeMs: job.mtimeMs,
    bufferSize,
    // Small files: kept whole, their copies compared with them.
    ...(job.size <= bufferSize ? { keep: Buffer.allocUnsafe(2 * bufferSize) } : {}),
    readBuffers,
    stopped: () => job.signal?.aborted === true,
    ...(job.onBytes ? { onBytes: job.onBytes } : {}),
  }).finally(() => spareBuffers.push(readBuffers));
  if (out === null) throw stopped(job.signal?.reason)();
  return out;
}
