import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import Database from 'better-sqlite3';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { DmsError, QueueDamagedError } from '../errors.js';
import { openDatabase, QUICK_CHECK_EVERY_MS, SCHEMA_VERSION } from './db.js';
import { fileInfoSchema, type FileInfo } from './file-info.js';
import { backoffDelay, COMMIT_WAIT_MS, Queue, type QueueRow, type TargetRef } from './queue.js';
import { IllegalTransition } from './transitions.js';

let dir: string;
let file: string;
beforeEach(() => {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'dms-queue-'));
  file = path.join(dir, 'queue.db');
});
afterEach(() => fs.rmSync(dir, { recursive: true, force: true }));

const SERVER_A: TargetRef = {
  key: 'https://a.example#ws-1',
  label: 'https://a.example',
  workspaceId: 'ws-1',
};
const SERVER_B: TargetRef = {
  key: 'https://b.example#ws-9',
  label: 'https://b.example',
  workspaceId: 'ws-9',
};

/** A queue bound to a target, as every session binds it. */
function open(now?: () => number, target = SERVER_A): Queue {
  const q = new Queue(file, now);
  q.bindTarget(target);
  return q;
}

/** The rows due now, oldest first, taken as the engine takes them: readyIds, then dueRow for each. */
const due = (q: Queue, limit: number) =>
  q
    .readyIds(limit)
    .map((id) => q.dueRow(id))
    .filter((r) => r !== undefined);

const info = (name: string, extra: Partial<FileInfo> = {}): FileInfo => ({
  name,
  path: '',
  fileGroupId: 'group-1',
  metadata: {},
  subFileType: 0,
  isOriginal: true,
  ...extra,
});

/** The engine's changes, through the store's one door. */
const hashed = (q: Queue, row: QueueRow, fp: string, i: FileInfo): QueueRow =>
  q.apply(row, { type: 'hashed', fingerprint: fp, tinyFingerprint: 'tiny', info: i });
const get = (q: Queue, id: number): QueueRow => q.get(id) as QueueRow;
const multipart = (q: Queue, id: number, key: string, uploadId: string): QueueRow =>
  q.apply(get(q, id), { type: 'multipart-started', objectKey: key, uploadId, partSize: 8 });
const uploaded = (q: Queue, id: number, key: string): QueueRow =>
  q.apply(get(q, id), { type: 'uploaded', objectKey: key, bytesSent: 0, verified: null });
const recorded = (q: Queue, id: number): QueueRow => {
  let row = get(q, id);
  if (row.state === 'hashed') row = q.apply(row, { type: 'not-known' });
  if (row.state !== 'uploaded') row = uploaded(q, id, `k/${id}`);
  return q.apply(row, { type: 'recorded' });
};
const retryLater = (q: Queue, id: number, error: DmsError, now: number): number => {
  const row = get(q, id);
  const at = now + Math.max(1000, backoffDelay(row.attempts + 1));
  q.apply(row, { type: 'retry', error, at, callbackSettled: false });
  return at - now;
};

const f = (rel: string, size = 10, mtimeMs = 1000) => ({
  sourceId: 'card-1',
  relPath: rel,
  absPath: `/media/card/${rel}`,
  size,
  mtimeMs,
});

