/**
 * Runs a function at most once per interval, leading and trailing: the first
 * call runs at once (the window reacts to a click immediately), later calls
 * within the interval collapse into one run at its end (the last state always
 * arrives). The shell's pushes and tray, and the window's refreshes, use it:
 * a 10,000-file card costs a few updates a second, not one per file.
 */
export interface AtMostEvery {
  (): void;
  /** Runs a pending call now. */
  flush(): void;
  cancel(): void;
}

export function atMostEvery(fn: () => void, intervalMs: number, now: () => number = Date.now): AtMostEvery {
  let last = -Infinity;
  let timer: ReturnType<typeof setTimeout> | null = null;
  const run = () => {
    timer = null;
    last = now();
    fn();
  };
  const call = (() => {
    if (timer !== null) return;
    const wait = last + intervalMs - now();
    if (wait <= 0) run();
    else {
      timer = setTimeout(run, wait);
      // In Node, a pending update never keeps the process alive.
      (timer as { unref?: () => void }).unref?.();
    }
  }) as AtMostEvery;
  call.flush = () => {
    if (timer === null) return;
    clearTimeout(timer);
    run();
  };
  call.cancel = () => {
    if (timer !== null) clearTimeout(timer);
    timer = null;
  };
  return call;
}
