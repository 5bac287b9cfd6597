import { EventEmitter } from 'node:events';
import fs from 'node:fs';
import path from 'node:path';
import type { Config } from '../config.js';
import {
  cardRootOn,
  destinationsOf,
  driveNotMounted,
  lookAt,
  lookMessage,
  spaceProblem,
  type DestinationLook,
} from '../copies/destinations.js';
import type { CopyRecord, Destination, FileVersion } from '../queue/copies.js';
import type { Queue, QueueRow } from '../queue/queue.js';
import type { Change } from '../queue/transitions.js';
import type { DiscoveredRow } from '../queue/rows.js';
import { copyAndVerify, type CopyJob } from '../copies/copy-file.js';
import { DmsError, toDmsError } from '../errors.js';
import { isInside } from '../media/discover.js';
import { cardPlace, copyStep, hashStep, placeAt, type Place, type StepContext } from './steps.js';
import type { DestinationSeen, DestinationStop } from './copy-port.js';
import type { Source } from '../sources/source.js';
import { defaultMountRoots } from '../sources/cards.js';

export type { DestinationSeen, DestinationStop } from './copy-port.js';

export interface LocalCopiesEvents {
  /** A destination stopped for a card (said once per card and destination). */
  stop: [DestinationStop];
  /** A destination's folder was created, or found gone, or its drive unplugged. */
  seen: [DestinationSeen];
}

type Target = CopyJob['targets'][number];

/**
 * The copy lane's owner: where a card's files are copied, and where a file
 * is read from once a verified copy of it exists (never the card again).
 * It keeps nothing of its own: every copy's state is a record in the store
 * (queue/copy-transitions.ts), written only through `queue.copies.apply`;
 * "copy again" is the records that are due; which destinations count for a
 * card is the store's too. A restart, `status`, `report`, the window and a
 * run's summary read the same facts. Its lane (sync/copy-lane.ts) takes
 * the due work; the engine, the upload lane, gets only function values.
 */
export class LocalCopies extends EventEmitter<LocalCopiesEvents> {
  private destinations: Destination[];
  /** Where the system mounts drives as they are plugged in (and the settings' card roots). */
  private mountRoots: string[];

  constructor(
    private readonly queue: Queue,
    config: Config,
  ) {
    super();
    this.destinations = destinationsOf(config, queue.copies);
    this.mountRoots = [...defaultMountRoots(), ...config.mountRoots];
    // A write cut short by a crash or a kill: wanted again (the table allows it, from writing only here).
    queue.copies.together(() => {
      for (const c of queue.copies.inState('writing'))
        queue.copies.apply(c, c.destinationId, { type: 'want', path: c.path });
    });
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
    this.mountRoots = [...defaultMountRoots(), ...config.mountRoots];
  }

  /** Every file of this card found so far is read and copied; none waits to be copied (again). */
  finished(sourceId: string): boolean {
    return !this.queue.hasUnread(sourceId) && !this.copyingAgain(sourceId);
  }

  /**
   * A card is about to be scanned: the destinations of this run are the
   * ones that count for it, recorded before its rows are, so that its
   * files are read by the copy lane (once), never by the upload lane first.
   * A run with none leaves what counted before (its verdict still names them).
   */
  count(sourceId: string): void {
    if (this.enabled)
      this.queue.copies.setCounting(
        sourceId,
        this.destinations.map((d) => d.id),
      );
  }

