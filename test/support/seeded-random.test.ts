import { afterEach, expect, it, vi } from 'vitest';
import { bytesFrom, faultSeed, intBetween, parseFaultSeed, seededRandom, subSeed } from './seeded-random.js';

const take = (rand: () => number, n: number) => Array.from({ length: n }, () => rand());

afterEach(() => {
  vi.unstubAllEnvs();
  vi.restoreAllMocks();
});

it('same seed, same sequence', () => {
  expect(take(seededRandom(123456), 1000)).toEqual(take(seededRandom(123456), 1000));
  expect(take(seededRandom(0), 10)).toEqual(take(seededRandom(0), 10));
});

it('different seeds, different sequences', () => {
  const a = take(seededRandom(1), 100);
  const b = take(seededRandom(2), 100);
  expect(a).not.toEqual(b);
  expect(a.filter((x, i) => x === b[i]).length).toBeLessThan(3);
  expect(subSeed(7, 'service')).not.toBe(subSeed(7, 'bucket'));
  expect(subSeed(7, 'service')).toBe(subSeed(7, 'service'));
  expect(take(seededRandom(subSeed(7, 'service')), 20)).not.toEqual(
    take(seededRandom(subSeed(7, 'bucket')), 20),
  );
});

it('values in [0, 1), spread over the range', () => {
  for (const seed of [0, 1, 42, 0xffffffff]) {
    const xs = take(seededRandom(seed), 10_000);
    expect(xs.every((x) => x >= 0 && x < 1)).toBe(true);
    const mean = xs.reduce((s, x) => s + x, 0) / xs.length;
    expect(mean).toBeGreaterThan(0.45);
    expect(mean).toBeLessThan(0.55);
    expect(new Set(xs).size).toBeGreaterThan(9_900);
  }
  const rand = seededRandom(9);
  const ints = Array.from({ length: 1000 }, () => intBetween(rand, 3, 7));
  expect(new Set(ints)).toEqual(new Set([3, 4, 5, 6]));
  expect(bytesFrom(seededRandom(5), 64).equals(bytesFrom(seededRandom(5), 64))).toBe(true);
});

it('faultSeed: DMS_FAULT_SEED when set, else a random one; printed either way', () => {
  const log = vi.spyOn(console, 'log').mockImplementation(() => undefined);
  vi.stubEnv('DMS_FAULT_SEED', '123456');
  expect(faultSeed('soak')).toBe(123456);
  expect(log).toHaveBeenLastCalledWith('[soak] fault seed 123456 (re-run with DMS_FAULT_SEED=123456)');
  vi.stubEnv('DMS_FAULT_SEED', '');
  const seed = faultSeed('kill');
  expect(Number.isInteger(seed) && seed >= 0 && seed < 2 ** 32).toBe(true);
  expect(log).toHaveBeenLastCalledWith(`[kill] fault seed ${seed} (re-run with DMS_FAULT_SEED=${seed})`);
  expect(parseFaultSeed(undefined)).toBeUndefined();
  expect(parseFaultSeed(' 4294967295 ')).toBe(4294967295);
  for (const bad of ['-1', '4294967296', '1.5', 'abc', '0x10'])
    expect(() => parseFaultSeed(bad)).toThrow(/DMS_FAULT_SEED/);
});
