/**
 * In-memory limits on what one client may ask: failed sign-ins (per client
 * address and per username) and STS issues (per API token). Kept in memory
 * on purpose: a restart forgets them, which costs an attacker a restart of
 * the service they cannot cause. Each table keeps at most MAX_KEYS entries,
 * dropping the least recently used, so the limits themselves cannot be used
 * to fill the memory.
 */
import { ApiError } from './envelope.js';

const MAX_KEYS = 10_000;

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

/** A Map that forgets its least recently touched entries beyond MAX_KEYS. */
class BoundedMap<V> {
  private readonly map = new Map<string, V>();
  get(key: string): V | undefined {
    return this.map.get(key);
  }
  set(key: string, value: V): void {
    this.map.delete(key);
    this.map.set(key, value);
    if (this.map.size > MAX_KEYS) this.map.delete(this.map.keys().next().value as string);
  }
  delete(key: string): void {
    this.map.delete(key);
  }
}

interface Failures {
  count: number;
  blockedUntil: number;
  last: number;
}

/**
 * Wrong passwords: the first `free` failures of a key cost nothing; after
 * that each failure makes the key wait `firstWaitSeconds`, then twice, four
 * times that... up to `maxWaitSeconds`
 * before its next try is even checked (no scrypt spent on it). Tries in
 * flight count against what is left of the free failures, so sending many at
 * once does not get around it. A success clears the username's count; a key
 * quiet for `maxWaitSeconds` is forgotten.
 */
export class LoginThrottle {
  private readonly keys = new BoundedMap<Failures>();
  /** Tries being checked right now, per key (as many entries as requests in flight). */
  private readonly inFlight = new Map<string, number>();

  constructor(private readonly opts: { free: number; firstWaitSeconds: number; maxWaitSeconds: number }) {}

  private state(key: string, now: number): Failures | undefined {
    const s = this.keys.get(key);
    if (s && now - s.last > this.opts.maxWaitSeconds * 1000 && s.blockedUntil <= now) {
      this.keys.delete(key);
      return undefined;
    }
    return s;
  }

  /** Reserves a try for these keys: 0 = go ahead (call finish() after), else the seconds to wait. */
  begin(keys: string[], now = Date.now()): number {
    let wait = 0;
    for (const key of keys) {
      const s = this.state(key, now);
      if (s && s.blockedUntil > now) wait = Math.max(wait, Math.ceil((s.blockedUntil - now) / 1000));
      else if ((this.inFlight.get(key) ?? 0) >= Math.max(1, this.opts.free - (s?.count ?? 0))) {
        wait = Math.max(wait, 1);
      }
    }
    if (wait > 0) return wait;
    for (const key of keys) this.inFlight.set(key, (this.inFlight.get(key) ?? 0) + 1);
    return 0;
  }

  /** Ends a try begun with begin(). `clearOnSuccess`: the key whose count a success resets. */
  finish(keys: string[], ok: boolean, clearOnSuccess: string, now = Date.now()): void {
    for (const key of keys) {
      const left = (this.inFlight.get(key) ?? 1) - 1;
      if (left > 0) this.inFlight.set(key, left);
      else this.inFlight.delete(key);
      if (ok) continue;
      const count = (this.state(key, now)?.count ?? 0) + 1;
      // The `free`-th failure already makes the next try wait.
      const over = count - this.opts.free + 1;
      const wait = this.opts.firstWaitSeconds * 2 ** (over - 1);
      const waitMs = over > 0 ? Math.min(wait, this.opts.maxWaitSeconds) * 1000 : 0;
      this.keys.set(key, { count, blockedUntil: now + waitMs, last: now });
    }
    if (ok) this.keys.delete(clearOnSuccess);
  }
}

/** A token bucket per key: `burst` at once, then one every `refillSeconds`. */
export class RateLimit {
  private readonly keys = new BoundedMap<{ tokens: number; at: number }>();

  constructor(private readonly opts: { burst: number; refillSeconds: number }) {}

  /** Takes one; returns 0, or the seconds to wait when none is left (nothing taken). */
  take(key: string, now = Date.now()): number {
    const refillMs = this.opts.refillSeconds * 1000;
    const s = this.keys.get(key) ?? { tokens: this.opts.burst, at: now };
    const tokens = Math.min(this.opts.burst, s.tokens + (now - s.at) / refillMs);
    if (tokens < 1) {
      this.keys.set(key, { tokens, at: now });
      return Math.ceil(((1 - tokens) * refillMs) / 1000);
    }
    this.keys.set(key, { tokens: tokens - 1, at: now });
    return 0;
  }
}
