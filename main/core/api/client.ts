import type { Dispatcher } from 'undici';
import { DmsError, said } from '../errors.js';
import { readEnvelope, redact, requireSuccess } from './envelope.js';
import type { Envelope, RequestContext } from './envelope.js';
import { buildWaylineQuery } from './query.js';
import { parseCallbackKey, parseLogin, parseRefreshedToken, parseSts, parseWaylinePage } from './schemas.js';
import { fetchExchange, undiciExchange, type Exchange } from './exchange.js';
import { send } from './transport.js';
import type {
  FastUploadInput,
  FastUploadOutcome,
  LoginResult,
  StsResult,
  UploadCallbackInput,
  UploadCallbackOutput,
  WaylinePage,
  WaylineQuery,
} from './types.js';

export interface ApiClientOptions {
  /** `http(s)://host[:port][/prefix]`; a trailing slash is ignored. */
  baseUrl: string;
  /** May be empty until `login()` or `setWorkspace()`. */
  workspaceId?: string;
  token?: string;
  /** Deadline for a whole exchange, body included. Default 30 s. */
  timeoutMs?: number;
  /** A fetch to carry the calls instead (tests wrap one to count or lose answers). */
  fetch?: typeof fetch;
  /** undici dispatcher for the default exchange, e.g. one trusting a custom CA (tls.ts). */
  dispatcher?: Dispatcher;
  userAgent?: string;
  /** Answers larger than this are refused. Default 8 MiB. */
  maxBodyBytes?: number;
}

export interface CallOptions {
  signal?: AbortSignal;
  timeoutMs?: number;
}

interface Call {
  method: 'GET' | 'POST';
  path: string;
  query?: string;
  body?: unknown;
  /** false only for login: it must not send a (stale) token. */
  auth: boolean;
  sensitiveBody?: boolean;
  /** More values never to quote back (the password of a login). */
  secrets?: string[];
  opts: CallOptions | undefined;
}

const DEFAULT_TIMEOUT_MS = 30_000;
/**
 * Until a server has answered once, a request waits this long for it (never
 * more than the timeout): a port that accepts and never answers is said
 * within seconds, so a one-shot sync against it ends in well under a minute.
 * Once it answered, the usual timeout holds (a busy server is slow, not gone).
 */
export const FIRST_ANSWER_TIMEOUT_MS = 10_000;
const DEFAULT_MAX_BODY = 8 * 1024 * 1024;

function invalid(message: string): DmsError {
  return new DmsError('invalid-input', message);
}

/**
 * Tokens often come from a file with a trailing newline: trimmed, and '' means
 * "not signed in". Anything else that is not visible ASCII would make fetch
 * throw a TypeError, so it is refused here without quoting the value.
 */
function normalizeToken(token: string | undefined): string | undefined {
  const t = token?.trim();
  if (t === undefined || t === '') return undefined;
  if (!/^[\x21-\x7e]+$/.test(t)) {
    throw invalid('The sign-in token is not valid (it contains unexpected characters).');
  }
  return t;
}

/**
 * Typed client of the workspace server: the four contract endpoints plus
 * login and token refresh. Every failure is a classified DmsError that names
 * the method and path, never the token.
 */
export class ApiClient {
  readonly #base: URL;
  #token: string | undefined;
  #workspaceId: string;
  readonly #timeoutMs: number;
  readonly #exchange: Exchange;
  readonly #userAgent: string;
  readonly #maxBodyBytes: number;
  /** Whether the server has answered (any HTTP answer) since this client was made. */
  #answered = false;

