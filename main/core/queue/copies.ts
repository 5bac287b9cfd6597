/**
 * What the store knows of local copies: the destinations a card is copied
 * to, each file's copy on each (verified against the card's MD5 by reading
 * it back, or failed with the reason), and destinations that stopped for a
 * card. Part of the store (`queue.copies`); a file's copies are written with
 * its 'hashed' transition, in its transaction.
 */
import type { Db } from './db.js';

export type DestinationRole = 'archive' | 'staging';

export interface Destination {
  id: number;
  /** The folder the crew chose (a card gets a folder of its own inside). */
  path: string;
  /** What the crew calls it ("T7_BACKUP", or the folder's name). */
  label: string;
  role: DestinationRole;
  /** staging only: copies older than this whose files are all in the workspace may be deleted. */
  keepDays: number | null;
}

/** A file version: the card file a copy is of. */
export interface FileVersion {
  sourceId: string;
  relPath: string;
  size: number;
  mtimeMs: number;
}

/** How a copy was read back to be verified: from the disk (O_DIRECT), or through the OS's cache. */
export type ReadBack = 'direct' | 'cache';

export interface CopyRecord {
  destinationId: number;
  path: string;
  state: 'verified' | 'failed';
  md5: string | null;
  /** The copy as written (size, and the card's mtime it was given): a later change is seen. */
  copySize: number | null;
  copyMtimeMs: number | null;
  readBack: ReadBack | null;
  at: number;
  error: string | null;
}

interface CopyRow {
  source_id: string;
  rel_path: string;
  size: number;
  mtime_ms: number;
  destination_id: number;
  path: string;
  state: 'verified' | 'failed';
  md5: string | null;
  copy_size: number | null;
  copy_mtime_ms: number | null;
  read_back: ReadBack | null;
  at: number;
  error: string | null;
}

const record = (r: CopyRow): CopyRecord & FileVersion => ({
  sourceId: r.source_id,
  relPath: r.rel_path,
  size: r.size,
  mtimeMs: r.mtime_ms,
  destinationId: r.destination_id,
  path: r.path,
  state: r.state,
  md5: r.md5,
  copySize: r.copy_size,
  copyMtimeMs: r.copy_mtime_ms,
  readBack: r.read_back,
  at: r.at,
  error: r.error,
});

export class CopyFacts {
  private readonly stmts;

  constructor(
    db: Db,
    private readonly now: () => number = Date.now,
  ) {
    this.stmts = {
      destination: db.prepare<[string], { id: number }>('SELECT id FROM destinations WHERE path = ?'),
      addDestination: db.prepare<[string, string, string, number | null]>(
        'INSERT INTO destinations (path, label, role, keep_days) VALUES (?, ?, ?, ?)',
      ),
      updateDestination: db.prepare<[string, string, number | null, number]>(
        'UPDATE destinations SET label = ?, role = ?, keep_days = ? WHERE id = ?',
      ),
      destinations: db.prepare<
        [],
        { id: number; path: string; label: string; role: DestinationRole; keep_days: number | null }
      >('SELECT id, path, label, role, keep_days FROM destinations ORDER BY id'),
      put: db.prepare(
        `INSERT OR REPLACE INTO copies (source_id, rel_path, size, mtime_ms, destination_id, path, state, md5,
         copy_size, copy_mtime_ms, read_back, at, error) VALUES (@sourceId, @relPath, @size, @mtimeMs,
         @destinationId, @path, @state, @md5, @copySize, @copyMtimeMs, @readBack, @at, @error)`,
      ),
      ofFile: db.prepare<[string, string, number, number], CopyRow>(
        'SELECT * FROM copies WHERE source_id = ? AND rel_path = ? AND size = ? AND mtime_ms = ? ORDER BY destination_id',
      ),
      ofSource: db.prepare<[string], CopyRow>(
        'SELECT * FROM copies WHERE source_id = ? ORDER BY rel_path, destination_id',
      ),
      ofDestination: db.prepare<[number], CopyRow>(
        'SELECT * FROM copies WHERE destination_id = ? ORDER BY source_id, rel_path',
      ),
      drop: db.prepare<[number, string]>('DELETE FROM copies WHERE destination_id = ? AND source_id = ?'),
      stop: db.prepare(
        'INSERT OR REPLACE INTO destination_stops (destination_id, source_id, message, at) VALUES (?, ?, ?, ?)',
      ),
      clearStops: db.prepare<[string]>('DELETE FROM destination_stops WHERE source_id = ?'),
      stops: db.prepare<[string], { destination_id: number; message: string }>(
        'SELECT destination_id, message FROM destination_stops WHERE source_id = ?',
      ),
    };
  }

  /** The destination of this folder, recorded (or updated) as the settings say it now. */
  destination(d: Omit<Destination, 'id'>): Destination {
    const found = this.stmts.destination.get(d.path)?.id;
    if (found === undefined) {
      const id = Number(this.stmts.addDestination.run(d.path, d.label, d.role, d.keepDays).lastInsertRowid);
      return { ...d, id };
    }
    this.stmts.updateDestination.run(d.label, d.role, d.keepDays, found);
    return { ...d, id: found };
  }

  /** A destination's label (for messages), by id. */
  destinationLabel(id: number): string {
    return this.destinations().find((d) => d.id === id)?.label ?? `destination ${id}`;
  }

  /** Every destination ever used, in the order they were first used. */
  destinations(): Destination[] {
    return this.stmts.destinations
      .all()
      .map((r) => ({ id: r.id, path: r.path, label: r.label, role: r.role, keepDays: r.keep_days }));
  }

  /** Called by the store inside a file's 'hashed' transition (and by offload for copies made later). */
  note(file: FileVersion, copy: CopyRecord): void {
    this.stmts.put.run({ ...file, ...copy });
  }

  /** The copies of one version of a file, one per destination it was copied to. */
  of(file: FileVersion): CopyRecord[] {
    return this.stmts.ofFile.all(file.sourceId, file.relPath, file.size, file.mtimeMs).map(record);
  }

  /** Every copy of every file of a source. */
  ofSource(sourceId: string): Array<CopyRecord & FileVersion> {
    return this.stmts.ofSource.all(sourceId).map(record);
  }

  /** Every copy on a destination. */
  onDestination(destinationId: number): Array<CopyRecord & FileVersion> {
    return this.stmts.ofDestination.all(destinationId).map(record);
  }

  /** A card's copies on a destination were deleted (staging clean-up). */
  forget(destinationId: number, sourceId: string): void {
    this.stmts.drop.run(destinationId, sourceId);
  }

  /** A destination stopped for a card (full, unplugged, read-only): the reason, shown until the next scan. */
  stop(destinationId: number, sourceId: string, message: string): void {
    this.stmts.stop.run(destinationId, sourceId, message, this.now());
  }

  /** A new scan of the card: its destinations are tried again. */
  clearStops(sourceId: string): void {
    this.stmts.clearStops.run(sourceId);
  }

  stops(sourceId: string): Map<number, string> {
    return new Map(this.stmts.stops.all(sourceId).map((r) => [r.destination_id, r.message]));
  }
}
