import { createHash, createHmac } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { NodeSha256, Slots } from './s3-put.js';

describe('Slots', () => {
  it('lets `size` holders in, the others in their order; one that gives up leaves the line', async () => {
    const slots = new Slots(1);
    const first = await slots.take();
    const events: string[] = [];
    const ac = new AbortController();
    const second = slots.take(ac.signal).then(
      () => events.push('second'),
      (err: Error) => events.push(`second ${err.name}`),
    );
    const third = slots.take().then((release) => {
      events.push('third');
      return release;
    });
    ac.abort();
    await second;
    expect(events).toEqual(['second AbortError']);
    first();
    first(); // given back once only
    const release = await third;
    expect(events).toEqual(['second AbortError', 'third']);
    // The slot is held by the third: a fourth waits until it is given back.
    let fourth = false;
    const waiting = slots.take().then(() => (fourth = true));
    await new Promise((r) => setTimeout(r, 20));
    expect(fourth).toBe(false);
    release();
    await waiting;
    expect(fourth).toBe(true);
  });
});

describe("NodeSha256 (the signer's hashes)", () => {
  const digest = async (secret: string | Uint8Array | undefined, data: string) => {
    const h = new NodeSha256(secret);
    h.update(data);
    return Buffer.from(await h.digest()).toString('hex');
  };

  it('gives the HMAC of node:crypto for every key, the same key twice or after many others', async () => {
    const utf8 = 'AWS4sécret/Кey+1';
    const raw = new Uint8Array(Buffer.from('6b7a3f00ff', 'hex'));
    // A string and bytes that read alike in latin1 are different keys (UTF-8 is not latin1).
    const latin1 = Buffer.from(utf8, 'utf8').toString('latin1');
    for (let round = 0; round < 2; round++) {
      for (const key of [utf8, latin1, raw]) {
        expect(await digest(key, 'to sign')).toBe(createHmac('sha256', key).update('to sign').digest('hex'));
      }
      // More keys than are kept: each still signs with its own.
      for (let i = 0; i < 40; i++)
        expect(await digest(`key-${i}`, 'x')).toBe(
          createHmac('sha256', `key-${i}`).update('x').digest('hex'),
        );
    }
    // A key given as a view into a larger buffer: only the view's bytes.
    const big = Buffer.from('00112233445566778899', 'hex');
    const view = new Uint8Array(big.buffer, big.byteOffset + 2, 4);
    expect(await digest(view, 'y')).toBe(createHmac('sha256', Buffer.from(view)).update('y').digest('hex'));
  });

  it('hashes plainly without a key', async () => {
    expect(await digest(undefined, 'abc')).toBe(createHash('sha256').update('abc').digest('hex'));
  });
});
