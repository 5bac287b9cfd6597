/**
 * Lanes: what goes first. Every file of the queue is of a class (what it is
 * to the office: an RTK file, a flight log, a photo...), and each class
 * rides in a lane, by the setting `lanes` (per class; defaults below). Due
 * rows are handed out lane by lane, then oldest first (card by card, flight
 * by flight: a card is scanned folder by folder). The class and the lane's
 * rank are columns of the row, so the order holds across cards and restarts.
 *
 * One door: `laneOf` is the only place a class meets its lane; the table of
 * classes (`classify`) and the table of defaults are tested by hand, class by
 * class (lanes.test.ts), as transitions.ts is.
 */
import { extname } from 'node:path';
import type Database from 'better-sqlite3';
import { VIDEO_EXTENSIONS, normaliseExtension, type FileKind } from '../media/discover.js';

import { LANE_NAMES, type LaneLeft, type LaneName } from '../../shared/lanes.js';

export { CREW_LANE_NAMES, LANE_LABELS, LANE_NAMES, type LaneName } from '../../shared/lanes.js';

/**
 * 'flagged' is never found by `classify`: a photo the frame checks flagged
 * is put in it through `flag` (the one door), once the checks have run.
 */
export const FILE_CLASSES = [
  'rtk',
  'log',
  'manifest',
  'photo',
  'video',
  'preview',
  'misc',
  'flagged',
] as const;
export type FileClass = (typeof FILE_CLASSES)[number];

/**
 * The defaults: first the small files the office needs to start (RTK/PPK
 * files and MRKs, .SRT flight logs, manifests), then photos, then videos,
 * then .LRF previews and MISC/.
 */
export const DEFAULT_LANES: Readonly<Record<FileClass, LaneName>> = {
  rtk: 'first',
  log: 'first',
  manifest: 'first',
  photo: 'photos',
  video: 'videos',
  preview: 'previews',
  misc: 'previews',
  flagged: 'flagged',
};

export type LaneSetting = Readonly<{ [C in FileClass]?: LaneName | undefined }>;

/** What a flagged photo is when the crew sends flagged frames like the others (the setting off). */
const UNFLAGGED: FileClass = 'photo';

const MANIFEST_EXTENSIONS = new Set(['mhl', 'md5', 'sha1', 'xxh', 'csv', 'json', 'xml']);
const PREVIEW_EXTENSIONS = new Set(['lrf', 'thm', 'scr']);

/** What a file is to the lanes, from its path on the card and the queue's kind. */
export function classify(relPath: string, kind: FileKind): FileClass {
  const segments = relPath.split('/');
  const ext = normaliseExtension(extname(relPath));
  if (kind === 'rtk') return 'rtk';
  if (ext === 'mrk') return 'rtk';
  if (ext === 'srt') return 'log';
  if (segments.slice(0, -1).some((s) => s.toUpperCase() === 'MISC')) return 'misc';
  if (kind === 'media') return VIDEO_EXTENSIONS.includes(ext) ? 'video' : 'photo';
  if (PREVIEW_EXTENSIONS.has(ext)) return 'preview';
  if (MANIFEST_EXTENSIONS.has(ext) || segments.some((s) => s.toLowerCase() === 'ascmhl')) return 'manifest';
  return 'misc';
}

/** The one door: the lane of a class under the setting (its defaults for what it leaves out). */
export function laneOf(cls: FileClass, setting: LaneSetting = {}): LaneName {
  return setting[cls] ?? DEFAULT_LANES[cls];
}

/** 0 for the first lane: lower ranks go first. */
export function laneRank(lane: LaneName): number {
  return LANE_NAMES.indexOf(lane);
}

export const laneAt = (rank: number): LaneName => LANE_NAMES[rank] ?? 'previews';

/**
 * What every open runs: rows without a class, and the re-rank of one class
 * (lane, class, lane). Exported for the test of their query plans.
 */
export const OPEN_SQL = {
  unclassified: 'SELECT id, rel_path, kind FROM files WHERE file_class IS NULL',
  down: 'UPDATE files SET lane = ? WHERE file_class = ? AND lane > ?',
  up: 'UPDATE files SET lane = ? WHERE file_class = ? AND lane < ?',
} as const;

/**
 * The lanes' columns of the queue: each row's class (set when it is
 * recorded, or for rows recorded before lanes existed, when the queue
 * opens) and its lane's rank under the current setting.
 */
export class QueueLanes {
  private setting: LaneSetting = {};
  private readonly stmts;

