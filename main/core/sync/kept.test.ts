import { describe, expect, it } from 'vitest';
import { KEEP_BUDGET_BYTES, KeptBytes, KNOWN_STREAK } from './kept.js';

const MiB = 1024 * 1024;

describe('KeptBytes', () => {
  it('keeps photos while the bytes held stay within the budget', () => {
    const kept = new KeptBytes();
    expect(kept.worthKeeping(5 * MiB)).toBe(true);
    kept.set(1, Buffer.alloc(KEEP_BUDGET_BYTES - 4 * MiB));
    expect(kept.worthKeeping(4 * MiB)).toBe(true);
    expect(kept.worthKeeping(5 * MiB)).toBe(false);
    kept.delete(1);
    expect(kept.get(1)).toBeUndefined();
    expect(kept.worthKeeping(5 * MiB)).toBe(true);
  });

  it('stops keeping after a run of "known" answers and starts again at the next "not known"', () => {
    const kept = new KeptBytes();
    for (let i = 0; i < KNOWN_STREAK - 1; i++) kept.answered('known');
    expect(kept.worthKeeping(5 * MiB)).toBe(true);
    kept.answered('known');
    expect(kept.worthKeeping(5 * MiB)).toBe(false);
    kept.answered('unknown');
    expect(kept.worthKeeping(5 * MiB)).toBe(true);
    // A "not known" inside the run starts the count again.
    for (let i = 0; i < KNOWN_STREAK - 1; i++) kept.answered('known');
    kept.answered('unknown');
    kept.answered('known');
    expect(kept.worthKeeping(5 * MiB)).toBe(true);
  });
});
