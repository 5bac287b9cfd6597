/**
 * Classification of bucket failures (S3, MinIO, OSS) into DmsError, shared by
 * the providers: each one only extracts `{code, status, message}` from its
 * own error shape. Secrets never leave this module: messages are redacted and
 * the cause is a fresh Error (SDK errors can carry the signed request; ali-oss
 * attaches `err.params` with the security token header).
 */
import { visible } from '../../shared/visible.js';
import { DmsError, isAbortError } from '../errors.js';
import type { ErrorKind } from '../errors.js';
import type { BucketCredentials } from './types.js';

export interface BucketFailure {
  /** The bucket's error code (`NoSuchUpload`) or the socket's (`ECONNRESET`). */
  code?: string;
  /** HTTP status; absent for failures below HTTP. */
  status?: number;
  message: string;
}

export interface FailureContext {
  /** Operation name, reported as `method` (e.g. `UploadPart`). */
  op: string;
  /** Object key, reported as `path` (keys carry no secrets). */
  key?: string;
  signal?: AbortSignal;
  credentials?: BucketCredentials;
}

/** Codes meaning "these credentials are (no longer) valid": refresh and retry once. */
const CREDENTIAL_CODES = new Set([
  'ExpiredToken',
  'ExpiredTokenException',
  'TokenRefreshRequired',
  'InvalidToken',
  'InvalidAccessKeyId',
  'SecurityTokenExpired',
  'InvalidSecurityToken',
]);

/** The bucket itself refuses us: retrying will not help until someone changes the bucket. */
const FATAL_CODES = new Set([
  'AccessDenied',
  'NoSuchBucket',
  'AllAccessDisabled',
  'AccountProblem',
  'InvalidBucketName',
  'UserDisable',
]);

const THROTTLE_CODES = new Set([
  'SlowDown',
  'Throttling',
  'ThrottlingException',
  'RequestLimitExceeded',
  'TooManyRequests',
]);

const NETWORK_CODES = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'ENOTFOUND',
  'EAI_AGAIN',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'ENETDOWN',
  'EPIPE',
  'EPROTO',
  'ECONNABORTED',
  'UND_ERR_SOCKET',
  'RequestError', // ali-oss / urllib: the request never got an answer
  'ConnectionTimeoutError', // ali-oss: could not connect in time
]);
const TIMEOUT_CODES = new Set([
  'ETIMEDOUT',
  'TimeoutError',
  'ResponseTimeoutError',
  'RequestTimeout',
  // undici (s3-put.ts): no answer, a stalled body, or no connection in time
  'UND_ERR_HEADERS_TIMEOUT',
  'UND_ERR_BODY_TIMEOUT',
  'UND_ERR_CONNECT_TIMEOUT',
]);
const TLS_CODE = /^(ERR_TLS_|ERR_SSL_|CERT_|UNABLE_TO_|DEPTH_ZERO_|SELF_SIGNED_)/;

/** HEAD answers have no body: a bare 403 may well be an expired token. */
export function isCredentialFailure(f: BucketFailure): boolean {
  if (f.code !== undefined && CREDENTIAL_CODES.has(f.code)) return true;
  return f.status === 403 && (f.code === undefined || f.code === 'Forbidden' || f.code === 'Unknown');
}

/** Socket-level code of a failure, looking through wrappers (AggregateError for dual-stack connects). */
export function networkCode(err: unknown): string | undefined {
  const seen = new Set<unknown>();
  let cur: unknown = err;
  while (cur !== null && typeof cur === 'object' && !seen.has(cur)) {
    seen.add(cur);
    const { code, name, errors, cause } = cur as {
      code?: unknown;
      name?: unknown;
      errors?: unknown;
      cause?: unknown;
    };
    for (const c of [code, name]) {
      if (typeof c === 'string' && (NETWORK_CODES.has(c) || TIMEOUT_CODES.has(c) || TLS_CODE.test(c)))
        return c;
    }
    cur = Array.isArray(errors) && errors.length > 0 ? errors[0] : cause;
  }
  return undefined;
}

