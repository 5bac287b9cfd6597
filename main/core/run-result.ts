/**
 * What one run did, as `sync`, `watch` and the app say it: per card, what was
 * copied where (per destination: copied, verified, failed, stopped and why),
 * what was sent, what is left and why (waiting for the card, the server, the
 * link, or failed), and why the run stopped. The agent makes it from one
 * read of the facts (`gatherRun`) and what its run saw (`RunTally`); the
 * commands and the window only print it (immich's `upload()`: each phase
 * hands the next a value).
 */
import { plainMessage, type DmsError } from './errors.js';
import type { CopyRecord, Destination, FileVersion } from './queue/copies.js';
import { NOT_DONE_STATES } from './queue/states.js';
import { LANE_NAMES, type LaneName } from './queue/lanes.js';
import type { Queue, QueueRow } from './queue/queue.js';
import type { RunStateName } from '../shared/states.js';

/** Why a file is not done when the run ends. */
export type LeftWhy = 'card' | 'server' | 'link' | 'failed';

export interface LeftFile {
  id: number;
  absPath: string;
  size: number;
  lane: LaneName;
  /** Its state in the queue ('failed', 'waiting-for-source', a working state). */
  state: string;
  why: LeftWhy;
  /** The store's error kind and message (the server's or the disk's words). */
  kind: string | null;
  message: string | null;
  /** The same in the crew's words where the store's are not (an answer the server should never send). */
  plain: string | null;
}

export interface DestinationRun {
  destination: Destination;
  /** Files of the card copied and verified there in this run. */
  copied: { files: number; bytes: number };
  /** Files of the card verified there (this run and before). */
  verified: number;
  /** Copies whose bytes did not read back as written. */
  failed: number;
  /** Why the destination stopped for the card (full, unplugged, read-only, too small), or null. */
  stopped: string | null;
}

/** A card's copies' last verdict in this run (locally safe or why not). */
export interface CopiesVerdict {
  safe: boolean;
  /** Every copy asked for made and verified (safe, or only the card's folders not read stand in the way). */
  made: boolean;
  message: string;
}

export interface CardRun {
  sourceId: string;
  label: string;
  destinations: DestinationRun[];
  /** Uploaded in this run (the objects' sizes). */
  uploaded: { files: number; bytes: number };
  /** The server had them already (fast-upload). */
  alreadyThere: number;
  /** Done in an earlier run: nothing to do. */
  skipped: number;
  /** Files that failed in this run (each counted once). */
  failedNow: number;
  /** Found on the card and kept nowhere (a name that is not text, a file that cannot be read). */
  notKept: number;
  /** The copies' verdict as last said in this run, when copies were asked for. */
  copies: CopiesVerdict | null;
  left: LeftFile[];
}

/** Files and bytes of the run's cards held by the link (metered, over budget, its timetable), per lane. */
export interface WaitingForLink {
  files: number;
  bytes: number;
  lanes: Array<{ lane: LaneName; files: number; bytes: number }>;
}

export type RunStop =
  | { kind: 'done' }
  | { kind: 'server-unreachable'; reason: string; error: DmsError }
  | { kind: 'card-pulled'; cards: string[] }
  | { kind: 'cancelled' }
  | { kind: 'sign-in'; error: DmsError }
  | { kind: 'halted'; error: DmsError };

export interface RunResult {
  cards: CardRun[];
  /** Copies made in this run over all cards, per destination, in the order they were first made. */
  copied: Array<{ destination: Destination; files: number; bytes: number }>;
  /** Bytes that went over the link in this run (parts resumed count only what was sent now). */
  bytesSent: number;
  /** The cards' sums. */
  uploaded: { files: number; bytes: number };
  alreadyThere: number;
  skipped: number;
  failedNow: number;
  notKept: number;
  left: { files: LeftFile[]; card: number; server: number; link: number; failed: number };
  waitingForLink: WaitingForLink;
  stopped: RunStop;
}