  /**
   * A card was scanned (its destinations counted: `count`): each is looked at (created when it is not there yet and its
   * parent is; stopped when its drive is gone); every file a destination
   * lacks as written is wanted there (first copies, and copies again); a
   * destination that cannot hold what is wanted is stopped before a byte is
   * written. Returns the destinations stopped now, to be said after the scan.
   */
  prepare(sourceId: string, from?: Pick<Source, 'root' | 'kind'>): DestinationStop[] {
    const said: DestinationStop[] = [];
    if (!this.enabled) return said;
    const copies = this.queue.copies;
    const rows = this.queue.list({ sourceId, limit: 1_000_000 });
    const card = { label: this.queue.sources.labelOf(sourceId), sourceId };
    for (const destination of this.destinations) {
      // A folder on the card itself: formatting the card erases it, so nothing there counts as a
      // copy, not even copies verified there before (they go back to wanted, then stop).
      if (from !== undefined && onTheCard(destination.path, from.root)) {
        const message = onTheCardMessage(destination, from);
        this.stopFor(sourceId, destination, message, rows, card, said, { evenVerified: true });
        continue;
      }
      const look = this.look(destination, sourceId);
      if (look !== 'ready' && look !== 'gone-made-again' && look !== 'created') {
        this.stopFor(sourceId, destination, lookMessage(destination, look), rows, card, said);
        continue;
      }
      const root = cardRootOn(destination, card);
      const wanted: FileVersion[] = [];
      copies.together(() => {
        for (const row of rows) {
          const rec = copies.of(row).find((c) => c.destinationId === destination.id);
          if (rec && (rec.state === 'writing' || (rec.state === 'verified' && asWritten(rec)))) continue;
          if (rec?.state !== 'wanted')
            copies.apply(row, destination.id, { type: 'want', path: `${root}/${row.relPath}` });
          wanted.push(row);
        }
      });
      const problem = spaceProblem(
        destination,
        wanted.reduce((n, f) => n + f.size, 0),
      );
      if (problem) this.stop(sourceId, destination, problem, said);
    }
    return said;
  }

