/**
 * Where a file stands, and the named sets of states every part of the app
 * asks about. Only `done` means the server acknowledged the file.
 */
export const FILE_STATES = [
  'discovered', // seen on disk, not hashed yet
  'hashed', // fingerprint and metadata known
  'fast-upload-checked', // the server did not know the fingerprint: upload needed
  'uploading', // object being written (multipart parts in `parts`)
  'uploaded', // object complete in the bucket, callback not acknowledged yet
  'done', // server acknowledged (callback or fast-upload)
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

/** `'a','b'` for an SQL `IN (...)`: the states are constants of this module, never user input. */
export function sqlStates(states: readonly FileState[]): string {
  return states.map((s) => `'${s}'`).join(',');
}
