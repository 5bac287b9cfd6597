/**
 * Each file of a state folder's queue as its SQLite file holds it (read-only,
 * beside a running agent): its path in the card, state and body bytes sent.
 * No queue yet: no rows.
 */
import fs from 'node:fs';
import path from 'node:path';
import Database from 'better-sqlite3';

export interface QueueFileRow {
  rel_path: string;
  state: string;
  bytes_sent: number;
}

export function queueFiles(stateDir: string): QueueFileRow[] {
  const file = path.join(stateDir, 'queue.db');
  if (!fs.existsSync(file)) return [];
  const db = new Database(file, { readonly: true, fileMustExist: true });
  try {
    return db.prepare('SELECT rel_path, state, bytes_sent FROM files').all() as QueueFileRow[];
  } finally {
    db.close();
  }
}
