/**
 * What a hash worker does, in one place: the MD5 of a whole file (the
 * fingerprint), one range of a file read for sending, with its MD5, a card
 * file copied to its destinations and each copy read back, and the decode of
 * a photo's embedded preview (media/preview.ts: its garbage and CPU stay off
 * the agent's main thread).
 * workers.ts runs this module in worker threads; media/fingerprint.ts and
 * storage/parts.ts call the same functions on their own thread when there is
 * no worker. The errors are the file system's own (code, errno, syscall):
 * what they mean is decided by the callers.
 *
 * Node built-ins only, no relative import: the worker thread loads this file
 * by itself, compiled (dist/) or, when the sources run as they are (tests),
 * as TypeScript with the types stripped by Node. The one package it uses
 * (XXH3, a copy's read-back) is required when first needed, from where the
 * file lies (the app's node_modules; unpacked beside the asar); the preview
 * decoder, media/preview.ts (no relative import either), is imported from
 * beside it when first needed.
 */
import { createHash } from 'node:crypto';
import { createRequire } from 'node:module';
import type XxHash from '@node-rs/xxhash';
import type * as Preview from '../media/preview.js';
import type { PreviewStats } from '../media/preview.js';
import {
  closeSync,
  constants,
  fdatasyncSync,
  fstatSync,
  fsyncSync,
  openSync,
  readSync,
  renameSync,
  unlinkSync,
  utimesSync,
  write,
  writeSync,
} from 'node:fs';
import { open, type FileHandle } from 'node:fs/promises';
import { dirname, extname } from 'node:path';
import { fileURLToPath } from 'node:url';
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
  buffers?: [Buffer, Buffer] | [Buffer];
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
  try {
    const hash = createHash('md5');
    if (!(await readEach(fh, opts, (chunk) => hash.update(chunk)))) return null;
    return opts.stopped() ? null : hash.digest('hex');
  } finally {
    // A close error after a good read does not change the hash; ignore it.
    await fh.close().catch(() => undefined);
  }
}

/**
 * Reads a file to its end into two buffers in turn, the next read running (in
 * the thread pool) while `each` handles this chunk; `each` is done with a
 * buffer when it returns (or when the promise it returns settles: its
 * writes), and a buffer is refilled only after that. The
 * second buffer only for files longer than one read (most photos are not).
 * false when `stopped()` said so before a read. Returns once no read is in
 * flight, so the caller may close the file.
 */
