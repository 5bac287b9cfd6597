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
import {
  closeSync,
  constants,
  fsyncSync,
  ftruncateSync,
  openSync,
  renameSync,
  unlinkSync,
  utimesSync,
  write,
} from 'node:fs';
import { open, type FileHandle } from 'node:fs/promises';
import { dirname } from 'node:path';
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

/** One destination of a copy: where to write it while it is written, and where it then goes. */
export interface CopyTarget {
  /** The temporary name (same folder), renamed to `final` once flushed to disk. */
  temp: string;
  final: string;
}

export interface CopyOutcome {
  /** MD5 of the bytes read from the source, lowercase hex. */
  md5: string;
  /**
   * What each copy read back is compared with: the card's bytes themselves,
   * kept whole in `keep` (a file that fits), else their SHA-1 (see CHECK).
   */
  expected: Expected;
  /** Per target, in order: null when written, flushed and renamed, else what went wrong. */
  errors: Array<ErrorInfo | null>;
}

/** The card file as read: its bytes (kept whole), or their SHA-1 in lowercase hex. */
export type Expected = { bytes: Buffer } | { sha1: string };

/** What copyFileTo needs beyond a hash: the version of the source expected, and how to write. */
export interface CopyFileOptions extends HashFileOptions {
  size: number;
  mtimeMs: number;
  /**
   * `buffers` (and `keep`) are page-aligned (pageAlignedBuffers): each copy
   * is then written straight to the disk (O_DIRECT) where its file system
   * allows it.
   */
  direct?: boolean;
  /**
   * Room (a multiple of `bufferSize`) for a whole file: one shorter is read
   * into it and kept there, so that its copies are compared with the card's
   * bytes themselves, not with a digest that must be computed twice more.
   */
  keep?: Buffer;
}

/** Reads and writes that bypass the cache are multiples of this, from memory aligned to it: what O_DIRECT asks. */
const ALIGN = 4096;
const O_DIRECT = (constants as { O_DIRECT?: number }).O_DIRECT;

/**
 * The digest a copy that is not kept whole is compared with, computed in the
 * same read of the card as its MD5. SHA-1: 160 bits, never slower than MD5,
 * and more than twice as fast where the CPU has SHA instructions (x86 since
 * 2017-2019, Apple silicon); read-backs hashed with MD5 were most of a card's
 * offload CPU (benchmark scenario 6). ASC MHL knows it too.
 */
export const CHECK = 'sha1';

// What this file uses of WebAssembly (its types come with the DOM library, which the build leaves out).
const Wasm = (
  globalThis as unknown as {
    WebAssembly: { Memory: new (d: { initial: number; maximum: number }) => { buffer: ArrayBuffer } };
  }
).WebAssembly;

/**
 * Buffers of the given sizes (multiples of ALIGN) at page-aligned addresses,
 * as O_DIRECT needs: JavaScript cannot ask for an address, but a WebAssembly
 * memory is made of whole pages from the system's page allocator.
 */
export function pageAligned(...sizes: number[]): Buffer[] {
  const total = sizes.reduce((n, x) => n + x, 0);
  const pages = Math.max(1, Math.ceil(total / 65536));
  const mem = new Wasm.Memory({ initial: pages, maximum: pages });
  let at = 0;
  return sizes.map((x) => {
    const b = Buffer.from(mem.buffer, at, x);
    at += x;
    return b;
  });
}

/** Two page-aligned buffers of `size` bytes. */
export function pageAlignedBuffers(size: number): [Buffer, Buffer] {
  return pageAligned(size, size) as [Buffer, Buffer];
}

/**
 * Reads until `buf` is full or the file ends (at `at`, else from the current
 * position): a short result means the end of the file.
 */
async function readFull(fh: FileHandle, buf: Buffer, at: number | null = null): Promise<number> {
  let done = 0;
  while (done < buf.length) {
    const { bytesRead } = await fh.read(buf, done, buf.length - done, at === null ? null : at + done);
    if (bytesRead === 0) break;
    done += bytesRead;
  }
  return done;
}

/**
 * One copy being written: straight to the disk (O_DIRECT) while its file
 * system takes it, else through the cache. Writing past the cache matters:
 * on Linux, filling the cache with the copies and flushing them cost more
 * CPU than hashing them (benchmark scenario 6), and nothing reads them soon.
 * Writes run in the thread pool, while the caller hashes the same chunk.
 */
class CopyWriter {
  fd: number;
  direct = false;
  private readonly path: string;
  private pos = 0;
  private padded = false;

