/**
 * Limits on what one client may ask: failed sign-ins (per client address and
 * per username) and STS issues (per API token). The counters are rows of the
 * database (login_failures, rate_limits), so that every instance of a
 * deployment behind one load balancer counts the same tries; rows that no
 * longer limit anything are swept now and then. Each update is a short
 * transaction that locks its row (PostgreSQL: SELECT ... FOR UPDATE; SQLite:
 * BEGIN IMMEDIATE), so tries sent at once to several instances all count.
 */
import type { SqlDb } from './data/sql.js';
import { ApiError } from './envelope.js';

/** Sweep stale rows after this many updates by this instance. */
const SWEEP_EVERY = 500;

/** A 429 refusal; the error handler adds `Retry-After`. */
export class ThrottledError extends ApiError {
  constructor(
    code: number,
    message: string,
    readonly retryAfterSeconds: number,
  ) {
    super(429, code, message);
    this.name = 'ThrottledError';
  }
}

const forUpdate = (db: SqlDb): string => (db.kind === 'postgres' ? ' FOR UPDATE' : '');

interface Failures {
  count: number;
  blocked_until: number;
  last_at: number;
}

/**
 * Wrong passwords: the first `free` failures of a key cost nothing; after
 * that each failure makes the key wait `firstWaitSeconds`, then twice, four
 * times that... up to `maxWaitSeconds`
 * before its next try is even checked (no scrypt spent on it). Tries in
 * flight count against what is left of the free failures, so sending many at
 * once does not get around it (counted per instance: N instances let at most
 * N times that many through at once, and each of them counts once it fails).
 * A success clears the username's count; a key quiet for `maxWaitSeconds` is
 * forgotten.
 */
export class LoginThrottle {
  /** Tries being checked right now by this instance, per key. */
  private readonly inFlight = new Map<string, number>();
  private updates = 0;

  constructor(
    private readonly db: SqlDb,
    private readonly opts: { free: number; firstWaitSeconds: number; maxWaitSeconds: number },
  ) {}

  private stale(s: Failures, now: number): boolean {
    return now - s.last_at > this.opts.maxWaitSeconds * 1000 && s.blocked_until <= now;
  }

  /** Reserves a try for these keys: 0 = go ahead (call finish() after), else the seconds to wait. */
  async begin(keys: string[], now = Date.now()): Promise<number> {
    let wait = 0;
    for (const key of keys) {
      const row = await this.db.get<Failures>(
        'SELECT count, blocked_until, last_at FROM login_failures WHERE key = ?',
        [key],
      );
      const s = row && !this.stale(row, now) ? row : undefined;
      if (s && s.blocked_until > now) wait = Math.max(wait, Math.ceil((s.blocked_until - now) / 1000));
      else if ((this.inFlight.get(key) ?? 0) >= Math.max(1, this.opts.free - (s?.count ?? 0))) {
        wait = Math.max(wait, 1);
      }
    }
    if (wait > 0) return wait;
    for (const key of keys) this.inFlight.set(key, (this.inFlight.get(key) ?? 0) + 1);
    return 0;
  }

  /** Ends a try begun with begin(). `clearOnSuccess`: the key whose count a success resets. */
  async finish(keys: string[], ok: boolean, clearOnSuccess: string, now = Date.now()): Promise<void> {
    for (const key of keys) {
      const left = (this.inFlight.get(key) ?? 1) - 1;
      if (left > 0) this.inFlight.set(key, left);
      else this.inFlight.delete(key);
    }
    if (ok) {
      await this.db.run('DELETE FROM login_failures WHERE key = ?', [clearOnSuccess]);
      return;
    }
    for (const key of keys) {
      await this.db.tx(async (t) => {
        await t.run(
          'INSERT INTO login_failures (key, count, blocked_until, last_at) VALUES (?, 0, 0, ?) ON CONFLICT (key) DO NOTHING',
          [key, now],
        );
        const row = await t.get<Failures>(
          `SELECT count, blocked_until, last_at FROM login_failures WHERE key = ?${forUpdate(t)}`,
          [key],
        );
        const count = (row && !this.stale(row, now) ? row.count : 0) + 1;
        // The `free`-th failure already makes the next try wait.
        const over = count - this.opts.free + 1;
        const wait = this.opts.firstWaitSeconds * 2 ** (over - 1);
        const waitMs = over > 0 ? Math.min(wait, this.opts.maxWaitSeconds) * 1000 : 0;
        await t.run('UPDATE login_failures SET count = ?, blocked_until = ?, last_at = ? WHERE key = ?', [
          count,
          now + waitMs,
          now,
          key,
        ]);
      });
    }
    if (++this.updates % SWEEP_EVERY === 0) {
      await this.db.run('DELETE FROM login_failures WHERE last_at < ? AND blocked_until <= ?', [
        now - this.opts.maxWaitSeconds * 1000,
        now,
      ]);
    }
  }
}

/** A token bucket per key: `burst` at once, then one every `refillSeconds`. */
export class RateLimit {
  private updates = 0;

  constructor(
    private readonly db: SqlDb,
    private readonly opts: { burst: number; refillSeconds: number },
  ) {}

  /** Takes one; returns 0, or the seconds to wait when none is left (nothing taken). */
  async take(key: string, now = Date.now()): Promise<number> {
    const refillMs = this.opts.refillSeconds * 1000;
    const wait = await this.db.tx(async (t) => {
      await t.run('INSERT INTO rate_limits (key, tokens, at) VALUES (?, ?, ?) ON CONFLICT (key) DO NOTHING', [
        key,
        this.opts.burst,
        now,
      ]);
      const s = await t.get<{ tokens: number; at: number }>(
        `SELECT tokens, at FROM rate_limits WHERE key = ?${forUpdate(t)}`,
        [key],
      );
      // Never a negative refill: a take whose `now` is a little behind the row's (it waited for the
      // row lock behind a later one, or its instance's clock is behind) refills nothing, and the
      // row keeps the later time.
      const at = s?.at ?? now;
      const tokens = Math.min(
        this.opts.burst,
        (s?.tokens ?? this.opts.burst) + Math.max(0, now - at) / refillMs,
      );
      const enough = tokens >= 1;
      await t.run('UPDATE rate_limits SET tokens = ?, at = ? WHERE key = ?', [
        enough ? tokens - 1 : tokens,
        Math.max(now, at),
        key,
      ]);
      return enough ? 0 : Math.ceil(((1 - tokens) * refillMs) / 1000);
    });
    if (++this.updates % SWEEP_EVERY === 0) {
      // A bucket untouched for burst * refill is full again: its row says nothing.
      await this.db.run('DELETE FROM rate_limits WHERE at < ?', [now - this.opts.burst * refillMs]);
    }
    return wait;
  }
}
