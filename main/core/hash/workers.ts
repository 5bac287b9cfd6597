/**
 * MD5 off the main thread. Every byte the agent uploads is hashed twice: once
 * for the fingerprint (media/fingerprint.ts md5File) and once more as it is
 * read for sending (the Content-MD5 of each part, and the check that a small
 * file still has its fingerprint). On the event loop those hashes take turns
 * with every HTTP exchange and file read of the other files in flight, and
 * the process can use one core only; in worker threads they run beside it,
 * on every core there is.
 *
 * Two small pools, created on first use (a run with nothing to read starts
 * none): one for whole-file fingerprints (long jobs: a video takes seconds),
 * one for the bodies of requests (one part or one small file each), so that a
 * long fingerprint never holds up the parts of a transfer. A worker reads the
 * file itself and hands the bytes back without a copy (transferred
 * ArrayBuffer), with their MD5.
 *
 * The workers run hash-worker.ts, the same code the callers run on their own
 * thread when there is no worker. They only read and hash; what a failure
 * means is decided by the callers: errors come back as Errors with the file
 * system's code, SourceChangedSignal when the file is not the size it should
 * be. DMS_HASH_WORKERS=0 turns the workers off (in-thread hashing), and so
 * does any failure to start one.
 */
import { extname } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Worker } from 'node:worker_threads';
import type { PreviewStats } from '../media/preview.js';
import type { CopyTarget, ErrorInfo, Job, ReadBack, Reply, WriteMode } from './hash-worker.js';
import { HASH_WORKER, SourceChangedSignal } from './hash-worker.js';

/**
 * The worker's module, beside this one: hash-worker.js in dist/ (and in the
 * packaged app's asar), hash-worker.ts when the sources run as they are
 * (tests: Node strips the types).
 */
const WORKER_URL = new URL(`./hash-worker${extname(fileURLToPath(import.meta.url))}`, import.meta.url);

interface PoolJob {
  message: Job;
  /** Buffers of the message handed to the worker, not copied. */
  transfer?: ArrayBuffer[];
  onMessage: (r: Reply) => boolean; // true when this was the job's last message
  fail: (err: Error) => void;
}

/** A worker's error, as the file system gave it (code, errno, syscall kept for classification). */
function rebuildError(info: ErrorInfo): Error {
  const err = new Error(info.message) as Error & Partial<Omit<ErrorInfo, 'message'>>;
  if (info.name) err.name = info.name;
  if (info.code !== undefined) err.code = info.code;
  if (info.errno !== undefined) err.errno = info.errno;
  if (info.syscall !== undefined) err.syscall = info.syscall;
  if (info.path !== undefined) err.path = info.path;
  return err;
}

/** No worker thread could be started, or it died: the caller hashes on its own thread instead. */
export class WorkersUnavailable extends Error {
  constructor() {
    super('no hash worker could be started');
    this.name = 'WorkersUnavailable';
  }
}

let nextId = 1;
let disabled = process.env.DMS_HASH_WORKERS === '0';

class Pool {
  private readonly idle: Worker[] = [];
  private readonly busy = new Map<Worker, PoolJob>();
  private readonly queue: PoolJob[] = [];

  constructor(private readonly size: number) {}

  /** Whether a worker of this pool is running (idle or busy). */
  running(): boolean {
    return this.idle.length + this.busy.size > 0;
  }

  run(job: PoolJob): void {
    this.queue.push(job);
    this.pump();
  }

  private pump(): void {
    while (this.queue.length > 0) {
      let w = this.idle.pop();
      if (!w && this.busy.size < this.size) w = this.spawn() ?? undefined;
      if (!w) {
        if (this.busy.size === 0) {
          // No worker could be started at all: fail the waiting jobs so their callers fall back.
          for (const j of this.queue.splice(0)) j.fail(new WorkersUnavailable());
        }
        return;
      }
      const job = this.queue.shift() as PoolJob;
      this.busy.set(w, job);
      // Only a worker with a job keeps the process alive.
      w.ref();
      w.postMessage(job.message, job.transfer);
    }
  }

  /** Starts its workers now, idle (they load their module), for jobs soon. */
  warm(): void {
    while (this.idle.length + this.busy.size < this.size) {
      const w = this.spawn();
      if (!w) return;
      this.idle.push(w);
    }
  }