  // No parameter properties: Node runs this file with its types stripped (tests), and strips no more.
  constructor(path: string, direct: boolean) {
    this.path = path;
    if (direct && O_DIRECT !== undefined) {
      try {
        this.fd = openSync(
          path,
          constants.O_WRONLY | constants.O_CREAT | constants.O_TRUNC | O_DIRECT,
          0o644,
        );
        this.direct = true;
        return;
      } catch (err) {
        if ((err as { code?: string }).code !== 'EINVAL') throw err;
      }
    }
    this.fd = openSync(path, 'w', 0o644);
  }

  /**
   * `chunk` is the start of `room`; a direct write of the last, short chunk
   * writes whole blocks from `room` (the end cut off by finish()).
   */
  async write(chunk: Buffer, room: Buffer): Promise<void> {
    if (this.direct) {
      const len = Math.min(room.length, Math.ceil(chunk.length / ALIGN) * ALIGN);
      try {
        await writeAll(this.fd, room.subarray(0, len), this.pos);
        this.padded = len !== chunk.length;
        this.pos += chunk.length;
        return;
      } catch (err) {
        if ((err as { code?: string }).code !== 'EINVAL') throw err;
        // Opened O_DIRECT but its writes refused (some FUSE and network file systems): through the cache.
        closeSync(this.fd);
        this.fd = openSync(this.path, 'r+');
        ftruncateSync(this.fd, this.pos);
        this.direct = false;
      }
    }
    await writeAll(this.fd, chunk, this.pos);
    this.pos += chunk.length;
  }

  /** The file its exact size, flushed to the disk (data, size, and the drive's own cache). */
  finish(): void {
    if (this.padded) ftruncateSync(this.fd, this.pos);
    fsyncSync(this.fd);
  }
}

async function writeAll(fd: number, buf: Buffer, at: number): Promise<void> {
  let done = 0;
  while (done < buf.length) {
    done += await new Promise<number>((resolve, reject) => {
      write(fd, buf, done, buf.length - done, at + done, (err, n) => (err ? reject(err) : resolve(n)));
    });
  }
}

/**
 * Reads `source` once and writes every chunk to each target: the same read
 * feeds the MD5, what the copies are checked with, and every copy. Each
 * target is flushed to disk (fsync), given the source's modification time,
 * renamed into place and its folder flushed. A target that fails (disk full,
 * unplugged, read-only) is dropped with its reason; the others go on.
 * SourceChangedSignal when the source is not the version expected (size,
 * mtime) before or after the read. null when stopped.
 */
export async function copyFileTo(
  source: string,
  targets: readonly CopyTarget[],
  opts: CopyFileOptions,
): Promise<CopyOutcome | null> {
  const fh = await open(source, 'r');
  const errors: Array<ErrorInfo | null> = targets.map(() => null);
  const writers: Array<CopyWriter | null> = targets.map(() => null);
  const drop = (i: number, err: unknown): void => {
    errors[i] = errorInfo(err);
    const w = writers[i];
    writers[i] = null;
    if (w) {
      try {
        closeSync(w.fd);
      } catch {
        // closing a descriptor of a gone disk may fail too: the error above says why
      }
    }
    try {
      unlinkSync((targets[i] as CopyTarget).temp);
    } catch {
      // nothing left behind to remove, or the disk is gone
    }
  };
  let pending: Promise<number> | undefined;
  try {
    const same = (st: { size: number; mtimeMs: number }) =>
      st.size === opts.size && Math.trunc(st.mtimeMs) === Math.trunc(opts.mtimeMs);
    if (!same(await fh.stat())) throw new SourceChangedSignal();
    const size = opts.bufferSize;
    // Room to spare: the read that finds the end of a file needs a buffer too.
    const keep =
      opts.keep && opts.keep.length > opts.size && opts.keep.length % size === 0 ? opts.keep : null;
    const direct =
      opts.direct === true && size % ALIGN === 0 && (keep !== null || opts.buffers !== undefined);
    targets.forEach((t, i) => {
      try {
        writers[i] = new CopyWriter(t.temp, direct);
      } catch (err) {
        drop(i, err);
      }
    });
    // A kept file is read chunk after chunk into its room; another into two buffers in turn.
    const room = (k: number): Buffer => {
      if (keep === null) return (k % 2 ? opts.buffers?.[1] : opts.buffers?.[0]) ?? Buffer.allocUnsafe(size);
      // Longer than its size said: it changed (the check after the read says so).
      if ((k + 1) * size > keep.length) throw new SourceChangedSignal();
      return keep.subarray(k * size, (k + 1) * size);
    };
    const spares = keep === null ? [room(0), room(1)] : [];
    const bufferOf = (k: number): Buffer => (keep === null ? (spares[k % 2] as Buffer) : room(k));
    const hash = createHash('md5');
    const check = keep === null ? createHash(CHECK) : null;
    const readInto = (buf: Buffer): Promise<number> => {
      const p = readFull(fh, buf);
      p.catch(() => undefined);
      pending = p;
      return p;
    };
    let total = 0;
    let k = 0;
    let current = bufferOf(0);
    let next = readInto(current);
    for (;;) {
      if (opts.stopped()) return null;
      const bytesRead = await next;
      pending = undefined;
      if (bytesRead === 0) break;
      const chunk = current.subarray(0, bytesRead);
      // A buffer read short is the end of the file; else the next read runs (in
      // the thread pool) while this chunk is hashed and written here.
      const last = bytesRead < current.length;
      const other = last ? current : bufferOf(k + 1);
      if (!last) next = readInto(other);
      // The copies are written (thread pool) while the chunk is hashed here.
      const writes = writers.flatMap((w, i) =>
        w === null ? [] : [w.write(chunk, current).catch((err: unknown) => drop(i, err))],
      );
      hash.update(chunk);
      check?.update(chunk);
      await Promise.all(writes);
      total += bytesRead;
      opts.onBytes?.(bytesRead);
      if (last) break;
      current = other;
      k++;
    }
    if (!same(await fh.stat())) throw new SourceChangedSignal();
    const seconds = opts.mtimeMs / 1000;
    writers.forEach((w, i) => {
      if (w === null) return;
      const t = targets[i] as CopyTarget;
      try {
        w.finish();
        closeSync(w.fd);
        writers[i] = null;
        utimesSync(t.temp, seconds, seconds);
        renameSync(t.temp, t.final);
        // The rename itself on disk: the folder's entry flushed too.
        const dirFd = openSync(dirname(t.final), 'r');
        try {
          fsyncSync(dirFd);
        } finally {
          closeSync(dirFd);
        }
      } catch (err) {
        drop(i, err);
      }
    });
    if (opts.stopped()) return null;
    const expected: Expected = check
      ? { sha1: check.digest('hex') }
      : { bytes: (keep as Buffer).subarray(0, total) };
    return { md5: hash.digest('hex'), expected, errors };
  } finally {
    await pending?.catch(() => undefined);
    await fh.close().catch(() => undefined);
    // Stopped or failed half-way: no partial copy stays behind.
    writers.forEach((w, i) => {
      if (w !== null) drop(i, new Error('stopped'));
    });
  }
}

