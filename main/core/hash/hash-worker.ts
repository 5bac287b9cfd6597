/**
 * What a hash worker does, in one place: the MD5 of a whole file (the
 * fingerprint), and one range of a file read for sending, with its MD5.
 * workers.ts runs this module in worker threads; media/fingerprint.ts and
 * storage/parts.ts call the same functions on their own thread when there is
 * no worker. The errors are the file system's own (code, errno, syscall):
 * what they mean is decided by the callers.
 *
 * Node built-ins only, no relative import: the worker thread loads this file
 * by itself, compiled (dist/) or, when the sources run as they are (tests),
 * as TypeScript with the types stripped by Node.
 */
import { createHash } from 'node:crypto';
import { open } from 'node:fs/promises';
import { parentPort, workerData } from 'node:worker_threads';

/** The file was not the size it should be (or shorter than it said) when read for sending. */
export class SourceChangedSignal extends Error {
  constructor() {
    super('the file changed while it was being read');
    this.name = 'SourceChangedSignal';
  }
}

export interface HashFileOptions {
  /** Bytes per read (the size of each of the two buffers). */
  bufferSize: number;
  /** Checked before each read and at the end: true stops the hash (the result is then null). */
  stopped: () => boolean;
  /** Called after each read with the number of bytes just read (a delta, not a total). */
  onBytes?: (n: number) => void;
  /**
   * Two buffers of `bufferSize` bytes to read into, when the caller reuses
   * them from one file to the next (a worker: one file at a time); else the
   * hash allocates its own.
   */
  buffers?: [Buffer, Buffer];
}

/**
 * Streamed MD5 of a file's content, lowercase hex, or null when `stopped()`
 * said so (between reads, and once more after the last one: a stop during
 * the last read still wins). Reads with FileHandle.read into two reused
 * buffers, the next read running while this one is hashed: no stream
 * machinery, and two buffers whatever the file size. hash.update() is done
 * with a buffer when it returns, and a buffer is refilled only after that.
 */
export async function md5OfFile(path: string, opts: HashFileOptions): Promise<string | null> {
  const fh = await open(path, 'r');
  // The read in flight, if any: always awaited before the file is closed.
  let pending: Promise<{ bytesRead: number }> | undefined;
  try {
    let current: Buffer = opts.buffers?.[0] ?? Buffer.allocUnsafe(opts.bufferSize);
    // The second one only for files longer than one read (most photos are not).
    let spare: Buffer | undefined = opts.buffers?.[1];
    const hash = createHash('md5');
    const readInto = (buf: Buffer): Promise<{ bytesRead: number }> => {
      const p = fh.read(buf, 0, buf.length, null);
      // Settled on every path (the finally below awaits it); never unhandled.
      p.catch(() => undefined);
      pending = p;
      return p;
    };
    let next = readInto(current);
    for (;;) {
      if (opts.stopped()) return null;
      const { bytesRead } = await next;
      pending = undefined;
      // Only 0 means the end (a short read may come before it).
      if (bytesRead === 0) break;
      if (bytesRead === current.length) {
        const other: Buffer = (spare ??= Buffer.allocUnsafe(current.length));
        next = readInto(other);
        hash.update(current.subarray(0, bytesRead));
        spare = current;
        current = other;
      } else {
        hash.update(current.subarray(0, bytesRead));
        next = readInto(current);
      }
      opts.onBytes?.(bytesRead);
    }
    return opts.stopped() ? null : hash.digest('hex');
  } finally {
    await pending?.catch(() => undefined);
    // A close error after a good read does not change the hash; ignore it.
    await fh.close().catch(() => undefined);
  }
}

/**
 * `length` bytes at `offset` of a file that must be `expectedSize` bytes
 * long, into `body` (`length` bytes), with their MD5 (raw digest).
 * SourceChangedSignal when the size is not the expected one or the file ends
 * early. The file is opened for each read, on purpose: an open descriptor
 * keeps a deleted file readable, and a deleted or replaced file must not be
 * uploaded.
 */
