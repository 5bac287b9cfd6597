import http from 'node:http';
import type { AddressInfo } from 'node:net';
import type { StsResult, Wayline } from '../../main/core/api/types.js';
import {
  callbackError,
  fastUploadError,
  isObj,
  KNOWN_MODEL_KEYS,
  SAMPLE_STS,
  stsError,
  waylinePage,
} from './sample-server-rules.js';
import type { Obj } from './sample-server-rules.js';

export { KNOWN_MODEL_KEYS, SAMPLE_STS } from './sample-server-rules.js';

/**
 * A stand-in that answers like DJI's Cloud API sample server
 * (shared/docs/service-facts.md), quirks included: 401 with an EMPTY body for
 * a bad token, failures as HTTP 200 `{"code":-1,"message":...}` without `data`,
 * `order_by` required, the whole required-fields table of the facts (every
 * `@NotNull`, the device enum, the time pattern, no body on sts: see
 * sample-server-rules.ts), fast-upload "known" only after a callback with
 * that fingerprint, and -1 for a duplicate.
 */

export interface RecordedCall {
  method: string;
  path: string;
  /** The request target as sent (path and raw query string). */
  url: string;
  query: URLSearchParams;
  headers: http.IncomingHttpHeaders;
  /** Parsed JSON body, or the raw text when it is not JSON, or undefined. */
  body: unknown;
}

export interface MediaRecord {
  workspaceId: string;
  fingerprint: string;
  name: string;
  objectKey: string;
  body: Record<string, unknown>;
}

/** An answer that replaces the normal one (faults, odd shapes). */
export interface RawAnswer {
  status?: number;
  headers?: Record<string, string>;
  body?: string | object;
  delayMs?: number;
  /** Drop the connection without answering. */
  destroy?: boolean;
  /** Handle the request as usual (a callback is stored), then apply delayMs/destroy to its answer. */
  passThrough?: boolean;
}
export type Hook = (call: RecordedCall) => RawAnswer | undefined;

export interface SampleStyle {
  /** Answer `"code":"0"` instead of `0`. */
  stringCode: boolean;
  /** `data` of an answer that carries nothing (fast-upload success). */
  emptyData: '' | '{}' | 'missing';
  /** upload-callback `data`: the bare key (sample server) or `{object_key}`. */
  callbackData: 'string' | 'object';
}

export interface SampleServerOptions {
  workspaceId?: string;
  /** username -> password; all are pilots (flag 2). Default { pilot: 'pilot123' }. */
  users?: Record<string, string>;
  /** Tokens accepted from the start (besides those login issues). Default ['sample-token']. */
  tokens?: string[];
  /** STS `data`; 'no-credentials' mimics a misconfigured provider. */
  sts?: StsResult | Record<string, unknown> | 'no-credentials';
  waylines?: Wayline[];
  /** Device/payload model keys the server knows; others are refused. */
  modelKeys?: readonly string[];
  style?: Partial<SampleStyle>;
}

export interface SampleServer {
  baseUrl: string;
  workspaceId: string;
  calls: RecordedCall[];
  media: MediaRecord[];
  /** Remove a token to simulate expiry; add one to accept it. */
  tokens: Set<string>;
  setHook(hook: Hook | undefined): void;
  setStyle(style: Partial<SampleStyle>): void;
  setSts(sts: SampleServerOptions['sts']): void;
  close(): Promise<void>;
}

const WS_ROUTE =
  /^\/(wayline|storage|media)\/api\/v1\/workspaces\/([^/]+)\/(waylines|sts|fast-upload|upload-callback)$/;