  constructor(opts: ApiClientOptions) {
    let base: URL;
    try {
      base = new URL(opts.baseUrl);
    } catch {
      throw invalid('The server address is not a valid URL.');
    }
    if (base.protocol !== 'http:' && base.protocol !== 'https:') {
      throw invalid('The server address must start with http:// or https://.');
    }
    base.search = '';
    base.hash = '';
    this.#base = base;
    this.#workspaceId = opts.workspaceId ?? '';
    this.#token = normalizeToken(opts.token);
    this.#timeoutMs = opts.timeoutMs ?? DEFAULT_TIMEOUT_MS;
    if (!(this.#timeoutMs > 0)) throw invalid('timeoutMs must be positive.');
    this.#exchange = opts.fetch ? fetchExchange(opts.fetch) : undiciExchange(opts.dispatcher);
    this.#userAgent = opts.userAgent ?? 'drone-media-sync';
    this.#maxBodyBytes = opts.maxBodyBytes ?? DEFAULT_MAX_BODY;
  }

  setToken(token: string | undefined): void {
    this.#token = normalizeToken(token);
  }

  setWorkspace(id: string): void {
    this.#workspaceId = id;
  }

  get workspaceId(): string {
    return this.#workspaceId;
  }

  /** The server's base URL (no query, no fragment). */
  get baseUrl(): string {
    return this.#base.href;
  }

  get hasToken(): boolean {
    return this.#token !== undefined;
  }

  async listWaylines(query: WaylineQuery = {}, opts?: CallOptions): Promise<WaylinePage> {
    const qs = buildWaylineQuery(query);
    try {
      const { env, ctx } = await this.#call({
        method: 'GET',
        path: this.#ws('wayline', 'waylines'),
        query: qs,
        auth: true,
        opts,
      });
      requireSuccess(env, ctx);
      return parseWaylinePage(env.data, query, ctx);
    } catch (err) {
      throw asListingError(err);
    }
  }

