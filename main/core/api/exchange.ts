/**
 * The HTTP exchange under the API client, behind one small function type so
 * the client does not care who carries it.
 *
 * The default is undici's request(): measured on this project's benchmark
 * machine at about 0.33 ms of CPU per small JSON call against about 1.4 ms
 * for fetch (WHATWG streams, Request/Response objects), which mattered with
 * two server calls per file on cards of thousands of photos. A fetch can
 * still be given (tests wrap one to count or to lose answers).
 */
import type { Agent, Dispatcher } from 'undici';
import { undici } from '../undici.js';
import type { AnswerHeaders } from './envelope.js';

export interface ExchangeRequest {
  method: 'GET' | 'POST';
  url: URL;
  headers: Record<string, string>;
  body?: string;
  signal: AbortSignal;
}

export interface HttpAnswer {
  status: number;
  headers: AnswerHeaders;
  body: AsyncIterable<Uint8Array>;
  /** Drops the rest of the body (and its connection when needed). */
  discard(): Promise<void>;
}

export type Exchange = (req: ExchangeRequest) => Promise<HttpAnswer>;

let sharedAgent: Agent | undefined;

/**
 * One keep-alive pool for every client of the process (unless a dispatcher
 * with a custom CA is given): server calls reuse warm connections. HTTP/1.1
 * only, as tested: undici 8 would otherwise take HTTP/2 when a server offers it.
 */
function defaultDispatcher(): Dispatcher {
  sharedAgent ??= new (undici().Agent)({ keepAliveTimeout: 10_000, connections: 32, allowH2: false });
  return sharedAgent;
}

export function undiciExchange(dispatcher?: Dispatcher): Exchange {
  return async (req) => {
    const res = await undici().request(req.url, {
      method: req.method,
      headers: req.headers,
      ...(req.body === undefined ? {} : { body: req.body }),
      signal: req.signal,
      dispatcher: dispatcher ?? defaultDispatcher(),
      // Redirects are never followed (undici's request() follows none without a
      // redirect interceptor): a redirected API call is reported (envelope.ts).
      // The caller's deadline (transport.ts) covers headers and body; undici's own
      // per-phase timeouts would only produce a second, differently worded error.
      headersTimeout: 0,
      bodyTimeout: 0,
    });
    const raw = res.headers;
    return {
      status: res.statusCode,
      headers: {
        get(name: string): string | null {
          const v = raw[name.toLowerCase()];
          if (v === undefined) return null;
          return Array.isArray(v) ? v.join(', ') : v;
        },
      },
      body: res.body,
      discard: () => {
        // destroy() without a reason still emits an AbortError on the body:
        // with no listener that would be an uncaught exception (a crash).
        res.body.on('error', () => undefined);
        res.body.destroy();
        return Promise.resolve();
      },
    };
  };
}

export function fetchExchange(f: typeof fetch): Exchange {
  return async (req) => {
    const res = await f(req.url, {
      method: req.method,
      headers: req.headers,
      ...(req.body === undefined ? {} : { body: req.body }),
      signal: req.signal,
      redirect: 'manual',
    });
    const stream = res.body;
    return {
      status: res.status,
      headers: res.headers,
      body: stream ?? noBody(),
      discard: async () => {
        await stream?.cancel().catch(() => undefined);
      },
    };
  };
}

// eslint-disable-next-line require-yield -- an empty body: nothing to yield
async function* noBody(): AsyncGenerator<Uint8Array> {
  await Promise.resolve();
}
