/**
 * The one question the engine asks before every part (or single PUT) leaves:
 * may bytes of this lane go now? The link module (main/core/link/**: metered
 * detection, pinned networks, policy, budget, timetable) answers it; the
 * engine only asks, waits, and tells it what crossed the link. Default: the
 * open gate (every lane, always).
 *
 * Asked per part, not per file or per run: a link that turns metered stops
 * a waiting lane at the next part boundary (a part in flight finishes; its
 * bytes are never cancelled), and a gate that opens wakes the engine through
 * `subscribe`.
 */
import type { LaneName } from '../queue/lanes.js';

export type { LaneName } from '../queue/lanes.js';

export interface PartGate {
  /**
   * Whether a part of `bytes` bytes of `lane` may start now. Synchronous and
   * cheap: asked before every part. A "no" holds the part (the file keeps
   * its place and its parts already sent); the engine asks again when
   * `subscribe` says the answer may have changed, and at least every
   * GATE_POLL_MS.
   */
  mayStart(lane: LaneName, bytes: number): boolean;
  /**
   * `bytes` of `lane` crossed the link (acknowledged by the bucket: a part,
   * a single PUT). The gate knows which network carried them (budgets are
   * per network). Never called for bytes that were not sent (a fast upload,
   * an object already at its key).
   */
  sent(lane: LaneName, bytes: number): void;
  /**
   * Whether `lane` is held now, asked without reserving anything (unlike
   * mayStart): what is left in a held lane waits for the link in a run's
   * result. Absent: no lane is ever held.
   */
  holds?(lane: LaneName): boolean;
  /** Calls `onChange` when an answer of mayStart may have changed; returns the unsubscribe. */
  subscribe?(onChange: () => void): () => void;
}

/** The engine asks a closed gate again at least this often, even without a change event. */
export const GATE_POLL_MS = 1000;

/** Every lane, always: the default when no link module is plugged in. */
export const OPEN_GATE: PartGate = {
  mayStart: () => true,
  sent: () => undefined,
};

/**
 * Resolves once `gate` lets a part of `lane` start (at once when it does
 * now); rejects when `signal` aborts (a pause, a pulled card).
 */
export function untilMayStart(
  gate: PartGate,
  lane: LaneName,
  bytes: number,
  signal?: AbortSignal,
  pollMs: number = GATE_POLL_MS,
): Promise<void> {
  if (gate.mayStart(lane, bytes)) return Promise.resolve();
  const aborted = (): Error =>
    signal?.reason instanceof Error
      ? signal.reason
      : new DOMException('The operation was aborted', 'AbortError');
  if (signal?.aborted === true) return Promise.reject(aborted());
  return new Promise((resolve, reject) => {
    const finish = (ok: boolean): void => {
      clearInterval(timer);
      unsubscribe?.();
      signal?.removeEventListener('abort', onAbort);
      if (ok) resolve();
      else reject(aborted());
    };
    const look = (): void => {
      if (gate.mayStart(lane, bytes)) finish(true);
    };
    const onAbort = (): void => finish(false);
    signal?.addEventListener('abort', onAbort, { once: true });
    const timer = setInterval(look, pollMs);
    const unsubscribe = gate.subscribe?.(look);
  });
}
