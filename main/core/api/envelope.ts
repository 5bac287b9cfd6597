import { visible } from '../../shared/visible.js';
import { DmsError } from '../errors.js';

/**
 * Reading the `{code, message, data}` envelope tolerantly, and turning every
 * answer that is not a success into a classified DmsError.
 *
 * Real servers (service-facts.md) send `code` as a number or a numeric
 * string, leave `data` out or send `""`, answer 401 with an empty body, and
 * sit behind proxies that return HTML pages. All of that is decided here, once,
 * so the endpoint methods only deal with a successful envelope's `data`.
 */

/** What every error names: the request, never the token or the full URL. */
export interface RequestContext {
  method: string;
  /** URL path only (no query, no credentials of the base URL). */
  path: string;
  /** Values that must never appear in a message (the token). */
  secrets: readonly string[];
  /**
   * The answer may carry credentials (STS, login): a JSON body is then not
   * quoted in error messages, since the first 120 characters could hold a key.
   */
  sensitiveBody?: boolean;
}

export interface Envelope {
  /** Normalised: numeric strings become numbers; other strings are kept. */
  code: number | string;
  message: string;
  /** `undefined` when the key is missing (the sample server leaves it out). */
  data: unknown;
}

/** What the envelope reads of the answer's headers (a fetch Headers fits). */
export interface AnswerHeaders {
  get(name: string): string | null;
}

export interface RawResponse {
  status: number;
  headers: AnswerHeaders;
  text: string;
}

const EXCERPT_MAX = 120;

/** A short one-line quote of a body for an error message, secrets removed. */
export function bodyExcerpt(text: string, ctx: Pick<RequestContext, 'secrets' | 'sensitiveBody'>): string {
  const trimmed = text.trim();
  if (trimmed === '') return '(empty body)';
  if (ctx.sensitiveBody === true && /^[{[]/.test(trimmed)) return '(body not shown: it may hold credentials)';
  let t = trimmed;
  // Redact before cutting, so a secret split by the cut cannot leak its first half.
  for (const s of ctx.secrets) if (s !== '') t = t.split(s).join('<redacted>');
  t = visible(t.replace(/\s+/g, ' '));
  return `"${t.length > EXCERPT_MAX ? `${t.slice(0, EXCERPT_MAX)}...` : t}"`;
}

/**
 * Text that came from the server (its message) as errors carry it: secrets
 * removed, and control and bidi characters shown as escapes, so that wherever
 * the message is shown later (a terminal, the queue, the window) it cannot
 * clear a screen, colour a verdict or forge a line.
 */
export function redact(text: string, secrets: readonly string[]): string {
  let t = text;
  for (const s of secrets) if (s !== '') t = t.split(s).join('<redacted>');
  return visible(t);
}

/** `0` and `"0"` are both success (service-facts.md). */
export function normalizeCode(raw: unknown): number | string | undefined {
  if (typeof raw === 'number' && Number.isFinite(raw)) return raw;
  if (typeof raw === 'string') {
    const t = raw.trim();
    if (/^-?\d+$/.test(t)) return Number(t);
    return t === '' ? undefined : t;
  }
  return undefined;
}

/** Retry-After is either delta-seconds or an HTTP date (RFC 9110 10.2.3). */
export function parseRetryAfter(value: string | null, now: number = Date.now()): number | undefined {
  if (value === null) return undefined;
  const t = value.trim();
  if (/^\d+$/.test(t)) return Number(t) * 1000;
  const at = Date.parse(t);
  if (Number.isNaN(at)) return undefined;
  return Math.max(0, at - now);
}

/**
 * How deep an answer may nest. The contract's deepest answer is 5 levels
 * (envelope, data, list, item, start point); real servers add a few. Deeper
 * JSON is refused as soon as it is parsed: JSON.parse itself copes with any
 * depth, but everything after it that walks the value recursively (zod,
 * JSON.stringify for `--json` or a log, structured clone to the window)
 * would overflow the stack on an answer nested 100,000 levels deep.
 */
export const MAX_ANSWER_DEPTH = 64;

/** Whether `value` nests objects or arrays deeper than `max` levels (iterative: no recursion to overflow). */
export function nestsDeeperThan(value: unknown, max: number): boolean {
  const stack: Array<{ v: unknown; depth: number }> = [{ v: value, depth: 1 }];
  for (let top = stack.pop(); top !== undefined; top = stack.pop()) {
    if (typeof top.v !== 'object' || top.v === null) continue;
    if (top.depth > max) return true;
    for (const child of Object.values(top.v)) {
      if (typeof child === 'object' && child !== null) stack.push({ v: child, depth: top.depth + 1 });
    }
  }
  return false;
}

type ParsedAnswer = { env: Envelope | undefined; tooDeep: boolean };

function parseAnswer(text: string): ParsedAnswer {
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    return { env: undefined, tooDeep: false };
  }
  if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) {
    return { env: undefined, tooDeep: false };
  }
  if (nestsDeeperThan(parsed, MAX_ANSWER_DEPTH)) return { env: undefined, tooDeep: true };
  const obj = parsed as Record<string, unknown>;
  const code = normalizeCode(obj['code']);
  if (code === undefined) return { env: undefined, tooDeep: false };
  const message = typeof obj['message'] === 'string' ? obj['message'] : '';
  return { env: { code, message, data: obj['data'] }, tooDeep: false };
}

