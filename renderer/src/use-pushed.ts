import type { PushChannel } from '../../main/shared/ipc.js';
import { useEffect, useMemo, useRef, useState } from 'preact/hooks';
import { atMostEvery } from '../../main/shared/at-most-every.js';
import { subscribe, type Result } from './bridge.js';

export interface Pushed<T> {
  /** The last answer, null until the first one. */
  value: T | null;
  /** Why the last fetch failed, in plain words; null once one succeeds. */
  error: string | null;
  /** Fetches again now (a "Try again" button, after an action). */
  reload: () => Promise<void>;
}

/**
 * Something the window shows that main can change behind its back: fetched
 * now and whenever `deps` change, and again when main pushes `channel`, at
 * most once per `everyMs` (a burst of pushes becomes one or two fetches).
 * `fetch` may read the current props and state: the latest one is used. Only
 * the answer to the latest fetch is kept: an older one arriving late is dropped.
 */
export function usePushed<T>(
  channel: PushChannel,
  everyMs: number,
  fetch: () => Promise<Result<T>>,
  deps: readonly unknown[],
): Pushed<T> {
  const [value, setValue] = useState<T | null>(null);
  const [error, setError] = useState<string | null>(null);
  const latest = useRef(fetch);
  latest.current = fetch;
  const seq = useRef(0);

  const reload = useMemo(
    () => async (): Promise<void> => {
      const mine = ++seq.current;
      const r = await latest.current();
      if (mine !== seq.current) return;
      if (r.ok) {
        setValue(r.value);
        setError(null);
      } else setError(r.error.message);
    },
    [],
  );

  useEffect(() => {
    void reload();
  }, deps);

  useEffect(() => {
    const t = atMostEvery(() => void reload(), everyMs);
    const off = subscribe(channel, () => t());
    return () => {
      off();
      t.cancel();
    };
  }, [channel, everyMs, reload]);

  return { value, error, reload };
}
