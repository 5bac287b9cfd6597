import { describe, expect, it } from 'vitest';
import { DmsError } from '../errors.js';
import { RunStatus } from './run-state.js';

describe('RunStatus offline hold', () => {
  it('requests failing together for one outage are one failure in a row, not ten (a short outage is a short wait)', () => {
    let now = 1_000_000;
    const s = new RunStatus(undefined, { baseMs: 2_000, capMs: 300_000 }, () => now);
    // Ten requests were on their way when the server went away: their answers come back together.
    for (let i = 0; i < 10; i++) s.setError(new DmsError('server', 'HTTP 503'));
    expect(s.current).toMatchObject({ name: 'offline', failures: 1 });
    expect(s.holdUntil - now).toBeLessThanOrEqual(2_000);
    // The wait is over, the next try fails too: that one is a second failure in a row.
    now = s.holdUntil;
    s.setError(new DmsError('server', 'HTTP 503'));
    expect(s.current).toMatchObject({ name: 'offline', failures: 2 });
    expect(s.holdUntil - now).toBeLessThanOrEqual(4_000);
    // A longer Retry-After from the server is still heeded.
    s.setError(new DmsError('throttled', 'HTTP 503', { retryAfterMs: 30_000 }));
    expect(s.current).toMatchObject({ name: 'offline', failures: 2 });
    expect(s.holdUntil - now).toBe(30_000);
  });
});
