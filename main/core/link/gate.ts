/**
 * The link's policy, as the engine's part gate (sync/part-gate.ts): before
 * every part, may bytes of this lane cross the network the agent is on now,
 * within its data budget? The link's watcher tells `see()` what the network
 * is; the crew's answer comes through `answer()` (or from another process,
 * the CLI, through the store). Every state change goes through `apply` (the
 * one door), by the table in transitions.ts.
 *
 * Budget: a part is let through while the network's bytes of the period plus
 * the parts let through and not yet reported are below the budget, so the
 * budget is overshot by less than one part. A part let through but never
 * reported (it failed; it is asked for again) stops counting after
 * RESERVATION_MS.
 */
import { EventEmitter } from 'node:events';
import { formatBytes } from '../../shared/sizes.js';
import type { LaneName, PartGate } from '../sync/part-gate.js';
import { periodKey, type BudgetPeriod, type LinkStore } from './store.js';
import {
  laneMayGo,
  needsAnswer,
  nextLink,
  type LinkAnswer,
  type LinkChange,
  type LinkCost,
  type LinkState,
} from './transitions.js';

/** A part let through holds its bytes against the budget until reported, or this long. */
export const RESERVATION_MS = 10 * 60_000;
/** The budget count of parts sent is written to link.db at most this often (and when the agent stops). */
export const USAGE_FLUSH_MS = 1000;

export interface LinkBudget {
  bytes: number;
  per: BudgetPeriod;
}

/** The network the agent is on, as the watcher and the crew's pins make it out. */
export interface NetworkFacts {
  /** What identifies it (network.ts); '' when unknown. */
  key: string;
  /** A name for the crew: the SSID, or the interface and gateway. */
  label: string;
  cost: LinkCost;
  budget?: LinkBudget | undefined;
}

export interface LinkQuestion {
  network: string;
  label: string;
  cost: LinkCost;
  text: string;
}

export interface LinkSnapshot {
  state: LinkState;
  network: { key: string; label: string };
  budget: (LinkBudget & { used: number; left: number }) | null;
}

export interface GateOptions {
  now?: () => number;
  /**
   * What waits in the lanes the link holds back, for the question (the
   * queue's lanes); default: the lanes held so far, their size not said.
   */
  waiting?: (held: readonly LaneName[]) => { lanes: readonly LaneName[]; bytes: number } | undefined;
}

const WHERE: Record<LinkCost, string> = {
  unmetered: 'over this network',
  metered: 'over this metered network',
  roaming: 'while roaming',
  'over-limit': 'over this network, which is over its data limit',
  ask: 'over this network',
};

export const LANE_WORDS: Record<LaneName, string> = {
  first: 'RTK files and logs',
  photos: 'photos',
  videos: 'videos',
  previews: 'previews',
  flagged: 'flagged photos',
};

/**
 * The lane of flagged frames (issue 32) goes over an unmetered network
 * only: the crew's yes to a metered one is for the photos they want, not
 * for those the checks found unusable (they stay on the card and copies).
 */
export function flaggedMayGo(cost: LinkCost): boolean {
  return cost === 'unmetered';
}

export function andList(words: string[]): string {
  if (words.length <= 1) return words.join('');
  return `${words.slice(0, -1).join(', ')} and ${words[words.length - 1] ?? ''}`;
}