describe('Queue', () => {
  it('uses WAL and records the schema version in the file', () => {
    new Queue(file).close();
    const db = new Database(file, { readonly: true });
    expect(db.pragma('journal_mode', { simple: true })).toBe('wal');
    expect(db.pragma('user_version', { simple: true })).toBe(SCHEMA_VERSION);
    db.close();
  });

  it('creates a new store in one transaction: its log holds each page once, not once per schema step', () => {
    // A nearly full disk (test/faults/queue-db.test.ts "full disk") failed at the creation
    // itself when every step was its own commit: 350 KB of log for 200 KB of schema.
    const db = openDatabase(file);
    try {
      const log = fs.statSync(`${file}-wal`).size;
      db.pragma('wal_checkpoint(TRUNCATE)');
      const store = fs.statSync(file).size;
      // A WAL frame is a page and a 24-byte header; the quick check's mark adds a frame or two.
      const frames = (bytes: number) => Math.ceil(bytes / (4096 + 24));
      expect(frames(log)).toBeLessThanOrEqual(store / 4096 + 4);
    } finally {
      db.close();
    }
  });

  it('refuses a database written by a newer schema and leaves it untouched', () => {
    new Queue(file).close();
    const db = new Database(file);
    db.pragma(`user_version = ${SCHEMA_VERSION + 5}`);
    db.close();
    expect(() => new Queue(file)).toThrow(/newer version/);
    const again = new Database(file, { readonly: true });
    expect(again.pragma('user_version', { simple: true })).toBe(SCHEMA_VERSION + 5);
    again.close();
  });

  it('reads the store through for damage after an unclean end and once a day, not at every open', () => {
    const day = QUICK_CHECK_EVERY_MS;
    const t0 = Date.UTC(2026, 10, 27, 8);
    const q = open(() => t0);
    // Enough rows for pages of their own, past the schema's.
    q.observe(
      Array.from({ length: 3000 }, (_, i) => f(`DCIM/100MEDIA/DJI_${String(i).padStart(4, '0')}.JPG`)),
    );
    q.close();
    expect(fs.existsSync(`${file}-wal`)).toBe(false);
    const checkedAt = () => {
      // Read-write: a read-only connection cannot remove the log when it closes (it would look unclean).
      const db = new Database(file);
      const v = db.prepare("SELECT value FROM meta WHERE key = 'quick_check_at'").get() as { value: string };
      db.close();
      return Number(v.value);
    };
    expect(checkedAt()).toBe(t0);
    // A page of the rows is damaged (the disk under the store) after a clean close.
    const size = fs.statSync(file).size;
    const fd = fs.openSync(file, 'r+');
    fs.writeSync(fd, Buffer.alloc(4096, 0xa5), 0, 4096, size - 4096);
    fs.closeSync(fd);
    // Closed cleanly, checked an hour ago: not read through (the pages are read when used).
    openDatabase(file, () => t0 + 3600_000).close();
    expect(checkedAt()).toBe(t0);
    // A day later it is: the damage is found at the open, as damage.
    expect(() => openDatabase(file, () => t0 + day + 1)).toThrow(QueueDamagedError);
    // After an unclean end (its write-ahead log left behind), at once.
    fs.rmSync(dir, { recursive: true, force: true });
    fs.mkdirSync(dir);
    open(() => t0).close();
    const other = new Database(file); // another process holding it, as a crashed one leaves it: the log is there
    other.prepare("INSERT INTO meta (key, value) VALUES ('x', 'y')").run();
    expect(fs.existsSync(`${file}-wal`)).toBe(true);
    openDatabase(file, () => t0 + 60_000).close();
    other.close();
    expect(checkedAt()).toBe(t0 + 60_000);
  });

  it('says clearly when the file is not a database', () => {
    fs.writeFileSync(file, 'this is not sqlite'.repeat(100));
    expect(() => new Queue(file)).toThrow(/damaged|cannot be opened/);
  });

  it('recognises done files by path+size+mtime across restarts, and re-queues changed ones', () => {
    let q = open();
    const first = q.observe([f('a.jpg'), f('b.jpg')]);
    expect(first.pending).toHaveLength(2);
    hashed(q, first.pending[0]!, 'a'.repeat(32), info('a.jpg'));
    recorded(q, first.pending[0]!.id);
    q.close();

    q = open();
    const second = q.observe([f('a.jpg'), f('b.jpg')]);
    expect(second.alreadyDone).toBe(1);
    expect(second.pending.map((r) => r.relPath)).toEqual(['b.jpg']);

    // a.jpg changed on the card: new version to upload, old done row kept as history
    const third = q.observe([f('a.jpg', 11, 2000)]);
    expect(third.pending).toHaveLength(1);
    expect(third.pending[0]!.state).toBe('discovered');
    expect('fingerprint' in third.pending[0]!).toBe(false);
    expect(q.list().filter((r) => r.relPath === 'a.jpg')).toHaveLength(2);
    q.close();
  });

  it('a re-inserted card of done files is recognised in one read per batch, not one per file (issue 33)', () => {
    const q = open();
    const files = Array.from({ length: 500 }, (_, i) => f(`DCIM/100/F${i}.JPG`));
    // A second source in the same batch, and a file twice: each still gets its own row, once.
    const other = { ...f('DCIM/100/F0.JPG'), sourceId: 'card-2', absPath: '/media/card2/DCIM/100/F0.JPG' };
    const first = q.observe([...files, other, files[1]!]);
    expect(first.pending).toHaveLength(502);
    expect(new Set(first.pending.map((r) => r.id)).size).toBe(501);
    for (const row of first.pending.slice(0, 501)) {
      hashed(q, row, 'a'.repeat(32), info(row.relPath));
      recorded(q, row.id);
    }
    // What the store is asked: every statement run, counted on better-sqlite3's own Statement.
    const proto = Object.getPrototypeOf(new Database(':memory:').prepare('SELECT 1')) as Record<
      'get' | 'all' | 'run' | 'iterate',
      (...a: unknown[]) => unknown
    >;
    const spies = (['get', 'all', 'run', 'iterate'] as const).map((m) => vi.spyOn(proto, m));
    try {
      // A file grown since: a new version; an unknown file: a new row.
      const again = q.observe([
        ...files.slice(1),
        f('DCIM/100/F0.JPG', 11, 2000),
        f('DCIM/100/NEW.JPG'),
        other,
      ]);
      expect(again.alreadyDone).toBe(500);
      expect(again.pending.map((r) => r.relPath).sort()).toEqual(['DCIM/100/F0.JPG', 'DCIM/100/NEW.JPG']);
      const calls = spies.reduce((n, s) => n + s.mock.calls.length, 0);
      // Before: one SELECT per file (502 here). Now: a read per source, and the two new rows' writes.
      expect(calls).toBeLessThan(20);
    } finally {
      for (const s of spies) s.mockRestore();
    }
    q.close();
  });

  it("a card's done files looked at again in the bucket share a commit, not one each (issue 33)", () => {
    const q = open();
    const rows = q.observe(Array.from({ length: 300 }, (_, i) => f(`DCIM/100/V${i}.JPG`))).pending;
    const done = rows.map((row) => {
      hashed(q, row, 'b'.repeat(32), info(row.relPath));
      return recorded(q, row.id);
    });
    q.commitWaiting();
    // Another connection empties the WAL, then counts the frames the looks write (a commit writes at least one).
    const reader = new Database(file);
    try {
      reader.pragma('wal_checkpoint(TRUNCATE)');
      for (const row of done)
        q.apply(row, {
          type: 'verified',
          verified: { at: 5000, by: 'bucket', found: true, size: 10, checksum: 'match' },
        });
      // Not committed yet: another process does not see the looks until the shared commit.
      q.commitWaiting();
      const [wal] = reader.pragma('wal_checkpoint(PASSIVE)') as Array<{ log: number }>;
      // Before: 300 commits, at least 300 frames. Now one commit of the pages the rows are on.
      expect(wal!.log).toBeGreaterThan(0);
      expect(wal!.log).toBeLessThan(100);
      const seen = reader
        .prepare('SELECT COUNT(*) AS n FROM files WHERE verified_json IS NOT NULL')
        .get() as {
        n: number;
      };
      expect(seen.n).toBe(300);
    } finally {
      reader.close();
    }
    q.close();
  });

  it('drops the unfinished row of a file that changed (never uploads a stale fingerprint)', () => {
    const q = open();
    const [row] = q.observe([f('c.jpg')]).pending;
    hashed(q, row!, 'c'.repeat(32), info('c.jpg'));
    q.observe([f('c.jpg', 99, 5000)]);
    const rows = q.list().filter((r) => r.relPath === 'c.jpg');
    expect(rows).toHaveLength(1);
    expect(rows[0]!.size).toBe(99);
    expect(rows[0]!.state).toBe('discovered');
    q.close();
  });

  it('keeps multipart parts across a restart and clears them once uploaded', () => {
    let q = open();
    const [row] = q.observe([f('big.mp4', 100)]).pending;
    q.apply(hashed(q, row!, 'b'.repeat(32), info('big.mp4')), { type: 'not-known' });
    multipart(q, row!.id, 'prefix/big.mp4', 'upload-1');
    q.addPart(row!.id, { partNumber: 1, etag: '"e1"', size: 8 });
    q.addPart(row!.id, { partNumber: 2, etag: '"e2"', size: 8 });
    q.close();
    q = open();
    const again = q.get(row!.id)!;
    expect(again.state).toBe('uploading');
    expect(again.state === 'uploading' && again.multipart?.uploadId).toBe('upload-1');
    expect(q.parts(row!.id).map((p) => p.partNumber)).toEqual([1, 2]);
    uploaded(q, row!.id, 'prefix/big.mp4');
    expect(q.parts(row!.id)).toEqual([]);
    expect(q.get(row!.id)!.state).toBe('uploaded');
    q.close();
  });

  it('parks a removed source and resumes where it stopped when it comes back', () => {
    const q = open();
    const { pending } = q.observe([f('1.jpg'), f('2.jpg')]);
    q.apply(hashed(q, pending[0]!, '1'.repeat(32), info('1.jpg')), { type: 'not-known' });
    multipart(q, pending[0]!.id, 'k', 'u');
    q.addPart(pending[0]!.id, { partNumber: 1, etag: 'e', size: 8 });
    expect(q.parkSource('card-1', 'Card removed')).toBe(2);
    expect(due(q, 10)).toEqual([]);
    expect(q.counts()['waiting-for-source'].files).toBe(2);
    const back = q.observe([f('1.jpg'), f('2.jpg')]);
    expect(back.pending.map((r) => r.state)).toEqual(['uploading', 'discovered']);
    expect(q.parts(pending[0]!.id)).toHaveLength(1);
    q.close();
  });

  it('schedules retries with capped backoff and keeps failures for the user until retry', () => {
    let t = 1_000_000;
    const q = open(() => t);
    const [row] = q.observe([f('x.jpg')]).pending;
    const delay = retryLater(q, row!.id, new DmsError('network', 'down'), t);
    expect(delay).toBeGreaterThanOrEqual(1000);
    expect(due(q, 10)).toEqual([]);
    t += delay;
    expect(due(q, 10)).toHaveLength(1);
    q.apply(get(q, row!.id), {
      type: 'failed',
      error: new DmsError('rejected', 'bad model', { serverCode: -1 }),
      callbackSettled: false,
    });
    expect(q.get(row!.id)!.errorMessage).toBe('bad model');
    expect(due(q, 10)).toEqual([]);
    expect(q.retry({ absPaths: ['/media/card/x.jpg'] })).toHaveLength(1);
    expect(due(q, 10)[0]!.state).toBe('discovered');
    q.close();
  });

  it('backoff grows exponentially, is capped, and is jittered', () => {
    const policy = { baseMs: 1000, capMs: 60_000 };
    expect(backoffDelay(1, policy, () => 0)).toBe(500);
    expect(backoffDelay(3, policy, () => 1)).toBe(4000);
    expect(backoffDelay(30, policy, () => 1)).toBe(60_000);
    expect(backoffDelay(30, policy, () => 0)).toBe(30_000);
  });

  it('records 10,000 files in one transaction quickly enough to be a single scan', () => {
    const q = open();
    const files = Array.from({ length: 10_000 }, (_, i) => f(`DCIM/${i}.JPG`, 5, i));
    q.observe(files);
    const again = q.observe(files);
    expect(again.pending).toHaveLength(10_000);
    expect(q.counts().discovered.files).toBe(10_000);
    q.close();
  });

  it('keeps work per target: done for one server is still to do for another, and the old rows stay', () => {
    let q = open();
    const [row] = q.observe([f('a.jpg')]).pending;
    q.apply(hashed(q, row!, 'a'.repeat(32), info('a.jpg')), { type: 'not-known' });
    uploaded(q, row!.id, 'ws-1/a.jpg');
    recorded(q, row!.id);
    const [mid] = q.observe([f('b.jpg', 100)]).pending;
    q.apply(hashed(q, mid!, 'b'.repeat(32), info('b.jpg')), { type: 'not-known' });
    multipart(q, mid!.id, 'ws-1/b.mp4', 'upload-of-a');
    q.close();

    q = open(undefined, SERVER_B);
    const forB = q.observe([f('a.jpg'), f('b.jpg', 100)]);
    expect(forB.alreadyDone).toBe(0);
    expect(forB.pending.map((r) => [r.relPath, r.state])).toEqual([
      ['a.jpg', 'discovered'],
      ['b.jpg', 'discovered'],
    ]);
    // Nothing of A's upload (key, upload id) is reachable from B.
    expect(due(q, 10).map((r) => r.id)).not.toContain(mid!.id);
    expect(q.counts().done.files).toBe(0);
    const targets = q.targets();
    expect(targets.map((t) => t.key)).toEqual([SERVER_B.key, SERVER_A.key, 'legacy:']);
    expect(targets[1]!.counts.done.files).toBe(1);
    expect(targets[1]!.counts.uploading.files).toBe(1);
    q.close();

    // Back on A: its row continues where it was, with its own upload id.
    q = open();
    const back = q.observe([f('b.jpg', 100)]).pending[0]!;
    expect(back.id).toBe(mid!.id);
    expect(back.state === 'uploading' && back.multipart?.uploadId).toBe('upload-of-a');
    q.close();
  });

  it('status and retry bind to the target the last agent worked for', () => {
    open(undefined, SERVER_B).close();
    const q = new Queue(file);
    expect(q.bindLastTarget()).toBe(true);
    expect(q.target?.key).toBe(SERVER_B.key);
    q.close();
    fs.rmSync(file);
    const fresh = new Queue(file);
    expect(fresh.bindLastTarget()).toBe(false);
    fresh.close();
  });

  it('upgrades a version-2 queue in place: its rows and parts become history of an unnamed target', () => {
    // A queue as version 2 wrote it, with a file mid-multipart.
    const v2 = new Database(file);
    v2.exec(`
      CREATE TABLE files (id INTEGER PRIMARY KEY, source_id TEXT NOT NULL, rel_path TEXT NOT NULL, size INTEGER NOT NULL,
        mtime_ms INTEGER NOT NULL, abs_path TEXT NOT NULL, state TEXT NOT NULL, resume_state TEXT, fingerprint TEXT,
        tiny_fingerprint TEXT, info_json TEXT, object_key TEXT, upload_id TEXT, part_size INTEGER, outcome TEXT,
        callback_unknown INTEGER NOT NULL DEFAULT 0, bytes_sent INTEGER NOT NULL DEFAULT 0, attempts INTEGER NOT NULL DEFAULT 0,
        next_attempt_at INTEGER NOT NULL DEFAULT 0, error_kind TEXT, error_message TEXT, created_at INTEGER NOT NULL,
        updated_at INTEGER NOT NULL, done_at INTEGER, UNIQUE (source_id, rel_path, size, mtime_ms));
      CREATE INDEX files_state ON files (state, next_attempt_at);
      CREATE INDEX files_abs_path ON files (abs_path);
      CREATE TABLE parts (file_id INTEGER NOT NULL REFERENCES files (id) ON DELETE CASCADE, part_number INTEGER NOT NULL,
        etag TEXT NOT NULL, size INTEGER NOT NULL, PRIMARY KEY (file_id, part_number));
      CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
      CREATE TABLE history (id INTEGER PRIMARY KEY, session INTEGER NOT NULL, source_id TEXT NOT NULL, label TEXT NOT NULL,
        folder TEXT NOT NULL, started_at INTEGER NOT NULL, finished_at INTEGER, files INTEGER NOT NULL DEFAULT 0,
        bytes INTEGER NOT NULL DEFAULT 0, fast_uploaded INTEGER NOT NULL DEFAULT 0, failed INTEGER NOT NULL DEFAULT 0,
        UNIQUE (session, folder));
      CREATE TABLE folder_waylines (folder TEXT PRIMARY KEY, wayline_id TEXT, wayline_name TEXT, how TEXT NOT NULL);
      INSERT INTO files (id, source_id, rel_path, size, mtime_ms, abs_path, state, fingerprint, tiny_fingerprint, info_json,
        object_key, upload_id, part_size, created_at, updated_at)
        VALUES (7, 'card-1', 'v.mp4', 100, 1000, '/media/card/v.mp4', 'uploading', '${'d'.repeat(32)}', 'tiny',
        '${JSON.stringify(info('v.mp4', { sn: 'SN123' }))}', 'old/v.mp4', 'old-upload', 8, 1, 1);
      INSERT INTO parts VALUES (7, 1, 'e1', 8), (7, 2, 'e2', 8);
      INSERT INTO folder_waylines VALUES ('DJI_202208311455_008_W1', 'w-1', 'W1', 'exact');
      PRAGMA user_version = 2;`);
    v2.close();

    const q = open();
    expect(q.parts(7).map((p) => p.partNumber)).toEqual([1, 2]); // the table rebuild kept them
    expect(q.targets().find((t) => t.key === 'legacy:')!.counts.uploading.files).toBe(1);
    expect(q.flights.serial('card-1', 'group-1')).toBe('SN123');
    // The current target sees the card afresh: never the old key or upload id.
    const pending = q.observe([
      { sourceId: 'card-1', relPath: 'v.mp4', absPath: '/media/card/v.mp4', size: 100, mtimeMs: 1000 },
    ]).pending;
    expect(pending[0]!.id).not.toBe(7);
    expect(pending[0]!.state).toBe('discovered');
    const db = new Database(file, { readonly: true });
    expect(db.pragma('foreign_key_check')).toEqual([]);
    expect(db.prepare('SELECT target_id, folder FROM folder_waylines').all()).toEqual([
      { target_id: 1, folder: 'DJI_202208311455_008_W1' },
    ]);
    db.close();
    q.close();
  });

  it('reads a row that contradicts its state as damage, not as a half-row', () => {
    const q = open();
    const [row] = q.observe([f('x.jpg')]).pending;
    // Damage done to the file behind the store's back.
    const db = new Database(file);
    db.prepare("UPDATE files SET state = 'uploaded' WHERE id = ?").run(row!.id);
    expect(() => q.get(row!.id)).toThrow(QueueDamagedError);
    db.prepare(
      "UPDATE files SET state = 'hashed', fingerprint = 'f', tiny_fingerprint = 't', info_json = '{\"name\":1}' WHERE id = ?",
    ).run(row!.id);
    expect(() => q.get(row!.id)).toThrow(QueueDamagedError);
    db.close();
    q.close();
  });

  it('lists rows by id whatever their state, the first ones when limited, newest first when asked', () => {
    const q = open();
    const rows = q.observe(['a', 'b', 'c', 'd', 'e'].map((n) => f(`${n}.JPG`))).pending;
    // States out of id order (the index that finds a card's rows is by state).
    hashed(q, rows[1]!, '1'.repeat(32), info('b.JPG'));
    hashed(q, rows[3]!, '3'.repeat(32), info('d.JPG'));
    const ids = rows.map((r) => r.id);
    const listed = (o: Parameters<Queue['list']>[0]) => q.list({ sourceId: 'card-1', ...o }).map((r) => r.id);
    expect(listed({})).toEqual(ids);
    expect(listed({ limit: 1_000_000 })).toEqual(ids);
    expect(listed({ limit: 2 })).toEqual(ids.slice(0, 2));
    expect(listed({ newestFirst: true })).toEqual([...ids].reverse());
    expect(listed({ newestFirst: true, limit: 3 })).toEqual([...ids].reverse().slice(0, 3));
    expect(listed({ states: ['discovered'] })).toEqual([ids[0], ids[2], ids[4]]);
    q.close();
  });

  it("checks a file's info once however often its card is read (the verdict reads it several times)", () => {
    const q = open();
    const run = `run-${process.pid}-${Date.now()}`; // texts of their own: none checked by another test
    const rows = q.observe(Array.from({ length: 50 }, (_, i) => f(`DJI_${i}.JPG`))).pending;
    for (const [i, row] of rows.entries())
      hashed(q, row, i.toString(16).padStart(32, '0'), info(`DJI_${i}.JPG`, { fileGroupId: run }));
    const check = vi.spyOn(fileInfoSchema(), 'safeParse');
    try {
      const first = q.list({ sourceId: 'card-1' });
      const second = q.list({ sourceId: 'card-1' });
      expect(second).toEqual(first);
      expect(second.map((r) => ('info' in r ? r.info?.fileGroupId : undefined))).toEqual(rows.map(() => run));
      // Before: 100 (each read checked every row's info again).
      expect(check).toHaveBeenCalledTimes(50);
      // Shared by every read, so never changed by one of them.
      const r = second[0]!;
      expect(() => {
        if ('info' in r && r.info) r.info.metadata.created_time = 'changed';
      }).toThrow(TypeError);
    } finally {
      check.mockRestore();
    }
    // Damage is still damage on every read (a failed check is never kept). Another connection
    // writes: the changes that may wait are committed first (else it waits for their timer).
    q.commitWaiting();
    const db = new Database(file);
    db.prepare(`UPDATE files SET info_json = '{"name":1}' WHERE id = ?`).run(rows[0]!.id);
    db.close();
    expect(() => q.get(rows[0]!.id)).toThrow(QueueDamagedError);
    expect(() => q.get(rows[0]!.id)).toThrow(QueueDamagedError);
    // A damaged bucket check is read (and reported) by a list of the rows due for a check.
    const db2 = new Database(file);
    db2.prepare(`UPDATE files SET verified_json = '{not json' WHERE id = ?`).run(rows[1]!.id);
    db2.close();
    expect(() => q.list({ sourceId: 'card-1', checkDueBefore: 0 })).toThrow(QueueDamagedError);
    // Read a page at a time (offload/verify.ts): the ids of the rows due, then those rows, parsed.
    const dueIds = q.idsOf({ sourceId: 'card-1', checkDueBefore: 0 });
    expect(dueIds).toContain(rows[1]!.id);
    expect(() => q.rowsOf([rows[1]!.id])).toThrow(QueueDamagedError);
    q.close();
  });

  it('reads rows a page at a time: their ids oldest first, then the rows of some ids', () => {
    const q = open();
    const { pending } = q.observe([f('a.jpg'), f('b.jpg'), f('c.jpg'), f('d.jpg')]);
    const ids = q.idsOf({ sourceId: 'card-1' });
    expect(ids).toEqual(pending.map((r) => r.id).sort((a, b) => a - b));
    expect(ids).toHaveLength(4);
    expect(q.idsOf({ sourceId: 'card-2' })).toEqual([]);
    expect(q.idsOf({ sourceId: 'card-1', states: ['done'] })).toEqual([]);
    // Oldest first whatever the order asked; an id no longer there (or of no row) is left out.
    expect(q.rowsOf([ids[2]!, ids[0]!, 99_999]).map((r) => r.relPath)).toEqual(['a.jpg', 'c.jpg']);
    expect(q.rowsOf([])).toEqual([]);
    q.close();
  });

  it('knows the aircraft serial of a flight from any of its files', () => {
    const q = open();
    const [a, b] = q.observe([f('DJI_0001_W.JPG'), f('DJI_0002_W.MP4')]).pending;
    hashed(q, b!, 'b'.repeat(32), info('DJI_0002_W.MP4'));
    expect(q.flights.serial('card-1', 'group-1')).toBeUndefined();
    hashed(q, a!, 'a'.repeat(32), info('DJI_0001_W.JPG', { sn: '1581F5FJD22BR00C8V55' }));
    expect(q.flights.serial('card-1', 'group-1')).toBe('1581F5FJD22BR00C8V55');
    expect(q.flights.serial('card-2', 'group-1')).toBeUndefined();
    q.close();
  });

  it('puts a row aside without a failure, and wakes it when its twin finishes', () => {
    let t = 5_000;
    const q = open(() => t);
    const [a, b] = q.observe([f('card/a.jpg'), f('copy/a.jpg')]).pending;
    for (const r of [a!, b!]) hashed(q, r, 'E'.repeat(32), info('a.jpg'));
    q.apply(get(q, b!.id), {
      type: 'defer',
      at: t + 600_000,
      message: 'Waiting for card/a.jpg (the same content) to reach the server first.',
    });
    expect(due(q, 10).map((r) => r.id)).toEqual([a!.id]);
    expect(q.get(b!.id)!.attempts).toBe(0);
    expect(q.nextWakeAt()).toBe(0);
    recorded(q, a!.id);
    expect(q.hasDoneTwin('E'.repeat(32), b!.id)).toBe(true);
    expect(q.nextWakeAt()).toBe(605_000);
    expect(q.wakeTwins('E'.repeat(32))).toBe(1);
    expect(due(q, 10).map((r) => r.id)).toEqual([b!.id]);
    t += 1;
    expect(q.hasWork('card-1')).toBe(true);
    q.close();
  });

  it('leaves rows tried too often out of the next wake of a one-shot run', () => {
    const q = open(() => 0);
    const [row] = q.observe([f('x.jpg')]).pending;
    for (let i = 0; i < 3; i++) retryLater(q, row!.id, new DmsError('network', 'down'), 0);
    expect(q.nextWakeAt()).toBeGreaterThan(0);
    expect(q.nextWakeAt(3)).toBeNull();
    q.close();
  });

  it("a lane's next wake counts only its own rows: the upload lane's skips files not read yet", () => {
    const q = open(() => 1_000);
    const [unread, read] = q.observe([f('unread.jpg'), f('read.jpg')]).pending;
    hashed(q, read!, 'F'.repeat(32), info('read.jpg'));
    retryLater(q, read!.id, new DmsError('network', 'down'), 0);
    const readAt = q.get(read!.id)!.nextAttemptAt;
    expect(readAt).toBeGreaterThan(1_000);
    // The file not read yet is due now: it wakes the copy lane, never the upload lane.
    expect(q.nextWakeAt()).toBe(0);
    expect(q.nextWakeAt(undefined, ['discovered'])).toBe(0);
    expect(q.nextWakeAt(undefined, ['hashed', 'fast-upload-checked', 'uploading', 'uploaded'])).toBe(readAt);
    expect(q.nextWakeAt(1, ['hashed'])).toBeNull();
    expect(unread!.state).toBe('discovered');
    q.close();
  });

  it('refuses a change its table does not allow, and one for a row that moved on meanwhile', () => {
    const q = open();
    const [row] = q.observe([f('x.jpg')]).pending;
    // A discovered file cannot be called uploaded: the pure table refuses it.
    expect(() => q.apply(row!, { type: 'recorded' })).toThrow(IllegalTransition);
    // The card was pulled after the row was read: the stale row is not written over.
    expect(q.parkSource('card-1', 'Card removed')).toBe(1);
    expect(() => hashed(q, row!, 'x'.repeat(32), info('x.jpg'))).toThrow(/moved on to waiting-for-source/);
    expect(q.get(row!.id)!.state).toBe('waiting-for-source');
    q.close();
  });
});

