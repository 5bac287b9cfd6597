import fs from 'node:fs';
import { QueueDamagedError } from '../errors.js';
import { Queue } from './queue.js';

export interface OpenedQueue {
  queue: Queue;
  /** Set when the queue had to be set aside and rebuilt: tell the user. */
  notice: string | null;
}

/**
 * Opens the queue; a damaged file is never silently dropped: it is kept
 * beside as queue.db.damaged-<time> and a fresh queue is started. Nothing is
 * lost by that: the next scan finds every file again, and files the server
 * already has are recognised by fast-upload without sending a byte or posting
 * a second callback.
 */
export function openQueue(file: string, now = Date.now()): OpenedQueue {
  try {
    return { queue: new Queue(file), notice: null };
  } catch (err) {
    if (!(err instanceof QueueDamagedError)) throw err;
    const aside = `${file}.damaged-${new Date(now).toISOString().replace(/[:.]/g, '-')}`;
    fs.renameSync(file, aside);
    for (const ext of ['-wal', '-shm']) fs.rmSync(file + ext, { force: true });
    return {
      queue: new Queue(file),
      notice: `The queue database was damaged. It was kept as ${aside} and a new queue was started; your cards will be checked again and files the server already has will not be sent twice.`,
    };
  }
}
