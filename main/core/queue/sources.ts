/**
 * What the store knows of each source (a card or a watched folder): the one
 * label a person calls it by, and how its last scan ended. Part of the store
 * (`queue.sources`).
 */
import path from 'node:path';
import { sourceOf } from '../sources/source.js';
import type { Db } from './db.js';

/** A source's name when none was ever seen: the card's id, or the folder's name. */
export function fallbackLabel(sourceId: string): string {
  const s = sourceOf(sourceId);
  return s.kind === 'card' ? s.cardId : path.basename(s.root) || s.root;
}

/** A file or folder a scan found and did not keep, and why. */
export interface Skipped {
  relPath: string;
  kind: string;
  message: string;
  /** Its content exists on the card only: the card is not safe to format while it is there. */
  blocking: boolean;
}

export class SourceFacts {
  private readonly stmts;
  private readonly db: Db;

  constructor(
    db: Db,
    private readonly now: () => number = Date.now,
  ) {
    this.stmts = {
      seen: db.prepare(
        `INSERT INTO sources (source_id, label, seen_at) VALUES (?, ?, ?)
         ON CONFLICT (source_id) DO UPDATE SET label = excluded.label, seen_at = excluded.seen_at`,
      ),
      label: db.prepare<[string], { label: string }>('SELECT label FROM sources WHERE source_id = ?'),
      recordScan: db.prepare(
        'INSERT INTO source_scans (source_id, complete, at) VALUES (?, ?, ?) ON CONFLICT (source_id) DO UPDATE SET complete = excluded.complete, at = excluded.at',
      ),
      lastScan: db.prepare<[string], { complete: number; at: number }>(
        'SELECT complete, at FROM source_scans WHERE source_id = ?',
      ),
      dropSkips: db.prepare<[string]>('DELETE FROM source_skips WHERE source_id = ?'),
      addSkip: db.prepare(
        'INSERT OR REPLACE INTO source_skips (source_id, rel_path, kind, message, blocking) VALUES (?, ?, ?, ?, ?)',
      ),
      skips: db.prepare<[string], { rel_path: string; kind: string; message: string; blocking: number }>(
        'SELECT rel_path, kind, message, blocking FROM source_skips WHERE source_id = ? ORDER BY rel_path',
      ),
    };
    this.db = db;
  }

  /** The source was seen under this label (a card's volume label, a folder's path). */
  seen(sourceId: string, label: string): void {
    if (this.stmts.label.get(sourceId)?.label === label) return;
    this.stmts.seen.run(sourceId, label, this.now());
  }

  /** What the crew called the source when it was last seen, else fallbackLabel. */
  labelOf(sourceId: string): string {
    return this.stmts.label.get(sourceId)?.label ?? fallbackLabel(sourceId);
  }

  /** A scan of the source ended: read to the end (complete) or cut short (a pulled card). */
  recordScan(sourceId: string, complete: boolean): void {
    this.stmts.recordScan.run(sourceId, complete ? 1 : 0, this.now());
  }

  /** What the scan that just ended did not keep: replaces the list of the scan before. */
  recordSkips(sourceId: string, skipped: readonly Skipped[]): void {
    this.db.transaction(() => {
      this.stmts.dropSkips.run(sourceId);
      for (const s of skipped)
        this.stmts.addSkip.run(sourceId, s.relPath, s.kind, s.message, s.blocking ? 1 : 0);
    })();
  }

  skipped(sourceId: string): Skipped[] {
    return this.stmts.skips
      .all(sourceId)
      .map((r) => ({ relPath: r.rel_path, kind: r.kind, message: r.message, blocking: r.blocking === 1 }));
  }

  lastScan(sourceId: string): { complete: boolean; at: number } | undefined {
    const r = this.stmts.lastScan.get(sourceId);
    return r ? { complete: r.complete === 1, at: r.at } : undefined;
  }
}
