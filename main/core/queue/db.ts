import Database from 'better-sqlite3';
import fs from 'node:fs';
import path from 'node:path';
import { DmsError, QueueDamagedError } from '../errors.js';

/**
 * Schema history. Each entry runs once, in order, inside a transaction;
 * PRAGMA user_version records how many ran. Never edit an entry that has
 * shipped: append a new one.
 */
const MIGRATIONS: readonly string[] = [
  `
  CREATE TABLE files (
    id INTEGER PRIMARY KEY,
    -- The source (card identity or watched folder) and the path inside it:
    -- a card mounted at another mount point is still the same file.
    source_id TEXT NOT NULL,
    rel_path TEXT NOT NULL,
    size INTEGER NOT NULL,
    mtime_ms INTEGER NOT NULL,
    abs_path TEXT NOT NULL,
    state TEXT NOT NULL,
    -- the state to go back to after waiting-for-source or failed (on retry)
    resume_state TEXT,
    fingerprint TEXT,
    tiny_fingerprint TEXT,
    info_json TEXT,
    object_key TEXT,
    upload_id TEXT,
    part_size INTEGER,
    outcome TEXT,
    -- 1 once a callback was sent whose answer we did not get: before sending
    -- it again we ask fast-upload whether the server already has the file.
    callback_unknown INTEGER NOT NULL DEFAULT 0,
    bytes_sent INTEGER NOT NULL DEFAULT 0,
    attempts INTEGER NOT NULL DEFAULT 0,
    next_attempt_at INTEGER NOT NULL DEFAULT 0,
    error_kind TEXT,
    error_message TEXT,
    created_at INTEGER NOT NULL,
    updated_at INTEGER NOT NULL,
    done_at INTEGER,
    UNIQUE (source_id, rel_path, size, mtime_ms)
  );
  CREATE INDEX files_state ON files (state, next_attempt_at);
  CREATE INDEX files_abs_path ON files (abs_path);
  CREATE TABLE parts (
    file_id INTEGER NOT NULL REFERENCES files (id) ON DELETE CASCADE,
    part_number INTEGER NOT NULL,
    etag TEXT NOT NULL,
    size INTEGER NOT NULL,
    PRIMARY KEY (file_id, part_number)
  );
  CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
  `,
  `
  -- What each card (or folder) brought, per flight folder and sync session.
  CREATE TABLE history (
    id INTEGER PRIMARY KEY,
    session INTEGER NOT NULL,
    source_id TEXT NOT NULL,
    label TEXT NOT NULL,
    folder TEXT NOT NULL,
    started_at INTEGER NOT NULL,
    finished_at INTEGER,
    files INTEGER NOT NULL DEFAULT 0,
    bytes INTEGER NOT NULL DEFAULT 0,
    fast_uploaded INTEGER NOT NULL DEFAULT 0,
    failed INTEGER NOT NULL DEFAULT 0,
    UNIQUE (session, folder)
  );
  CREATE INDEX history_source ON history (source_id, started_at);
  -- The wayline a flight folder belongs to: matched by name, or set by the user.
  CREATE TABLE folder_waylines (
    folder TEXT PRIMARY KEY,
    wayline_id TEXT,
    wayline_name TEXT,
    how TEXT NOT NULL
  );
  `,
  `
  -- Where the work goes: a server (its base URL) and workspace, or the
  -- built-in local service. A file is done FOR A TARGET: switching servers
  -- syncs the card again for the new one and keeps the old rows as history.
  CREATE TABLE targets (
    id INTEGER PRIMARY KEY,
    key TEXT NOT NULL UNIQUE,
    label TEXT NOT NULL,
    workspace_id TEXT NOT NULL DEFAULT '',
    created_at INTEGER NOT NULL,
    last_used_at INTEGER NOT NULL
  );
  -- Rows written before targets existed went to a server we can no longer
  -- name: they stay as history, and the next sync asks the current target.
  INSERT INTO targets (id, key, label, created_at, last_used_at)
    VALUES (1, 'legacy:', 'the server used before version 3 of the queue', 0, 0);
  CREATE TABLE files_v3 (
    id INTEGER PRIMARY KEY,
    target_id INTEGER NOT NULL REFERENCES targets (id),
    source_id TEXT NOT NULL,
    rel_path TEXT NOT NULL,
    size INTEGER NOT NULL,
    mtime_ms INTEGER NOT NULL,
    abs_path TEXT NOT NULL,
    state TEXT NOT NULL,
    resume_state TEXT,
    fingerprint TEXT,
    tiny_fingerprint TEXT,
    info_json TEXT,
    object_key TEXT,
    upload_id TEXT,
    part_size INTEGER,
    outcome TEXT,
    callback_unknown INTEGER NOT NULL DEFAULT 0,
    bytes_sent INTEGER NOT NULL DEFAULT 0,
    attempts INTEGER NOT NULL DEFAULT 0,
    next_attempt_at INTEGER NOT NULL DEFAULT 0,
    error_kind TEXT,
    error_message TEXT,
    created_at INTEGER NOT NULL,
    updated_at INTEGER NOT NULL,
    done_at INTEGER,
    UNIQUE (target_id, source_id, rel_path, size, mtime_ms)
  );
  INSERT INTO files_v3 SELECT id, 1, source_id, rel_path, size, mtime_ms, abs_path, state, resume_state,
    fingerprint, tiny_fingerprint, info_json, object_key, upload_id, part_size, outcome, callback_unknown,
    bytes_sent, attempts, next_attempt_at, error_kind, error_message, created_at, updated_at, done_at FROM files;
  DROP TABLE files;
  ALTER TABLE files_v3 RENAME TO files;
  CREATE INDEX files_due ON files (target_id, state, next_attempt_at);
  CREATE INDEX files_abs_path ON files (abs_path);
  CREATE INDEX files_fingerprint ON files (target_id, fingerprint);
  CREATE INDEX files_source ON files (target_id, source_id, state);
  ALTER TABLE history ADD COLUMN target_id INTEGER NOT NULL DEFAULT 1;
  -- Waylines belong to a workspace: a folder's match is per target.
  CREATE TABLE folder_waylines_v3 (
    target_id INTEGER NOT NULL,
    folder TEXT NOT NULL,
    wayline_id TEXT,
    wayline_name TEXT,
    how TEXT NOT NULL,
    PRIMARY KEY (target_id, folder)
  );
  INSERT INTO folder_waylines_v3 SELECT 1, folder, wayline_id, wayline_name, how FROM folder_waylines;
  DROP TABLE folder_waylines;
  ALTER TABLE folder_waylines_v3 RENAME TO folder_waylines;
  -- The aircraft serial a flight's files carry (XMP DroneSerialNumber), so
  -- files of that flight without one (payload cameras, videos) send it too.
  CREATE TABLE flight_serials (
    source_id TEXT NOT NULL,
    file_group_id TEXT NOT NULL,
    sn TEXT NOT NULL,
    PRIMARY KEY (source_id, file_group_id)
  );
  INSERT OR IGNORE INTO flight_serials
    SELECT source_id, json_extract(info_json, '$.fileGroupId'), json_extract(info_json, '$.sn') FROM files
    WHERE json_extract(info_json, '$.sn') IS NOT NULL AND json_extract(info_json, '$.fileGroupId') IS NOT NULL;
  `,
  `
  -- Verified offload. RTK/PPK files travel with their flight: kind 'rtk'
  -- (no callback: outcome 'stored' once their object is checked).
  ALTER TABLE files ADD COLUMN kind TEXT NOT NULL DEFAULT 'media';
  -- The object as last checked in the bucket: {"at","found","size","etag","checksum","by"}.
  ALTER TABLE files ADD COLUMN verified_json TEXT;
  -- Each source's last scan: complete = read to the end (a pulled card is not).
  CREATE TABLE source_scans (
    source_id TEXT PRIMARY KEY,
    complete INTEGER NOT NULL,
    at INTEGER NOT NULL
  );
  -- The exposure logs (MRK) of a flight, parsed when hashed: the report needs
  -- them after the card is gone.
  CREATE TABLE flight_mrk (
    source_id TEXT NOT NULL,
    rel_path TEXT NOT NULL,
    parsed_json TEXT NOT NULL,
    PRIMARY KEY (source_id, rel_path)
  );
  -- Flights the crew accepted as they are (flagged incomplete, fine to format).
  CREATE TABLE accepted_flights (
    target_id INTEGER NOT NULL,
    source_id TEXT NOT NULL,
    folder TEXT NOT NULL,
    at INTEGER NOT NULL,
    PRIMARY KEY (target_id, source_id, folder)
  );
  `,
  `
  -- One label per source: what the crew calls the card (its volume label)
  -- or the folder, as last seen; the history's labels fill it for old cards.
  CREATE TABLE sources (
    source_id TEXT PRIMARY KEY,
    label TEXT NOT NULL,
    seen_at INTEGER NOT NULL
  );
  INSERT INTO sources (source_id, label, seen_at)
    SELECT source_id, label, MAX(started_at) FROM history GROUP BY source_id;
  `,
  `
  -- What the last complete scan of a source found and did not keep, with the
  -- reason (a link out of the card, a name that is not text, a pipe, excluded
  -- in the settings...): named in the verdict; blocking = its content exists
  -- on the card only.
  CREATE TABLE source_skips (
    source_id TEXT NOT NULL,
    rel_path TEXT NOT NULL,
    kind TEXT NOT NULL,
    message TEXT NOT NULL,
    blocking INTEGER NOT NULL,
    PRIMARY KEY (source_id, rel_path)
  );
  -- The object key the server recorded a callback under, when it is not the one we sent.
  ALTER TABLE files ADD COLUMN server_key TEXT;
  `,
  `
  -- Local destinations (a laptop's SSD, an external drive) a card is copied to:
  -- 'archive' (never deleted by the agent) or 'staging' (cleaned once every file
  -- of a card is verified in the workspace and older than keep_days).
  CREATE TABLE destinations (
    id INTEGER PRIMARY KEY,
    path TEXT NOT NULL UNIQUE,
    label TEXT NOT NULL,
    role TEXT NOT NULL,
    keep_days INTEGER
  );
  -- One verified (or failed) copy of one version of a card file on one
  -- destination: by the file's version, not by the upload target (a copy on a
  -- disk is a copy whatever the server). copy_size and copy_mtime_ms: the copy
  -- as written, so a copy changed or removed later is seen.
  CREATE TABLE copies (
    source_id TEXT NOT NULL,
    rel_path TEXT NOT NULL,
    size INTEGER NOT NULL,
    mtime_ms INTEGER NOT NULL,
    destination_id INTEGER NOT NULL REFERENCES destinations (id),
    path TEXT NOT NULL,
    state TEXT NOT NULL,
    md5 TEXT,
    copy_size INTEGER,
    copy_mtime_ms INTEGER,
    read_back TEXT,
    at INTEGER NOT NULL,
    error TEXT,
    PRIMARY KEY (source_id, rel_path, size, mtime_ms, destination_id)
  );
  CREATE INDEX copies_destination ON copies (destination_id, source_id);
  -- A destination that stopped for a card (full, unplugged, read-only), with its reason.
  CREATE TABLE destination_stops (
    destination_id INTEGER NOT NULL REFERENCES destinations (id),
    source_id TEXT NOT NULL,
    message TEXT NOT NULL,
    at INTEGER NOT NULL,
    PRIMARY KEY (destination_id, source_id)
  );
  `,
  // Issue 29, copies (one owner for a copy's state): the copy records' states
  // (wanted, writing, verified, failed, stopped, forgotten) live in copies.state;
  // the destinations that count for each card (settings + those named in its last
  // run); a destination the crew forgot; the volume a destination was written on
  // (its st_dev), so a drive gone (a bare mount point left) is told from a folder.
  `
  ALTER TABLE destinations ADD COLUMN volume TEXT;
  ALTER TABLE destinations ADD COLUMN forgotten_at INTEGER;
  CREATE TABLE card_destinations (
    source_id TEXT NOT NULL,
    destination_id INTEGER NOT NULL REFERENCES destinations (id),
    at INTEGER NOT NULL,
    PRIMARY KEY (source_id, destination_id)
  );
  CREATE INDEX copies_state ON copies (state, source_id);
  UPDATE copies SET state = 'stopped' WHERE state = 'failed' AND error NOT LIKE '%differs from the card%';
  INSERT OR IGNORE INTO card_destinations (source_id, destination_id, at)
    SELECT DISTINCT source_id, destination_id, 0 FROM copies;
  `,
  `
  -- Target states (issue 30, targets.ts): 'unanswered' until the target's
  -- server answered a request about a file, so a mistyped address is said for
  -- what it is and never taken for the server the crew works with. Targets
  -- holding a file the server answered for (done, or uploading with its
  -- credentials) count as answered.
  ALTER TABLE targets ADD COLUMN target_state TEXT NOT NULL DEFAULT 'unanswered';
  UPDATE targets SET target_state = 'answered'
    WHERE id IN (SELECT target_id FROM files WHERE state IN ('uploading', 'uploaded', 'done'));
  `,
  `
  -- Lanes (issue 31; queue/lanes.ts): what goes first. file_class: what the
  -- file is to the office (rtk, log, photo, video...), set by the queue when
  -- it opens for rows recorded before; lane: its lane's rank under the
  -- current setting (0 goes first). Due rows are listed lane by lane.
  ALTER TABLE files ADD COLUMN file_class TEXT;
  ALTER TABLE files ADD COLUMN lane INTEGER NOT NULL DEFAULT 0;
  CREATE INDEX files_lane_due ON files (target_id, lane, state, next_attempt_at);
  `,
  `
  -- Issue 33: the XXH3-64 a copy's read-back matched (the card's bytes as read
  -- once), recorded in the copy's ASC MHL beside the MD5; NULL for copies
  -- verified before, or read back with MD5 (no XXH3 module in the app).
  ALTER TABLE copies ADD COLUMN xxh3 TEXT;
  -- A card's flights as last analysed (offload/card.ts), with a stamp of
  -- what they were made from (its rows' ids and times, its MRK files, the
  -- wayline matches, the settings, the version): a card re-inserted
  -- unchanged gets them without reading every file's info again.
  CREATE TABLE flight_summaries (
    target_id INTEGER NOT NULL,
    source_id TEXT NOT NULL,
    stamp TEXT NOT NULL,
    flights_json TEXT NOT NULL,
    PRIMARY KEY (target_id, source_id)
  );
  `,
  `
  -- Issue 33: the lanes' re-rank at every open (queue/lanes.ts) and the
  -- look for rows without a class read every row of the queue; by class and
  -- lane they read only the rows that move (none when the setting did not change).
  CREATE INDEX files_class_lane ON files (file_class, lane);
  `,
  `
  -- Issue 29: copies are wanted per card. read_by_copies: 1 when the row's
  -- card has destinations that count for it (card_destinations, not
  -- forgotten): its files not read yet are the copy lane's to read (copied
  -- and hashed in one read); 0: the upload lane reads them itself. Written
  -- with card_destinations, in the same transactions (queue/copies.ts), and
  -- from it when a row is recorded. The index lists each lane's unread rows
  -- in id order, and the earliest due, without reading the other lane's.
  ALTER TABLE files ADD COLUMN read_by_copies INTEGER NOT NULL DEFAULT 0;
  UPDATE files SET read_by_copies = 1 WHERE source_id IN (
    SELECT cd.source_id FROM card_destinations cd JOIN destinations d ON d.id = cd.destination_id
    WHERE d.forgotten_at IS NULL);
  CREATE INDEX files_unread ON files (target_id, read_by_copies, next_attempt_at, lane) WHERE state = 'discovered';
  `,
  `
  -- Issue 33: how a verified copy was written: 'direct' (O_DIRECT, around the
  -- page cache) or 'cache' (a file system that refuses it); said in the copy's
  -- ASC MHL as its read-back is. NULL for copies verified before (through the cache).
  ALTER TABLE copies ADD COLUMN written TEXT;
  `,
  `
  -- Issue 33: how many times each card's rows changed (every insert, update
  -- and delete of a file row, counted by these triggers in the change's own
  -- transaction; it only ever goes up). A card's "safe to format" verdict is
  -- kept with the count it was made at (offload/card.ts) and made again
  -- only when the count moved: a re-inserted card of 10,000 done files does
  -- not read and weigh every file again.
  CREATE TABLE source_changes (
    target_id INTEGER NOT NULL,
    source_id TEXT NOT NULL,
    n INTEGER NOT NULL,
    PRIMARY KEY (target_id, source_id)
  );
  INSERT INTO source_changes (target_id, source_id, n)
    SELECT target_id, source_id, 1 FROM files GROUP BY target_id, source_id;
  CREATE TRIGGER files_insert_counted AFTER INSERT ON files BEGIN
    INSERT INTO source_changes (target_id, source_id, n) VALUES (NEW.target_id, NEW.source_id, 1)
      ON CONFLICT (target_id, source_id) DO UPDATE SET n = n + 1;
  END;
  CREATE TRIGGER files_update_counted AFTER UPDATE ON files BEGIN
    INSERT INTO source_changes (target_id, source_id, n) VALUES (NEW.target_id, NEW.source_id, 1)
      ON CONFLICT (target_id, source_id) DO UPDATE SET n = n + 1;
    INSERT INTO source_changes (target_id, source_id, n) VALUES (OLD.target_id, OLD.source_id, 1)
      ON CONFLICT (target_id, source_id) DO UPDATE SET n = n + 1;
  END;
  CREATE TRIGGER files_delete_counted AFTER DELETE ON files BEGIN
    INSERT INTO source_changes (target_id, source_id, n) VALUES (OLD.target_id, OLD.source_id, 1)
      ON CONFLICT (target_id, source_id) DO UPDATE SET n = n + 1;
  END;
  `,
];