  constructor(private readonly db: Database.Database) {
    this.stmts = {
      unclassified: db.prepare<[], { id: number; rel_path: string; kind: FileKind }>(OPEN_SQL.unclassified),
      classify: db.prepare('UPDATE files SET file_class = ?, lane = ? WHERE id = ?'),
      // Two ranges of the index (file_class, lane): rows already in their lane are not read.
      rerankDown: db.prepare(OPEN_SQL.down),
      rerankUp: db.prepare(OPEN_SQL.up),
      left: db.prepare<[number], { lane: number; files: number; bytes: number }>(
        `SELECT lane, COUNT(*) AS files, COALESCE(SUM(size), 0) AS bytes FROM files
         WHERE target_id = ? AND state NOT IN ('done', 'failed') GROUP BY lane`,
      ),
      flag: db.prepare(
        `UPDATE files SET file_class = 'flagged', lane = ? WHERE target_id = ? AND source_id = ? AND rel_path = ?
         AND file_class = 'photo' AND state NOT IN ('done', 'failed')`,
      ),
      laneOfRow: db.prepare<[number], { lane: number }>('SELECT lane FROM files WHERE id = ?'),
      unflag: db.prepare(`UPDATE files SET file_class = ?, lane = ? WHERE file_class = 'flagged'`),
      saveRate: db.prepare('INSERT OR REPLACE INTO meta (key, value) VALUES (?, ?)'),
      savedRate: db.prepare<[string], { value: string }>('SELECT value FROM meta WHERE key = ?'),
    };
    // Rows recorded before lanes existed: in their default lanes until the
    // engine applies the setting (rows of known class keep their rank: the
    // order holds across restarts, for a reader of the queue too).
    this.db.transaction(() => {
      for (const r of this.stmts.unclassified.all()) {
        const { fileClass, lane } = this.of(r.rel_path, r.kind);
        this.stmts.classify.run(fileClass, lane, r.id);
      }
    })();
  }

  /** The columns of a new row. */
  of(relPath: string, kind: FileKind): { fileClass: FileClass; lane: number } {
    const fileClass = classify(relPath, kind);
    return { fileClass, lane: laneRank(laneOf(fileClass, this.setting)) };
  }

  /**
   * The door for flagged frames (issue 32): photos of a source the frame
   * checks flagged as probably unusable, not sent yet, go to the 'flagged'
   * lane (the link holds it on a metered network). Returns how many moved.
   */
  flag(targetId: number, sourceId: string, relPaths: readonly string[]): number {
    const rank = laneRank(laneOf('flagged', this.setting));
    return this.db.transaction(() =>
      relPaths.reduce((n, p) => n + this.stmts.flag.run(rank, targetId, sourceId, p).changes, 0),
    )();
  }

  /** A row's lane now (a part waiting for the link asks it again: its file may have been flagged meanwhile). */
  laneNow(id: number): LaneName | null {
    const r = this.stmts.laneOfRow.get(id);
    return r ? laneAt(r.lane) : null;
  }

  /** Flagged photos back among the photos (the crew sends flagged frames like the others again). */
  unflag(): number {
    return this.stmts.unflag.run(UNFLAGGED, laneRank(laneOf(UNFLAGGED, this.setting))).changes;
  }

  /** Files and bytes still to send of a target, per lane (failed files wait for the crew, not the link). */
  left(targetId: number): LaneLeft[] {
    return this.stmts.left
      .all(targetId)
      .map((r) => ({ lane: laneAt(r.lane), files: r.files, bytes: r.bytes }));
  }

  /** The engine's measure of the link (bytes/s the bucket took), kept for readers of the queue (`status`). */
  saveRate(targetId: number, bytesPerSecond: number, now: number): void {
    this.stmts.saveRate.run(`link-rate:${targetId}`, JSON.stringify({ bytesPerSecond, at: now }));
  }

  /** The rate the engine measured last, if within `maxAgeMs`; else 0 (unknown). */
  recentRate(targetId: number, now: number, maxAgeMs = 10 * 60_000): number {
    const raw = this.stmts.savedRate.get(`link-rate:${targetId}`)?.value;
    if (raw === undefined) return 0;
    try {
      const { bytesPerSecond, at } = JSON.parse(raw) as { bytesPerSecond?: unknown; at?: unknown };
      if (typeof bytesPerSecond !== 'number' || typeof at !== 'number') return 0;
      return now - at <= maxAgeMs && bytesPerSecond > 0 ? bytesPerSecond : 0;
    } catch {
      return 0;
    }
  }

  /** Puts every row in its lane under `setting` (a changed setting holds for files already queued). */
  order(setting: LaneSetting): void {
    this.setting = setting;
    this.db.transaction(() => {
      for (const c of FILE_CLASSES) {
        const rank = laneRank(laneOf(c, setting));
        this.stmts.rerankDown.run(rank, c, rank);
        this.stmts.rerankUp.run(rank, c, rank);
      }
    })();
  }
}