export async function readRangeMd5(
  path: string,
  offset: number,
  expectedSize: number,
  body: Buffer,
): Promise<{ body: Buffer; md5: Buffer }> {
  const fh = await open(path, 'r');
  try {
    if ((await fh.stat()).size !== expectedSize) throw new SourceChangedSignal();
    let done = 0;
    while (done < body.length) {
      const { bytesRead } = await fh.read(body, done, body.length - done, offset + done);
      if (bytesRead === 0) throw new SourceChangedSignal();
      done += bytesRead;
    }
    return { body, md5: createHash('md5').update(body).digest() };
  } finally {
    await fh.close().catch(() => undefined);
  }
}

// ---------- the worker's side of the messages (workers.ts is the other) ----------

/** workerData that makes this module a hash worker (vitest, too, runs tests in worker threads). */
export const HASH_WORKER = 'dms-hash-worker';

export type Job =
  | { op: 'file'; id: number; path: string; bufferSize: number; flag: Int32Array }
  | { op: 'range'; id: number; path: string; offset: number; length: number; expectedSize: number };

export interface ErrorInfo {
  message: string;
  name?: string;
  code?: string;
  errno?: number;
  syscall?: string;
  path?: string;
}

export interface Reply {
  id: number;
  /** A read of the file job: its size. */
  bytes?: number;
  md5?: string;
  body?: ArrayBuffer;
  changed?: boolean;
  aborted?: boolean;
  error?: ErrorInfo;
}

function errorInfo(e: unknown): ErrorInfo {
  const o = (e !== null && typeof e === 'object' ? e : {}) as Partial<ErrorInfo>;
  return {
    message: String(o.message ?? e),
    ...(o.name !== undefined ? { name: o.name } : {}),
    ...(o.code !== undefined ? { code: o.code } : {}),
    ...(o.errno !== undefined ? { errno: o.errno } : {}),
    ...(o.syscall !== undefined ? { syscall: o.syscall } : {}),
    ...(o.path !== undefined ? { path: o.path } : {}),
  };
}

/**
 * The read buffers of this worker's file jobs, kept from one file to the next
 * (a worker hashes one file at a time): without them every file allocated two
 * buffers of up to 4 MiB for the collector.
 */
let scratch: [Buffer, Buffer] | undefined;

function scratchBuffers(size: number): [Buffer, Buffer] {
  if (!scratch || scratch[0].length < size)
    scratch = [Buffer.allocUnsafeSlow(size), Buffer.allocUnsafeSlow(size)];
  return [scratch[0].subarray(0, size), scratch[1].subarray(0, size)];
}

async function answer(job: Job, post: (r: Reply, transfer?: ArrayBuffer[]) => void): Promise<void> {
  const { id } = job;
  try {
    if (job.op === 'file') {
      // The caller stops the hash by setting flag[0] (its abort signal).
      const md5 = await md5OfFile(job.path, {
        bufferSize: job.bufferSize,
        buffers: scratchBuffers(job.bufferSize),
        stopped: () => Atomics.load(job.flag, 0) !== 0,
        onBytes: (bytes) => post({ id, bytes }),
      });
      post(md5 === null ? { id, aborted: true } : { id, md5 });
    } else {
      // A buffer of its own (never a slice of Node's pool), not zero-filled:
      // its memory is handed over to the caller without a copy.
      const buf = Buffer.allocUnsafeSlow(job.length);
      const { md5 } = await readRangeMd5(job.path, job.offset, job.expectedSize, buf);
      const ab = buf.buffer;
      const whole =
        buf.byteOffset === 0 && ab.byteLength === job.length
          ? ab
          : ab.slice(buf.byteOffset, buf.byteOffset + job.length);
      post({ id, body: whole, md5: md5.toString('hex') }, [whole]);
    }
  } catch (e) {
    post(e instanceof SourceChangedSignal ? { id, changed: true } : { id, error: errorInfo(e) });
  }
}

const port = parentPort;
if (port !== null && workerData === HASH_WORKER) {
  port.on('message', (job: Job) => {
    void answer(job, (r, transfer) => port.postMessage(r, transfer));
  });
}