export const SCHEMA_VERSION = MIGRATIONS.length;

export type Db = Database.Database;

/** How often a store closed cleanly every time is read through for damage anyway. */
export const QUICK_CHECK_EVERY_MS = 24 * 3600_000;

/**
 * Opens (creating if needed) the queue database: WAL so that readers (status,
 * the UI) never block the engine, and a busy timeout so that a second process
 * waits briefly instead of failing at once. `now`: the clock of the daily
 * check (tests).
 */
export function openDatabase(file: string, now: () => number = Date.now): Db {
  fs.mkdirSync(path.dirname(file), { recursive: true });
  // SQLite removes the write-ahead log when the last connection closes: one
  // left behind means the store was not closed (a crash, a power cut, a
  // killed process, a pulled drive) or another process has it open now.
  const unclean = fs.existsSync(`${file}-wal`);
  let db: Db;
  try {
    db = new Database(file, { timeout: 5000 });
    db.pragma('journal_mode = WAL');
    db.pragma('synchronous = NORMAL');
    db.pragma('foreign_keys = ON');
  } catch (err) {
    throw describeOpenError(file, err);
  }
  try {
    migrate(db);
    // Damage inside the file (a bad page) only shows when that page is read:
    // check it, so it is handled like damage at the header (set aside,
    // rebuilt from a rescan) instead of failing at every start. It reads
    // every page of the store (all cards ever synced: 0.1-0.3 s at 10,000
    // files), so it runs after an unclean end and once a day, not at every
    // open. Safe: SQLite's log keeps a store whole across a crash or a power
    // cut (at worst the last transactions are lost, never a page half
    // written); a page is damaged by the disk or the file system under it,
    // which shows first after such an end, and a disk that fails quietly is
    // caught within a day. Damage in the header or the schema still fails
    // the open itself, at every open.
    quickCheckIfDue(db, unclean, now());
  } catch (err) {
    db.close();
    throw err instanceof DmsError ? err : describeOpenError(file, err);
  }
  return db;
}