/** What one run saw happen (file events, scans, verdicts), per card: the part the store does not keep. */
export class RunTally {
  private readonly cards = new Map<string, Omit<CardRun, 'destinations' | 'left' | 'label' | 'sourceId'>>();
  /** Crew words of a file's last failure in this run (by row id), where the store's words are not theirs. */
  private readonly plain = new Map<number, string>();
  since = Date.now();

  private card(sourceId: string) {
    let c = this.cards.get(sourceId);
    if (!c) {
      c = {
        uploaded: { files: 0, bytes: 0 },
        alreadyThere: 0,
        skipped: 0,
        failedNow: 0,
        notKept: 0,
        copies: null,
      };
      this.cards.set(sourceId, c);
    }
    return c;
  }

  get touched(): string[] {
    return [...this.cards.keys()];
  }

  file(e: {
    id: number;
    sourceId: string;
    size: number;
    outcome: string;
    error?: { kind: string; plain: string };
  }): void {
    const c = this.card(e.sourceId);
    if (e.outcome === 'uploaded' || e.outcome === 'stored') {
      c.uploaded.files++;
      c.uploaded.bytes += e.size;
    } else if (e.outcome === 'fast-uploaded') c.alreadyThere++;
    else if (e.outcome === 'failed') c.failedNow++;
    if (e.error?.kind === 'malformed-response') this.plain.set(e.id, e.error.plain);
    else if (!e.error) this.plain.delete(e.id);
  }

  scanned(sourceId: string, alreadyDone: number, notKept: number): void {
    const c = this.card(sourceId);
    c.skipped += alreadyDone;
    c.notKept += notKept;
  }

  copies(sourceId: string, verdict: CopiesVerdict): void {
    this.card(sourceId).copies = verdict;
  }

  of(sourceId: string) {
    return this.card(sourceId);
  }

  plainOf(id: number): string | null {
    return this.plain.get(id) ?? null;
  }

  /** A new run (`watch`: after each summary). */
  reset(): void {
    this.cards.clear();
    this.plain.clear();
    this.since = Date.now();
  }
}

/** The facts of one card, read once from the store. */
export interface CardFacts {
  sourceId: string;
  label: string;
  /** Its files not done. */
  notDone: readonly QueueRow[];
  copies: ReadonlyArray<CopyRecord & FileVersion>;
  /** The destinations that count for it (or have a record of it). */
  destinations: readonly Destination[];
}

export interface RunFacts {
  cards: readonly CardFacts[];
  tally: RunTally;
  bytesSent: number;
  engine: { state: RunStateName; error: DmsError | null };
  cancelled: boolean;
  /** Lanes the link holds now (metered, budget spent, timetable), as its wiring says; none without a link. */
  heldLanes?: ReadonlySet<LaneName>;
}

/** One read of the store for the cards of a run. */
export function gatherRun(
  queue: Queue,
  sources: ReadonlyArray<{ sourceId: string; label: string }>,
): RunFacts['cards'] {
  const known = queue.copies.destinations();
  // One card once: two folders of the same content (a card and a copy of it) are the same source.
  const once = sources.filter((s, i) => sources.findIndex((t) => t.sourceId === s.sourceId) === i);
  return once.map(({ sourceId, label }) => {
    const copies = queue.copies.ofSource(sourceId);
    const ids = new Set([...queue.copies.countingFor(sourceId), ...copies.map((c) => c.destinationId)]);
    return {
      sourceId,
      label,
      notDone: queue.list({ sourceId, states: NOT_DONE_STATES, limit: 1_000_000 }),
      copies,
      destinations: known.filter((d) => ids.has(d.id)),
    };
  });
}

/** What the link holds, per lane in the lanes' order. */
function waitingForLink(left: readonly LeftFile[]): WaitingForLink {
  const held = left.filter((f) => f.why === 'link');
  const lanes = LANE_NAMES.flatMap((lane) => {
    const of = held.filter((f) => f.lane === lane);
    return of.length > 0 ? [{ lane, files: of.length, bytes: of.reduce((n, f) => n + f.size, 0) }] : [];
  });
  return { files: held.length, bytes: held.reduce((n, f) => n + f.size, 0), lanes };
}

