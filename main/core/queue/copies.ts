/**
 * What the store knows of local copies: the destinations, which of them
 * count for each card (the settings' and those named in its last run), and
 * one record per (file version, destination) in the states of
 * copies/transitions.ts. Part of the store (`queue.copies`); every record is
 * written through `apply` (the table's one door), a file's first copies in
 * its 'hashed' transaction.
 */
import { nextCopyState, type CopyChange, type CopyState, type WrittenCopy } from './copy-transitions.js';
import type { Db } from './db.js';

export type { CopyState } from './copy-transitions.js';

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
  state: CopyState;
  md5: string | null;
  /** The XXH3-64 the copy's read-back matched (recorded in its ASC MHL beside the MD5), or null. */
  xxh3: string | null;
  /** The copy as written (size, and the card's mtime it was given): a later change is seen. */
  copySize: number | null;
  copyMtimeMs: number | null;
  readBack: ReadBack | null;
  /** How the copy was written: around the page cache (O_DIRECT) or through it; null before it was recorded. */
  written?: ReadBack | null;
  at: number;
  /** failed: how its bytes differ; stopped: why its destination stopped for the card. */
  error: string | null;
}

/** What a copy attempt came to, for one destination: the change the store applies. */
export type CopyOutcome =
  | { destinationId: number; type: 'verified'; copy: WrittenCopy }
  | { destinationId: number; type: 'differs' | 'stopped'; reason: string };

interface CopyRow {
  source_id: string;
  rel_path: string;
  size: number;
  mtime_ms: number;
  destination_id: number;
  path: string;
  state: CopyState;
  md5: string | null;
  xxh3: string | null;
  copy_size: number | null;
  copy_mtime_ms: number | null;
  read_back: ReadBack | null;
  written: ReadBack | null;
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
  xxh3: r.xxh3,
  copySize: r.copy_size,
  copyMtimeMs: r.copy_mtime_ms,
  readBack: r.read_back,
  written: r.written,
  at: r.at,
  error: r.error,
});

interface DestinationRow {
  id: number;
  path: string;
  label: string;
  role: DestinationRole;
  keep_days: number | null;
  volume: string | null;
  forgotten_at: number | null;
}

const destinationOf = (r: DestinationRow): Destination => ({
  id: r.id,
  path: r.path,
  label: r.label,
  role: r.role,
  keepDays: r.keep_days,
});

/**
 * Whether a card's files not read yet are the copy lane's to read: it has
 * destinations that count for it (card_destinations, not forgotten). Kept
 * per row in `files.read_by_copies` (each lane's query reads it from an
 * index), written from this expression only: when a row is recorded, and
 * in the transactions that change what counts for a card (setCounting,
 * forgetDestination). `source` is the SQL of the card's source id.
 */
export const readByCopiesSql = (source: string): string =>
  `EXISTS (SELECT 1 FROM card_destinations cd JOIN destinations d ON d.id = cd.destination_id
   WHERE cd.source_id = ${source} AND d.forgotten_at IS NULL)`;

export class CopyFacts {
  private readonly stmts;
  /**
   * Cards with no copy record at all (none has destinations, the usual case):
   * `of` answers them without a query (every file's upload asks where to read
   * it from). A card leaves the set when a record of it is written (only
   * here: the agent holding the queue's lock writes copies).
   */
  private readonly noCopies = new Set<string>();

