import { setTimeout as sleep } from 'node:timers/promises';

/**
 * A token bucket shared by every upload, for the user's bandwidth limit (a
 * crew tethered to a phone must still be able to send a message). Limit 0
 * means unlimited and costs nothing.
 */
export class BandwidthLimiter {
  private tokens: number;
  private last: number;

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

  take = async (bytes: number, signal?: AbortSignal): Promise<void> => {
    while (this.bytesPerSecond > 0) {
      const t = this.now();
      // Burst up to one second's worth, so parts of any size get through.
      this.tokens = Math.min(
        this.bytesPerSecond,
        this.tokens + ((t - this.last) * this.bytesPerSecond) / 1000,
      );
      this.last = t;
      if (this.tokens >= Math.min(bytes, this.bytesPerSecond)) {
        this.tokens -= bytes;
        return;
      }
      const waitMs = Math.ceil(
        ((Math.min(bytes, this.bytesPerSecond) - this.tokens) * 1000) / this.bytesPerSecond,
      );
      await sleep(Math.max(5, waitMs), undefined, { signal });
    }
  };
}
