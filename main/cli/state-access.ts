/**
 * A state folder the CLI may only read: one created by `sudo drone-media-sync`,
 * another user's, or on a read-only disk. Commands that only read (`status`,
 * `report`) work on it from a snapshot of the queue; commands that write say so
 * in one sentence naming the folder, before doing anything.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { DmsError } from '../core/errors.js';
import { Queue } from '../core/queue/queue.js';

/** Why `dir` (or the nearest folder above it that exists) cannot be written, or null when it can. */
export function whyNotWritable(dir: string): 'read-only disk' | 'permission' | null {
  let probe = path.resolve(dir);
  while (!fs.existsSync(probe) && path.dirname(probe) !== probe) probe = path.dirname(probe);
  try {
    fs.accessSync(probe, fs.constants.W_OK);
    return null;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EROFS' ? 'read-only disk' : 'permission';
  }
}

/** The refusal of a writer: what could not be saved, where, and what to do. */
export function notWritableError(dir: string, what: string, why: 'read-only disk' | 'permission'): DmsError {
  const cause =
    why === 'read-only disk'
      ? 'it is on a read-only disk'
      : 'it belongs to another user (was drone-media-sync once run with sudo?)';
  const fix =
    why === 'read-only disk'
      ? 'Use a state folder on a writable disk (--state <dir> or DMS_STATE_DIR).'
      : `Give it back to your user (sudo chown -R ${os.userInfo().username} ${dir}) or use another state folder (--state <dir>).`;
  return new DmsError(
    'invalid-input',
    `No permission to write ${dir}: ${what} cannot be saved; ${cause}. ${fix}`,
    {
      retryable: false,
    },
  );
}

/** Throws the plain refusal when `dir` cannot be written. */
export function requireWritable(dir: string, what: string): void {
  const why = whyNotWritable(dir);
  if (why) throw notWritableError(dir, what, why);
}

export interface ReadQueue {
  queue: Queue;
  /** True when the state folder cannot be written: the queue is a snapshot, nothing can be saved. */
  readOnly: boolean;
  close(): void;
}

/**
 * The queue for reading. In a folder this user cannot write, SQLite cannot
 * open the WAL database in place (it must create its -shm file next to it):
 * a copy in a private temporary folder is read instead.
 */
export function openQueueForReading(root: string, queueFile: string): ReadQueue {
  if (!whyNotWritable(root)) {
    const queue = new Queue(queueFile);
    return { queue, readOnly: false, close: () => queue.close() };
  }
  const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'dms-queue-'));
  try {
    for (const suffix of ['', '-wal']) {
      if (fs.existsSync(queueFile + suffix))
        fs.copyFileSync(queueFile + suffix, path.join(tmp, `queue.db${suffix}`));
    }
    const queue = new Queue(path.join(tmp, 'queue.db'));
    return {
      queue,
      readOnly: true,
      close: () => {
        queue.close();
        fs.rmSync(tmp, { recursive: true, force: true });
      },
    };
  } catch (err) {
    fs.rmSync(tmp, { recursive: true, force: true });
    throw err;
  }
}