  /**
   * A destination looked at before a card is copied: a folder not there yet
   * (its parent there) is created and said once; one gone from a drive that
   * is plugged in is made again and said; the volume it is on is noted.
   */
  private look(destination: Destination, sourceId: string): DestinationLook | 'created' | 'gone-made-again' {
    const volume = this.queue.copies.volumeOf(destination.id);
    // On a drive mounted where drives come and go (/media/pilot/T7_BACKUP/…) that is not mounted
    // now: unplugged, never a folder made on the laptop's own disk in its place.
    if (driveNotMounted(destination.path, this.mountRoots)) return 'unplugged';
    const look = lookAt(destination, volume);
    if (look === 'not-created' || look === 'missing') {
      try {
        fs.mkdirSync(destination.path);
      } catch {
        return look === 'missing' ? 'missing' : 'unplugged';
      }
      this.emit('seen', {
        sourceId,
        destination,
        look,
        message:
          look === 'not-created'
            ? lookMessage(destination, look)
            : `${destination.label}: the folder ${destination.path} was not there any more on its drive; it was made again.`,
      });
    }
    if (look === 'unplugged' || look === 'not-a-folder') return look;
    try {
      const dev = String(fs.statSync(destination.path).dev);
      if (dev !== volume) this.queue.copies.setVolume(destination.id, dev);
    } catch {
      return 'unplugged';
    }
    return look === 'not-created' ? 'created' : look === 'missing' ? 'gone-made-again' : 'ready';
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
   * discovered -> hashed with local copies: copied to each destination that
   * wants it (one read of the card), or, when none does, read where it is
   * (a verified copy, never the card twice).
   */
  async copy(ctx: StepContext, row: DiscoveredRow): Promise<Extract<Change, { type: 'hashed' }>> {
    const targets = this.begin(row);
    if (targets.length === 0) return hashStep(ctx, row, this.placeOf(row));
    try {
      const { change, stopped } = await copyStep(ctx, row, targets);
      for (const s of stopped) this.stop(row.sourceId, s.destination, s.message);
      return change;
    } catch (err) {
      this.unbegin(row, targets);
      throw err;
    }
  }

  /** True while a file of this card waits to be copied (again) or is being copied: its copies are not at rest. */
  copyingAgain(sourceId: string): boolean {
    return this.queue.copies.unsettled(sourceId);
  }

  /** A file already read that a destination still wants (copy again), if any. */
  hasDue(): boolean {
    const target = this.queue.target;
    return this.enabled && target !== null && this.queue.copies.nextDue(target.id) !== undefined;
  }

  /** The next file already read to copy again, its records now 'writing'; undefined when none is due. */
  nextAgain(): { row: QueueRow; targets: Target[] } | undefined {
    const target = this.queue.target;
    if (!this.enabled || !target) return undefined;
    const id = this.queue.copies.nextDue(target.id);
    const row = id === undefined ? undefined : this.queue.get(id);
    if (!row) return undefined;
    return { row, targets: this.begin(row) };
  }

  /** The card went away: its files still wanted somewhere are stopped until it is back (its next scan). */
  dropAgain(sourceId: string, label: string): void {
    const copies = this.queue.copies;
    copies.together(() => {
      for (const c of copies.inState('wanted', sourceId))
        copies.apply(c, c.destinationId, {
          type: 'stopped',
          reason: `${label} was removed before this file was copied to ${copies.destinationLabel(c.destinationId)}: insert it again to copy it.`,
        });
    });
  }

  /**
   * A file already read, copied again from the card to the destinations
   * that want it: the same write, flush and read-back as the first time. Its
   * upload is not touched. A card file that no longer matches what was
   * uploaded (same size and time, other bytes) is said, and left wanted.
   */
  async copyAgain(
    row: QueueRow,
    targets: readonly Target[],
    signal: AbortSignal,
    onBytes: (n: number) => void,
  ): Promise<string | null> {
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
      const fingerprint = 'fingerprint' in row ? row.fingerprint : null;
      if (fingerprint && fingerprint.toLowerCase() !== result.md5.toLowerCase()) {
        const reason = `${row.relPath} on the card is not what was read before (same size and time, other bytes): not copied again.`;
        this.queue.copies.together(() => {
          for (const t of targets)
            this.queue.copies.apply(row, t.destination.id, { type: 'differs', reason });
        });
        return reason;
      }
      this.queue.copies.together(() => {
        for (const o of result.outcomes) this.queue.copies.settle(row, o);
      });
      for (const s of result.stopped) this.stop(row.sourceId, s.destination, s.message);
      return null;
    } catch (err) {
      const e = toDmsError(err);
      const code = (err as { code?: string }).code;
      // The card went away meanwhile: stopped with the reason (its next scan wants it again).
      if (e.kind === 'cancelled' || code === 'ENOENT' || e.kind === 'source-missing') {
        const reason = `${this.queue.sources.labelOf(row.sourceId)} was removed before ${row.relPath} was copied again: insert it again to copy it.`;
        this.queue.copies.together(() => {
          for (const t of targets)
            this.queue.copies.apply(row, t.destination.id, { type: 'stopped', reason });
        });
        return null;
      }
      this.unbegin(row, targets);
      return `${row.relPath} could not be copied again: ${e instanceof DmsError ? e.message : String(err)}`;
    }
  }

  /**
   * The destinations that want this file (counting for its card, not
   * stopped, no verified copy as written), their records moved to
   * 'writing' in one transaction.
   */
  private begin(row: QueueRow): Target[] {
    const copies = this.queue.copies;
    const card = { label: this.queue.sources.labelOf(row.sourceId), sourceId: row.sourceId };
    const counting = new Set(copies.countingFor(row.sourceId));
    return copies.together(() => {
      const records = new Map(copies.of(row).map((c) => [c.destinationId, c]));
      const out: Target[] = [];
      for (const destination of this.destinations) {
        if (!counting.has(destination.id)) continue;
        const rec = records.get(destination.id);
        if (rec && rec.state !== 'wanted') {
          // A verified copy changed or gone since is wanted anew; stopped, writing, forgotten are not taken here.
          if (rec.state !== 'verified' || asWritten(rec)) continue;
        }
        const root = cardRootOn(destination, card);
        if (rec?.state !== 'wanted')
          copies.apply(row, destination.id, { type: 'want', path: `${root}/${row.relPath}` });
        copies.apply(row, destination.id, { type: 'writing' });
        out.push({ destination, root, volume: copies.volumeOf(destination.id) });
      }
      return out;
    });
  }