export class LinkGate
  extends EventEmitter<{ state: [LinkState]; question: [LinkQuestion] }>
  implements PartGate
{
  private link: LinkState = { name: 'open', cost: 'unmetered', answer: null };
  private network: NetworkFacts = { key: '', label: 'this network', cost: 'unmetered' };
  private readonly asked = new Set<string>();
  private readonly held = new Set<LaneName>();
  /** Bytes reported sent, not yet written to the store (counted in the budget meanwhile: usedNow). */
  private pending = 0;
  /** When the count was last written to the store, and the write that waits for USAGE_FLUSH_MS. */
  private flushedAt = 0;
  private flushTimer: NodeJS.Timeout | null = null;
  /** Parts let through and not reported yet: their bytes and when. */
  private reserved: Array<{ lane: LaneName; bytes: number; at: number }> = [];
  private readonly watchers = new Set<() => void>();
  private readonly now: () => number;

  constructor(
    private readonly store: LinkStore,
    private readonly opts: GateOptions = {},
  ) {
    super();
    this.now = opts.now ?? Date.now;
  }

  get state(): LinkState {
    return this.link;
  }

  get facts(): NetworkFacts {
    return this.network;
  }

  /** The network seen anew (another one, or its cost, pin or budget changed). */
  see(facts: NetworkFacts): void {
    if (facts.key !== this.network.key) {
      this.flush();
      this.held.clear();
    }
    this.network = facts;
    this.apply({
      type: 'seen',
      cost: facts.cost,
      answer: facts.key ? this.store.answerOf(facts.key) : null,
      budgetLeft: this.budgetLeft(),
    });
  }

  /** The crew's answer for the network the agent is on; kept for that network. */
  answer(answer: LinkAnswer): void {
    if (this.network.key) this.store.setAnswer(this.network.key, answer);
    if (this.link.name === 'first-lane' || this.link.name === 'held')
      this.apply({ type: 'answered', answer });
    else this.see(this.network);
  }

  mayStart(lane: LaneName, bytes: number): boolean {
    this.lookAgain();
    // Held without a question: no answer lets flagged frames over a metered link.
    if (lane === 'flagged' && !flaggedMayGo(this.link.cost)) return false;
    if (laneMayGo(this.link.name, lane === 'first' ? 0 : 1)) {
      if (this.budgetLeft()) {
        this.reserved.push({ lane, bytes, at: this.now() });
        return true;
      }
      this.apply({ type: 'budget-spent' });
    }
    this.held.add(lane);
    this.askIfNeeded();
    return false;
  }

  /** Whether a part of `lane` would be held now (asked without letting anything through). */
  holds(lane: LaneName): boolean {
    if (lane === 'flagged' && !flaggedMayGo(this.link.cost)) return true;
    return !laneMayGo(this.link.name, lane === 'first' ? 0 : 1) || !this.budgetLeft();
  }

  sent(lane: LaneName, bytes: number): void {
    const i = this.reserved.findIndex((r) => r.lane === lane);
    if (i >= 0) this.reserved.splice(i, 1);
    this.pending += bytes;
    // One commit of link.db per USAGE_FLUSH_MS, not per part: a small file is a part (5,000 files, 5,000 commits).
    if (this.now() - this.flushedAt >= USAGE_FLUSH_MS) this.flush();
    else
      this.flushTimer ??= setTimeout(() => {
        this.flushTimer = null;
        this.flush();
      }, USAGE_FLUSH_MS).unref();
    if (this.link.name !== 'spent' && !this.budgetLeft()) this.apply({ type: 'budget-spent' });
  }

  subscribe(onChange: () => void): () => void {
    this.watchers.add(onChange);
    return () => this.watchers.delete(onChange);
  }

  snapshot(): LinkSnapshot {
    const b = this.network.budget;
    const used = b ? this.usedNow(b, false) : 0;
    return {
      state: this.link,
      network: { key: this.network.key, label: this.network.label },
      budget: b ? { ...b, used, left: Math.max(0, b.bytes - used) } : null,
    };
  }

  // ---- the one door ----

  private apply(change: LinkChange): void {
    const before = this.link;
    this.link = nextLink(this.link, change);
    if (
      this.link.name !== before.name ||
      this.link.cost !== before.cost ||
      this.link.answer !== before.answer
    ) {
      this.held.clear(); // what waits is counted afresh for the new state's question
      this.emit('state', this.link);
      for (const w of this.watchers) w();
    }
  }

  // ---- helpers ----

  /** Writes the count that waits (the agent stops): before its store is closed. */
  close(): void {
    this.flush();
  }

  /** Writes what was sent to the store, counted for the day and for the month. */
  private flush(): void {
    if (this.flushTimer) clearTimeout(this.flushTimer);
    this.flushTimer = null;
    if (this.pending > 0 && this.network.key !== '') {
      this.flushedAt = this.now();
      const now = new Date(this.flushedAt);
      this.store.addUsage(this.network.key, [periodKey('day', now), periodKey('month', now)], this.pending);
    }
    this.pending = 0;
  }

  /** Another process's answer (the CLI), or a new day or month: looked at before every part. */
  private lookAgain(): void {
    if (needsAnswer(this.link) && this.network.key) {
      const stored = this.store.answerOf(this.network.key);
      if (stored) this.apply({ type: 'answered', answer: stored });
    }
    if (this.link.name === 'spent' && this.budgetLeft()) this.apply({ type: 'budget-renewed' });
  }

  private askIfNeeded(): void {
    // Once per network and kind of link: a network pinned anew is a new question.
    const asked = `${this.network.key} ${this.link.cost}`;
    if (!needsAnswer(this.link) || this.asked.has(asked)) return;
    this.asked.add(asked);
    const held = [...this.held].filter((l) => !laneMayGo(this.link.name, l === 'first' ? 0 : 1));
    const waiting = this.opts.waiting?.(held);
    const what = andList((waiting?.lanes ?? held).map((l) => LANE_WORDS[l]));
    const bytes = waiting?.bytes;
    const text =
      bytes === undefined
        ? `Upload the ${what} waiting ${WHERE[this.link.cost]}?`
        : `Upload ${formatBytes(bytes)} of ${what} ${WHERE[this.link.cost]}?`;
    this.emit('question', {
      network: this.network.key,
      label: this.network.label,
      cost: this.link.cost,
      text,
    });
  }

  private usedNow(b: LinkBudget, withReserved = true): number {
    const cutoff = this.now() - RESERVATION_MS;
    this.reserved = this.reserved.filter((r) => r.at >= cutoff);
    const inFlight = withReserved ? this.reserved.reduce((n, r) => n + r.bytes, 0) : 0;
    return (
      this.store.used(this.network.key, periodKey(b.per, new Date(this.now()))) + this.pending + inFlight
    );
  }

  private budgetLeft(): boolean {
    const b = this.network.budget;
    return !b || this.usedNow(b) < b.bytes;
  }
}
