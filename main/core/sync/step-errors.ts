/**
 * The errors steps throw that the failure ladder (disposition.ts) tells
 * apart: a file that changed on disk, a callback whose outcome is unknown or
 * that was certainly not acted on, and an answer that is neither "known"
 * nor "not known".
 */
import { DmsError } from '../errors.js';

/**
 * Tries of a file whose pre-callback check keeps getting an unclear answer
 * before it is failed: the lost callback and the checks after it, in all.
 */
export const UNCLEAR_ANSWER_TRIES = 5;

/** Thrown when the file on disk is no longer the version this row describes. */
export class FileChangedError extends DmsError {
  constructor(rel: string) {
    super('source-missing', `${rel} changed on disk; it will be read again.`);
  }
}

/** Keeps what the wrapped error says about the request (status, Retry-After). */
function wrapped(err: DmsError, retryable?: boolean) {
  return {
    cause: err,
    ...(err.status === undefined ? {} : { status: err.status }),
    ...(err.retryAfterMs === undefined ? {} : { retryAfterMs: err.retryAfterMs }),
    ...(err.serverCode === undefined ? {} : { serverCode: err.serverCode }),
    ...(err.serverMessage === undefined ? {} : { serverMessage: err.serverMessage }),
    ...(err.plain === undefined ? {} : { plain: err.plain }),
    retryable: retryable ?? err.retryable,
  };
}

/** The callback's outcome is unknown: check (and maybe re-post) only after config.callbackSettleSeconds. */
export class CallbackOutcomeUnknown extends DmsError {
  constructor(err: DmsError) {
    super(err.kind, err.message, {
      cause: err,
      ...(err.status === undefined ? {} : { status: err.status }),
      ...(err.retryAfterMs === undefined ? {} : { retryAfterMs: err.retryAfterMs }),
    });
  }
}

/**
 * The callback was certainly not acted on (refused, or it never reached the
 * server): a definite answer, so the next one needs no check first.
 */
export class CallbackNotActedOn extends DmsError {
  constructor(err: DmsError) {
    super(err.kind, err.message, wrapped(err));
  }
}

/**
 * The server gave an answer that is neither "known" nor "not known" where the
 * engine must know (before re-posting a callback). Retried for this file only,
 * UNCLEAR_ANSWER_TRIES times, then the file is failed with the server's words.
 */
export class UnclearAnswerError extends DmsError {
  constructor(name: string, code: number | string, message: string) {
    const text = `The server could not say whether it already has ${name} (its answer: "${message}", code ${code}). It was not posted again, so that the server holds one record of it. Check the workspace; if the file is missing there, choose Retry.`;
    super('rejected', text, { serverCode: code, serverMessage: message, retryable: true, plain: text });
  }

  /** The same words, as the file's final failure. */
  final(): DmsError {
    return new DmsError(this.kind, this.message, wrapped(this, false));
  }
}