  /** A copy cut short (cancelled, an error that is not the destination's): wanted again. */
  private unbegin(row: FileVersion, targets: readonly Target[]): void {
    const copies = this.queue.copies;
    copies.together(() => {
      for (const t of targets) {
        const rec = copies.of(row).find((c) => c.destinationId === t.destination.id);
        if (rec?.state === 'writing') copies.apply(row, t.destination.id, { type: 'want', path: rec.path });
      }
    });
  }

  /**
   * A destination stopped for a card (full, unplugged, read-only, too
   * small): every copy of the card still wanted there is stopped with the
   * reason; said once (when it is the first stop of that card there).
   */
  private stop(sourceId: string, destination: Destination, message: string, said?: DestinationStop[]): void {
    const copies = this.queue.copies;
    const already = copies.inState('stopped', sourceId).some((c) => c.destinationId === destination.id);
    copies.together(() => {
      for (const c of copies.inState('wanted', sourceId))
        if (c.destinationId === destination.id)
          copies.apply(c, destination.id, { type: 'stopped', reason: message });
    });
    // At a scan, handed back with the scan's result (said after it); else said now.
    if (already) return;
    if (said) said.push({ sourceId, destination, message });
    else this.emit('stop', { sourceId, destination, message });
  }

  /** A destination that cannot be written at all for a card (its drive gone): each file not verified there is stopped. */
  private stopFor(
    sourceId: string,
    destination: Destination,
    message: string,
    rows: readonly QueueRow[],
    card: { label: string; sourceId: string },
    said: DestinationStop[],
    opts: { evenVerified?: boolean } = {},
  ): void {
    const copies = this.queue.copies;
    const root = cardRootOn(destination, card);
    copies.together(() => {
      for (const row of rows) {
        const rec = copies.of(row).find((c) => c.destinationId === destination.id);
        if (rec?.state === 'writing' || rec?.state === 'stopped') continue;
        if (rec?.state === 'verified' && !opts.evenVerified) continue;
        if (rec?.state !== 'wanted')
          copies.apply(row, destination.id, { type: 'want', path: `${root}/${row.relPath}` });
      }
    });
    // Stopped afresh at each scan: the reason is the one of now.
    copies.together(() => {
      for (const c of copies.inState('stopped', sourceId))
        if (c.destinationId === destination.id)
          copies.apply(c, destination.id, { type: 'want', path: c.path });
    });
    this.stop(sourceId, destination, message, said);
  }
}

/** A copy is still there as it was written (size, and the time it was given). */
export function asWritten(c: Pick<CopyRecord, 'path' | 'copySize' | 'copyMtimeMs'>): boolean {
  if (c.copySize === null || c.copyMtimeMs === null) return false;
  try {
    const st = fs.statSync(c.path);
    return st.size === c.copySize && Math.trunc(st.mtimeMs) === c.copyMtimeMs;
  } catch {
    return false;
  }
}

/** Its real path, or where it would be (a folder not made yet). */
function realOr(p: string): string {
  try {
    return fs.realpathSync(p);
  } catch {
    return path.resolve(p);
  }
}

/** The destination's folder is the card's root or inside it (`--copy-to /media/CARD/backup`). */
export function onTheCard(destination: string, root: string): boolean {
  return isInside(realOr(destination), realOr(root));
}

export function onTheCardMessage(destination: Destination, from: Pick<Source, 'root' | 'kind'>): string {
  const where =
    from.kind === 'card'
      ? `is on the card itself (inside ${from.root}): formatting the card would erase it`
      : `is inside the folder it copies (${from.root}): deleting that folder would erase it`;
  return `${destination.label}: ${destination.path} ${where}, so it holds no copy. Its copy stopped; choose a folder on another drive, then sync again; the other copies go on.`;
}
