/**
 * The closed set of failure kinds. Every failure that leaves a module of the
 * engine is a DmsError with one of these kinds, classified at the edge where
 * it happened (HTTP client, bucket client, file system), so that callers
 * decide retry / stop / report from the kind alone and never parse messages.
 */
export const ERROR_KINDS = [
  'auth', // token missing, invalid, expired or revoked: the user must sign in again
  'network', // could not reach the server or the bucket (DNS, refused, reset, TLS)
  'timeout', // the request started but no answer came in time
  'throttled', // HTTP 429 / 503 with Retry-After, or a bucket's SlowDown
  'server', // HTTP 5xx, or an answer that says the server itself is broken
  'rejected', // the server answered with a non-zero code: it refuses this request
  'malformed-response', // an answer we cannot read (HTML page, truncated JSON, wrong shape)
  'storage', // the bucket refused the object operation (access denied, no such upload...)
  'source-missing', // the file (or the whole card) is no longer there
  'invalid-input', // our own input is wrong: bad config, bad argument, unsupported file
  'cancelled', // the operation was aborted by us (pause, shutdown)
] as const;

export type ErrorKind = (typeof ERROR_KINDS)[number];

/** Kinds that may succeed if the same request is simply tried again later. */
const RETRYABLE: ReadonlySet<ErrorKind> = new Set<ErrorKind>([
  'network',
  'timeout',
  'throttled',
  'server',
  'malformed-response', // proxies return HTML pages for a while, then recover
  'storage',
]);

export interface DmsErrorOptions {
  cause?: unknown;
  /** HTTP method and path of the request, never the full URL with secrets. */
  method?: string;
  path?: string;
  status?: number;
  /** The server's own code and message, for `rejected`. */
  serverCode?: number | string;
  serverMessage?: string;
  /** Hint from Retry-After or a throttling answer. */
  retryAfterMs?: number;
  /** Override of the default retryability of the kind. */
  retryable?: boolean;
  /** The sentence for a person, when the generic one of the kind would say less (what to do). */
  plain?: string;
}

export class DmsError extends Error {
  readonly kind: ErrorKind;
  readonly method?: string;
  readonly path?: string;
  readonly status?: number;
  readonly serverCode?: number | string;
  readonly serverMessage?: string;
  readonly retryAfterMs?: number;
  readonly retryable: boolean;
  readonly plain?: string;

  constructor(kind: ErrorKind, message: string, options: DmsErrorOptions = {}) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.name = 'DmsError';
    this.kind = kind;
    if (options.method !== undefined) this.method = options.method;
    if (options.path !== undefined) this.path = options.path;
    if (options.status !== undefined) this.status = options.status;
    if (options.serverCode !== undefined) this.serverCode = options.serverCode;
    if (options.serverMessage !== undefined) this.serverMessage = options.serverMessage;
    if (options.retryAfterMs !== undefined) this.retryAfterMs = options.retryAfterMs;
    this.retryable = options.retryable ?? RETRYABLE.has(kind);
    if (options.plain !== undefined) this.plain = options.plain;
  }

  /** A JSON-safe view for logs, the queue and the UI (no cause chain, no secrets). */
  toJSON(): Record<string, unknown> {
    return {
      kind: this.kind,
      message: this.message,
      method: this.method,
      path: this.path,
      status: this.status,
      serverCode: this.serverCode,
      serverMessage: this.serverMessage,
    };
  }
}

/** The queue database is damaged (a bad header or page): it is set aside and rebuilt from a rescan. */
export class QueueDamagedError extends DmsError {
  constructor(file: string, cause: unknown) {
    super('invalid-input', `The queue database ${file} is damaged.`, { cause, retryable: false });
    this.name = 'QueueDamagedError';
  }
}

/** Another agent (the app, `sync`, `watch`) holds this queue's lock. */
export class QueueLockedError extends DmsError {
  constructor(message: string, cause: unknown) {
    super('invalid-input', message, { cause, retryable: false });
    this.name = 'QueueLockedError';
  }
}

/**
 * The queue itself cannot be written (disk full, database failing): going on
 * would do work that cannot be recorded, so the engine halts with this reason.
 */
export class QueueWriteError extends DmsError {
  /** 'disk-full' when the disk holding the queue has no room left. */
  readonly reason: 'disk-full' | 'database';
  constructor(err: DmsError, reason: 'disk-full' | 'database') {
    super(err.kind, err.message, { cause: err, retryable: true });
    this.name = 'QueueWriteError';
    this.reason = reason;
  }
}

/** Kinds that say the server or the network as a whole is in trouble, not one file. */
const SERVER_WIDE: ReadonlySet<ErrorKind> = new Set<ErrorKind>([
  'network',
  'timeout',
  'server',
  'throttled',
  'malformed-response',
]);