function quickCheckIfDue(db: Db, unclean: boolean, at: number): void {
  const last = Number(
    db.prepare<[], { value: string }>("SELECT value FROM meta WHERE key = 'quick_check_at'").get()?.value ??
      0,
  );
  if (!unclean && at >= last && at - last < QUICK_CHECK_EVERY_MS) return;
  const check = db.pragma('quick_check', { simple: true });
  if (check !== 'ok') throw Object.assign(new Error(String(check)), { code: 'SQLITE_CORRUPT' });
  db.prepare("INSERT OR REPLACE INTO meta (key, value) VALUES ('quick_check_at', ?)").run(String(at));
}

function migrate(db: Db): void {
  const current = db.pragma('user_version', { simple: true }) as number;
  if (current > MIGRATIONS.length) {
    throw new DmsError(
      'invalid-input',
      `The queue database was written by a newer version of Drone Media Sync (schema ${current}, this version knows ${MIGRATIONS.length}). Update the app; the queue was left untouched.`,
      { retryable: false },
    );
  }
  if (current === MIGRATIONS.length) return;
  // A migration may rebuild a table (SQLite's way to change a constraint):
  // with foreign keys on, dropping the old table would delete its parts.
  // The switch only works outside a transaction; the check runs before commit.
  db.pragma('foreign_keys = OFF');
  try {
    // All the steps in one transaction: a crash leaves the store at the version it had, and
    // each page is written to the log once, not once per step that touched it (a new store's
    // 15 steps wrote 350 KB of log for 200 KB of schema: a nearly full disk failed here,
    // before the run could say so in its summary).
    db.transaction(() => {
      for (let v = current; v < MIGRATIONS.length; v++) {
        db.exec(MIGRATIONS[v] as string);
        const broken = db.pragma('foreign_key_check') as unknown[];
        if (broken.length > 0)
          throw new Error(`migration ${v + 1} left ${broken.length} dangling references`);
        db.pragma(`user_version = ${v + 1}`);
      }
    })();
  } finally {
    db.pragma('foreign_keys = ON');
  }
}

function describeOpenError(file: string, err: unknown): DmsError {
  const code = (err as { code?: string }).code ?? '';
  if (code === 'SQLITE_BUSY' || code === 'SQLITE_LOCKED') {
    return new DmsError(
      'invalid-input',
      `The queue database ${file} is locked by another program. Close the other Drone Media Sync and try again.`,
      { cause: err },
    );
  }
  if (code === 'SQLITE_FULL' || code === 'ENOSPC') {
    return new DmsError(
      'invalid-input',
      `The disk holding ${file} is full. Free some space; the queue is kept.`,
      { cause: err },
    );
  }
  if (code === 'SQLITE_CORRUPT' || code === 'SQLITE_NOTADB') return new QueueDamagedError(file, err);
  const message = err instanceof Error ? err.message : String(err);
  return new DmsError('invalid-input', `The queue database ${file} cannot be opened: ${message}`, {
    cause: err,
  });
}