/** The run's result: a pure function of the facts. */
export function runResult(facts: RunFacts): RunResult {
  const { tally } = facts;
  const firstMade = new Map<number, { destination: Destination; files: number; bytes: number; at: number }>();
  const cards: CardRun[] = facts.cards.map((card) => {
    const t = tally.of(card.sourceId);
    const destinations = card.destinations.map((destination): DestinationRun => {
      const mine = card.copies.filter((c) => c.destinationId === destination.id);
      const made = mine.filter((c) => c.state === 'verified' && c.at >= tally.since);
      const copied = { files: made.length, bytes: made.reduce((n, c) => n + c.size, 0) };
      if (made.length > 0) {
        const sum = firstMade.get(destination.id) ?? { destination, files: 0, bytes: 0, at: Infinity };
        sum.files += copied.files;
        sum.bytes += copied.bytes;
        sum.at = made.reduce((at, c) => Math.min(at, c.at), sum.at);
        firstMade.set(destination.id, sum);
      }
      return {
        destination,
        copied,
        verified: mine.filter((c) => c.state === 'verified').length,
        failed: mine.filter((c) => c.state === 'failed').length,
        stopped: mine.find((c) => c.state === 'stopped' && c.error)?.error ?? null,
      };
    });
    const left = card.notDone.map((r): LeftFile => ({
      id: r.id,
      absPath: r.absPath,
      size: r.size,
      lane: r.lane,
      state: r.state,
      why:
        r.state === 'failed'
          ? 'failed'
          : r.state === 'waiting-for-source'
            ? 'card'
            : facts.heldLanes?.has(r.lane)
              ? 'link'
              : 'server',
      kind: r.errorKind,
      message: r.errorMessage,
      plain: tally.plainOf(r.id),
    }));
    return { sourceId: card.sourceId, label: card.label, ...t, destinations, left };
  });
  const files = cards.flatMap((c) => c.left);
  const count = (why: LeftWhy) => files.filter((f) => f.why === why).length;
  const sum = (f: (c: CardRun) => number) => cards.reduce((n, c) => n + f(c), 0);
  const left = {
    files,
    card: count('card'),
    server: count('server'),
    link: count('link'),
    failed: count('failed'),
  };
  return {
    cards,
    copied: [...firstMade.values()]
      .sort((a, b) => a.at - b.at)
      .map(({ destination, files: n, bytes }) => ({ destination, files: n, bytes })),
    bytesSent: facts.bytesSent,
    uploaded: { files: sum((c) => c.uploaded.files), bytes: sum((c) => c.uploaded.bytes) },
    alreadyThere: sum((c) => c.alreadyThere),
    skipped: sum((c) => c.skipped),
    failedNow: sum((c) => c.failedNow),
    notKept: sum((c) => c.notKept),
    left,
    waitingForLink: waitingForLink(files),
    stopped: stopOf(facts, left, cards),
  };
}

/** Why the run stopped: the first that holds of a halt, a sign-in, the server, Ctrl+C, a card pulled. */
function stopOf(facts: RunFacts, left: RunResult['left'], cards: readonly CardRun[]): RunStop {
  const { state, error } = facts.engine;
  if (state === 'halted' && error) return { kind: 'halted', error };
  if (state === 'auth-required' && error) return { kind: 'sign-in', error };
  if (state === 'offline' && error && left.server > 0)
    return { kind: 'server-unreachable', reason: plainMessage(error, 'request'), error };
  if (facts.cancelled) return { kind: 'cancelled' };
  if (left.card > 0)
    return {
      kind: 'card-pulled',
      cards: cards.filter((c) => c.left.some((f) => f.why === 'card')).map((c) => c.label),
    };
  return { kind: 'done' };
}
