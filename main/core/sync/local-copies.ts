import fs from 'node:fs';
import type { Config } from '../config.js';
import { cardRootOn, destinationsOf, spaceProblem } from '../copies/destinations.js';
import type { Destination } from '../queue/copies.js';
import type { Queue, QueueRow } from '../queue/queue.js';
import type { Change } from '../queue/transitions.js';
import type { DiscoveredRow } from '../queue/rows.js';
import { cardPlace, copyStep, hashStep, type Place, type StepContext } from './steps.js';

export interface DestinationStop {
  sourceId: string;
  destination: Destination;
  message: string;
}

/**
 * The engine's local destinations: where a card's files are copied before
 * anything is uploaded, which destinations stopped for a card in this run
 * (full, unplugged, read-only), and where a file is read from once a verified
 * copy of it exists (never the card again).
 */
export class LocalCopies {
  private destinations: Destination[];
  /** Destinations stopped for a source in this run, by source id. */
  private readonly stops = new Map<string, Set<number>>();

  constructor(
    private readonly queue: Queue,
    config: Config,
    /** Called once per destination and card when it stops (logged and told by the engine). */
    private readonly onStop: (stop: DestinationStop) => void,
  ) {
    this.destinations = destinationsOf(config, queue.copies);
  }

  /** The destinations cards are copied to (settings and `--copy-to`). */
  get all(): readonly Destination[] {
    return this.destinations;
  }

  get enabled(): boolean {
    return this.destinations.length > 0;
  }

  updateConfig(config: Config): void {
    this.destinations = destinationsOf(config, this.queue.copies);
  }

  /** A card is scanned again: destinations that stopped for it (full, unplugged) are tried again. */
  retry(sourceId: string): void {
    this.stops.delete(sourceId);
    this.queue.copies.clearStops(sourceId);
  }

  /**
   * Where a row's file is read from: its first verified copy still there as
   * written (size, time), else the card. A copy changed or removed since it
   * was verified is never read.
   */
  placeOf(row: QueueRow): Place {
    for (const c of this.enabled || row.state !== 'discovered' ? this.queue.copies.of(row) : []) {
      if (c.state !== 'verified' || c.copySize === null || c.copyMtimeMs === null) continue;
      try {
        const st = fs.statSync(c.path);
        if (st.size !== c.copySize || Math.trunc(st.mtimeMs) !== c.copyMtimeMs) continue;
      } catch {
        continue;
      }
      return {
        path: c.path,
        root: c.path.slice(0, c.path.length - row.relPath.length - 1),
        relPath: row.relPath,
        size: c.copySize,
        mtimeMs: c.copyMtimeMs,
        copyOn: this.queue.copies.destinationLabel(c.destinationId),
      };
    }
    return cardPlace(row);
  }

  /** True when the row's file can be read from a verified copy (its card may be gone). */
  hasCopy(row: QueueRow): boolean {
    return this.placeOf(row).copyOn !== undefined;
  }

  /**
   * discovered -> hashed with local copies: copied to each destination still
   * to have it (one read of the card), or, when every destination already
   * holds a verified copy of this version, read from a copy (never the card).
   */
  async copy(ctx: StepContext, row: DiscoveredRow): Promise<Change> {
    const targets = this.targetsFor(row);
    // Every destination holds it already, or none can take more of this card: read it where it is.
    if (targets.length === 0) return hashStep(ctx, row, this.placeOf(row));
    const { change, stopped } = await copyStep(ctx, row, targets);
    for (const s of stopped) this.stop(row.sourceId, s.destination, s.message);
    return change;
  }

  /** Stops, before any byte is written, the destinations that cannot hold what a card still needs. */
  checkSpace(sourceId: string, pending: readonly QueueRow[]): void {
    const unread = pending.filter((r) => r.sourceId === sourceId && r.state === 'discovered');
    for (const destination of this.destinations) {
      const needed = unread
        .filter(
          (r) =>
            !this.queue.copies
              .of(r)
              .some((c) => c.destinationId === destination.id && c.state === 'verified'),
        )
        .reduce((n, r) => n + r.size, 0);
      const problem = spaceProblem(destination, needed);
      if (problem) this.stop(sourceId, destination, problem);
    }
  }

  /** The destinations a row's file is still to be copied to (not stopped for its card, no verified copy yet). */
  private targetsFor(row: QueueRow): Array<{ destination: Destination; root: string }> {
    const stopped = this.stops.get(row.sourceId);
    const done = new Set(
      this.queue.copies
        .of(row)
        .filter((c) => c.state === 'verified')
        .map((c) => c.destinationId),
    );
    const card = { label: this.queue.sources.labelOf(row.sourceId), sourceId: row.sourceId };
    return this.destinations
      .filter((d) => !stopped?.has(d.id) && !done.has(d.id))
      .map((destination) => ({ destination, root: cardRootOn(destination, card) }));
  }

  /** A destination failed for a card: no more of it goes there in this run; said once. */
  private stop(sourceId: string, destination: Destination, message: string): void {
    const set = this.stops.get(sourceId) ?? new Set<number>();
    if (set.has(destination.id)) return;
    set.add(destination.id);
    this.stops.set(sourceId, set);
    this.queue.copies.stop(destination.id, sourceId, message);
    this.onStop({ sourceId, destination, message });
  }
}