/** The envelope of a body, or undefined when the body is not one (HTML, truncated, wrong shape, too deep). */
export function tryParseEnvelope(text: string): Envelope | undefined {
  return parseAnswer(text).env;
}

function where(ctx: RequestContext): string {
  return `${ctx.method} ${ctx.path}`;
}

function serverFields(env: Envelope | undefined, ctx: RequestContext) {
  return env === undefined ? {} : { serverCode: env.code, serverMessage: redact(env.message, ctx.secrets) };
}

/** What to show of an answer: the server's own message when it sent an envelope, else a quote. */
function said(env: Envelope | undefined, text: string, ctx: RequestContext): string {
  if (env !== undefined && env.message !== '')
    return `${redact(env.message, ctx.secrets)} (code ${env.code})`;
  return bodyExcerpt(text, ctx);
}

/**
 * Classifies the HTTP level of an answer. Returns the envelope of a 2xx
 * answer (whatever its code); throws a DmsError for everything else.
 */
export function readEnvelope(res: RawResponse, ctx: RequestContext): Envelope {
  const { status, text } = res;
  const { env, tooDeep } = parseAnswer(text);
  const base = { method: ctx.method, path: ctx.path, status, ...serverFields(env, ctx) };

  if (status === 401 || status === 403) {
    // The sample server answers 401 with an empty body: the status alone decides.
    // 401: the token is not (or no longer) valid; 403: valid, but not for this workspace.
    const what = status === 401 ? 'the sign-in token' : 'access';
    const why = env?.message ? `: ${redact(env.message, ctx.secrets).replace(/[.\s]+$/, '')}` : '';
    throw new DmsError('auth', `The server refused ${what} (HTTP ${status}) for ${where(ctx)}${why}.`, base);
  }
  const retryAfterMs = parseRetryAfter(res.headers.get('retry-after'));
  if (status === 429 || (status === 503 && retryAfterMs !== undefined)) {
    const hint = retryAfterMs === undefined ? '' : ` (retry after ${Math.ceil(retryAfterMs / 1000)} s)`;
    throw new DmsError(
      'throttled',
      `The server asked to slow down (HTTP ${status}) for ${where(ctx)}${hint}.`,
      {
        ...base,
        ...(retryAfterMs === undefined ? {} : { retryAfterMs }),
      },
    );
  }
  if (status === 408) {
    throw new DmsError(
      'timeout',
      `The server gave up waiting for the request (HTTP 408) for ${where(ctx)}.`,
      base,
    );
  }
  if (status >= 500) {
    throw new DmsError(
      'server',
      `Server error HTTP ${status} for ${where(ctx)}: ${said(env, text, ctx)}`,
      base,
    );
  }
  if (status >= 300 && status < 400) {
    // Redirects are not followed: fetch would forward x-auth-token to any host
    // and turn a POST into a GET. The user fixes the address instead.
    const location = redact(res.headers.get('location') ?? '(no location)', ctx.secrets);
    throw new DmsError(
      'rejected',
      `The server redirected ${where(ctx)} (HTTP ${status}) to ${location}; set the server address to the new location.`,
      base,
    );
  }
  if (status >= 400) {
    const hint = status === 404 && env === undefined ? ' Is the server address right?' : '';
    throw new DmsError(
      'rejected',
      `The server refused ${where(ctx)} (HTTP ${status}): ${said(env, text, ctx)}.${hint}`,
      base,
    );
  }
  if (status < 200) {
    throw new DmsError('malformed-response', `Unexpected HTTP ${status} for ${where(ctx)}.`, base);
  }
  if (tooDeep) {
    // Not a proxy's page that goes away by itself: this server answers something no contract server sends.
    throw new DmsError(
      'malformed-response',
      // In the crew's words: the message reaches the verdict and the file's line; the request is in the error's fields (logged).
      `The server sent an answer that cannot be valid (nested more than ${MAX_ANSWER_DEPTH} levels deep), so it was not used.`,
      {
        ...base,
        retryable: false,
        plain: `The server sent an answer that cannot be valid (nested more than ${MAX_ANSWER_DEPTH} levels deep), so it was not used. Ask the server's administrator to check the server.`,
      },
    );
  }
  if (env === undefined) {
    throw new DmsError(
      'malformed-response',
      `The answer to ${where(ctx)} (HTTP ${status}) is not a valid JSON envelope: ${bodyExcerpt(text, ctx)}`,
      base,
    );
  }
  return env;
}

/** Envelope codes that mean "your token is not accepted" even at HTTP 200. */
const AUTH_CODES: ReadonlySet<number | string> = new Set([401, 403]);

export function isSuccess(env: Envelope): boolean {
  return env.code === 0;
}

/** Throws for a non-zero code: `auth` for 401/403, otherwise `rejected`. */
export function requireSuccess(env: Envelope, ctx: RequestContext, status = 200): void {
  if (isSuccess(env)) return;
  const base = { method: ctx.method, path: ctx.path, status, ...serverFields(env, ctx) };
  const msg = env.message === '' ? '(no message)' : redact(env.message, ctx.secrets);
  if (AUTH_CODES.has(env.code)) {
    throw new DmsError(
      'auth',
      `The server refused the sign-in token for ${where(ctx)}: ${msg} (code ${env.code}).`,
      base,
    );
  }
  throw new DmsError('rejected', `The server refused ${where(ctx)}: ${msg} (code ${env.code}).`, base);
}