  constructor(
    private readonly db: Db,
    private readonly now: () => number = Date.now,
  ) {
    this.stmts = {
      destination: db.prepare<[string], { id: number }>('SELECT id FROM destinations WHERE path = ?'),
      addDestination: db.prepare<[string, string, string, number | null]>(
        'INSERT INTO destinations (path, label, role, keep_days) VALUES (?, ?, ?, ?)',
      ),
      updateDestination: db.prepare<[string, string, number | null, number]>(
        'UPDATE destinations SET label = ?, role = ?, keep_days = ?, forgotten_at = NULL WHERE id = ?',
      ),
      destinations: db.prepare<[], DestinationRow>('SELECT * FROM destinations ORDER BY id'),
      volume: db.prepare<[number], { volume: string | null }>('SELECT volume FROM destinations WHERE id = ?'),
      setVolume: db.prepare<[string, number]>('UPDATE destinations SET volume = ? WHERE id = ?'),
      forgetDestination: db.prepare<[number, number]>(
        'UPDATE destinations SET forgotten_at = ? WHERE id = ?',
      ),
      one: db.prepare<[string, string, number, number, number], CopyRow>(
        'SELECT * FROM copies WHERE source_id = ? AND rel_path = ? AND size = ? AND mtime_ms = ? AND destination_id = ?',
      ),
      put: db.prepare(
        `INSERT OR REPLACE INTO copies (source_id, rel_path, size, mtime_ms, destination_id, path, state, md5,
         xxh3, copy_size, copy_mtime_ms, read_back, written, at, error) VALUES (@sourceId, @relPath, @size,
         @mtimeMs, @destinationId, @path, @state, @md5, @xxh3, @copySize, @copyMtimeMs, @readBack, @written, @at,
         @error)`,
      ),
      ofFile: db.prepare<[string, string, number, number], CopyRow>(
        'SELECT * FROM copies WHERE source_id = ? AND rel_path = ? AND size = ? AND mtime_ms = ? ORDER BY destination_id',
      ),
      anyOfSource: db.prepare<[string], { one: number }>(
        'SELECT 1 AS one FROM copies WHERE source_id = ? LIMIT 1',
      ),
      ofSource: db.prepare<[string], CopyRow>(
        'SELECT * FROM copies WHERE source_id = ? ORDER BY rel_path, destination_id',
      ),
      ofDestination: db.prepare<[number], CopyRow>(
        'SELECT * FROM copies WHERE destination_id = ? ORDER BY source_id, rel_path',
      ),
      inState: db.prepare<[string, string], CopyRow>(
        'SELECT * FROM copies WHERE state = ? AND source_id = ? ORDER BY rel_path, destination_id',
      ),
      anyInState: db.prepare<[string], CopyRow>(
        'SELECT * FROM copies WHERE state = ? ORDER BY source_id, rel_path',
      ),
      dueFile: db.prepare<[number], { id: number }>(
        `SELECT f.id FROM copies c
         JOIN card_destinations cd ON cd.source_id = c.source_id AND cd.destination_id = c.destination_id
         JOIN files f ON f.source_id = c.source_id AND f.rel_path = c.rel_path
         AND f.size = c.size AND f.mtime_ms = c.mtime_ms AND f.target_id = ?
         WHERE c.state = 'wanted' AND f.state <> 'discovered' ORDER BY f.id LIMIT 1`,
      ),
      unsettled: db.prepare<[string], { one: number }>(
        `SELECT 1 AS one FROM copies c
         JOIN card_destinations cd ON cd.source_id = c.source_id AND cd.destination_id = c.destination_id
         WHERE c.source_id = ? AND c.state IN ('wanted', 'writing') LIMIT 1`,
      ),
      counting: db.prepare<[string], { destination_id: number }>(
        `SELECT cd.destination_id FROM card_destinations cd JOIN destinations d ON d.id = cd.destination_id
         WHERE cd.source_id = ? AND d.forgotten_at IS NULL ORDER BY cd.destination_id`,
      ),
      clearCounting: db.prepare<[string]>('DELETE FROM card_destinations WHERE source_id = ?'),
      addCounting: db.prepare<[string, number, number]>(
        'INSERT OR REPLACE INTO card_destinations (source_id, destination_id, at) VALUES (?, ?, ?)',
      ),
      dropCounting: db.prepare<[number]>('DELETE FROM card_destinations WHERE destination_id = ?'),
      countedOn: db.prepare<[number], { source_id: string }>(
        'SELECT source_id FROM card_destinations WHERE destination_id = ?',
      ),
      // A card's rows, by the index files_source (target, source): who reads its files not read yet.
      recount: db.prepare<{ s: string }>(
        `UPDATE files SET read_by_copies = ${readByCopiesSql('@s')}
         WHERE target_id IN (SELECT id FROM targets) AND source_id = @s AND read_by_copies <> ${readByCopiesSql('@s')}`,
      ),
    };
  }

  /** The destination of this folder, recorded (or updated) as the settings say it now; named again, not forgotten any more. */
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

  /** Every destination ever used (forgotten ones too), in the order they were first used. */
  destinations(): Destination[] {
    return this.stmts.destinations.all().map(destinationOf);
  }

  /** The destination of a folder, if it was ever used. */
  destinationAt(dir: string): (Destination & { forgotten: boolean }) | undefined {
    const r = this.stmts.destinations.all().find((x) => x.path === dir);
    return r ? { ...destinationOf(r), forgotten: r.forgotten_at !== null } : undefined;
  }

  /** The volume (st_dev) a destination was last written on, if known. */
  volumeOf(id: number): string | null {
    return this.stmts.volume.get(id)?.volume ?? null;
  }

  setVolume(id: number, volume: string): void {
    this.stmts.setVolume.run(volume, id);
  }