async function readEach(
  fh: FileHandle,
  opts: HashFileOptions,
  each: (chunk: Buffer) => unknown,
): Promise<boolean> {
  // The read in flight, if any: always awaited before returning.
  let pending: Promise<{ bytesRead: number }> | undefined;
  // What `each` still does with the last chunk (its writes): awaited before its buffer is read into again.
  let busy: Promise<unknown> | undefined;
  const handle = (chunk: Buffer): void => {
    const r = each(chunk);
    busy = r instanceof Promise ? r : undefined;
  };
  try {
    let current: Buffer = opts.buffers?.[0] ?? Buffer.allocUnsafe(opts.bufferSize);
    let spare: Buffer | undefined = opts.buffers?.[1];
    const readInto = (buf: Buffer): Promise<{ bytesRead: number }> => {
      const p = fh.read(buf, 0, buf.length, null);
      // Settled on every path (the finally below awaits it); never unhandled.
      p.catch(() => undefined);
      pending = p;
      return p;
    };
    let next = readInto(current);
    for (;;) {
      if (opts.stopped()) return false;
      const { bytesRead } = await next;
      pending = undefined;
      // Only 0 means the end (a short read may come before it).
      if (bytesRead === 0) {
        if (busy) await busy;
        return true;
      }
      const chunk = current.subarray(0, bytesRead);
      if (bytesRead === current.length) {
        const other: Buffer = (spare ??= Buffer.allocUnsafe(current.length));
        if (busy) await busy; // `other` held the last chunk
        next = readInto(other);
        handle(chunk);
        spare = current;
        current = other;
      } else {
        handle(chunk);
        if (busy) await busy;
        next = readInto(current);
      }
      opts.onBytes?.(bytesRead);
    }
  } finally {
    await pending?.catch(() => undefined);
    if (busy) await busy.catch(() => undefined);
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
  /** XXH3-64 of the same bytes (what each copy's read-back is compared with), lowercase hex. */
  xxh3: string;
  /** Per target, in order: null when written, flushed and renamed, else what went wrong. */
  errors: Array<ErrorInfo | null>;
  /** Per target, in order: how it was written (null: it failed). */
  written: Array<WriteMode | null>;
}

/**
 * Reads `source` once and writes every chunk to each target: the same read
 * feeds the MD5 and every copy. Each chunk's writes (one per target, in the
 * thread pool, each target's in order) run while the chunk is hashed and the
 * next one read; a buffer is read into again only once its writes are done
 * (the two buffers of a hash, no more in flight). Where the file system
 * allows it (Linux, not tmpfs nor some FUSE drives) a copy is written with
 * O_DIRECT, around the page cache: no copy of every byte into the cache, no
 * dirty pages to write out later; its last partial block through a second,
 * buffered descriptor. Else through the cache, and `written` says which.
 * Each target is then flushed to disk (fsync: the device's cache and the
 * file's size and blocks, which O_DIRECT does not flush), given the source's
 * modification time, renamed into place and its folder flushed.
 * A target that fails (disk full, unplugged, read-only) is dropped with its
 * reason; the others go on. SourceChangedSignal when the source is not the
 * version expected (size, mtime) before or after the read. null when stopped.
 */
export async function copyFileTo(
  source: string,
  targets: readonly CopyTarget[],
  opts: HashFileOptions & { size: number; mtimeMs: number },
): Promise<CopyOutcome | null> {
  const fh = await open(source, 'r');
  const errors: Array<ErrorInfo | null> = targets.map(() => null);
  const outs: Output[] = targets.map(() => ({ fd: null, direct: null, work: Promise.resolve() }));
  // Buffers taken for this copy (none given: a copy on the agent's own thread), given back at the end.
  let own: Buffer[] = [];
  const drop = (i: number, err: unknown): void => {
    errors[i] = errorInfo(err);
    // A close error of a gone disk's descriptor: the error above says why.
    closeOutput(outs[i] as Output);
    try {
      unlinkSync((targets[i] as CopyTarget).temp);
    } catch {
      // nothing left behind to remove, or the disk is gone
    }
  };
  try {
    const same = (st: { size: number; mtimeMs: number }) =>
      st.size === opts.size && Math.trunc(st.mtimeMs) === Math.trunc(opts.mtimeMs);
    if (!same(await fh.stat())) throw new SourceChangedSignal();
    // Two buffers (one when a read takes the whole file), each with room to be aligned for O_DIRECT.
    const buffers: Buffer[] = opts.buffers
      ? [...opts.buffers]
      : (own = Array.from({ length: opts.size > opts.bufferSize ? 2 : 1 }, () =>
          takeBuffer(opts.bufferSize),
        ));
    let views: Buffer[] | null = null;
    for (const [i, t] of targets.entries()) {
      const o = outs[i] as Output;
      try {
        o.fd = openSync(t.temp, 'w', 0o644);
        // A whole block to write around the cache, and a descriptor that allows it.
        o.direct = opts.size < ALIGN || opts.bufferSize < ALIGN ? null : openDirect(t.temp);
        if (o.direct === null) continue;
        // The buffers' aligned views, found with the first descriptor that takes O_DIRECT writes.
        views ??= alignedViews(buffers, o.direct);
        if (views === null) closeDirect(o);
      } catch (err) {
        drop(i, err);
      }
    }
    const [first, second] = (views ?? buffers) as [Buffer, Buffer?];
    const hash = createHash('md5');
    const fast = xxh3();
    let pos = 0;
    const read = await readEach(fh, { ...opts, buffers: second ? [first, second] : [first] }, (chunk) => {
      const at = pos;
      pos += chunk.length;
      // The writes first (thread pool), then the hashes on this thread while they run.
      for (const [i, o] of outs.entries())
        if (o.fd !== null)
          o.work = o.work
            .then(() => (o.fd === null ? undefined : writeChunk(o, chunk, at)))
            .catch((err: unknown) => drop(i, err));
      hash.update(chunk);
      fast.update(chunk);
      return Promise.all(outs.map((o) => o.work)).then(() => undefined);
    });
    if (!read) return null;
    if (!same(await fh.stat())) throw new SourceChangedSignal();
    const seconds = opts.mtimeMs / 1000;
    const written: Array<WriteMode | null> = outs.map((o) =>
      o.fd === null ? null : o.direct === null ? 'cache' : 'direct',
    );
    outs.forEach((o, i) => {
      if (o.fd === null) return;
      const t = targets[i] as CopyTarget;
      try {
        fsyncSync(o.fd);
        const failure = closeOutput(o);
        if (failure !== undefined) throw failure;
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
        written[i] = null;
      }
    });
    return opts.stopped() ? null : { md5: hash.digest('hex'), xxh3: fast.hex(), errors, written };
  } finally {
    await fh.close().catch(() => undefined);
    // Stopped or failed half-way: no write in flight, no partial copy stays behind.
    await Promise.all(outs.map((o) => o.work));
    outs.forEach((o, i) => {
      if (o.fd !== null) drop(i, new Error('stopped'));
    });
    for (const b of own) giveBack(b);
  }
}

/** How a copy was written: around the OS's page cache (O_DIRECT), or through it. */
export type WriteMode = 'direct' | 'cache';

/** One target being written: its buffered descriptor, and its O_DIRECT one when the file system takes it. */
interface Output {
  fd: number | null;
  direct: number | null;
  /** Its writes so far, in order (never rejects: a failure drops the target). */
  work: Promise<void>;
}

const O_DIRECT = (constants as { O_DIRECT?: number }).O_DIRECT;

/** An O_DIRECT descriptor of the file just created, or null where the file system refuses it (EINVAL). */
function openDirect(path: string): number | null {
  if (O_DIRECT === undefined) return null;
  try {
    return openSync(path, constants.O_WRONLY | O_DIRECT);
  } catch (err) {
    if ((err as { code?: string }).code === 'EINVAL') return null;
    throw err;
  }
}

function closeDirect(o: Output): void {
  const fd = o.direct;
  o.direct = null;
  if (fd !== null) closeSync(fd);
}

/** Both descriptors closed; the first close error, if any (a gone disk's; or a copy's last write). */
function closeOutput(o: Output): Error | undefined {
  let failure: Error | undefined;
  for (const fd of [o.direct, o.fd]) {
    if (fd === null) continue;
    try {
      closeSync(fd);
    } catch (err) {
      failure ??= err as Error;
    }
  }
  o.fd = o.direct = null;
  return failure;
}

const writeAt = (fd: number, buf: Buffer, off: number, len: number, at: number): Promise<number> =>
  new Promise((resolve, reject) => {
    write(fd, buf, off, len, at, (err, n) => (err ? reject(err) : resolve(n)));
  });

/**
 * `chunk` at `at` in the target: its whole blocks with O_DIRECT when the
 * chunk starts on a block (its memory is aligned: a view of alignedViews),
 * the rest through the buffered descriptor. A file system that takes
 * O_DIRECT at open but refuses the write (EINVAL) is written through the
 * cache from there on.
 */
async function writeChunk(o: Output, chunk: Buffer, at: number): Promise<void> {
  let done = 0;
  while (done < chunk.length) {
    const left = chunk.length - done;
    const blocks = at % ALIGN === 0 && done % ALIGN === 0 ? left - (left % ALIGN) : 0;
    if (o.direct !== null && blocks > 0) {
      try {
        done += await writeAt(o.direct, chunk, done, blocks, at + done);
        continue;
      } catch (err) {
        if ((err as { code?: string }).code !== 'EINVAL') throw err;
        closeDirect(o);
      }
    }
    if (o.fd === null) throw new Error('stopped');
    done += await writeAt(o.fd, chunk, done, left, at + done);
  }
}

/** `size` bytes with ALIGN more behind them, for alignedViews. */
function slackBuffer(size: number): Buffer {
  return Buffer.allocUnsafeSlow(size + ALIGN).subarray(0, size);
}

/**
 * The buffers of the copies made on the agent's own thread (small files,
 * several at once), kept for the next ones: their alignment is probed once,
 * not for every file. A few at most.
 */
const spares: Buffer[] = [];

function takeBuffer(size: number): Buffer {
  const i = spares.findIndex((b) => b.length >= size);
  const b = i < 0 ? slackBuffer(size) : (spares.splice(i, 1)[0] as Buffer);
  return b.subarray(0, size);
}

function giveBack(b: Buffer): void {
  if (spares.length < 4)
    spares.push(Buffer.from(b.buffer, b.byteOffset, b.buffer.byteLength - b.byteOffset - ALIGN));
}

/** Per memory block: an offset in it that is a multiple of ALIGN in address, once found. */
const alignment = new WeakMap<ArrayBufferLike, number>();

/**
 * Views of the same lengths over the same memory, starting at an address
 * that is a multiple of ALIGN (what O_DIRECT asks), or null when a buffer
 * has no room behind it, or the file system refuses O_DIRECT writes. The
 * address is probed as alignedBuffer does: the first offset at which an
 * O_DIRECT write of one block at the start of `fd` (a new copy, whose first
 * block is written again) succeeds; once per buffer.
 */
function alignedViews(buffers: readonly Buffer[], fd: number): Buffer[] | null {
  const views: Buffer[] = [];
  for (const b of buffers) {
    const room = b.buffer.byteLength - b.byteOffset - b.length;
    const known = alignment.get(b.buffer);
    let off = known === undefined ? undefined : (known - (b.byteOffset % ALIGN) + ALIGN) % ALIGN;
    for (let k = 0; off === undefined && k < Math.min(ALIGN, room + 1); k += 16) {
      try {
        writeSync(fd, Buffer.from(b.buffer, b.byteOffset + k, ALIGN), 0, ALIGN, 0);
        off = k;
        alignment.set(b.buffer, (b.byteOffset + k) % ALIGN);
      } catch (err) {
        if ((err as { code?: string }).code !== 'EINVAL') throw err;
      }
    }
    if (off === undefined || off > room) return null;
    views.push(Buffer.from(b.buffer, b.byteOffset + off, b.length));
  }
  return views;
}

/** How a copy was read back: from the disk itself (O_DIRECT), or through the OS's cache. */
export type ReadBack = 'direct' | 'cache';

/** Reads are a multiple of this, into memory aligned to it: what O_DIRECT asks. */
const ALIGN = 4096;
let aligned: Buffer | undefined;

/**
 * A buffer of `size` bytes (a multiple of ALIGN) whose address is a multiple
 * of ALIGN. JavaScript cannot ask for an address, so a larger buffer is
 * probed: the first offset at which an O_DIRECT read of `fd` succeeds.
 */
function alignedBuffer(fd: number, size: number): Buffer | null {
  if (aligned && aligned.length >= size) return aligned.subarray(0, size);
  const big = Buffer.allocUnsafeSlow(size + ALIGN);
  for (let off = 0; off < ALIGN; off += 16) {
    try {
      readSync(fd, big, off, ALIGN, 0);
      aligned = big.subarray(off, off + size);
      return aligned;
    } catch (err) {
      if ((err as { code?: string }).code !== 'EINVAL') throw err;
    }
  }
  return null;
}

/**
 * XXH3 of a file read back from the disk, not from the page cache: on Linux
 * with O_DIRECT (the kernel writes out any cached pages first, then reads the
 * device); where the system or file system refuses it (macOS, Windows, tmpfs)
 * through the cache after fdatasync, and it says which.
 */
export function readBackDigest(path: string, bufferSize: number): { xxh3: string; readBack: ReadBack } {
  const size = Math.max(ALIGN, Math.floor(bufferSize / ALIGN) * ALIGN);
  let fd: number;
  let direct = false;
  try {
    if (O_DIRECT === undefined) throw Object.assign(new Error('no O_DIRECT'), { code: 'EINVAL' });
    fd = openSync(path, constants.O_RDONLY | O_DIRECT);
    direct = true;
  } catch (err) {
    if ((err as { code?: string }).code !== 'EINVAL') throw err;
    fd = openSync(path, 'r');
  }
  try {
    let buf: Buffer | null = null;
    if (direct && fstatSync(fd).size > 0) {
      try {
        buf = alignedBuffer(fd, size);
      } catch (err) {
        if ((err as { code?: string }).code !== 'EINVAL') throw err;
      }
      if (buf === null) {
        // The file system takes O_DIRECT at open but not for reads: through the cache.
        closeSync(fd);
        fd = openSync(path, 'r');
        direct = false;
      }
    }
    if (!direct) fdatasyncSync(fd);
    buf ??= scratchBuffers(size)[0];
    const hash = xxh3();
    let pos = 0;
    for (;;) {
      const n = readSync(fd, buf, 0, buf.length, pos);
      if (n === 0) break;
      hash.update(buf.subarray(0, n));
      pos += n;
      if (direct && n < buf.length) break; // the end: O_DIRECT reads whole blocks until the last one
    }
    return { xxh3: hash.hex(), readBack: direct ? 'direct' : 'cache' };
  } finally {
    closeSync(fd);
  }
}

/**
 * XXH3-64, what a copy's read-back is checked with: the copy is compared with
 * the card's bytes as they were read once (the same read feeds the MD5 the
 * server knows and this), so each read-back costs a pass of XXH3 (several
 * GB/s a core) instead of one of MD5 (about 0.5 GB/s). Its hex form is ASC
 * MHL's `xxh3` (big-endian, 16 digits, as the reference tools write it).
 * Why XXH3-64: the fastest streaming XXH3 for Node (a native N-API module,
 * which Electron loads as it is), and a random corruption of a copy slips
 * through with a chance of 2^-64: a copy is not an adversary.
 *
 * Where its platform binary is not there (an installer that left the
 * module's per-platform package out: electron-builder does not collect
 * napi-rs's optional packages), the read-back is checked with MD5 as before,
 * slower and as sure; the digest then says so ("md5:<hex>"), so a copy is
 * never compared with a digest of the other kind.
 */
let xxhash: typeof XxHash | null | undefined;

export function xxh3(): { update(chunk: Uint8Array): void; hex(): string } {
  if (xxhash === undefined) {
    try {
      xxhash = createRequire(import.meta.url)('@node-rs/xxhash') as typeof XxHash;
    } catch {
      xxhash = null;
    }
  }
  if (xxhash === null) {
    const md5 = createHash('md5');
    return { update: (chunk) => void md5.update(chunk), hex: () => `md5:${md5.digest('hex')}` };
  }
  const h = xxhash.xxh3.Xxh3.withSeed(0n);
  return {
    update: (chunk) => void h.update(chunk),
    hex: () => h.digest().toString(16).padStart(16, '0'),
  };
}

// ---------- the worker's side of the messages (workers.ts is the other) ----------

/** workerData that makes this module a hash worker (vitest, too, runs tests in worker threads). */
export const HASH_WORKER = 'dms-hash-worker';

export type Job =
  | { op: 'file'; id: number; path: string; bufferSize: number; flag: Int32Array }
  | {
      op: 'range';
      id: number;
      path: string;
      offset: number;
      length: number;
      expectedSize: number;
      /** Memory to read into (at least `length` bytes), handed back with the reply. */
      body?: ArrayBuffer;
    }
  | {
      op: 'copy';
      id: number;
      path: string;
      targets: CopyTarget[];
      size: number;
      mtimeMs: number;
      bufferSize: number;
      flag: Int32Array;
    }
  | { op: 'readback'; id: number; path: string; bufferSize: number }
  | { op: 'preview'; id: number; thumb: Uint8Array };

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
  /** A copy or read-back job: XXH3-64 of the bytes read. */
  xxh3?: string;
  body?: ArrayBuffer;
  changed?: boolean;
  aborted?: boolean;
  error?: ErrorInfo;
  /** A copy job: what happened to each target. */
  copyErrors?: Array<ErrorInfo | null>;
  /** A copy job: how each target was written. */
  copyWritten?: Array<WriteMode | null>;
  /** A read-back job: how the copy was read. */
  readBack?: ReadBack;
  /** A preview job: the statistics of the decoded thumbnail (null: it could not be decoded). */
  preview?: PreviewStats | null;
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
  // With room behind each for an aligned view of it (a copy's O_DIRECT writes).
  if (!scratch || scratch[0].length < size) scratch = [slackBuffer(size), slackBuffer(size)];
  return [scratch[0].subarray(0, size), scratch[1].subarray(0, size)];
}

