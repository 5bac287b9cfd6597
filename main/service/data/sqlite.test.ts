/**
 * SqliteDb's writes on a real SQLite file: grouped into one commit (one disk
 * sync) when they come together, each still settled only once committed,
 * and one failing write failing alone.
 */
import Database from 'better-sqlite3';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { openDatabase } from '../db.js';
import { SqliteDb } from './sqlite.js';

let dir: string;
let file: string;
let db: SqliteDb;
beforeEach(() => {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'dms-sqlite-'));
  const raw = openDatabase(dir);
  file = raw.name;
  raw.exec('CREATE TABLE t (k TEXT PRIMARY KEY, v TEXT NOT NULL)');
  db = new SqliteDb(raw);
});
afterEach(async () => {
  await db.close();
  fs.rmSync(dir, { recursive: true, force: true });
});

/** Each commit appends a frame (24-byte header + one page) per page it changed to the WAL. */
const walFrames = () => (fs.statSync(`${file}-wal`).size - 32) / (24 + 4096);

describe('SqliteDb writes', () => {
  it('ten writes asked for together are one commit, each answered once it is on disk', async () => {
    await db.run('INSERT INTO t VALUES (?, ?)', ['warm', 'x']);
    // What one commit of one row writes (the table's page and its key's index page).
    const start = walFrames();
    await db.run('INSERT INTO t VALUES (?, ?)', ['one', 'x']);
    const oneCommit = walFrames() - start;
    const before = walFrames();
    const writes = Array.from({ length: 10 }, (_, i) =>
      db.run('INSERT INTO t VALUES (?, ?)', [`k${i}`, 'v']),
    );
    // Not committed yet: another connection sees none of them.
    const other = new Database(file, { readonly: true });
    try {
      expect(other.prepare('SELECT count(*) AS n FROM t').get()).toEqual({ n: 2 });
      expect(await Promise.all(writes)).toEqual(Array(10).fill(1));
      // Settled: all of them committed, visible to another connection.
      expect(other.prepare('SELECT count(*) AS n FROM t').get()).toEqual({ n: 12 });
    } finally {
      other.close();
    }
    // One commit: its pages written once, not ten times.
    expect(walFrames() - before).toBe(oneCommit);
  });

  it('a write that fails fails alone: the others of its group are committed', async () => {
    await db.run('INSERT INTO t VALUES (?, ?)', ['taken', 'x']);
    const results = await Promise.allSettled([
      db.run('INSERT INTO t VALUES (?, ?)', ['a', 'v']),
      db.run('INSERT INTO t VALUES (?, ?)', ['taken', 'again']),
      db.run('INSERT INTO t VALUES (?, ?)', ['b', 'v']),
      db.run('UPDATE t SET v = ? WHERE k = ?', ['w', 'a']),
    ]);
    expect(results.map((r) => r.status)).toEqual(['fulfilled', 'rejected', 'fulfilled', 'fulfilled']);
    expect((results[1] as PromiseRejectedResult).reason).toMatchObject({
      code: 'SQLITE_CONSTRAINT_PRIMARYKEY',
    });
    expect(await db.all('SELECT k, v FROM t ORDER BY k')).toEqual([
      { k: 'a', v: 'w' },
      { k: 'b', v: 'v' },
      { k: 'taken', v: 'x' },
    ]);
  });

  it('writes asked for during a transaction wait for it, then commit', async () => {
    let release = (): void => undefined;
    const held = new Promise<void>((r) => (release = r));
    const tx = db.tx(async (t) => {
      await t.run('INSERT INTO t VALUES (?, ?)', ['in-tx', 'v']);
      await held;
    });
    const outside = db.run('INSERT INTO t VALUES (?, ?)', ['outside', 'v']);
    await new Promise((r) => setImmediate(r));
    release();
    await Promise.all([tx, outside]);
    expect(await db.all('SELECT k FROM t ORDER BY k')).toEqual([{ k: 'in-tx' }, { k: 'outside' }]);
  });

  it('close commits the writes still waiting', async () => {
    const pending = db.run('INSERT INTO t VALUES (?, ?)', ['late', 'v']);
    await db.close();
    expect(await pending).toBe(1);
    const again = new Database(file, { readonly: true });
    expect(again.prepare('SELECT k FROM t').all()).toEqual([{ k: 'late' }]);
    again.close();
    db = new SqliteDb(openDatabase(dir));
  });
});