export function redact(text: string, credentials?: BucketCredentials): string {
  let out = text;
  for (const secret of [credentials?.secretAccessKey, credentials?.sessionToken]) {
    if (secret !== undefined && secret.length >= 4) out = out.split(secret).join('[redacted]');
  }
  // A bucket's message is shown to people: its control characters as escapes.
  return visible(out);
}

function kindOf(f: BucketFailure): { kind: ErrorKind; retryable?: boolean } {
  const code = f.code ?? '';
  if (TIMEOUT_CODES.has(code)) return { kind: 'timeout' };
  if (NETWORK_CODES.has(code) || TLS_CODE.test(code)) return { kind: 'network' };
  if (THROTTLE_CODES.has(code) || f.status === 503 || f.status === 429) return { kind: 'throttled' };
  if (FATAL_CODES.has(code)) return { kind: 'storage', retryable: false };
  if (f.status !== undefined && f.status >= 500) return { kind: 'server' };
  if (f.status !== undefined && f.status >= 400) {
    // A bare 403 that survived a credential refresh is an access refusal.
    return { kind: 'storage', retryable: f.status !== 403 || isCredentialFailure(f) };
  }
  // A success status whose body could not be read (a proxy's HTML page, a
  // truncated XML answer): the answer is broken, not the bucket.
  if (f.status !== undefined && f.status < 400) return { kind: 'malformed-response' };
  // No status and no known socket code: a broken or unreadable answer.
  return { kind: 'server' };
}

/** Turns whatever a bucket client threw into a DmsError (kind, codes, redacted message). */
export function toBucketError(err: unknown, f: BucketFailure, ctx: FailureContext): DmsError {
  if (err instanceof DmsError) return err;
  const base = { method: ctx.op, ...(ctx.key !== undefined ? { path: ctx.key } : {}) };
  if (ctx.signal?.aborted === true || isAbortError(err)) {
    return new DmsError('cancelled', 'The upload was cancelled.', base);
  }
  const message = redact(f.message, ctx.credentials);
  const cause = new Error(message);
  cause.name = err instanceof Error ? err.name : 'Error';
  const { kind, retryable } = kindOf(f);
  const what =
    f.code !== undefined
      ? `${f.code}${f.status !== undefined ? ` (HTTP ${f.status})` : ''}`
      : `HTTP ${f.status ?? '?'}`;
  // A timeout the bucket answered (S3's 400 RequestTimeout): it was reached, our request stalled.
  const stalled = kind === 'timeout' && f.status !== undefined;
  const text = stalled
    ? `The bucket stopped waiting for the rest of the request during ${ctx.op} (${what}): nothing arrived for too long.`
    : kind === 'network' || kind === 'timeout'
      ? `The bucket could not be reached (${f.code ?? 'network error'}) during ${ctx.op}.`
      : kind === 'malformed-response'
        ? `The bucket's answer to ${ctx.op} could not be read (HTTP ${f.status ?? '?'}; a proxy page?). It will be retried.`
        : `The bucket refused ${ctx.op}: ${what}: ${message}`;
  return new DmsError(kind, text, {
    ...base,
    cause,
    ...(f.status !== undefined ? { status: f.status } : {}),
    ...(f.code !== undefined ? { serverCode: f.code } : {}),
    serverMessage: message,
    ...(retryable !== undefined ? { retryable } : {}),
    ...(stalled
      ? {
          plain:
            'The storage bucket stopped waiting for an upload that stalled (a slow or interrupted connection). It will be retried by itself.',
        }
      : {}),
  });
}

/** Whether a classified error says the multipart upload id no longer exists. */
export function isNoSuchUpload(err: unknown): boolean {
  return err instanceof DmsError && err.serverCode === 'NoSuchUpload';
}

/** The one failure of our own making: the file is not what it was when we started. */
export function fileChangedError(): DmsError {
  return new DmsError('source-missing', 'the file changed while it was being uploaded', { retryable: true });
}
