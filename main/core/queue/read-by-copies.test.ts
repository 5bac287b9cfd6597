/**
 * Issue 29: copies are wanted per card. Which lane reads a card's files not
 * read yet, as the store says it, on a real SQLite file: the copy lane for a
 * card with destinations that count for it, the upload lane for the others;
 * what changes it (a run naming destinations, a destination forgotten, a
 * queue of the previous version opened); and the lanes' statements as
 * SQLite plans them (ranges of an index, never the other lane's rows).
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import Database from 'better-sqlite3';
import { afterEach, beforeEach, expect, it, vi } from 'vitest';
import { SCHEMA_VERSION } from './db.js';
import { nextWakeSql, Queue, readySql } from './queue.js';
import { WORKING_STATES } from './states.js';

let dir: string;
let file: string;
beforeEach(() => {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'dms-read-by-copies-'));
  file = path.join(dir, 'queue.db');
});
afterEach(() => fs.rmSync(dir, { recursive: true, force: true }));

const TARGET = { key: 'https://a.example#ws-1', label: 'https://a.example', workspaceId: 'ws-1' };

function open(): Queue {
  const q = new Queue(file);
  q.bindTarget(TARGET);
  return q;
}

const SSD = { path: '/media/ssd/Copies', label: 'SSD', role: 'archive', keepDays: null } as const;

const card = (sourceId: string, n: number) =>
  Array.from({ length: n }, (_, i) => ({
    sourceId,
    relPath: `DCIM/100MEDIA/DJI_000${i + 1}.JPG`,
    absPath: `/media/${sourceId}/DCIM/100MEDIA/DJI_000${i + 1}.JPG`,
    size: 100 + i,
    mtimeMs: 1,
    kind: 'media' as const,
  }));

/** The cards whose rows a lane takes now, and whether it has one due. */
function lanes(q: Queue): { copy: string[]; upload: string[]; copyWakes: boolean; uploadWakes: boolean } {
  const cards = (ids: number[]) => [...new Set(ids.map((id) => q.get(id)?.sourceId ?? '?'))].sort();
  return {
    copy: cards(q.readyIds(100, ['discovered'], true)),
    upload: cards(q.readyIds(100, WORKING_STATES, false)),
    copyWakes: q.nextWakeAt(undefined, ['discovered'], true) === 0,
    uploadWakes: q.nextWakeAt(undefined, undefined, false) === 0,
  };
}

it('a card with destinations is read by the copy lane, one without by the upload lane; forgetting moves it', () => {
  const q = open();
  const ssd = q.copies.destination(SSD);
  // An earlier card, recorded with no copies wanted.
  q.observe(card('card-old', 2));
  // This run's card: its destinations count before its rows are recorded (engine.scan).
  q.copies.setCounting('card-new', [ssd.id]);
  q.observe(card('card-new', 3));
  expect(lanes(q)).toEqual({ copy: ['card-new'], upload: ['card-old'], copyWakes: true, uploadWakes: true });
  // A later run names the SSD for the old card too: its files not read yet are the copy lane's.
  q.copies.setCounting('card-old', [ssd.id]);
  expect(lanes(q)).toEqual({
    copy: ['card-new', 'card-old'],
    upload: [],
    copyWakes: true,
    uploadWakes: false,
  });
  // The crew forgot the SSD: no card has copies wanted; the upload lane reads both.
  const listed = q.readyIds(100, ['discovered'], true);
  q.copies.forgetDestination(ssd.id);
  // Rows the copy lane listed before are not handed to it any more (the upload lane's now).
  expect(listed.filter((id) => q.dueRow(id, true) !== undefined)).toEqual([]);
  expect(listed.filter((id) => q.dueRow(id, false) !== undefined)).toEqual(listed);
  expect(lanes(q)).toEqual({
    copy: [],
    upload: ['card-new', 'card-old'],
    copyWakes: false,
    uploadWakes: true,
  });
  q.close();
});