/** Commits written to the queue's write-ahead log so far (frames whose header carries the database size). */
function walCommits(): number {
  const wal = fs.readFileSync(`${file}-wal`);
  const pageSize = wal.readUInt32BE(8);
  let commits = 0;
  for (let at = 32; at + 24 + pageSize <= wal.length; at += 24 + pageSize)
    if (wal.readUInt32BE(at + 4)) commits++;
  return commits;
}

describe('Queue: changes that may wait share a commit', () => {
  /** A small file's way as the engine takes it: the server asked, one PUT, the callback, the history count. */
  const smallFileWay = (q: Queue, row: QueueRow, i: number) => {
    let r = hashed(q, row, i.toString(16).padStart(32, '0'), info(`DJI_${i}.JPG`));
    r = q.apply(r, { type: 'not-known' });
    r = q.apply(r, { type: 'uploaded', objectKey: `k/${i}`, bytesSent: 10, verified: null });
    r = q.apply(r, { type: 'callback-sent' });
    q.apply(r, { type: 'recorded' });
    q.history.record({ sourceId: 'card-1', label: 'card', folder: 'f', size: 10, outcome: 'uploaded' });
    // The engine releases the file's content: twins waiting for it (none here) are woken.
    q.wakeTwins(i.toString(16).padStart(32, '0'));
  };

  it('commits once per small file (the callback), not once per change', () => {
    const q = open();
    const [first, ...rows] = q.observe(Array.from({ length: 21 }, (_, i) => f(`DJI_${i}.JPG`))).pending;
    smallFileWay(q, first!, 99); // the server's first answer: its target is marked answered (once)
    const before = walCommits();
    rows.forEach((row, i) => smallFileWay(q, row, i));
    q.commitWaiting();
    // Before: 6 per file (5 changes and the history count), 120 in all; then 2 (upload, callback);
    // now 1: the single PUT's 'uploaded' waits for 'callback-sent' (waking no twin committed).
    expect(walCommits() - before).toBe(rows.length + 1);
    expect(q.list().map((r) => r.state)).toEqual(Array(21).fill('done'));
    q.close();
  });

  it('has "callback-sent" and what waited for it committed before the callback can go', () => {
    const q = open();
    const [first, row] = q.observe([f('DJI_0000.JPG'), f('DJI_0001.JPG')]).pending;
    smallFileWay(q, first!, 99);
    const other = () => {
      const db = new Database(file, { readonly: true });
      try {
        return db
          .prepare<[number], { state: string; callback_unknown: number }>('SELECT * FROM files WHERE id = ?')
          .get(row!.id);
      } finally {
        db.close();
      }
    };
    let r = hashed(q, row!, 'a'.repeat(32), info('DJI_0001.JPG'));
    r = q.apply(r, { type: 'not-known' });
    // What a crash now leaves (another process sees only what is committed): the file read again, asked again.
    expect(other()?.state).toBe('discovered');
    r = q.apply(r, { type: 'uploaded', objectKey: 'k/1', bytesSent: 10, verified: null });
    // A crash now sends the one PUT again (as a crash during it would): no callback went yet.
    expect(other()?.state).toBe('discovered');
    r = q.apply(r, { type: 'callback-sent' });
    expect(other()).toMatchObject({ state: 'uploaded', callback_unknown: 1 });
    q.apply(r, { type: 'recorded' });
    // Lost in a crash now, the callback's outcome is asked before any post (callback_unknown).
    expect(other()?.state).toBe('uploaded');
    q.close();
    expect(other()?.state).toBe('done');
  });

  it('a crash before "callback-sent" leaves the file to be sent again, never posted (a real file, reopened)', () => {
    const q = open();
    const [first, row] = q.observe([f('DJI_0000.JPG'), f('DJI_0001.JPG')]).pending;
    smallFileWay(q, first!, 99); // the server's first answer (its target marked answered) committed
    let r = hashed(q, row!, 'a'.repeat(32), info('DJI_0001.JPG'));
    r = q.apply(r, { type: 'not-known' });
    q.apply(r, { type: 'uploaded', objectKey: 'k/1', bytesSent: 10, verified: null });
    // The process dies here: its connection goes without a commit (what waited is rolled back).
    (q as unknown as { db: Database.Database }).db.close();
    const again = open();
    const back = again.get(row!.id);
    expect(back).toMatchObject({ state: 'discovered' });
    expect(back && 'callbackUnknown' in back ? back.callbackUnknown : false).toBe(false);
    again.close();
  });

  it('commits "uploaded" at once after a recorded upload (multipart): a lost one would send it all again', () => {
    const q = open();
    const [row] = q.observe([f('DJI_0001.MP4', 1000)]).pending;
    let r = hashed(q, row!, 'a'.repeat(32), info('DJI_0001.MP4'));
    r = q.apply(r, { type: 'not-known' });
    r = q.apply(r, { type: 'multipart-started', objectKey: 'k/1', uploadId: 'u1', partSize: 8 });
    q.addPart(row!.id, { partNumber: 1, etag: 'e1', size: 8 });
    const before = walCommits();
    q.apply(r, { type: 'uploaded', objectKey: 'k/1', bytesSent: 1000, verified: null });
    expect(walCommits() - before).toBe(1);
    const db = new Database(file, { readonly: true });
    expect(db.prepare<[], { state: string }>('SELECT state FROM files').get()?.state).toBe('uploaded');
    expect(db.prepare('SELECT COUNT(*) AS n FROM parts').get()).toEqual({ n: 0 });
    db.close();
    q.close();
  });

  it('commits what waited within COMMIT_WAIT_MS when no other change comes', async () => {
    const q = open();
    const [row] = q.observe([f('DJI_0001.JPG')]).pending;
    hashed(q, row!, 'a'.repeat(32), info('DJI_0001.JPG'));
    await new Promise((resolve) => setTimeout(resolve, COMMIT_WAIT_MS + 5));
    const db = new Database(file, { readonly: true });
    expect(db.prepare<[], { state: string }>('SELECT state FROM files').get()?.state).toBe('hashed');
    db.close();
    q.close();
  });

  it('commits what waited before an acknowledged part is recorded, and before a scan', () => {
    const q = open();
    const [row] = q.observe([f('DJI_0001.JPG')]).pending;
    const before = walCommits();
    hashed(q, row!, 'a'.repeat(32), info('DJI_0001.JPG'));
    q.addPart(row!.id, { partNumber: 1, etag: 'e1', size: 8 });
    expect(walCommits() - before).toBe(2); // the change that waited, then the part
    hashed(q, q.observe([f('DJI_0002.JPG')]).pending[0]!, 'b'.repeat(32), info('DJI_0002.JPG'));
    q.observe([f('DJI_0003.JPG')]);
    expect(walCommits() - before).toBe(5); // the first scan, the change that waited, the second scan
    q.close();
  });
});
