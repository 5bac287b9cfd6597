import { describe, expect, it } from 'vitest';
import { parseTimetable } from '../link/timetable.js';
import { BandwidthLimiter } from './bandwidth.js';

describe('BandwidthLimiter', () => {
  it('serves uploads in turn, in small slices: three uploads sharing the limit alternate', async () => {
    // 64 KiB/s: slices of 2 KiB (a 32nd of a second's worth), however much is asked for.
    const limiter = new BandwidthLimiter(64 * 1024);
    const order: string[] = [];
    const sizes = new Set<number>();
    const upload = async (name: string): Promise<void> => {
      for (let i = 0; i < 20; i++) {
        sizes.add(await limiter.take(256 * 1024));
        order.push(name);
      }
    };
    await Promise.all(['A', 'B', 'C'].map(upload));
    expect([...sizes]).toEqual([2048]);
    expect(order.join('')).toBe('ABC'.repeat(20));
  });

  it('an upload that gives up while waiting leaves at once, and does not hold up those behind it', async () => {
    // 512 B/s: after the first slice (the second's worth saved up), each next one takes a second.
    const limiter = new BandwidthLimiter(512);
    expect(await limiter.take(1024)).toBe(512);
    const events: string[] = [];
    const b = limiter.take(1024).then(() => events.push('B granted'));
    const ac = new AbortController();
    const c = limiter.take(1024, ac.signal).then(
      () => events.push('C granted'),
      (err: Error) => events.push(`C ${err.name}`),
    );
    const d = limiter.take(1024).then(() => events.push('D granted'));
    ac.abort();
    await c;
    expect(events).toEqual(['C AbortError']);
    await Promise.all([b, d]);
    expect(events).toEqual(['C AbortError', 'B granted', 'D granted']);
  });

  it('the limit lifted while uploads wait: they go at once, asking for all they want', async () => {
    const limiter = new BandwidthLimiter(512);
    await limiter.take(512);
    const waiting = limiter.take(200_000);
    limiter.setLimit(0);
    expect(await waiting).toBe(200_000);
  });
});

describe('BandwidthLimiter with a timetable (link/timetable.ts)', () => {
  it('follows the slot in force, and no limit at `off` lets uploads go at once', async () => {
    // The week's clock set to a Friday 10:00, running at real speed.
    const realStart = Date.now();
    let base = new Date(2026, 10, 27, 10, 0).getTime();
    const limiter = new BandwidthLimiter(0, () => base + Date.now() - realStart);
    expect(limiter.rate).toBe(0);
    limiter.setTimetable(parseTimetable('08:00,1M 12:00,off'));
    expect(limiter.rate).toBe(1024 * 1024);
    // 1 MiB/s: slices of 32 KiB.
    expect(await limiter.take(256 * 1024)).toBe(32 * 1024);
    base = new Date(2026, 10, 27, 13, 0).getTime();
    expect(limiter.rate).toBe(0);
    expect(await limiter.take(256 * 1024)).toBe(256 * 1024);
    limiter.setTimetable(null);
    expect(limiter.rate).toBe(0);
  });

  it('a timetable set while an upload is in flight slows that upload from its next slice', async () => {
    const limiter = new BandwidthLimiter(0);
    let granted = 0;
    let stop = false;
    const upload = (async () => {
      // Each slice handed to a socket takes a moment (without a limit, take resolves at once).
      while (!stop) {
        granted += await limiter.take(64 * 1024);
        await new Promise((r) => setImmediate(r));
      }
    })();
    await new Promise((r) => setTimeout(r, 50));
    expect(granted).toBeGreaterThan(0);
    limiter.setTimetable(parseTimetable('32k'));
    await new Promise((r) => setTimeout(r, 20));
    const from = granted;
    await new Promise((r) => setTimeout(r, 1000));
    stop = true;
    await upload;
    // At most a second's worth saved up plus a second's worth (and one slice).
    expect(granted - from).toBeLessThanOrEqual(2 * 32 * 1024 + 1024);
    expect(granted - from).toBeGreaterThan(0);
  });
});
