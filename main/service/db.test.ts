/**
 * How the service's SQLite file syncs, on its first open and every later one.
 * It was NORMAL by better-sqlite3's build (its WAL default), not by the
 * service, while a comment said FULL; the service now sets it. A guard: it
 * passes on the old code too, and fails with any other setting (checked with
 * FULL).
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, expect, it } from 'vitest';
import { openDatabase } from './db.js';

let dir: string;
beforeEach(() => {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'dms-db-'));
});
afterEach(() => fs.rmSync(dir, { recursive: true, force: true }));

it('a new file and a reopened one run at synchronous=NORMAL in WAL mode', () => {
  const modes: unknown[] = [];
  for (let open = 0; open < 2; open++) {
    const db = openDatabase(dir);
    modes.push([db.pragma('journal_mode', { simple: true }), db.pragma('synchronous', { simple: true })]);
    db.close();
  }
  // 1 = NORMAL: a commit is in the operating system before it returns (a killed service loses
  // nothing it answered), synced at each WAL checkpoint.
  expect(modes).toEqual([
    ['wal', 1],
    ['wal', 1],
  ]);
});
