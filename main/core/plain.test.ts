import { describe, expect, it } from 'vitest';
import { count, grouped } from './plain.js';

describe('grouped: thousands as toLocaleString("en-US") writes them, without ICU', () => {
  it('the same text for whole numbers small and large', () => {
    const numbers = [0, 1, 9, 10, 99, 100, 999, 1000, 1001, 9999, 10_000, 12_345, 999_999, 1_000_000];
    for (let n = 7; n < Number.MAX_SAFE_INTEGER / 7; n *= 7) numbers.push(n, n + 1);
    numbers.push(Number.MAX_SAFE_INTEGER);
    for (const n of numbers) expect(grouped(n)).toBe(n.toLocaleString('en-US'));
  });

  it('other numbers are left to toLocaleString', () => {
    for (const n of [-1, -12_345, 1.5, 1234.5678, Number.MAX_SAFE_INTEGER + 2, NaN, Infinity])
      expect(grouped(n)).toBe(n.toLocaleString('en-US'));
  });

  it('count: "1 file", "10,000 files"', () => {
    expect(count(1, 'file')).toBe('1 file');
    expect(count(10_000, 'file')).toBe('10,000 files');
    expect(count(2, 'entry', 'entries')).toBe('2 entries');
  });
});
