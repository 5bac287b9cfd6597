/**
 * Leading + trailing throttle: the first call runs at once (the window reacts
 * immediately to a click), later calls within the interval collapse into one
 * run at its end (the last state always arrives). A 10,000-file card then
 * costs a few pushes a second, not one per file.
 */
export interface Throttled {
  (): void;
  /** Runs a pending call now. */
  flush(): void;
  cancel(): void;
}

export function throttle(fn: () => void, intervalMs: number, now: () => number = Date.now): Throttled {
  let last = -Infinity;
  let timer: NodeJS.Timeout | null = null;
  const run = () => {
    timer = null;
    last = now();
    fn();
  };
  const call = (() => {
    if (timer) return;
    const wait = last + intervalMs - now();
    if (wait <= 0) run();
    else {
      timer = setTimeout(run, wait);
      timer.unref?.();
    }
  }) as Throttled;
  call.flush = () => {
    if (!timer) return;
    clearTimeout(timer);
    run();
  };
  call.cancel = () => {
    if (timer) clearTimeout(timer);
    timer = null;
  };
  return call;
}
