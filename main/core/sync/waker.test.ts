/** The lanes' sleep (sync/waker.ts), on Node's timers made fake: no test here waits on the clock. */
import { afterEach, beforeEach, expect, it, vi } from 'vitest';
import { MAX_SLEEP_MS, Waker } from './waker.js';

beforeEach(() => {
  vi.useFakeTimers();
});
afterEach(() => {
  vi.useRealTimers();
});

/** Whether the promise has settled once the microtasks queued now have run. */
async function settled(p: Promise<void>): Promise<boolean> {
  let done = false;
  void p.then(() => (done = true));
  await vi.advanceTimersByTimeAsync(0);
  return done;
}

it('a wake before the sleep is not kept: the sleep lasts its time', async () => {
  const w = new Waker();
  w.wake();
  const s = w.sleep(1000);
  expect(await settled(s)).toBe(false);
  await vi.advanceTimersByTimeAsync(999);
  expect(await settled(s)).toBe(false);
  await vi.advanceTimersByTimeAsync(1);
  expect(await settled(s)).toBe(true);
});

it('a wake during the sleep ends it at once, and clears its timer', async () => {
  const w = new Waker();
  const s = w.sleep(1000);
  expect(vi.getTimerCount()).toBe(1);
  w.wake();
  expect(await settled(s)).toBe(true);
  expect(vi.getTimerCount()).toBe(0);
  // A second wake with no one asleep does nothing.
  w.wake();
});

it('ends on its own after its time, at most a minute', async () => {
  const w = new Waker();
  const s = w.sleep(10 * MAX_SLEEP_MS);
  await vi.advanceTimersByTimeAsync(MAX_SLEEP_MS - 1);
  expect(await settled(s)).toBe(false);
  await vi.advanceTimersByTimeAsync(1);
  expect(await settled(s)).toBe(true);
});

it('null: sleeps until woken, with no timer', async () => {
  const w = new Waker();
  const s = w.sleep(null);
  expect(vi.getTimerCount()).toBe(0);
  await vi.advanceTimersByTimeAsync(10 * MAX_SLEEP_MS);
  expect(await settled(s)).toBe(false);
  w.wake();
  expect(await settled(s)).toBe(true);
});