  async getSts(opts?: CallOptions): Promise<StsResult> {
    const { env, ctx } = await this.#call({
      method: 'POST',
      path: this.#ws('storage', 'sts'),
      auth: true,
      sensitiveBody: true,
      opts,
    });
    requireSuccess(env, ctx);
    return parseSts(env.data, ctx);
  }

  /** "Not known" (any non-zero code at HTTP 200) is an outcome, not an error: the caller uploads the file. */
  async fastUpload(input: FastUploadInput, opts?: CallOptions): Promise<FastUploadOutcome> {
    if (input.fingerprint.trim() === '') throw invalid('fast-upload needs a fingerprint.');
    const { env, ctx } = await this.#call({
      method: 'POST',
      path: this.#ws('media', 'fast-upload'),
      body: input,
      auth: true,
      opts,
    });
    if (env.code === 0) return { known: true };
    if (env.code === 401 || env.code === 403) requireSuccess(env, ctx); // throws `auth`
    return { known: false, code: env.code, message: redact(env.message, ctx.secrets) };
  }

  async uploadCallback(input: UploadCallbackInput, opts?: CallOptions): Promise<UploadCallbackOutput> {
    if (input.object_key.trim() === '') throw invalid('upload-callback needs an object key.');
    const { env, ctx } = await this.#call({
      method: 'POST',
      path: this.#ws('media', 'upload-callback'),
      body: input,
      auth: true,
      opts,
    });
    requireSuccess(env, ctx);
    return { object_key: parseCallbackKey(env.data, input.object_key) };
  }

  /**
   * Signs in as a ground client (flag 2). On success the token is kept for
   * later calls, and the workspace too when none was configured.
   */
  async login(username: string, password: string, opts?: CallOptions): Promise<LoginResult> {
    let result: { env: Envelope; ctx: RequestContext };
    try {
      result = await this.#call({
        method: 'POST',
        path: '/manage/api/v1/login',
        body: { username, password, flag: 2 },
        auth: false,
        sensitiveBody: true,
        secrets: [password],
        opts,
      });
    } catch (err) {
      // HTTP 401/403 here means the credentials, not a token.
      if (err instanceof DmsError && err.kind === 'auth') {
        throw wrongPassword(
          err.path ?? '/manage/api/v1/login',
          err.status,
          err.serverMessage,
          err.serverCode,
        );
      }
      throw err;
    }
    const { env, ctx } = result;
    // The sample server answers a failed login with HTTP 200 and code 401 or -1.
    if (env.code === 401 || env.code === 403 || env.code === -1) {
      throw wrongPassword(ctx.path, 200, redact(env.message, ctx.secrets), env.code);
    }
    requireSuccess(env, ctx);
    const login = parseLogin(env.data, ctx);
    this.setToken(login.access_token);
    if (this.#workspaceId === '') this.#workspaceId = login.workspace_id;
    return login;
  }

  /** Exchanges the current token for a new one (header carries the old token) and keeps it. */
  async refreshToken(opts?: CallOptions): Promise<string> {
    const { env, ctx } = await this.#call({
      method: 'POST',
      path: '/manage/api/v1/token/refresh',
      auth: true,
      sensitiveBody: true,
      opts,
    });
    requireSuccess(env, ctx);
    const token = parseRefreshedToken(env.data, ctx);
    this.setToken(token);
    return token;
  }

  /** `/{area}/api/v1/workspaces/{ws}/{leaf}`, the workspace id escaped. */
  #ws(area: string, leaf: string): string {
    if (this.#workspaceId.trim() === '')
      throw invalid('No workspace is set: sign in or configure the workspace id.');
    return `/${area}/api/v1/workspaces/${encodeURIComponent(this.#workspaceId)}/${leaf}`;
  }

  async #call(call: Call): Promise<{ env: Envelope; ctx: RequestContext }> {
    const url = new URL(this.#base.href);
    url.pathname = `${this.#base.pathname.replace(/\/+$/, '')}${call.path}`;
    if (call.query !== undefined && call.query !== '') url.search = `?${call.query}`;
    const token = this.#token;
    const ctx: RequestContext = {
      method: call.method,
      path: url.pathname,
      secrets: [...(token === undefined ? [] : [token]), ...(call.secrets ?? [])],
      ...(call.sensitiveBody === true ? { sensitiveBody: true } : {}),
    };
    const headers: Record<string, string> = { accept: 'application/json', 'user-agent': this.#userAgent };
    if (call.auth) {
      if (token === undefined) {
        throw new DmsError('auth', `Not signed in: no token for ${call.method} ${url.pathname}.`, {
          method: call.method,
          path: url.pathname,
        });
      }
      headers['x-auth-token'] = token;
    }
    let body: string | undefined;
    if (call.body !== undefined) {
      body = JSON.stringify(call.body);
      headers['content-type'] = 'application/json';
    }
    const res = await send(
      {
        method: call.method,
        url,
        headers,
        ...(body === undefined ? {} : { body }),
        ...(call.opts?.signal === undefined ? {} : { signal: call.opts.signal }),
        timeoutMs:
          call.opts?.timeoutMs ??
          (this.#answered ? this.#timeoutMs : Math.min(this.#timeoutMs, FIRST_ANSWER_TIMEOUT_MS)),
        maxBodyBytes: this.#maxBodyBytes,
        exchange: this.#exchange,
      },
      ctx,
    );
    this.#answered = true;
    return { env: readEnvelope(res, ctx), ctx };
  }
}

/**
 * The sentence for a person when listing waylines failed: the default ones
 * speak of uploads ("Uploads will be retried by themselves", "The server
 * refused this file"), which is not true of a listing.
 */
const LISTING_PLAIN: Partial<Record<DmsError['kind'], (e: DmsError) => string>> = {
  network: () => 'The server cannot be reached, so the waylines could not be listed. Check the connection.',
  timeout: () => 'The server took too long to list the waylines. Try again in a moment.',
  throttled: () => 'The server asked us to slow down. List the waylines again in a moment.',
  server: () =>
    "The server had a problem listing the waylines. Try again later; if it persists, tell the server's administrator.",
  'malformed-response': () =>
    "The server's list of waylines is not a valid answer, so it was not used. Tell the server's administrator.",
  rejected: (e) => `The server refused to list the waylines: ${said(e)}.`,
};

function asListingError(err: unknown): unknown {
  if (!(err instanceof DmsError)) return err;
  const plain = LISTING_PLAIN[err.kind];
  // An error that already says what happened in its own words (a refused deep answer) keeps them.
  if (plain === undefined || err.plain !== undefined) return err;
  return new DmsError(err.kind, err.message, {
    cause: err,
    ...(err.method !== undefined ? { method: err.method } : {}),
    ...(err.path !== undefined ? { path: err.path } : {}),
    ...(err.status !== undefined ? { status: err.status } : {}),
    ...(err.serverCode !== undefined ? { serverCode: err.serverCode } : {}),
    ...(err.serverMessage !== undefined ? { serverMessage: err.serverMessage } : {}),
    ...(err.retryAfterMs !== undefined ? { retryAfterMs: err.retryAfterMs } : {}),
    retryable: err.retryable,
    plain: plain(err),
  });
}

function wrongPassword(
  path: string,
  status: number | undefined,
  serverMessage?: string,
  serverCode?: number | string,
): DmsError {
  const said = serverMessage !== undefined && serverMessage !== '' ? ` (server said: ${serverMessage})` : '';
  return new DmsError('auth', `Sign-in failed: wrong username or password${said}.`, {
    method: 'POST',
    path,
    ...(status === undefined ? {} : { status }),
    ...(serverMessage === undefined ? {} : { serverMessage }),
    ...(serverCode === undefined ? {} : { serverCode }),
  });
}