it('a queue of the previous version: cards with destinations are the copy lane’s once it opens', () => {
  let q = open();
  const ssd = q.copies.destination(SSD);
  q.copies.setCounting('card-new', [ssd.id]);
  q.observe(card('card-new', 2));
  q.observe(card('card-old', 2));
  q.close();
  // What the previous version left: no column, no index.
  const db = new Database(file);
  // (and of the migrations after it: how each copy was written)
  db.exec(
    'DROP INDEX files_unread; ALTER TABLE files DROP COLUMN read_by_copies; ALTER TABLE copies DROP COLUMN written;' +
      ' DROP TABLE source_changes; DROP TRIGGER files_insert_counted; DROP TRIGGER files_update_counted;' +
      ' DROP TRIGGER files_delete_counted',
  );
  db.pragma(`user_version = ${SCHEMA_VERSION - 3}`);
  db.close();
  q = open();
  expect(lanes(q)).toEqual({ copy: ['card-new'], upload: ['card-old'], copyWakes: true, uploadWakes: true });
  q.close();
});

it('each lane lists its due rows from an index, never reading the other lane’s rows', () => {
  open().close();
  const db = new Database(file);
  const plan = (sql: string, params: object) =>
    db
      .prepare<object, { detail: string }>(`EXPLAIN QUERY PLAN ${sql}`)
      .all(params)
      .map((r) => r.detail)
      .filter((d) => d.startsWith('SEARCH files') || d.startsWith('SCAN files'));
  const ready = { t: 1, now: 1, limit: 64 };
  const wake = { t: 1, maxAttempts: 5 };
  // The copy lane: every branch a range of files_unread (its lane's value first), the first tries in id order.
  const copy = plan(readySql(['discovered'], true), ready);
  expect(copy.length).toBeGreaterThan(1);
  for (const d of copy)
    expect(d).toMatch(/^SEARCH files USING COVERING INDEX files_unread \(target_id=\? AND read_by_copies=\?/);
  expect(plan(nextWakeSql(['discovered'], true), wake)).toEqual([
    'SEARCH files USING INDEX files_unread (target_id=? AND read_by_copies=?)',
  ]);
  // The upload lane: its unread rows the same way; the others by files_lane_due, retries by
  // files_due, state by state (one IN over the states read every row of the target at each listing).
  const upload = plan(readySql(WORKING_STATES, false), ready);
  expect(upload.filter((d) => d.includes('files_unread'))).toHaveLength(copy.length);
  for (const d of upload)
    expect(d).toMatch(
      /^SEARCH files USING (COVERING )?INDEX files_(unread \(target_id=\? AND read_by_copies=\?|lane_due \(target_id=\? AND lane=\?|due \(target_id=\? AND state=\?)/,
    );
  expect(plan(nextWakeSql(WORKING_STATES, false), wake).sort()).toEqual([
    'SEARCH files USING INDEX files_due (target_id=? AND state=?)',
    'SEARCH files USING INDEX files_unread (target_id=? AND read_by_copies=?)',
  ]);
  db.close();
});

it("asks SQLite where a card's files are copied once per card with no copies, not once per file; a copy recorded is found", () => {
  const q = open();
  const ssd = q.copies.destination(SSD);
  const files = card('card-a', 9).concat(card('card-b', 1));
  q.observe(files);
  // Every statement run on the queue's database, of every kind (better-sqlite3's Statement).
  const proto = Object.getPrototypeOf(new Database(':memory:').prepare('SELECT 1')) as {
    all: () => unknown;
    get: () => unknown;
  };
  const all = vi.spyOn(proto, 'all');
  const get = vi.spyOn(proto, 'get');
  const queries = () => all.mock.calls.length + get.mock.calls.length;
  // The upload of each file asks where to read it from (a verified copy, else the card): 1,000 times.
  for (let i = 0; i < 100; i++) for (const f of files.slice(0, 9)) expect(q.copies.of(f)).toEqual([]);
  expect(queries()).toBe(2); // before: 900, one per look
  q.copies.apply(files[4]!, ssd.id, { type: 'want', path: `/media/ssd/Copies/${files[4]!.relPath}` });
  expect(q.copies.of(files[4]!).map((c) => c.state)).toEqual(['wanted']);
  expect(q.copies.of(files[5]!)).toEqual([]);
  expect(q.copies.of(files[9]!)).toEqual([]); // another card: looked up on its own
  vi.restoreAllMocks();
  q.close();
});
