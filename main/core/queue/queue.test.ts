import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import Database from 'better-sqlite3';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { DmsError } from '../errors.js';
import { SCHEMA_VERSION } from './db.js';
import { backoffDelay, Queue } from './queue.js';

let dir: string;
let file: string;
beforeEach(() => {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'dms-queue-'));
  file = path.join(dir, 'queue.db');
});
afterEach(() => fs.rmSync(dir, { recursive: true, force: true }));

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

  it('says clearly when the file is not a database', () => {
    fs.writeFileSync(file, 'this is not sqlite'.repeat(100));
    expect(() => new Queue(file)).toThrow(/damaged|cannot be opened/);
  });

  it('recognises done files by path+size+mtime across restarts, and re-queues changed ones', () => {
    let q = new Queue(file);
    const first = q.observe([f('a.jpg'), f('b.jpg')]);
    expect(first.pending).toHaveLength(2);
    q.setHashed(first.pending[0]!.id, 'a'.repeat(32), 'tiny', { x: 1 });
    q.setDone(first.pending[0]!.id, 'uploaded');
    q.close();

    q = new Queue(file);
    const second = q.observe([f('a.jpg'), f('b.jpg')]);
    expect(second.alreadyDone).toBe(1);
    expect(second.pending.map((r) => r.relPath)).toEqual(['b.jpg']);

    // a.jpg changed on the card: new version to upload, old done row kept as history
    const third = q.observe([f('a.jpg', 11, 2000)]);
    expect(third.pending).toHaveLength(1);
    expect(third.pending[0]!.fingerprint).toBeNull();
    expect(q.list().filter((r) => r.relPath === 'a.jpg')).toHaveLength(2);
    q.close();
  });

  it('drops the unfinished row of a file that changed (never uploads a stale fingerprint)', () => {
    const q = new Queue(file);
    const [row] = q.observe([f('c.jpg')]).pending;
    q.setHashed(row!.id, 'c'.repeat(32), 'tiny', {});
    q.observe([f('c.jpg', 99, 5000)]);
    const rows = q.list().filter((r) => r.relPath === 'c.jpg');
    expect(rows).toHaveLength(1);
    expect(rows[0]!.size).toBe(99);
    expect(rows[0]!.state).toBe('discovered');
    q.close();
  });

  it('keeps multipart parts across a restart and clears them once uploaded', () => {
    let q = new Queue(file);
    const [row] = q.observe([f('big.mp4', 100)]).pending;
    q.setMultipartStarted(row!.id, 'prefix/big.mp4', 'upload-1', 8);
    q.addPart(row!.id, { partNumber: 1, etag: '"e1"', size: 8 });
    q.addPart(row!.id, { partNumber: 2, etag: '"e2"', size: 8 });
    q.close();
    q = new Queue(file);
    const again = q.get(row!.id)!;
    expect(again.state).toBe('uploading');
    expect(again.uploadId).toBe('upload-1');
    expect(q.parts(row!.id).map((p) => p.partNumber)).toEqual([1, 2]);
    q.setUploaded(row!.id, 'prefix/big.mp4');
    expect(q.parts(row!.id)).toEqual([]);
    expect(q.get(row!.id)!.state).toBe('uploaded');
    q.close();
  });

  it('parks a removed source and resumes where it stopped when it comes back', () => {
    const q = new Queue(file);
    const { pending } = q.observe([f('1.jpg'), f('2.jpg')]);
    q.setMultipartStarted(pending[0]!.id, 'k', 'u', 8);
    q.addPart(pending[0]!.id, { partNumber: 1, etag: 'e', size: 8 });
    expect(q.parkSource('card-1', 'Card removed')).toBe(2);
    expect(q.ready(10)).toEqual([]);
    expect(q.counts()['waiting-for-source'].files).toBe(2);
    const back = q.observe([f('1.jpg'), f('2.jpg')]);
    expect(back.pending.map((r) => r.state)).toEqual(['uploading', 'discovered']);
    expect(q.parts(pending[0]!.id)).toHaveLength(1);
    q.close();
  });

  it('schedules retries with capped backoff and keeps failures for the user until retry', () => {
    let t = 1_000_000;
    const q = new Queue(file, () => t);
    const [row] = q.observe([f('x.jpg')]).pending;
    const delay = q.scheduleRetry(row!.id, new DmsError('network', 'down'));
    expect(delay).toBeGreaterThanOrEqual(1000);
    expect(q.ready(10)).toEqual([]);
    t += delay;
    expect(q.ready(10)).toHaveLength(1);
    q.setFailed(row!.id, new DmsError('rejected', 'bad model', { serverCode: -1 }));
    expect(q.get(row!.id)!.errorMessage).toBe('bad model');
    expect(q.ready(10)).toEqual([]);
    expect(q.retry({ absPaths: ['/media/card/x.jpg'] })).toBe(1);
    expect(q.ready(10)[0]!.state).toBe('discovered');
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
    const q = new Queue(file);
    const files = Array.from({ length: 10_000 }, (_, i) => f(`DCIM/${i}.JPG`, 5, i));
    q.observe(files);
    const again = q.observe(files);
    expect(again.pending).toHaveLength(10_000);
    expect(q.counts().discovered.files).toBe(10_000);
    q.close();
  });
});