export async function startSampleServer(opts: SampleServerOptions = {}): Promise<SampleServer> {
  const workspaceId = opts.workspaceId ?? 'ws-1';
  const users = opts.users ?? { pilot: 'pilot123' };
  const modelKeys = new Set(opts.modelKeys ?? KNOWN_MODEL_KEYS);
  const waylines = opts.waylines ?? [];
  let sts = opts.sts ?? SAMPLE_STS;
  let style: SampleStyle = { stringCode: false, emptyData: '{}', callbackData: 'string', ...opts.style };
  let hook: Hook | undefined;
  let issued = 0;
  const calls: RecordedCall[] = [];
  const media: MediaRecord[] = [];
  const tokens = new Set(opts.tokens ?? ['sample-token']);
  const timers = new Set<NodeJS.Timeout>();

  const ok = (data?: unknown): RawAnswer => {
    const body: Obj = { code: style.stringCode ? '0' : 0, message: 'success' };
    if (data !== undefined) body['data'] = data;
    else if (style.emptyData !== 'missing') body['data'] = style.emptyData === '' ? '' : {};
    return { body };
  };
  // Generic failure: HTTP 200, code -1, no `data` key (nulls are left out).
  const fail = (message: string, code = -1): RawAnswer => ({ body: { code, message } });

  function fastUpload(ws: string, b: Obj): RawAnswer {
    const bad = fastUploadError(b, modelKeys);
    if (bad !== undefined) return fail(bad);
    const fp = String(b['fingerprint']).toLowerCase();
    const found = media.filter((m) => m.workspaceId === ws && m.fingerprint.toLowerCase() === fp);
    // A fingerprint recorded twice makes MyBatis' selectOne throw: the sample answers -1.
    if (found.length > 1) {
      return fail(`Expected one result (or null) to be returned by selectOne(), but found: ${found.length}`);
    }
    return found.length === 1 ? ok() : fail(`${String(b['fingerprint'])}don't exist.`);
  }

  function uploadCallback(ws: string, b: Obj): RawAnswer {
    const bad = callbackError(b, modelKeys);
    if (bad !== undefined) return fail(bad);
    const objectKey = String(b['object_key']);
    // No server-side dedupe: every accepted call inserts a record.
    media.push({
      workspaceId: ws,
      fingerprint: String(b['fingerprint']),
      name: String(b['name']),
      objectKey,
      body: b,
    });
    return ok(style.callbackData === 'string' ? objectKey : { object_key: objectKey });
  }

  const newToken = () => {
    const t = `tok-${++issued}-${Math.random().toString(36).slice(2)}`;
    tokens.add(t);
    return t;
  };
  const userData = (username: string, token: string) => ({
    user_id: `user-${username}`,
    username,
    user_type: 2,
    workspace_id: workspaceId,
    access_token: token,
    mqtt_addr: 'tcp://127.0.0.1:1883',
  });

  function route(call: RecordedCall): RawAnswer {
    const { method, path, body } = call;
    const b = isObj(body) ? body : {};
    if (path === '/manage/api/v1/login') {
      if (method !== 'POST') return fail(`Request method '${method}' is not supported`);
      const username = typeof b['username'] === 'string' ? b['username'] : '';
      if (users[username] === undefined) return fail('invalid username', 401);
      if (users[username] !== b['password']) return fail('invalid password', 401);
      if (b['flag'] !== 2) return fail('The account type does not match.', 401);
      return ok(userData(username, newToken()));
    }
    // The auth interceptor: a bad token gets 401 with an empty body, nothing else.
    const token = call.headers['x-auth-token'];
    if (typeof token !== 'string' || !tokens.has(token)) return { status: 401, body: '' };
    if (path === '/manage/api/v1/token/refresh') return ok(userData('pilot', newToken()));
    const m = WS_ROUTE.exec(path);
    if (m === null)
      return {
        status: 404,
        body: { timestamp: new Date().toISOString(), status: 404, error: 'Not Found', path },
      };
    const [, , ws = '', leaf] = m;
    const expected = leaf === 'waylines' ? 'GET' : 'POST';
    if (method !== expected) return fail(`Request method '${method}' is not supported`);
    if (leaf === 'waylines') {
      const page = waylinePage(waylines, call.query);
      return 'error' in page ? fail(page.error) : ok(page);
    }
    if (leaf === 'sts') {
      const bad = stsError(body);
      if (bad !== undefined) return fail(bad);
      return ok(sts === 'no-credentials' ? { ...SAMPLE_STS, credentials: undefined } : sts);
    }
    if (body === undefined) return fail('Required request body is missing');
    if (!isObj(body)) return fail('JSON parse error: Cannot deserialize the request body');
    return leaf === 'fast-upload' ? fastUpload(ws, b) : uploadCallback(ws, b);
  }

  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const url = new URL(req.url ?? '/', 'http://localhost');
      const text = Buffer.concat(chunks).toString('utf8');
      let body: unknown = text === '' ? undefined : text;
      try {
        if (text !== '') body = JSON.parse(text);
      } catch {
        // kept as text: the route answers -1 like Spring's parse error
      }
      const call: RecordedCall = {
        method: req.method ?? 'GET',
        path: url.pathname,
        url: req.url ?? '/',
        query: url.searchParams,
        headers: req.headers,
        body,
      };
      calls.push(call);
      const hooked = hook?.(call);
      const answer = hooked?.passThrough ? { ...route(call), ...hooked } : (hooked ?? route(call));
      const write = () => {
        if (res.destroyed) return;
        if (answer.destroy === true) return req.socket.destroy();
        const raw = answer.body ?? '';
        const payload = typeof raw === 'string' ? raw : JSON.stringify(raw);
        const type = typeof answer.body === 'string' ? {} : { 'content-type': 'application/json' };
        res.writeHead(answer.status ?? 200, { ...type, ...answer.headers }).end(payload);
      };
      if (answer.delayMs === undefined) write();
      else timers.add(setTimeout(write, answer.delayMs));
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;

  return {
    baseUrl: `http://127.0.0.1:${port}`,
    workspaceId,
    calls,
    media,
    tokens,
    setHook: (h) => void (hook = h),
    setStyle: (s) => void (style = { ...style, ...s }),
    setSts: (s) => void (sts = s ?? SAMPLE_STS),
    close: () =>
      new Promise<void>((resolve) => {
        for (const t of timers) clearTimeout(t);
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

/**
 * The bucket behind a sample-server stand-in: a real s3rver (a third-party S3
 * server) with the sample server's bucket, and the STS answer pointing at it.
 */
export async function startSampleBucket(
  directory: string,
): Promise<{ sts: StsResult; close(): Promise<void> }> {
  const S3rver = (await import('s3rver')).default;
  const s3 = new S3rver({
    address: '127.0.0.1',
    port: 0,
    silent: true,
    directory,
    configureBuckets: [{ name: SAMPLE_STS.bucket, configs: [] }],
  });
  const { port } = await s3.run();
  return {
    sts: {
      ...SAMPLE_STS,
      endpoint: `http://127.0.0.1:${port}`,
      credentials: { ...SAMPLE_STS.credentials, access_key_id: 'S3RVER', access_key_secret: 'S3RVER' },
    },
    close: () => s3.close(),
  };
}
