/**
 * Failures as the window receives them: `Result` data with a kind and one
 * plain sentence, never an exception across IPC. Engine errors are reduced to
 * their plain message (no stack, no cause chain, no request details).
 */
import { DmsError, plainMessage, toDmsError } from '../core/errors.js';
import type { FieldErrors, Result } from '../shared/ipc.js';

/** A failure the shell has already put in words for the user (with per-field reasons for forms). */
export class UserError extends Error {
  constructor(
    readonly kind: string,
    message: string,
    readonly fields?: FieldErrors,
  ) {
    super(message);
    this.name = 'UserError';
  }
}

export type Failure = Extract<Result<never>, { ok: false }>;

export const INTERNAL_MESSAGE =
  'Something went wrong inside Drone Media Sync. The log folder has the details.';

export function toFailure(err: unknown): Failure {
  if (err instanceof UserError) {
    return {
      ok: false,
      error: { kind: err.kind, message: err.message, ...(err.fields ? { fields: err.fields } : {}) },
    };
  }
  // What the window asked for (a list, a save, Sync now) and waits on: its words, not the engine's
  // ("uploads continue by themselves", "choose Retry" belong to the file list, which views.ts words).
  if (err instanceof DmsError)
    return { ok: false, error: { kind: err.kind, message: plainMessage(err, 'request') } };
  // A bug, not a user problem: the details go to the log, the window gets a sentence.
  const e = toDmsError(err, 'server');
  return {
    ok: false,
    error: {
      kind: e.kind === 'server' ? 'internal' : e.kind,
      message: e.kind === 'server' ? INTERNAL_MESSAGE : plainMessage(e, 'request'),
    },
  };
}

/**
 * Connection problems while signing in or testing a server, phrased for that
 * moment (plainMessage's "uploads continue by themselves" fits the engine, not a form).
 */
export function connectionFailure(err: unknown, url: string, during: 'login' | 'test' | 'token'): UserError {
  const e = toDmsError(err);
  const say = (m: string) => new UserError(e.kind, m);
  switch (e.kind) {
    case 'auth':
      if (during === 'login') return say(e.message);
      return say(
        during === 'token'
          ? 'The server does not accept this token.'
          : 'The server does not accept the stored sign-in for this workspace. Sign in again.',
      );
    case 'network':
      return say(`${url} cannot be reached. Check the address and the network connection.`);
    case 'timeout':
      return say(`${url} did not answer in time. Try again, or check the address.`);
    case 'malformed-response':
      return say(
        `${url} answered, but not like a Drone Media Sync server (wrong address, or a proxy page?).`,
      );
    case 'rejected':
      return say(`The server refused: ${e.serverMessage ?? e.message}`);
    case 'server':
      return say('The server had a problem. Try again in a while.');
    case 'throttled':
      return say('The server is busy. Try again in a moment.');
    default:
      return say(plainMessage(e));
  }
}
