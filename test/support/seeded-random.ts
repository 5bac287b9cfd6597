/**
 * Seeded randomness for the fault suites: the decisions they make at random
 * (which request gets a fault and which one, when a kill lands, what garbage
 * goes over a page) come from a seed that is printed, so a failure in CI can
 * be re-run with the same decisions: DMS_FAULT_SEED=<seed> npm run test:faults.
 * Timing and concurrency still vary from run to run; the seed fixes the
 * sequence of decisions, not which request meets which decision.
 */
import { randomInt } from 'node:crypto';

const UINT32 = 2 ** 32;

/** mulberry32: a small, fast 32-bit PRNG. Same seed, same sequence; values in [0, 1). */
export function seededRandom(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / UINT32;
  };
}

/**
 * A seed of its own for one consumer (`label`) of a suite's seed, so that
 * independent streams (the service proxy's faults, the bucket proxy's) do
 * not shift each other when requests interleave differently.
 */
export function subSeed(seed: number, label: string): number {
  let h = 0x811c9dc5; // FNV-1a of the label
  for (let i = 0; i < label.length; i++) h = Math.imul(h ^ label.charCodeAt(i), 0x01000193);
  return (Math.imul((seed ^ h) >>> 0, 0x9e3779b1) ^ h) >>> 0;
}

/** An integer in [min, max) from `rand` (as crypto.randomInt(min, max)). */
export function intBetween(rand: () => number, min: number, max: number): number {
  return min + Math.floor(rand() * (max - min));
}

/** `n` bytes from `rand`. */
export function bytesFrom(rand: () => number, n: number): Buffer {
  const buf = Buffer.allocUnsafe(n);
  for (let i = 0; i < n; i++) buf[i] = Math.floor(rand() * 256);
  return buf;
}

/** Parses DMS_FAULT_SEED: an integer in 0..2^32-1, or undefined when unset or empty. */
export function parseFaultSeed(value: string | undefined): number | undefined {
  const v = value?.trim();
  if (!v) return undefined;
  const n = /^\d+$/.test(v) ? Number(v) : NaN;
  if (!Number.isSafeInteger(n) || n >= UINT32)
    throw new Error(`DMS_FAULT_SEED must be an integer from 0 to ${UINT32 - 1}, not "${value}"`);
  return n;
}

/**
 * The seed of the suite `name`: DMS_FAULT_SEED when set, else a random 32-bit
 * one. Printed as one line so that a failed run can be replayed.
 */
export function faultSeed(name: string): number {
  const seed = parseFaultSeed(process.env['DMS_FAULT_SEED']) ?? randomInt(0, UINT32);
  console.log(`[${name}] fault seed ${seed} (re-run with DMS_FAULT_SEED=${seed})`);
  return seed;
}
