/**
 * Which due rows go next, and the rows in flight: each row is handed to
 * exactly one worker at a time, and a source that goes away stops its rows
 * at once.
 */
import { LANE_NAMES, laneRank, type LaneName } from '../queue/lanes.js';
import type { Queue } from '../queue/queue.js';
import type { WorkingRow } from '../queue/rows.js';
import type { WorkingState } from '../queue/states.js';

interface InFlight {
  promise: Promise<void>;
  controller: AbortController;
  sourceId: string;
  lane: LaneName;
  /** Its lane's rank (0 goes first). */
  rank: number;
}

export class Dispatcher {
  private readonly flying = new Map<number, InFlight>();
  /** Due rows listed by the last take and not handed out yet, lane by lane, oldest first. */
  private candidates: Array<{ id: number; lane: number }> = [];

  /**
   * `states`: only rows in these (a lane of its own); default every working
   * state. `readByCopies`: of the files not read yet, only those of cards
   * read by the copy lane (true) or not (false); undefined: all (see
   * Queue.ready). `holds`: a due row not to hand out now (it stays due,
   * asked again at the next take).
   */
  constructor(
    private readonly queue: Queue,
    private readonly states?: readonly WorkingState[],
    private readonly readByCopies?: boolean,
    private readonly holds?: (row: WorkingRow) => boolean,
  ) {}

  /** Whether this row is in flight. */
  has(id: number): boolean {
    return this.flying.has(id);
  }

  /** Whether a row of this source is in flight. */
  flies(sourceId: string): boolean {
    for (const f of this.flying.values()) if (f.sourceId === sourceId) return true;
    return false;
  }

  get inFlight(): number {
    return this.flying.size;
  }

  /** New work was recorded: list the due rows afresh next time. */
  forget(): void {
    this.candidates = [];
  }

  /**
   * Due rows not already flying, lane by lane (what goes first), oldest
   * first: up to `width` in flight counting only rows of the same lane or a
   * higher one, so a new card's first lane never waits for a slot held by
   * an older card's videos (the part slots then decide whose bytes go next,
   * part-slots.ts). `maxAttempts`: rows tried that often are left for the
   * next run.
   */
  take(width: number, maxAttempts?: number): WorkingRow[] {
    const rows: WorkingRow[] = [];
    // Rows in flight per lane rank, those taken in this call included.
    const load = new Map<number, number>();
    for (const f of this.flying.values()) load.set(f.rank, (load.get(f.rank) ?? 0) + 1);
    const ahead = (rank: number): number => {
      let n = 0;
      for (const [r, c] of load) if (r <= rank) n += c;
      return n;
    };
    if (ahead(Number.MAX_SAFE_INTEGER) >= width * LANE_NAMES.length) return [];
    // Ids taken in this call are not flying yet: a second listing below
    // must not hand the same row out twice (two uploads of one file at once).
    const taken = new Set<number>();
    const busy = (id: number): boolean => this.flying.has(id) || taken.has(id);
    // Due ids are listed 64 at a time and each row is re-read when taken:
    // listing them on every file finished showed in profiles of small files.
    let listed = false;
    while (rows.length < width) {
      if (this.candidates.length === 0) {
        if (listed) break;
        listed = true;
        this.candidates = this.queue
          .ready(64 + this.flying.size + taken.size, this.states, this.readByCopies)
          .filter((c) => !busy(c.id));
        continue;
      }
      const next = this.candidates[0] as { id: number; lane: number };
      // Its lane and those before it fill the width: so do those of the rows listed after it
      // (listed lane by lane). It stays listed, unread, for a later take.
      if (ahead(next.lane) >= width) break;
      this.candidates.shift();
      const { id } = next;
      if (busy(id)) continue;
      const row = this.queue.dueRow(id, this.readByCopies);
      if (!row || (maxAttempts !== undefined && row.attempts >= maxAttempts)) continue;
      if (this.states && !this.states.includes(row.state)) continue;
      if (this.holds?.(row)) continue;
      const rank = laneRank(row.lane);
      load.set(rank, (load.get(rank) ?? 0) + 1);
      taken.add(id);
      rows.push(row);
    }
    return rows;
  }

  /** Runs `work` for a row with its own abort signal; `done` runs when it has left. */
  start(
    row: Pick<WorkingRow, 'id' | 'sourceId' | 'lane'>,
    work: (signal: AbortSignal) => Promise<void>,
    done: () => void,
  ): void {
    const controller = new AbortController();
    const promise = work(controller.signal).finally(() => {
      this.flying.delete(row.id);
      done();
    });
    this.flying.set(row.id, {
      promise,
      controller,
      sourceId: row.sourceId,
      lane: row.lane,
      rank: laneRank(row.lane),
    });
  }

  /** The rows in flight: their id and lane. */
  flyingRows(): Array<{ id: number; lane: LaneName }> {
    return [...this.flying].map(([id, f]) => ({ id, lane: f.lane }));
  }

  /** Stops every row in flight (a one-shot run whose rows all wait for the link). */
  abortAll(reason: unknown): void {
    for (const f of this.flying.values()) f.controller.abort(reason);
  }

  /** Stops reading from a source that went away (the rows `which` says, default all of it). */
  abortSource(sourceId: string, reason: unknown, which: (id: number) => boolean = () => true): void {
    for (const [id, f] of this.flying) if (f.sourceId === sourceId && which(id)) f.controller.abort(reason);
  }

  /** Resolves once every row in flight has left. */
  async settled(): Promise<void> {
    await Promise.allSettled([...this.flying.values()].map((f) => f.promise));
  }
}