/** Worth trying again later by itself (the kind's default, or as the error says). */
export function isTransient(err: DmsError): boolean {
  return err.retryable;
}

/** A failure of the server or the network as a whole: everything waits together, not file by file. */
export function isServerWide(err: DmsError): boolean {
  return err.retryable && SERVER_WIDE.has(err.kind);
}

/** The first error code along the cause chain (undici wraps the socket error), with its message. */
export function causeCode(err: unknown): { code: string; message: string } | undefined {
  let cur: unknown = err;
  for (let depth = 0; depth < 8 && typeof cur === 'object' && cur !== null; depth++) {
    const { code, message } = cur as { code?: unknown; message?: unknown };
    if (typeof code === 'string') return { code, message: typeof message === 'string' ? message : '' };
    cur = (cur as { cause?: unknown }).cause;
  }
  return undefined;
}

/** Failures that happen before a request can reach the server: it certainly did not act on it. */
const NEVER_SENT = new Set([
  'ECONNREFUSED',
  'ENOTFOUND',
  'EAI_AGAIN',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'UND_ERR_CONNECT_TIMEOUT',
]);

/** True when the request never reached the server (refused connection, unknown host...). */
export function neverReachedServer(err: DmsError): boolean {
  const code = err.kind === 'network' ? causeCode(err.cause)?.code : undefined;
  return code !== undefined && NEVER_SENT.has(code);
}

/**
 * The request was certainly not acted on: the server refused it (a
 * refusal, the sign-in, a "slow down"), or it never reached the server.
 */
export function notActedOn(err: DmsError): boolean {
  return (
    err.kind === 'rejected' || err.kind === 'auth' || err.kind === 'throttled' || neverReachedServer(err)
  );
}

export function isDmsError(err: unknown): err is DmsError {
  return err instanceof DmsError;
}

export function isAbortError(err: unknown): boolean {
  return (
    err instanceof Error && (err.name === 'AbortError' || (err as { code?: unknown }).code === 'ABORT_ERR')
  );
}

/**
 * Classifies anything thrown into a DmsError. Used at the edges; code deeper
 * in the engine only ever sees DmsError.
 */
export function toDmsError(err: unknown, fallback: ErrorKind = 'server'): DmsError {
  if (err instanceof DmsError) return err;
  if (isAbortError(err)) return new DmsError('cancelled', 'The operation was cancelled.', { cause: err });
  const code = (err as { code?: unknown } | null)?.code;
  if (code === 'ENOENT' || code === 'ENODEV' || code === 'ENXIO' || code === 'EIO') {
    return new DmsError('source-missing', 'The file is no longer there (was the card removed?).', {
      cause: err,
    });
  }
  if (typeof code === 'string' && (code === 'SQLITE_FULL' || code === 'ENOSPC')) {
    return new DmsError(
      'invalid-input',
      'The disk holding the queue is full. Free some space; syncing continues after that.',
      {
        cause: err,
        retryable: true,
      },
    );
  }
  if (typeof code === 'string' && code.startsWith('SQLITE_')) {
    return new DmsError(
      'invalid-input',
      `The queue database failed (${code}). Restart Drone Media Sync; nothing is lost.`,
      {
        cause: err,
        retryable: true,
      },
    );
  }
  if (code === 'EACCES' || code === 'EPERM') {
    // There, and refused to us: waiting for the card or retrying would not change that.
    const p = (err as { path?: unknown }).path;
    const text = `${typeof p === 'string' ? p : 'The file'} cannot be read: permission denied. Copy it off by hand, or fix its permissions on a computer, then choose Retry.`;
    return new DmsError('invalid-input', text, { cause: err, retryable: false, plain: text });
  }
  const message = err instanceof Error ? err.message : String(err);
  return new DmsError(fallback, message, { cause: err });
}

/**
 * Where a message is shown: the same failure needs other words while files
 * upload by themselves ('upload': the engine, the app's list, `sync`), while a
 * person signs in ('sign-in') and for one request a person asked for and waits
 * on ('request': a listing such as `waylines`, a local command).
 */
export type Moment = 'upload' | 'sign-in' | 'request';

/** The workspace a request was for, from its path (`/workspaces/<id>/...`). */
function workspaceOf(err: DmsError): string | undefined {
  return /\/workspaces\/([^/]+)/.exec(err.path ?? '')?.[1];
}

/** The server's own words, without a closing full stop (the sentence around them has one). */
export function said(err: DmsError): string {
  return (err.serverMessage ?? err.message).trim().replace(/[.\s]+$/, '');
}