  /**
   * The one door: a copy record's change, through the transition table
   * (IllegalCopyTransition otherwise). `want` gives the copy's path.
   */
  apply(file: FileVersion, destinationId: number, change: CopyChange): CopyRecord {
    const cur = this.stmts.one.get(file.sourceId, file.relPath, file.size, file.mtimeMs, destinationId);
    const state = nextCopyState(cur?.state ?? null, change);
    const at = this.now();
    const base: CopyRecord = {
      destinationId,
      path: change.type === 'want' ? change.path : (cur?.path ?? ''),
      state,
      md5: null,
      xxh3: null,
      copySize: null,
      copyMtimeMs: null,
      readBack: null,
      written: null,
      at,
      error: null,
    };
    const next: CopyRecord =
      change.type === 'verified'
        ? {
            ...base,
            md5: change.copy.md5,
            xxh3: change.copy.xxh3,
            copySize: change.copy.copySize,
            copyMtimeMs: change.copy.copyMtimeMs,
            readBack: change.copy.readBack,
            written: change.copy.written ?? null,
          }
        : change.type === 'differs' || change.type === 'stopped'
          ? { ...base, error: change.reason }
          : change.type === 'forget' && cur
            ? { ...record(cur), state, at }
            : base;
    this.noCopies.delete(file.sourceId);
    this.stmts.put.run({ ...file, ...next, written: next.written ?? null });
    return next;
  }

  /** A copy attempt's outcome for one destination, through the door (the 'hashed' transaction calls it). */
  settle(file: FileVersion, outcome: CopyOutcome): CopyRecord {
    const change: CopyChange =
      outcome.type === 'verified'
        ? { type: 'verified', copy: outcome.copy }
        : { type: outcome.type, reason: outcome.reason };
    return this.apply(file, outcome.destinationId, change);
  }

  /** The copies of one version of a file, one per destination it was copied to (or is to be). */
  of(file: FileVersion): CopyRecord[] {
    if (this.noCopies.has(file.sourceId)) return [];
    const rows = this.stmts.ofFile.all(file.sourceId, file.relPath, file.size, file.mtimeMs);
    if (rows.length === 0 && this.stmts.anyOfSource.get(file.sourceId) === undefined)
      this.noCopies.add(file.sourceId);
    return rows.map(record);
  }

  /** Every copy record of every file of a source. */
  ofSource(sourceId: string): Array<CopyRecord & FileVersion> {
    return this.stmts.ofSource.all(sourceId).map(record);
  }

  /** Every copy record on a destination. */
  onDestination(destinationId: number): Array<CopyRecord & FileVersion> {
    return this.stmts.ofDestination.all(destinationId).map(record);
  }

  /** Records of a source in a state (all sources without one). */
  inState(state: CopyState, sourceId?: string): Array<CopyRecord & FileVersion> {
    return (
      sourceId === undefined ? this.stmts.anyInState.all(state) : this.stmts.inState.all(state, sourceId)
    ).map(record);
  }

  /** The next file (of this target) already read whose copy a counting destination wants: "copy again". */
  nextDue(targetId: number): number | undefined {
    return this.stmts.dueFile.get(targetId)?.id;
  }

  /** A copy of this card is still wanted or being written on a destination that counts for it. */
  unsettled(sourceId: string): boolean {
    return this.stmts.unsettled.get(sourceId) !== undefined;
  }

  /** The destinations that count for a card: those of the settings and of its last run, not forgotten. */
  countingFor(sourceId: string): number[] {
    return this.stmts.counting.all(sourceId).map((r) => r.destination_id);
  }

  /**
   * A run names the destinations of a card: these count for it from now on
   * (past ones not named stop counting); with any, its files not read yet
   * are the copy lane's to read.
   */
  setCounting(sourceId: string, destinationIds: readonly number[]): void {
    this.db.transaction(() => {
      this.stmts.clearCounting.run(sourceId);
      for (const id of destinationIds) this.stmts.addCounting.run(sourceId, id, this.now());
      this.stmts.recount.run({ s: sourceId });
    })();
  }

  /**
   * The crew forgot a destination: it counts for no card any more and its
   * records are forgotten (the files on it are not touched); a card left
   * with none has its files read by the upload lane. Named again later, it
   * is a destination again.
   */
  forgetDestination(destinationId: number): number {
    return this.db.transaction(() => {
      this.stmts.forgetDestination.run(this.now(), destinationId);
      const cards = this.stmts.countedOn.all(destinationId);
      this.stmts.dropCounting.run(destinationId);
      for (const c of cards) this.stmts.recount.run({ s: c.source_id });
      let n = 0;
      for (const c of this.onDestination(destinationId)) {
        if (c.state === 'forgotten' || c.state === 'writing') continue;
        this.apply(c, destinationId, { type: 'forget' });
        n++;
      }
      return n;
    })();
  }

  /** A card's copies on a destination were deleted (staging clean-up): its records forgotten. */
  forgetCard(destinationId: number, sourceId: string): void {
    this.db.transaction(() => {
      for (const c of this.onDestination(destinationId))
        if (c.sourceId === sourceId && c.state !== 'forgotten' && c.state !== 'writing')
          this.apply(c, destinationId, { type: 'forget' });
    })();
  }

  /** Runs `fn` in one transaction (several records through the door at once). */
  together<T>(fn: () => T): T {
    return this.db.transaction(fn)();
  }
}
