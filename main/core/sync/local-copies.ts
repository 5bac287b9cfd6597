import fs from 'node:fs';
import type { Config } from '../config.js';
import { cardRootOn, destinationsOf, spaceProblem } from '../copies/destinations.js';
import type { CopyRecord, Destination } from '../queue/copies.js';
import type { Queue, QueueRow } from '../queue/queue.js';
import type { Change } from '../queue/transitions.js';
import type { DiscoveredRow } from '../queue/rows.js';
import { copyAndVerify } from '../copies/copy-file.js';
import { DmsError, toDmsError } from '../errors.js';
import { cardPlace, copyStep, hashStep, placeAt, type Place, type StepContext } from './steps.js';

/** Files copied and verified on one destination since the engine started (a `sync`: this run). */
export interface CopiesMade {
  destination: Destination;
  files: number;
  bytes: number;
}

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
  /**
   * Files past their first read that a destination still lacks (added since,
   * or its copy failed, changed or went): copied again from the card when it
   * is scanned, whatever their upload does. By row id, oldest first.
   */
  private readonly again = new Map<number, QueueRow>();
  /** Files taken from `again` whose copy is being made now, by row id. */
  private readonly copyingNow = new Map<number, QueueRow>();
  /** Copies written and read back since the engine started, by destination id (a run's summary says them). */
  private readonly madeOn = new Map<number, CopiesMade>();

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
      if (c.state !== 'verified' || c.copySize === null || c.copyMtimeMs === null || !asWritten(c)) continue;
      return placeAt(
        c.path,
        { relPath: row.relPath, size: c.copySize, mtimeMs: c.copyMtimeMs },
        this.queue.copies.destinationLabel(c.destinationId),
      );
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
  async copy(ctx: StepContext, row: DiscoveredRow): Promise<Extract<Change, { type: 'hashed' }>> {
    const targets = this.targetsFor(row);
    // Every destination holds it already, or none can take more of this card: read it where it is.
    if (targets.length === 0) return hashStep(ctx, row, this.placeOf(row));
    const { change, stopped } = await copyStep(ctx, row, targets);
    for (const s of stopped) this.stop(row.sourceId, s.destination, s.message);
    return change;
  }

  /**
   * A card was scanned: its files already read whose copy a destination
   * lacks are copied again (the crew added a drive, or "sync the card again
   * to copy it anew"). Returns how many.
   */
  findCopiesAgain(sourceId: string): number {
    if (!this.enabled) return 0;
    let n = 0;
    for (const row of this.queue.list({ sourceId, limit: 1_000_000 })) {
      if (row.state === 'discovered' || this.again.has(row.id) || this.targetsFor(row).length === 0) continue;
      this.again.set(row.id, row);
      n++;
    }
    return n;
  }

  /** Files waiting to be copied again. */
  get waitingAgain(): number {
    return this.again.size;
  }

  /** The next file to copy again, if any; `doneAgain` once its copy is over. */
  nextAgain(): QueueRow | undefined {
    const first = this.again.values().next();
    if (first.done) return undefined;
    this.again.delete(first.value.id);
    this.copyingNow.set(first.value.id, first.value);
    return first.value;
  }

  /** A file's copy again is over (made, failed or cancelled). */
  doneAgain(row: QueueRow): void {
    this.copyingNow.delete(row.id);
  }

  /**
   * True while a file of this source waits to be copied again or is being
   * copied: its card's copies are not at rest yet (no verdict is made on a
   * copy half written).
   */
  copyingAgain(sourceId: string): boolean {
    for (const r of [...this.again.values(), ...this.copyingNow.values()])
      if (r.sourceId === sourceId) return true;
    return false;
  }

  /** Records of copies written in the store: the verified ones are counted for the run's summary. */
  counted(records: readonly CopyRecord[] | undefined, size: number): void {
    for (const r of records ?? []) {
      if (r.state !== 'verified') continue;
      const destination = this.destinations.find((d) => d.id === r.destinationId);
      if (!destination) continue;
      const made = this.madeOn.get(destination.id) ?? { destination, files: 0, bytes: 0 };
      made.files++;
      made.bytes += size;
      this.madeOn.set(destination.id, made);
    }
  }

  /** Copies written and read back since the engine started, per destination, in the order they were first made. */
  get made(): readonly CopiesMade[] {
    return [...this.madeOn.values()];
  }

  /** The card went away: its files are not copied again until it is back. */
  dropAgain(sourceId: string): void {
    for (const [id, r] of this.again) if (r.sourceId === sourceId) this.again.delete(id);
  }

  /**
   * A file already read, copied again from the card to the destinations that
   * lack it: the same write, flush and read-back as the first time. Its upload
   * is not touched. A card file that no longer matches what was uploaded
   * (same size and time, other bytes) is not copied: said, and left for the
   * verdict.
   */
  async copyAgain(row: QueueRow, signal: AbortSignal, onBytes: (n: number) => void): Promise<string | null> {
    const targets = this.targetsFor(row);
    if (targets.length === 0) return null;
    try {
      const result = await copyAndVerify({
        source: row.absPath,
        relPath: row.relPath,
        size: row.size,
        mtimeMs: row.mtimeMs,
        targets,
        signal,
        onBytes,
      });
      for (const s of result.stopped) this.stop(row.sourceId, s.destination, s.message);
      const fingerprint = 'fingerprint' in row ? row.fingerprint : null;
      if (fingerprint && fingerprint.toLowerCase() !== result.md5.toLowerCase())
        return `${row.relPath} on the card is not what was read before (same size and time, other bytes): not copied again.`;
      const version = { sourceId: row.sourceId, relPath: row.relPath, size: row.size, mtimeMs: row.mtimeMs };
      for (const r of result.records) this.queue.copies.note(version, r);
      this.counted(result.records, row.size);
      return null;
    } catch (err) {
      const e = toDmsError(err);
      if (e.kind === 'cancelled') return null;
      const code = (err as { code?: string }).code;
      // The card went away meanwhile: its verdict says so; nothing to add here.
      if (code === 'ENOENT' || e.kind === 'source-missing') return null;
      return `${row.relPath} could not be copied again: ${e instanceof DmsError ? e.message : String(err)}`;
    }
  }

  /** Stops, before any byte is written, the destinations that cannot hold what a card still needs. */
  checkSpace(sourceId: string, pending: readonly QueueRow[]): void {
    const unread = [
      ...pending.filter((r) => r.sourceId === sourceId && r.state === 'discovered'),
      ...[...this.again.values()].filter((r) => r.sourceId === sourceId),
    ];
    for (const destination of this.destinations) {
      const needed = unread
        .filter((r) => this.targetsFor(r).some((t) => t.destination.id === destination.id))
        .reduce((n, r) => n + r.size, 0);
      const problem = spaceProblem(destination, needed);
      if (problem) this.stop(sourceId, destination, problem);
    }
  }

  /** The destinations a row's file is still to be copied to (not stopped for its card, no verified copy yet). */
  private targetsFor(row: QueueRow): Array<{ destination: Destination; root: string }> {
    const stopped = this.stops.get(row.sourceId);
    // A verified copy counts while it is still as written: one changed or gone since is copied anew.
    const done = new Set(
      this.queue.copies
        .of(row)
        .filter((c) => c.state === 'verified' && asWritten(c))
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

/** A copy is still there as it was written (size, and the time it was given). */
function asWritten(c: { path: string; copySize: number | null; copyMtimeMs: number | null }): boolean {
  if (c.copySize === null || c.copyMtimeMs === null) return false;
  try {
    const st = fs.statSync(c.path);
    return st.size === c.copySize && Math.trunc(st.mtimeMs) === c.copyMtimeMs;
  } catch {
    return false;
  }
}