/** How a copy was read back: from the disk itself (O_DIRECT), or through the OS's cache. */
export type ReadBack = 'direct' | 'cache';

/**
 * A copy read back from the disk, not from the page cache, and compared with
 * the card file as read (its bytes, or their SHA-1): on Linux with O_DIRECT
 * (the kernel writes out any cached pages first, then reads the device);
 * where the system or file system refuses it (macOS, Windows, tmpfs) through
 * the cache after fdatasync, and it says which. The next read runs while this
 * one is compared; `buffers`: two page-aligned buffers the caller reuses (a
 * worker), else its own.
 */
export async function verifyCopy(
  path: string,
  expected: Expected,
  opts: { bufferSize: number; buffers?: [Buffer, Buffer] },
): Promise<{ same: boolean; readBack: ReadBack }> {
  const size = Math.max(ALIGN, Math.floor(opts.bufferSize / ALIGN) * ALIGN);
  let fh: FileHandle | undefined;
  let direct = false;
  if (O_DIRECT !== undefined) {
    try {
      fh = await open(path, constants.O_RDONLY | O_DIRECT);
      direct = true;
    } catch (err) {
      if ((err as { code?: string }).code !== 'EINVAL') throw err;
    }
  }
  fh ??= await open(path, 'r');
  let pending: Promise<number> | undefined;
  try {
    const [a, b] = opts.buffers ?? pageAlignedBuffers(size);
    let current = a.subarray(0, size);
    let spare = b.subarray(0, size);
    if (direct) {
      try {
        // O_DIRECT taken at open; the file system refuses its reads in some cases (EINVAL): through the cache.
        await fh.read(current, 0, ALIGN, 0);
      } catch (err) {
        if ((err as { code?: string }).code !== 'EINVAL') throw err;
        await fh.close();
        fh = await open(path, 'r');
        direct = false;
      }
    }
    if (!direct) await fh.datasync();
    const file = fh;
    const readBack: ReadBack = direct ? 'direct' : 'cache';
    const bytes = 'bytes' in expected ? expected.bytes : null;
    const hash = bytes === null ? createHash(CHECK) : null;
    const readAt = (buf: Buffer, at: number): Promise<number> => {
      const p = readFull(file, buf, at);
      p.catch(() => undefined);
      pending = p;
      return p;
    };
    let pos = 0;
    let next = readAt(current, 0);
    for (;;) {
      const n = await next;
      pending = undefined;
      if (n === 0) break;
      const chunk = current.subarray(0, n);
      // A short read is the end (O_DIRECT reads whole blocks until the last one).
      if (n === current.length) next = readAt(spare, pos + n);
      if (bytes !== null && !chunk.equals(bytes.subarray(pos, pos + n))) return { same: false, readBack };
      hash?.update(chunk);
      pos += n;
      if (n < current.length) break;
      [current, spare] = [spare, current];
    }
    const same =
      bytes !== null ? pos === bytes.length : hash?.digest('hex') === (expected as { sha1: string }).sha1;
    return { same, readBack };
  } finally {
    await pending?.catch(() => undefined);
    await fh.close().catch(() => undefined);
  }
}

