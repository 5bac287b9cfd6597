/**
 * A lane's sleep between two looks at the store: a timer (at most a
 * minute: the loop then looks again) and a wake that ends it early. One
 * sleeper at a time. A wake with no one asleep is not kept: the loop looks
 * at the store before it sleeps, so what woke it is seen then.
 */
export class Waker {
  private wakeUp: (() => void) | null = null;

  /** Resolves once woken, or after `ms` (null: only once woken). */
  sleep(ms: number | null): Promise<void> {
    return new Promise((resolve) => {
      const timer = ms === null ? null : setTimeout(() => this.wake(), Math.min(ms, MAX_SLEEP_MS));
      this.wakeUp = () => {
        if (timer) clearTimeout(timer);
        resolve();
      };
    });
  }

  /** Ends the sleep going on, if any. */
  wake(): void {
    const w = this.wakeUp;
    this.wakeUp = null;
    w?.();
  }
}

/** The longest sleep: a lane looks at the store at least once a minute. */
export const MAX_SLEEP_MS = 60_000;
