/**
 * The worker threads themselves: md5File and readRangeWithMd5 fall back to
 * their own thread when no worker runs, so their tests pass either way; these
 * call the workers directly (WorkersUnavailable would fail them).
 */
import { execFileSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtemp, rm, truncate, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SourceChangedSignal, md5OfFile, readRangeMd5 } from './hash-worker.js';
import { hashFileInWorker, readRangeInWorker } from './workers.js';

/** The reference: coreutils md5sum, an implementation independent of ours. */
const md5sum = (path: string): string =>
  execFileSync('md5sum', [path], { encoding: 'utf8' }).split(' ')[0] ?? '';

const SIZE = 3 * 1024 * 1024 + 777;
let tmp: string;
let file: string;
let content: Buffer;

beforeAll(async () => {
  tmp = await mkdtemp(join(tmpdir(), 'dms-hash-'));
  file = join(tmp, 'a.bin');
  content = randomBytes(SIZE);
  await writeFile(file, content);
});
afterAll(async () => {
  await rm(tmp, { recursive: true, force: true });
});

const notAborted = (): Error => new Error('not aborted');

describe('hash workers', () => {
  it('hash a whole file in a worker thread, as md5sum does, with a report per read', async () => {
    const reads: number[] = [];
    const md5 = await hashFileInWorker(file, 1024 * 1024, {
      onBytes: (n) => reads.push(n),
      abortReason: notAborted,
    });
    expect(md5).toBe(md5sum(file));
    expect(reads).toEqual([1024 * 1024, 1024 * 1024, 1024 * 1024, 777]);
  });

  it('reuse its read buffers from one file to the next without mixing their bytes', async () => {
    // Files of other sizes, one after another through the same two workers:
    // bigger and smaller buffers than the last, a file shorter than one read,
    // and the first file again after a stop left a buffer half full.
    const others = [1, 700_000, 5 * 1024 * 1024 + 1, 10, 2 * 1024 * 1024].map((n, i) => {
      const p = join(tmp, `other-${i}.bin`);
      return { p, data: randomBytes(n) };
    });
    for (const o of others) await writeFile(o.p, o.data);
    const ac = new AbortController();
    await hashFileInWorker(file, 1024 * 1024, {
      signal: ac.signal,
      onBytes: () => ac.abort(),
      abortReason: notAborted,
    }).catch(() => undefined);
    const got = await Promise.all(
      [...others, ...others].map((o) =>
        hashFileInWorker(o.p, Math.min(4 * 1024 * 1024, o.data.length + 1), { abortReason: notAborted }),
      ),
    );
    expect(got).toEqual([...others, ...others].map((o) => md5sum(o.p)));
    expect(await hashFileInWorker(file, 1024 * 1024, { abortReason: notAborted })).toBe(md5sum(file));
  });

  it('give the same hash as the same code on this thread', async () => {
    const here = await md5OfFile(file, { bufferSize: 1024 * 1024 + 3, stopped: () => false });
    expect(here).toBe(md5sum(file));
  });

  it('stop between reads when the caller aborts', async () => {
    const ac = new AbortController();
    const stop = new Error('stopped');
    let seen = 0;
    const run = hashFileInWorker(file, 1024 * 1024, {
      signal: ac.signal,
      onBytes: (n) => {
        seen += n;
        ac.abort();
      },
      abortReason: () => stop,
    });
    await expect(run).rejects.toBe(stop);
    expect(seen).toBeLessThan(SIZE);
  });

  it('read a range with its MD5 and hand the bytes over', async () => {
    const offset = 1024 * 1024 + 5;
    const length = 2 * 1024 * 1024;
    const { body, md5 } = await readRangeInWorker(file, offset, length, SIZE);
    expect(body.equals(content.subarray(offset, offset + length))).toBe(true);
    const here = await readRangeMd5(file, offset, SIZE, Buffer.alloc(length));
    expect(md5.equals(here.md5)).toBe(true);
  });

  it('say the file changed when it is not the expected size, and pass file system errors on', async () => {
    await expect(readRangeInWorker(file, 0, 1024 * 1024, SIZE + 1)).rejects.toBeInstanceOf(
      SourceChangedSignal,
    );
    const short = join(tmp, 'short.bin');
    await writeFile(short, content);
    await truncate(short, 1024);
    await expect(readRangeInWorker(short, 0, 1024 * 1024, SIZE)).rejects.toBeInstanceOf(SourceChangedSignal);
    await expect(
      hashFileInWorker(join(tmp, 'nope'), 1024, { abortReason: notAborted }),
    ).rejects.toMatchObject({
      code: 'ENOENT',
      syscall: 'open',
    });
  });
});