/** One copy checked after it was written: how it was read back, and whether it is the card's. */
export interface CopyCheck {
  same: boolean;
  readBack: ReadBack;
}

/**
 * copyFileTo, then each copy written read back (verifyCopy), one after the
 * other with the same two buffers. A read-back that fails (the disk gone)
 * is that target's error. null when stopped.
 */
export async function copyAndCheck(
  source: string,
  targets: readonly CopyTarget[],
  opts: CopyFileOptions & { readBuffers?: [Buffer, Buffer] },
): Promise<{ md5: string; errors: Array<ErrorInfo | null>; checks: Array<CopyCheck | null> } | null> {
  const out = await copyFileTo(source, targets, opts);
  if (out === null) return null;
  const checks: Array<CopyCheck | null> = [];
  for (const [i, t] of targets.entries()) {
    if (out.errors[i] !== null) {
      checks.push(null);
      continue;
    }
    try {
      checks.push(
        await verifyCopy(t.final, out.expected, {
          bufferSize: opts.bufferSize,
          ...(opts.readBuffers ? { buffers: opts.readBuffers } : {}),
        }),
      );
    } catch (err) {
      out.errors[i] = errorInfo(err);
      checks.push(null);
    }
  }
  return { md5: out.md5, errors: out.errors, checks };
}

// ---------- the worker's side of the messages (workers.ts is the other) ----------

/** workerData that makes this module a hash worker (vitest, too, runs tests in worker threads). */
export const HASH_WORKER = 'dms-hash-worker';

export type Job =
  | { op: 'file'; id: number; path: string; bufferSize: number; flag: Int32Array }
  | { op: 'range'; id: number; path: string; offset: number; length: number; expectedSize: number }
  | {
      op: 'copy';
      id: number;
      path: string;
      targets: CopyTarget[];
      size: number;
      mtimeMs: number;
      bufferSize: number;
      flag: Int32Array;
    };

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
  /** A copy job: what happened to each target, and how each written copy read back. */
  copyErrors?: Array<ErrorInfo | null>;
  checks?: Array<CopyCheck | null>;
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
  // Page-aligned, so that a copy job can read its copies back past the cache.
  if (!scratch || scratch[0].length < size) scratch = pageAlignedBuffers(Math.ceil(size / ALIGN) * ALIGN);
  return [scratch[0].subarray(0, size), scratch[1].subarray(0, size)];
}

/**
 * A file up to this size is kept whole in a copy worker while it is copied,
 * and its copies compared with its bytes (photos, RTK files, SRTs); a larger
 * one (videos) with its SHA-1. 16 MiB: a 45 MP photo.
 */
export const KEEP_BYTES = 16 * 1024 * 1024;

/** This copy worker's room for a kept file (page-aligned), reused from one file to the next. */
let keepRoom: Buffer | undefined;

function keepBuffer(bufferSize: number): Buffer {
  const size = Math.max(2, Math.ceil(KEEP_BYTES / bufferSize)) * bufferSize;
  if (!keepRoom || keepRoom.length < size) [keepRoom] = pageAligned(size) as [Buffer];
  return keepRoom.subarray(0, size);
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
    } else if (job.op === 'copy') {
      const keep = keepBuffer(job.bufferSize);
      const out = await copyAndCheck(job.path, job.targets, {
        size: job.size,
        mtimeMs: job.mtimeMs,
        bufferSize: job.bufferSize,
        keep,
        // A file too large to keep is read into the start of the same room, two buffers in turn.
        buffers: [keep.subarray(0, job.bufferSize), keep.subarray(job.bufferSize, 2 * job.bufferSize)],
        readBuffers: scratchBuffers(job.bufferSize),
        direct: true,
        stopped: () => Atomics.load(job.flag, 0) !== 0,
        onBytes: (bytes) => post({ id, bytes }),
      });
      post(
        out === null
          ? { id, aborted: true }
          : { id, md5: out.md5, copyErrors: out.errors, checks: out.checks },
      );
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