  private spawn(): Worker | null {
    if (disabled) return null;
    let w: Worker;
    try {
      w = new Worker(WORKER_URL, { workerData: HASH_WORKER });
    } catch {
      disabled = true;
      return null;
    }
    let answered = false;
    w.on('message', (r: Reply) => {
      answered = true;
      const job = this.busy.get(w);
      if (!job || job.message.id !== r.id) return;
      if (!job.onMessage(r)) return;
      this.busy.delete(w);
      w.unref();
      this.idle.push(w);
      this.pump();
    });
    const lost = (err: Error): void => {
      // One that dies before its first answer could not load its module:
      // the others would not either, so none is started any more.
      if (!answered) disabled = true;
      const job = this.busy.get(w);
      this.busy.delete(w);
      const i = this.idle.indexOf(w);
      if (i >= 0) this.idle.splice(i, 1);
      job?.fail(err);
      this.pump();
    };
    // A worker that dies leaves its job to the caller's own thread (WorkersUnavailable).
    w.on('error', () => lost(new WorkersUnavailable()));
    w.on('exit', () => lost(new WorkersUnavailable()));
    w.unref();
    return w;
  }
}

const FILE_WORKERS = 2;
const RANGE_WORKERS = 2;
let filePool: Pool | undefined;
let rangePool: Pool | undefined;

/**
 * Starts the workers for request bodies before the first upload needs them
 * (a worker's start took 1-1.6 s on the loaded 2-core machine, in front of
 * the first part's bytes): while the card is still being hashed. Idle
 * workers keep no process alive.
 */
export function warmRangeWorkers(): void {
  if (disabled) return;
  rangePool ??= new Pool(RANGE_WORKERS);
  rangePool.warm();
}

/**
 * Below this many bytes a job is done on the caller's thread: handing a small
 * file to a worker and back costs more than hashing it (measured with 64 KiB
 * files: more CPU, no faster).
 */
export const WORKER_MIN_BYTES = 1024 * 1024;

/**
 * Whether a job of `bytes` (undefined: not known) goes to a worker: not for
 * small ones, and never when the workers are off (DMS_HASH_WORKERS=0, or they
 * could not be started).
 */
export function useHashWorkers(bytes?: number): boolean {
  return !disabled && (bytes === undefined || bytes >= WORKER_MIN_BYTES);
}

/**
 * MD5 (lowercase hex) of a whole file in a worker (md5OfFile, reads of
 * `bufferSize` bytes). `onBytes` gets each read's
 * size; setting the abort flag (via `signal`) stops the worker between reads,
 * and the promise then rejects with `abortReason()`. File system errors come
 * back as Errors with their code; WorkersUnavailable when no worker can run.
 */
export function hashFileInWorker(
  path: string,
  bufferSize: number,
  opts: { signal?: AbortSignal; onBytes?: (n: number) => void; abortReason: () => Error },
): Promise<string> {
  return new Promise((resolve, reject) => {
    const flag = new Int32Array(new SharedArrayBuffer(4));
    const { signal } = opts;
    const onAbort = (): void => {
      Atomics.store(flag, 0, 1);
    };
    // A throwing onBytes rejects the hash, as it does on this thread; the worker stops at its next read.
    let callbackError: { err: unknown } | undefined;
    signal?.addEventListener('abort', onAbort, { once: true });
    const done = (): void => signal?.removeEventListener('abort', onAbort);
    filePool ??= new Pool(FILE_WORKERS);
    filePool.run({
      message: { op: 'file', id: nextId++, path, bufferSize, flag },
      onMessage: (r) => {
        if (r.bytes !== undefined) {
          if (signal?.aborted !== true && !callbackError) {
            try {
              opts.onBytes?.(r.bytes);
            } catch (err) {
              callbackError = { err };
              Atomics.store(flag, 0, 1);
            }
          }
          return false;
        }
        done();
        if (callbackError)
          reject(
            callbackError.err instanceof Error ? callbackError.err : new Error(String(callbackError.err)),
          );
        else if (r.error) reject(rebuildError(r.error));
        // An abort during the last read still wins: the caller asked us to stop.
        else if (r.aborted || signal?.aborted === true) reject(opts.abortReason());
        else resolve(r.md5 as string);
        return true;
      },
      fail: (err) => {
        done();
        reject(err);
      },
    });
  });
}

/**
 * `length` bytes at `offset` of a file that must be `expectedSize` bytes
 * long, read in a worker, with their MD5 (raw digest): into `into` (its
 * memory handed to the worker and back, not copied; the caller's buffer is
 * left empty) when given, else into memory the worker allocates. Rejects
 * with SourceChangedSignal when the size is not the expected one or the
 * file ends early, with the file system's Error otherwise,
 * WorkersUnavailable when no worker can run.
 */
