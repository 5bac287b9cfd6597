/**
 * The one vocabulary of states, declared once: where a file stands in the
 * queue, how it was acknowledged, and what the sync engine as a whole is
 * doing. The engine (main/core), the IPC contract and the window import
 * these; nothing declares them again.
 */

/** Where a file stands. Only `done` means the server acknowledged the file. */
export const FILE_STATES = [
  'discovered', // seen on disk, not hashed yet
  'hashed', // fingerprint and metadata known
  'fast-upload-checked', // the server did not know the fingerprint: upload needed
  'uploading', // object being written (multipart parts in the part log)
  'uploaded', // object complete in the bucket, callback not acknowledged yet
  'done', // acknowledged (callback, fast-upload, or an RTK file stored and checked)
  'failed', // needs the user (rejected by the server, unsupported file...)
  'waiting-for-source', // the card or folder went away; continues when it is back
] as const;
export type FileState = (typeof FILE_STATES)[number];

/** The engine still has work to do on these: they are dispatched when due. */
export const WORKING_STATES = [
  'discovered',
  'hashed',
  'fast-upload-checked',
  'uploading',
  'uploaded',
] as const;
export type WorkingState = (typeof WORKING_STATES)[number];

/** Not finished and not needing the user: working, or parked until the card is back. */
export const UNFINISHED_STATES = [...WORKING_STATES, 'waiting-for-source'] as const;

/** Every state but done: what a card still owes. */
export const NOT_DONE_STATES = [...UNFINISHED_STATES, 'failed'] as const;

/** States in which the file has a fingerprint and metadata. */
export const IDENTIFIED_STATES = ['hashed', 'fast-upload-checked', 'uploading', 'uploaded'] as const;

export function isWorking(state: FileState): state is WorkingState {
  return (WORKING_STATES as readonly FileState[]).includes(state);
}

/**
 * How a done file was acknowledged: a callback after our upload, the server
 * already had it (fast-upload), or (RTK files, no callback) stored and checked.
 */
export const OUTCOMES = ['uploaded', 'fast-uploaded', 'stored'] as const;
export type Outcome = (typeof OUTCOMES)[number];

/**
 * What the sync engine as a whole is doing, one at a time:
 * - idle / syncing;
 * - paused: the user's;
 * - offline: the server or the network is failing, everything waits together
 *   until a time;
 * - auth-required: sign in (again); nothing is sent meanwhile;
 * - halted: the queue itself cannot be written (disk full, database failing).
 * A halt outranks a pause (pausing never hides a full disk).
 */
export const RUN_STATES = ['idle', 'syncing', 'paused', 'offline', 'auth-required', 'halted'] as const;
export type RunStateName = (typeof RUN_STATES)[number];

/** Why the engine halted: the disk holding the queue is full, or the database fails. */
export type HaltReason = 'disk-full' | 'database';

/** States the crew leaves with Resume: their own pause, or a halt once its cause is fixed. */
export function resumable(state: RunStateName): boolean {
  return state === 'paused' || state === 'halted';
}
