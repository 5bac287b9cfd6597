/**
 * The three push channels, throttled: ~4 state and progress updates a second
 * and ~2 "queue changed" hints (the window then asks for the list it shows),
 * however fast the engine goes. The last update always arrives.
 */
import type { AppStateView, ProgressView, PushChannel, PushEvents } from '../shared/ipc.js';
import { atMostEvery } from '../shared/at-most-every.js';
import { NO_PROGRESS } from './views.js';

export type PushMessage = { [P in PushChannel]: { channel: P; payload: PushEvents[P] } }[PushChannel];

export class Pushes {
  private last: ProgressView | null = null;
  readonly state;
  private readonly sendProgress;
  readonly queue;

  constructor(send: (m: PushMessage) => void, currentState: () => AppStateView, intervalMs = 250) {
    this.state = atMostEvery(() => send({ channel: 'push:state', payload: currentState() }), intervalMs);
    this.sendProgress = atMostEvery(
      () => send({ channel: 'push:progress', payload: this.last ?? NO_PROGRESS }),
      intervalMs,
    );
    this.queue = atMostEvery(() => send({ channel: 'push:queue-changed', payload: null }), intervalMs * 2);
  }

  /** The latest counts (null after the agent was replaced). */
  get progress(): ProgressView | null {
    return this.last;
  }

  set progress(p: ProgressView | null) {
    this.last = p;
    if (p) this.sendProgress();
  }

  /** State and list both (a file finished, a card came or went). */
  changed(): void {
    this.state();
    this.queue();
  }

  cancel(): void {
    for (const t of [this.state, this.sendProgress, this.queue]) t.cancel();
  }
}
