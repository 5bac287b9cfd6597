/**
 * The engine's one run state. Changed only through `set` (the engine's own
 * comings and goings, the user's pause and resume) and `setError` (the one
 * door into the error states: offline, auth-required, halted), and announced
 * by one event: from, to. Whether the engine is paused, blocked or waiting
 * is derived from it, never kept twice.
 */
import { EventEmitter } from 'node:events';
import type { HaltReason, RunStateName } from '../../shared/states.js';
import { isServerWide, QueueWriteError, type DmsError } from '../errors.js';
import { backoffDelay, DEFAULT_BACKOFF, type BackoffPolicy } from '../queue/queue.js';

export type RunState =
  | { name: 'idle' }
  | { name: 'syncing' }
  | { name: 'paused' }
  /**
   * The server or the network is failing: nothing is tried before `until`;
   * `failures` in a row so far, the first of them at `since`.
   */
  | { name: 'offline'; until: number; failures: number; since: number; error: DmsError }
  | { name: 'auth-required'; error: DmsError }
  | { name: 'halted'; reason: HaltReason; error: QueueWriteError };

export interface RunStateChange {
  from: RunState;
  to: RunState;
}

const IDLE: RunState = { name: 'idle' };

export class RunStatus extends EventEmitter<{ change: [RunStateChange] }> {
  private state: RunState;

  constructor(
    initial: RunState = IDLE,
    private readonly backoff: BackoffPolicy = DEFAULT_BACKOFF,
    private readonly now: () => number = Date.now,
  ) {
    super();
    this.state = initial;
  }

  get current(): RunState {
    return this.state;
  }

  get name(): RunStateName {
    return this.state.name;
  }

  /** The error behind the state, when it has one. */
  get error(): DmsError | null {
    return 'error' in this.state ? this.state.error : null;
  }

  /** Nothing may be dispatched: the user paused, the queue halted, or a sign-in is needed. */
  get blocked(): boolean {
    const n = this.state.name;
    return n === 'paused' || n === 'halted' || n === 'auth-required';
  }

  /** While offline, the time before which nothing is tried (0 otherwise). */
  get holdUntil(): number {
    return this.state.name === 'offline' ? this.state.until : 0;
  }

  /**
   * The engine's own comings and goings (idle, syncing) and the user's
   * pause. Work never replaces a state that blocks it (only `resume` leaves
   * paused, halted and auth-required), nor offline (only a file that gets
   * through ends it: `recovered`). A pause never hides a halt.
   */
  set(name: 'idle' | 'syncing' | 'paused'): void {
    const cur = this.state.name;
    if (name === 'paused') {
      if (cur !== 'halted') this.go({ name: 'paused' });
      return;
    }
    if (this.blocked || cur === 'offline') return;
    this.go(name === 'idle' ? IDLE : { name: 'syncing' });
  }

  /** A file got through: the server is back (offline ends, its failures in a row are forgotten). */
  recovered(): void {
    if (this.state.name === 'offline') this.go({ name: 'syncing' });
  }

  /** After a pause, a halt (the user freed space) or a new sign-in: back to work. */
  resume(): void {
    this.go(IDLE);
  }

  /**
   * The one door into the error states: the queue cannot be written (halted),
   * the sign-in is refused (auth-required), the server or network as a whole
   * is failing (offline, with the shared wait growing with each failure in a
   * row). Other errors concern one file and do not change the run state.
   */
  setError(err: DmsError): void {
    if (err instanceof QueueWriteError) return this.go({ name: 'halted', reason: err.reason, error: err });
    if (this.state.name === 'halted') return;
    if (err.kind === 'auth') return this.go({ name: 'auth-required', error: err });
    if (!isServerWide(err) || this.blocked) return;
    const now = this.now();
    // Files already on their way when the server began failing fail together:
    // one round of failures, one step up the backoff (not one per file, which
    // made a 6-photo card wait minutes for a server that answers at once). A
    // longer Retry-After in one of those answers is still heeded.
    if (this.state.name === 'offline' && now < this.state.until) {
      const until = now + (err.retryAfterMs ?? 0);
      if (until > this.state.until) this.go({ ...this.state, until });
      return;
    }
    const failures = (this.state.name === 'offline' ? this.state.failures : 0) + 1;
    const since = this.state.name === 'offline' ? this.state.since : now;
    const wait = Math.max(backoffDelay(failures, this.backoff), err.retryAfterMs ?? 0);
    this.go({ name: 'offline', until: now + wait, failures, since, error: err });
  }

  /** Announces a change of state, or of the error behind it (offline again, for another reason). */
  private go(to: RunState): void {
    const from = this.state;
    this.state = to;
    const errorOf = (s: RunState) => ('error' in s ? s.error : null);
    if (from.name !== to.name || errorOf(from) !== errorOf(to)) this.emit('change', { from, to });
  }
}