/**
 * media/preview.ts (the embedded preview's decode), loaded by the first
 * preview job from beside this file: preview.js in dist/, preview.ts when
 * the sources run as they are (it imports no relative module either).
 */
let previewModule: Promise<typeof Preview> | undefined;

function loadPreview(): Promise<typeof Preview> {
  const ext = extname(fileURLToPath(import.meta.url));
  previewModule ??= import(new URL(`../media/preview${ext}`, import.meta.url).href) as Promise<
    typeof Preview
  >;
  return previewModule;
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
      const out = await copyFileTo(job.path, job.targets, {
        size: job.size,
        mtimeMs: job.mtimeMs,
        bufferSize: job.bufferSize,
        buffers: scratchBuffers(job.bufferSize),
        stopped: () => Atomics.load(job.flag, 0) !== 0,
        onBytes: (bytes) => post({ id, bytes }),
      });
      post(
        out === null
          ? { id, aborted: true }
          : { id, md5: out.md5, xxh3: out.xxh3, copyErrors: out.errors, copyWritten: out.written },
      );
    } else if (job.op === 'readback') {
      post({ id, ...readBackDigest(job.path, job.bufferSize) });
    } else if (job.op === 'preview') {
      post({ id, preview: (await loadPreview()).previewStats(job.thumb) });
    } else {
      // The caller's memory (body-pool.ts), else a buffer of its own (never
      // a slice of Node's pool), not zero-filled: handed over without a copy.
      const buf = job.body ? Buffer.from(job.body, 0, job.length) : Buffer.allocUnsafeSlow(job.length);
      const { md5 } = await readRangeMd5(job.path, job.offset, job.expectedSize, buf);
      const ab = buf.buffer;
      const whole =
        job.body !== undefined || (buf.byteOffset === 0 && ab.byteLength === job.length)
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