function authMessage(err: DmsError, during: Moment): string {
  if (err.status === 403 || err.serverCode === 403001) {
    const ws = workspaceOf(err);
    return (
      `The server does not let this sign-in into ${ws ? `workspace ${ws}` : 'this workspace'} (HTTP 403 Forbidden). ` +
      'Check the workspace id (--workspace, DMS_WORKSPACE or the settings), or sign in with an account of that workspace.'
    );
  }
  if (during === 'sign-in')
    return 'The server did not accept this user name and password. Check them and try again.';
  if (during === 'request')
    return 'The server does not accept the sign-in (expired or signed out). Sign in again: drone-media-sync login.';
  return 'The server no longer accepts your sign-in. Sign in again; nothing is lost.';
}

/**
 * One sentence for a person in the field: what happened and what to do,
 * in the words of the moment it is shown in (see Moment). The technical
 * message follows for the log and for support.
 */
/**
 * The crew's words for an error the queue stored (its kind and technical
 * message, e.g. "Could not reach the server for POST /media/…: … (ECONNREFUSED)."):
 * the sentence plainMessage says for it, the socket's code (the message's
 * last "(CODE)") and an HTTP status ("HTTP 503") taken back from the text.
 * The technical message stays for the log and `-v`.
 */
export function storedPlain(kind: string, message: string | null, during: Moment = 'upload'): string {
  if (!(ERROR_KINDS as readonly string[]).includes(kind)) return message ?? 'Unknown problem.';
  const text = message ?? '';
  const code = /\(([A-Z][A-Z0-9_]+)\)\.?\s*$/.exec(text)?.[1];
  const status = /\bHTTP (\d{3})\b/.exec(text)?.[1];
  return plainMessage(
    new DmsError(kind as ErrorKind, text, {
      ...(code ? { cause: Object.assign(new Error(code), { code }) } : {}),
      ...(status ? { status: Number(status) } : {}),
    }),
    during,
  );
}

export function plainMessage(err: DmsError, during: Moment = 'upload'): string {
  if (err.plain !== undefined) return err.plain;
  const later = during === 'upload';
  // 503 (with or without Retry-After): busy or restarting, not "a problem".
  if (err.status === 503 && (err.kind === 'server' || err.kind === 'throttled'))
    return later
      ? 'The server is busy or restarting. Uploads continue by themselves when it is ready.'
      : 'The server is busy or restarting.';
  switch (err.kind) {
    case 'auth':
      return authMessage(err, during);
    case 'network':
      if (during === 'sign-in' || during === 'request') {
        // The laptop offline (no signal at the site) fails here first: said so, not as a server not running.
        const code = causeCode(err.cause)?.code;
        if (code === 'ENOTFOUND' || code === 'EAI_AGAIN')
          return "The server's name cannot be looked up: this computer may have no internet connection, or the address is mistyped. Check the connection and the address.";
        if (code === 'ENETUNREACH' || code === 'EHOSTUNREACH')
          return 'There is no network route to the server: check that this computer is connected (Wi-Fi, a 4G modem or a phone hotspot).';
        return neverReachedServer(err)
          ? 'Nothing answers at this address. Check the server address and port, and that the server is running.'
          : 'The server cannot be reached. Check the address and the network connection, then try again.';
      }
      return 'The server cannot be reached. Check the connection; uploads continue by themselves when it is back.';
    case 'timeout':
      if (!later) {
        const s = /within (\d+) ms/.exec(err.message)?.[1];
        return `No answer from the server${s ? ` within ${Math.round(Number(s) / 1000)} s` : ' in time'}: is it overloaded, or is something else listening at this address?`;
      }
      return later
        ? 'The server is taking too long to answer. Uploads will be retried by themselves.'
        : 'The server did not answer in time. Try again in a while.';
    case 'throttled':
      return later
        ? 'The server asked us to slow down. Uploads continue by themselves in a moment.'
        : 'The server is busy. Try again in a moment.';
    case 'server':
      return later
        ? 'The server had a problem. Uploads will be retried by themselves.'
        : 'The server had a problem. Try again in a while.';
    case 'rejected':
      return later
        ? `The server refused this file: ${said(err)}. Fix the cause, then choose Retry.`
        : `The server refused the request: ${said(err)}.`;
    case 'malformed-response':
      return later
        ? 'The server answered with something that is not a valid answer (a proxy page?). Uploads will be retried by themselves.'
        : 'Something answered at this address, but not like a Drone Media Sync server (wrong address or port, or a proxy page?). Check the server address.';
    case 'storage':
      if (err.serverCode === 'RequestTimeTooSkewed')
        return "The storage bucket refused the upload because this computer's clock is wrong. Set the right date, time and time zone, then choose Retry.";
      return 'The storage bucket refused the upload. It will be retried; if it keeps failing, ask your administrator to check the bucket settings.';
    case 'source-missing':
      return later
        ? 'The file is not there any more (card removed?). Insert the card again and it will continue.'
        : err.message;
    case 'invalid-input':
      return `${err.message}`;
    case 'cancelled':
      return 'Stopped.';
  }
}
