import { setTimeout as sleep } from 'node:timers/promises';
import { rateAt, type Timetable } from '../link/timetable.js';

/** A grant is at most this share of a second's worth of the limit... */
const GRANTS_PER_SECOND = 32;
/**
 * ...within these bounds (the upper one is the pacing chunk of parts.ts).
 * At the lowest limit, 1 KiB/s, the 32 PUTs an uploader has under way at
 * most (storage/s3.ts) each still send every 16 s, within the bucket's 30.
 */
const MIN_GRANT = 512;
const MAX_GRANT = 256 * 1024;

/**
 * A token bucket shared by every upload, for the user's bandwidth limit (a
 * crew tethered to a phone must still be able to send a message). Limit 0
 * means unlimited and costs nothing.
 *
 * Every upload in flight must keep moving, however many share the limit: a
 * server closes a connection on which nothing arrives for a while (the
 * embedded bucket after 30 s; before a request's headers, after 10 s). So
 * uploads are served in turn (first come, first served) and each turn is a
 * small slice, a 32nd of a second's worth: with a dozen uploads at 200 KiB/s
 * each one sends every half second, where whole 256 KiB chunks handed out
 * in no order left some uploads waiting longer than the servers wait.
 */
export class BandwidthLimiter {
  private tokens: number;
  private last: number;
  /** When set, it rules instead of the fixed limit: the rate of its slot, looked at before every slice. */
  private timetable: Timetable | null = null;
  /** Settles when the last upload in line has had its turn. */
  private line: Promise<void> = Promise.resolve();

  constructor(
    private bytesPerSecond: number,
    private readonly now: () => number = Date.now,
  ) {
    this.tokens = bytesPerSecond;
    this.last = now();
  }

  setLimit(bytesPerSecond: number): void {
    this.bytesPerSecond = bytesPerSecond;
    this.tokens = Math.min(this.tokens, bytesPerSecond);
  }

  /** A timetable (link/timetable.ts) that rules from now on, also for uploads in flight; null: the fixed limit again. */
  setTimetable(table: Timetable | null): void {
    this.timetable = table;
  }

  /** The limit in force now, bytes per second (0 = none). */
  get rate(): number {
    return this.timetable ? rateAt(this.timetable, new Date(this.now())) : this.bytesPerSecond;
  }

  /**
   * Waits for this caller's turn, then for the tokens; resolves with how many
   * of `upTo` bytes may be sent now (at least 1 when upTo is). Rejects when
   * `signal` aborts, at once, without holding up the callers behind it.
   */
  take = async (upTo: number, signal?: AbortSignal): Promise<number> => {
    if (this.rate <= 0) return upTo;
    const turn = this.line;
    let done!: () => void;
    this.line = new Promise((resolve) => (done = resolve));
    try {
      await untilSettled(turn, signal);
      return await this.grant(upTo, signal);
    } finally {
      // Those behind wait for those ahead even if this caller left the line early.
      void turn.then(done);
    }
  };

  private async grant(upTo: number, signal: AbortSignal | undefined): Promise<number> {
    for (;;) {
      const rate = this.rate;
      if (rate <= 0) return upTo; // the limit was lifted meanwhile
      const n = Math.min(
        upTo,
        Math.max(MIN_GRANT, Math.min(MAX_GRANT, Math.floor(rate / GRANTS_PER_SECOND))),
      );
      const t = this.now();
      // Up to one second's worth saved up.
      this.tokens = Math.min(rate, this.tokens + ((t - this.last) * rate) / 1000);
      this.last = t;
      if (this.tokens >= n) {
        this.tokens -= n;
        return n;
      }
      await sleep(Math.max(1, Math.ceil(((n - this.tokens) * 1000) / rate)), undefined, { signal });
    }
  }
}

/** `p` (which never rejects), or the abort of `signal`, whichever comes first (an AbortError, as sleep's). */
function untilSettled(p: Promise<void>, signal: AbortSignal | undefined): Promise<void> {
  if (!signal) return p;
  const aborted = (): Error => new DOMException('The operation was aborted', 'AbortError');
  if (signal.aborted) return Promise.reject(aborted());
  return new Promise((resolve, reject) => {
    const onAbort = (): void => reject(aborted());
    signal.addEventListener('abort', onAbort, { once: true });
    void p.then(() => {
      signal.removeEventListener('abort', onAbort);
      resolve();
    });
  });
}
