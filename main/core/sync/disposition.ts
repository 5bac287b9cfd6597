/**
 * The failure ladder, pure: given the row a step failed on, the error, and
 * the few facts the decision needs (what the disk holds now, the settle
 * time, the backoff), what happens to the row and to the run. The engine
 * only carries it out: the store applies the change, the run state takes
 * the error through its one door.
 */
import { isServerWide, type DmsError } from '../errors.js';
import type { Change } from '../queue/transitions.js';
import { backoffDelay, type BackoffPolicy } from '../queue/queue.js';
import type { WorkingRow } from '../queue/rows.js';
import {
  CallbackNotActedOn,
  CallbackOutcomeUnknown,
  FileChangedError,
  UNCLEAR_ANSWER_TRIES,
  UnclearAnswerError,
} from './step-errors.js';

/** What the file event reports for a row that did not finish. */
export type Report = 'retry-later' | 'failed' | 'waiting-for-source';

export type Disposition =
  /** Stopped by us (pause, shutdown, the card pulled): nothing to record. */
  | { act: 'ignore' }
  /** The sign-in is refused: the whole run waits for a new one; the row stays as it is. */
  | { act: 'sign-in' }
  /** The file changed on disk: its new version is read (the stale row is dropped, never recorded). */
  | { act: 'reread' }
  /**
   * The row changes; `report` is what the file event says (none for a
   * settle wait); `offline`: the server or network as a whole is failing, so
   * everything waits together.
   */
  | { act: 'apply'; change: Change; report: Report | null; offline: boolean };

export interface FailureFacts {
  now: number;
  /** config.callbackSettleSeconds in ms: a callback that may be committing is checked no sooner. */
  settleMs: number;
  backoff: BackoffPolicy;
  /** Only asked for a missing source: the file on disk now, against the row's version. */
  disk?: () => 'changed' | 'gone' | 'same';
  random?: () => number;
}

export function dispose(row: WorkingRow, err: DmsError, f: FailureFacts): Disposition {
  const callbackSettled = err instanceof CallbackNotActedOn;
  if (err.kind === 'cancelled') {
    // Cut while a callback was on its way: it may still be committing.
    if (err instanceof CallbackOutcomeUnknown)
      return {
        act: 'apply',
        change: { type: 'defer', at: f.now + f.settleMs, message: null },
        report: null,
        offline: false,
      };
    return { act: 'ignore' };
  }
  // No retry storm: stop everything until the user signs in again.
  if (err.kind === 'auth') return { act: 'sign-in' };
  if (err.kind === 'source-missing') {
    // Tell the three cases apart on disk: changed (read the new version),
    // gone (wait for the card), there unchanged (a read hiccup: retry later).
    const disk = f.disk?.() ?? 'gone';
    if (disk === 'gone')
      return {
        act: 'apply',
        change: { type: 'parked', message: err.message },
        report: 'waiting-for-source',
        offline: false,
      };
    if (disk === 'changed' || err instanceof FileChangedError) return { act: 'reread' };
    return retry(row, err, f, 0, callbackSettled, false);
  }
  if (err instanceof UnclearAnswerError && row.attempts + 1 >= UNCLEAR_ANSWER_TRIES) {
    // Tried enough for this file alone; the rest of the queue never waited for it.
    return fail(err.final(), callbackSettled);
  }
  if (err.retryable) {
    // A callback whose answer was lost is checked no sooner than its settle time.
    const settle = err instanceof CallbackOutcomeUnknown ? f.settleMs : 0;
    return retry(row, err, f, settle, callbackSettled, isServerWide(err));
  }
  return fail(err, callbackSettled);
}

function retry(
  row: WorkingRow,
  error: DmsError,
  f: FailureFacts,
  minDelayMs: number,
  callbackSettled: boolean,
  offline: boolean,
): Disposition {
  const delay = Math.max(
    backoffDelay(row.attempts + 1, f.backoff, f.random),
    error.retryAfterMs ?? 0,
    minDelayMs,
  );
  return {
    act: 'apply',
    change: { type: 'retry', error, at: f.now + delay, callbackSettled },
    report: 'retry-later',
    offline,
  };
}

function fail(error: DmsError, callbackSettled: boolean): Disposition {
  return {
    act: 'apply',
    change: { type: 'failed', error, callbackSettled },
    report: 'failed',
    offline: false,
  };
}
