/**
 * A card's verdict speaks only of what is on disk: the changes that may
 * wait for a shared commit (queue.ts MAY_WAIT: 'recorded' among them) are
 * committed before cardOffload reads the card, so "safe to format" is never
 * said of a row a crash a moment later would take back. Real SQLite file;
 * "on disk" is what another connection sees.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import Database from 'better-sqlite3';
import { afterEach, expect, it } from 'vitest';
import { Queue } from '../queue/queue.js';
import { cardOffload } from './card.js';

let dir: string;
afterEach(() => fs.rmSync(dir, { recursive: true, force: true }));

it('commits what waited before the verdict is made', () => {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'dms-verdict-durable-'));
  const file = path.join(dir, 'queue.db');
  const queue = new Queue(file);
  queue.bindTarget({
    key: 'http://127.0.0.1:7000#ws-1',
    label: 'http://127.0.0.1:7000',
    workspaceId: 'ws-1',
  });
  const relPath = 'DCIM/DJI_202401051000_001_Survey/DJI_0001_W.JPG';
  const [row] = queue.observe([
    {
      sourceId: 'card-1',
      relPath,
      absPath: `/media/card/${relPath}`,
      size: 4096,
      mtimeMs: 1_704_448_800_000,
    },
  ]).pending;
  let r = queue.apply(row!, {
    type: 'hashed',
    fingerprint: 'a'.repeat(32),
    tinyFingerprint: 'tiny',
    info: {
      name: 'DJI_0001_W.JPG',
      path: 'DJI_202401051000_001_Survey',
      fileGroupId: 'g',
      metadata: { created_time: '2024-01-05T10:00:00.000Z' },
      subFileType: 0,
      isOriginal: true,
    },
  });
  r = queue.apply(r, { type: 'not-known' });
  r = queue.apply(r, { type: 'uploaded', objectKey: 'ws-1/k/1.JPG', bytesSent: 4096, verified: null });
  r = queue.apply(r, { type: 'callback-sent' });
  queue.apply(r, { type: 'recorded' }); // may wait for a shared commit
  const offload = cardOffload(queue, { sourceId: 'card-1', label: 'M3E' });
  expect(offload.facts.map((f) => f.state)).toEqual(['done']);
  const other = new Database(file, { readonly: true });
  try {
    expect(other.prepare('SELECT state FROM files').pluck().all()).toEqual(['done']);
  } finally {
    other.close();
    queue.close();
  }
});
