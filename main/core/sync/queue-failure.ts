import path from 'node:path';
import { DmsError, QueueWriteError, toDmsError } from '../errors.js';

/** An SQLite or disk failure: the queue itself could not be written or read. */
export function isQueueFailure(err: unknown): boolean {
  const code = (err as { code?: unknown } | null)?.code;
  return typeof code === 'string' && (code.startsWith('SQLITE_') || code === 'ENOSPC');
}

/**
 * What the user is told when the queue (at `queuePath`) cannot be written:
 * going on would do work we cannot record, so the engine halts with this.
 */
export function queueFailure(raw: unknown, queuePath: string): QueueWriteError {
  const e = toDmsError(raw);
  const code = (raw as { code?: unknown } | null)?.code;
  const full = code === 'SQLITE_FULL' || code === 'ENOSPC';
  const where = path.dirname(queuePath);
  const message = full
    ? `Disk full: the disk holding ${where} is full. Free space on it, then press Resume; nothing is lost.`
    : `The upload queue (${queuePath}) cannot be written: ${e.message} Fix the cause, then press Resume. Nothing is lost.`;
  return new QueueWriteError(new DmsError(e.kind, message, { cause: raw }), full ? 'disk-full' : 'database');
}
