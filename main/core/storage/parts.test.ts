import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Readable } from 'node:stream';
import { afterAll, describe, expect, it } from 'vitest';
import { isDmsError } from '../errors.js';
import { CHUNK_SIZE, pacedBody } from './parts.js';

const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'dms-parts-'));
afterAll(() => fs.rmSync(tmp, { recursive: true, force: true }));

describe('pacedBody', () => {
  it('is granted its first slice before it resolves, then hands over exactly what each grant allows', async () => {
    const buf = Buffer.alloc(CHUNK_SIZE + 5000, 7);
    const asked: number[] = [];
    const throttle = (upTo: number): Promise<number> => {
      asked.push(upTo);
      return Promise.resolve(Math.min(upTo, 3000));
    };
    const progress: number[] = [];
    const body = (await pacedBody(buf, { throttle, onChunk: (n) => progress.push(n) })) as Readable;
    // Paid for before the request is made: nothing read from the stream yet.
    expect(asked).toEqual([CHUNK_SIZE]);
    const chunks: Buffer[] = [];
    for await (const chunk of body) chunks.push(chunk as Buffer);
    expect(Buffer.concat(chunks).equals(buf)).toBe(true);
    // Slices of what was granted (the stream may join them for its reader).
    expect(progress.slice(0, 3)).toEqual([3000, 6000, 9000]);
    expect(progress.at(-1)).toBe(buf.length);
    // Never more asked for than remains.
    expect(asked.at(-1)).toBe(buf.length - 3000 * (asked.length - 1));
  });

  it('an empty body waits for nothing', async () => {
    let asked = 0;
    const body = (await pacedBody(Buffer.alloc(0), {
      throttle: (n) => {
        asked++;
        return Promise.resolve(n);
      },
    })) as Readable;
    const chunks: unknown[] = [];
    for await (const chunk of body) chunks.push(chunk);
    expect([asked, chunks]).toEqual([0, []]);
  });
});

describe('a stalled body', () => {
  const failure = (body: Readable): Promise<unknown> =>
    new Promise((resolve) => body.once('error', resolve).once('close', () => resolve(null)));

  it('fails with a timeout once less than 1 KiB/s went for the stall window', async () => {
    const buf = Buffer.alloc(4 * CHUNK_SIZE, 1);
    const body = (await pacedBody(buf, { stream: true, stallMs: 300 })) as Readable;
    // Read one slice, then nothing: the socket took nothing more.
    body.read();
    const err = (await failure(body)) as { kind?: string; message?: string } | null;
    expect(err?.kind).toBe('timeout');
    expect(err?.message).toMatch(/stalled/);
  });

  it('is not a stall while it waits for the bandwidth limit', async () => {
    const buf = Buffer.alloc(2000, 1);
    let grants = 0;
    // A limit of 500 bytes a second: slower than 1 KiB/s, on purpose.
    const throttle = async (upTo: number): Promise<number> => {
      if (grants++ > 0) await new Promise((r) => setTimeout(r, 250));
      return Math.min(upTo, 125);
    };
    const body = (await pacedBody(buf, { throttle, stallMs: 300 })) as Readable;
    const chunks: Buffer[] = [];
    for await (const chunk of body) chunks.push(chunk as Buffer);
    expect(Buffer.concat(chunks).length).toBe(2000);
  });
});

describe('a body read from its file as it is sent (a manifest the agent wrote)', () => {
  const file = path.join(tmp, 'report.json');
  const bytes = Buffer.from(Array.from({ length: 3 * CHUNK_SIZE + 1234 }, (_, i) => (i * 7919) % 251));
  fs.writeFileSync(file, bytes);

  it('is always a stream, read a slice at a time (never the whole file at once), equal to the file', async () => {
    const body = await pacedBody({ file, length: bytes.length }, {});
    expect(body).toBeInstanceOf(Readable);
    const chunks: Buffer[] = [];
    for await (const chunk of body as Readable) chunks.push(chunk as Buffer);
    expect(Math.max(...chunks.map((c) => c.length))).toBeLessThanOrEqual(CHUNK_SIZE);
    expect(Buffer.concat(chunks).equals(bytes)).toBe(true);
  });

  it('paced: hands over exactly what each grant allows, with progress, read from the file', async () => {
    const asked: number[] = [];
    const progress: number[] = [];
    const body = (await pacedBody(
      { file, length: bytes.length },
      {
        throttle: (upTo) => {
          asked.push(upTo);
          return Promise.resolve(Math.min(upTo, 100_000));
        },
        onChunk: (n) => progress.push(n),
      },
    )) as Readable;
    expect(asked).toEqual([CHUNK_SIZE]); // granted before the request is made
    const chunks: Buffer[] = [];
    for await (const chunk of body) chunks.push(chunk as Buffer);
    expect(Buffer.concat(chunks).equals(bytes)).toBe(true);
    expect(progress.slice(0, 2)).toEqual([100_000, 200_000]);
    expect(progress.at(-1)).toBe(bytes.length);
  });

  it('a file shorter than said fails as changed; a missing one as missing', async () => {
    const short = (await pacedBody({ file, length: bytes.length + 10 }, {})) as Readable;
    const changed = await (async () => {
      for await (const _ of short) void _;
    })().catch((e: unknown) => e);
    expect(isDmsError(changed) && changed.kind).toBe('source-missing');
    expect((changed as Error).message).toMatch(/changed/i);
    const gone = (await pacedBody({ file: path.join(tmp, 'gone.json'), length: 10 }, {})) as Readable;
    const missing = await (async () => {
      for await (const _ of gone) void _;
    })().catch((e: unknown) => e);
    expect(isDmsError(missing) && missing.kind).toBe('source-missing');
  });

  it('an abort ends it at once, as cancelled', async () => {
    const ac = new AbortController();
    const body = (await pacedBody({ file, length: bytes.length }, { signal: ac.signal })) as Readable;
    const it = body[Symbol.asyncIterator]();
    await it.next();
    ac.abort();
    const err = await it.next().catch((e: unknown) => e);
    expect(isDmsError(err) && err.kind).toBe('cancelled');
  });
});
