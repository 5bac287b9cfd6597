import type { Readable } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { CHUNK_SIZE, pacedBody } from './parts.js';

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