export function readRangeInWorker(
  path: string,
  offset: number,
  length: number,
  expectedSize: number,
  into?: Buffer,
): Promise<{ body: Buffer; md5: Buffer }> {
  return new Promise((resolve, reject) => {
    // Only memory that is the whole of an ArrayBuffer's start can be handed over.
    const body =
      into && into.byteOffset === 0 && into.length === length ? (into.buffer as ArrayBuffer) : undefined;
    rangePool ??= new Pool(RANGE_WORKERS);
    rangePool.run({
      message: { op: 'range', id: nextId++, path, offset, length, expectedSize, ...(body ? { body } : {}) },
      ...(body ? { transfer: [body] } : {}),
      onMessage: (r) => {
        if (r.error) reject(rebuildError(r.error));
        else if (r.changed) reject(new SourceChangedSignal());
        else
          resolve({
            body: Buffer.from(r.body as ArrayBuffer, 0, length),
            md5: Buffer.from(r.md5 as string, 'hex'),
          });
        return true;
      },
      fail: reject,
    });
  });
}

const COPY_WORKERS = 2;
let copyPool: Pool | undefined;

/**
 * Copies a file to every target in a worker (copyFileTo: one read feeds the
 * MD5 and every copy): the card is read once, both cores work (two copies at
 * once), and the event loop stays free. Per target, null or the file
 * system's error. Rejects with SourceChangedSignal when the source is not
 * the version expected, with `abortReason()` when stopped, WorkersUnavailable
 * when no worker can run (the caller then copies on its own thread).
 */
export function copyInWorker(
  path: string,
  targets: CopyTarget[],
  expected: { size: number; mtimeMs: number },
  opts: { bufferSize: number; signal?: AbortSignal; onBytes?: (n: number) => void; abortReason: () => Error },
): Promise<{ md5: string; xxh3: string; errors: Array<Error | null>; written: Array<WriteMode | null> }> {
  return new Promise((resolve, reject) => {
    const flag = new Int32Array(new SharedArrayBuffer(4));
    const onAbort = (): void => {
      Atomics.store(flag, 0, 1);
    };
    opts.signal?.addEventListener('abort', onAbort, { once: true });
    const done = (): void => opts.signal?.removeEventListener('abort', onAbort);
    copyPool ??= new Pool(COPY_WORKERS);
    copyPool.run({
      message: { op: 'copy', id: nextId++, path, targets, ...expected, bufferSize: opts.bufferSize, flag },
      onMessage: (r) => {
        if (r.bytes !== undefined) {
          if (opts.signal?.aborted !== true) opts.onBytes?.(r.bytes);
          return false;
        }
        done();
        if (r.error) reject(rebuildError(r.error));
        else if (r.changed) reject(new SourceChangedSignal());
        else if (r.aborted || opts.signal?.aborted === true) reject(opts.abortReason());
        else
          resolve({
            md5: r.md5 as string,
            xxh3: r.xxh3 as string,
            errors: (r.copyErrors ?? []).map((e) => (e === null ? null : rebuildError(e))),
            written: r.copyWritten ?? [],
          });
        return true;
      },
      fail: (err) => {
        done();
        reject(err);
      },
    });
  });
}

/** readBackDigest in a worker (the copy pool): the XXH3 of a copy read from the disk, and how it was read. */
export function readBackInWorker(
  path: string,
  bufferSize: number,
): Promise<{ xxh3: string; readBack: ReadBack }> {
  return new Promise((resolve, reject) => {
    copyPool ??= new Pool(COPY_WORKERS);
    copyPool.run({
      message: { op: 'readback', id: nextId++, path, bufferSize },
      onMessage: (r) => {
        if (r.error) reject(rebuildError(r.error));
        else resolve({ xxh3: r.xxh3 as string, readBack: r.readBack as ReadBack });
        return true;
      },
      fail: reject,
    });
  });
}

/**
 * previewStats (media/preview.ts) of a photo's embedded preview in a worker
 * of the range pool (short jobs): jpeg-js allocates about a thousand small
 * typed arrays per decode, which on the main thread wait for its large young
 * generation to fill (about 50 MiB of the offload's peak RSS) and take its
 * CPU from the copies' bookkeeping; a worker's small heap frees them at
 * once. Only while a range worker runs (an upload is reading parts): no
 * thread (about 20 MiB) is started for previews alone; then, and when no
 * worker can run, WorkersUnavailable (the caller decodes on its own thread).
 * The bytes are copied once, into a buffer handed over (not the head they
 * lie in).
 */
export function previewInWorker(thumb: Uint8Array): Promise<PreviewStats | null> {
  return new Promise((resolve, reject) => {
    if (rangePool?.running() !== true) {
      reject(new WorkersUnavailable());
      return;
    }
    const own = new Uint8Array(thumb); // a copy of its own (Buffer.slice would be a view of the head)
    rangePool ??= new Pool(RANGE_WORKERS);
    rangePool.run({
      message: { op: 'preview', id: nextId++, thumb: own },
      transfer: [own.buffer],
      onMessage: (r) => {
        if (r.error) reject(rebuildError(r.error));
        else resolve(r.preview ?? null);
        return true;
      },
      fail: reject,
    });
  });
}
