import { describe, expect, it } from 'vitest';
import { xxh3 } from './hash-worker.js';

describe('xxh3', () => {
  it('gives the reference digests of XXH3-64 (seed 0), in ASC MHL hex form, across chunks', () => {
    // Reference values of the xxHash project's XXH3_64bits (and Python's xxhash.xxh3_64).
    const empty = xxh3();
    expect(empty.hex()).toBe('2d06800538d394c2');
    const abc = xxh3();
    abc.update(Buffer.from('a'));
    abc.update(Buffer.from('bc'));
    expect(abc.hex()).toBe('78af5f94892f3950');
  });

  it('tells a single changed byte apart', () => {
    const a = xxh3();
    const b = xxh3();
    const bytes = Buffer.alloc(1 << 20, 7);
    a.update(bytes);
    bytes[12345] = 8;
    b.update(bytes);
    expect(a.hex()).not.toBe(b.hex());
    expect(a.hex()).toMatch(/^[0-9a-f]{16}$/);
  });
});
