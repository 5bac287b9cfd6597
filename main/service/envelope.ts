import { z } from 'zod';

/**
 * Every answer of the service is `{code, message, data?}`. The contract only
 * fixes 0 = success; these are our own non-zero codes. Six digits: the HTTP
 * status they usually travel with, then a number, so a log line is readable
 * without the status. Listed in the README ("Service" section).
 */
export const CODES = {
  SUCCESS: 0,
  /** Login failed: HTTP 200 with code 401, exactly like DJI's sample server. */
  LOGIN_FAILED: 401,
  INVALID_REQUEST: 400001,
  INVALID_JSON: 400002,
  OBJECT_KEY_OUTSIDE_PREFIX: 400003,
  /** Not valid HTTP (a header with a line break or control character, a malformed request line). */
  BAD_HTTP_REQUEST: 400004,
  TOKEN_MISSING: 401001,
  TOKEN_INVALID: 401002,
  TOKEN_EXPIRED: 401003,
  TOKEN_REVOKED: 401004,
  WRONG_WORKSPACE: 403001,
  /** The request did not arrive completely in time (headers or whole request). */
  REQUEST_TIMEOUT: 408001,
  /** fast-upload: the fingerprint is not known (HTTP 200, the normal "upload it" path). */
  FINGERPRINT_UNKNOWN: 404001,
  /** upload-callback result 0 for an object that is not in the bucket (HTTP 200). */
  OBJECT_NOT_FOUND: 404002,
  /** upload-callback result 0 whose fingerprint is not the MD5 of the stored object (HTTP 200). */
  FINGERPRINT_MISMATCH: 409001,
  ROUTE_NOT_FOUND: 404000,
  METHOD_NOT_ALLOWED: 405000,
  BODY_TOO_LARGE: 413001,
  UNSUPPORTED_MEDIA_TYPE: 415001,
  /** URL and headers over Node's 16 KiB (a 100 KB URL, a 1 MB token). */
  HEADERS_TOO_LARGE: 431001,
  /** Too many wrong passwords from this client or for this user: wait Retry-After seconds. */
  LOGIN_THROTTLED: 429001,
  /** Too many sts requests with this token: wait Retry-After seconds. */
  STS_THROTTLED: 429002,
  INTERNAL: 500000,
  STORAGE_PROVIDER_FAILED: 502001,
  /** The database (PostgreSQL) does not answer: retry; a repeated request is recorded once. */
  DATABASE_UNAVAILABLE: 503001,
  /** The instance is shutting down (SIGTERM): retry, the load balancer sends it to another one. */
  SHUTTING_DOWN: 503002,
  /** Never sent by the service: the load balancer's answer when no instance is ready (docs/deploy.md). */
  NO_INSTANCE_READY: 503003,
  /**
   * /readyz only: another instance took the database while this one's connection holding the
   * instance lock was lost, and the two may not share it (the embedded bucket's one-instance rule).
   */
  INSTANCE_CONFLICT: 503004,
  /** /readyz only: the bucket's STS gives no credentials (refused or unreachable; the reason is in the log). */
  BUCKET_CREDENTIALS_UNAVAILABLE: 503005,
} as const;

export interface Envelope<T = unknown> {
  code: number;
  message: string;
  data?: T;
}

export function ok<T>(data: T): Envelope<T> {
  return { code: CODES.SUCCESS, message: 'success', data };
}

/** A refusal with a message a person can act on; the error handler turns it into the envelope. */
export class ApiError extends Error {
  constructor(
    readonly httpStatus: number,
    readonly code: number,
    message: string,
  ) {
    super(message);
    this.name = 'ApiError';
  }
}

// zod reports a string given for z.int() as "expected number"; this marker
// lets the message say "integer", which is what the client must send.
const INTEGER = 'expected integer';
export const zInt = (): z.ZodInt => z.int({ error: INTEGER });

export function invalid(message: string): ApiError {
  return new ApiError(400, CODES.INVALID_REQUEST, message);
}

/**
 * Parses with a zod schema, turning the first problem into one sentence that
 * names the field ("name is required (string)"), instead of zod's generic text.
 */
export function parseOrThrow<S extends z.ZodType>(
  schema: S,
  input: unknown,
  what = 'request body',
): z.output<S> {
  if (input === undefined || input === null) {
    throw invalid(`The ${what} is required (a JSON object).`);
  }
  const result = schema.safeParse(input);
  if (result.success) return result.data;
  const issue = result.error.issues[0];
  throw invalid(issue ? describeIssue(issue, input, what) : `The ${what} is not valid.`);
}

function describeIssue(issue: z.core.$ZodIssue, input: unknown, what: string): string {
  const field = issue.path.map(String).join('.');
  if (field === '') return `The ${what} must be a JSON object.`;
  switch (issue.code) {
    case 'invalid_type': {
      const present = valueAt(input, issue.path) !== undefined;
      const expected = issue.expected === 'int' || issue.message === INTEGER ? 'integer' : issue.expected;
      const article = /^[aeiou]/.test(expected) ? 'an' : 'a';
      return present ? `${field} must be ${article} ${expected}.` : `${field} is required (${expected}).`;
    }
    case 'too_big':
      return issue.origin === 'string'
        ? `${field} must be at most ${String(issue.maximum)} characters long.`
        : `${field} must be at most ${String(issue.maximum)}.`;
    case 'too_small':
      return issue.origin === 'string'
        ? `${field} must not be empty.`
        : `${field} must be at least ${String(issue.minimum)}.`;
    case 'invalid_value':
      return `${field} must be one of ${issue.values.map((v) => JSON.stringify(v)).join(', ')}.`;
    default:
      return `${field} is not valid: ${issue.message}.`;
  }
}

function valueAt(input: unknown, path: readonly PropertyKey[]): unknown {
  let cur: unknown = input;
  for (const key of path) {
    if (cur === null || typeof cur !== 'object') return undefined;
    cur = (cur as Record<PropertyKey, unknown>)[key];
  }
  return cur;
}
