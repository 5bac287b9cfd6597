/**
 * The memory of request bodies (a photo read whole, one part of a video),
 * kept and handed out again instead of freed after each request.
 *
 * Each body used to be allocated by the range worker that read it and freed
 * on the main thread once its request was answered (or its photo dropped).
 * glibc serves such blocks from the worker thread's own malloc arena (once a
 * first freed one has raised its mmap threshold past a body's size) and
 * keeps a freed block there for that arena's next use, not given back to the
 * system: the offload bench's card with no local destination (row 6d) held
 * about 190 MiB of freed bodies in four arenas at its RSS peak (415 MiB).
 * Here the main thread allocates a body's memory once, hands it to the worker
 * that reads into it (transferred, not copied), and takes it back when the
 * request is answered: the card's bytes go through as many buffers as there
 * are bodies in flight at once.
 *
 * Buffers are BODY_UNIT or a whole number of MiB above it, so one left by a
 * photo serves a part and the other way round (the pages a shorter body does
 * not touch cost no memory). Up to MAX_IDLE_BYTES wait for the next bodies;
 * the rest, and all of them once none came back for IDLE_MS, are freed.
 */
const MiB = 1024 * 1024;
/** The smallest buffer: the default part size (parts.ts DEFAULT_PART_SIZE). */
const BODY_UNIT = 8 * MiB;
/** Idle buffers kept for the next bodies: 8 of the default part size. */
export const MAX_IDLE_BYTES = 64 * MiB;
/** An agent with no upload for this long keeps no idle buffer (a tray app waits for hours). */
const IDLE_MS = 10_000;

const idle: ArrayBuffer[] = [];
/** The memory this pool handed out (a body coming back from a worker is a new ArrayBuffer: adopted). */
const ours = new WeakSet<ArrayBuffer>();
let idleTimer: NodeJS.Timeout | undefined;
let allocated = 0;
/** Bytes of the pool's buffers allocated and not freed (handed out or idle). */
let liveBytes = 0;

/** Frees an ArrayBuffer's memory now (detached), not at a later garbage collection. */
function free(ab: ArrayBuffer): void {
  (ab as ArrayBuffer & { transfer?: (n: number) => ArrayBuffer }).transfer?.(0);
}

/** Frees one of the pool's buffers. */
function drop(ab: ArrayBuffer): void {
  liveBytes -= ab.byteLength;
  free(ab);
}

/**
 * The index of the smallest idle buffer of at least `length` bytes, the one
 * given back last of those (`last`, else first; -1 if none). Bodies take
 * the last, the idle allowance frees the first: last in, first out: a buffer's
 * memory is only resident where a body touched it (a 5 MiB photo leaves 3
 * MiB of an 8 MiB buffer untouched), so when fewer bodies are in flight
 * than before (a card's videos' parts after its photos: about 6 instead of
 * 10) the same few buffers go round and the others stay as they are,
 * instead of every idle buffer in turn being touched whole by a part
 * (issue 33, row 6d: its peak of RSS came with the videos' parts).
 */
function smallestIdle(length: number, last = true): number {
  let best = -1;
  idle.forEach((ab, i) => {
    const than = best < 0 ? Infinity : (idle[best] as ArrayBuffer).byteLength;
    if (ab.byteLength >= length && (ab.byteLength < than || (last && ab.byteLength === than))) best = i;
  });
  return best;
}

/**
 * `length` bytes of memory for a body, not zero-filled: a view of the pool's
 * memory (its ArrayBuffer may be longer). Give it back with giveBody once
 * nothing reads it any more.
 */
export function takeBody(length: number): Buffer {
  const i = smallestIdle(length);
  let ab: ArrayBuffer;
  if (i >= 0) ab = idle.splice(i, 1)[0] as ArrayBuffer;
  else {
    ab = new ArrayBuffer(Math.max(BODY_UNIT, Math.ceil(length / MiB) * MiB));
    allocated += 1;
    liveBytes += ab.byteLength;
  }
  ours.add(ab);
  return Buffer.from(ab, 0, length);
}

/** A body read into takeBody's memory by a worker (it comes back as another ArrayBuffer): still the pool's. */
export function adoptBody(body: Buffer): Buffer {
  ours.add(body.buffer as ArrayBuffer);
  return body;
}

/**
 * A body no one reads any more (its request answered, its photo dropped):
 * its memory kept for the next body when it is the pool's, else freed now
 * when it is its whole ArrayBuffer (never a view into memory others hold).
 */
export function giveBody(body: Buffer): void {
  const ab = body.buffer as ArrayBuffer;
  if (!ours.has(ab)) {
    if (body.byteOffset === 0 && ab.byteLength === body.length) free(ab);
    return;
  }
  ours.delete(ab);
  idle.push(ab);
  let bytes = idle.reduce((n, b) => n + b.byteLength, 0);
  while (bytes > MAX_IDLE_BYTES) {
    const [gone] = idle.splice(smallestIdle(0, false), 1) as [ArrayBuffer];
    bytes -= gone.byteLength;
    drop(gone);
  }
  if (idleTimer) idleTimer.refresh();
  else
    idleTimer = setTimeout(() => {
      idleTimer = undefined;
      for (const b of idle.splice(0)) drop(b);
    }, IDLE_MS).unref();
}

/**
 * Buffers allocated by the pool since the process started, how many wait
 * idle, and the bytes of the pool's buffers not freed (`liveBytes`, handed
 * out or idle) and of the idle ones.
 */
export function bodyPoolStats(): { allocated: number; idle: number; liveBytes: number; idleBytes: number } {
  const idleBytes = idle.reduce((n, b) => n + b.byteLength, 0);
  return { allocated, idle: idle.length, liveBytes, idleBytes };
}
