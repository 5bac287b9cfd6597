import http from 'node:http';
import type https from 'node:https';
import type { AddressInfo } from 'node:net';
import { inspect } from 'node:util';
import { afterEach, describe, expect, it } from 'vitest';
import { DmsError } from '../../main/core/errors.js';
import { ApiClient } from '../../main/core/api/client.js';

/**
 * Faults a proxy or a sick server produces, from a raw node:http server so
 * that every byte (and every dropped socket) is under the test's control.
 */

const TOKEN = 'tok.SUPER-SECRET-VALUE.sig';
const STS_PATH = '/storage/api/v1/workspaces/ws-1/sts';

type Handler = (req: http.IncomingMessage, res: http.ServerResponse) => void;
const servers: (http.Server | https.Server)[] = [];

async function listen(server: http.Server | https.Server): Promise<number> {
  servers.push(server);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return (server.address() as AddressInfo).port;
}

/** A client of a raw server; `hits` counts requests that reached it. */
async function rawClient(handler: Handler, opts: { timeoutMs?: number; maxBodyBytes?: number } = {}) {
  const hits: http.IncomingMessage[] = [];
  const port = await listen(
    http.createServer((req, res) => {
      hits.push(req);
      handler(req, res);
    }),
  );
  const client = new ApiClient({
    baseUrl: `http://127.0.0.1:${port}`,
    workspaceId: 'ws-1',
    token: TOKEN,
    ...opts,
  });
  return { client, hits };
}

async function failure(p: Promise<unknown>): Promise<DmsError> {
  const err = await p.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(DmsError);
  const e = err as DmsError;
  // Every error names the request, and none carries the token anywhere.
  expect(e.method).toBeDefined();
  expect(e.path).toBeDefined();
  for (const text of [JSON.stringify(e), e.message, e.stack ?? '', inspect(e, { depth: 6 })]) {
    expect(text).not.toContain(TOKEN);
  }
  return e;
}

afterEach(async () => {
  for (const s of servers.splice(0)) {
    s.closeAllConnections();
    await new Promise<void>((resolve) => s.close(() => resolve()));
  }
});

const html = (status: number, body: string, headers: http.OutgoingHttpHeaders = {}): Handler => {
  return (_req, res) => res.writeHead(status, { 'content-type': 'text/html', ...headers }).end(body);
};
// A proxy page that echoes the request's token early: the excerpt must redact it.
const PROXY_PAGE = `<html><head><title>Gateway ${TOKEN}</title></head><body>${'x'.repeat(500)}</body></html>`;

describe('bodies that are not an envelope', () => {
  it('HTML at HTTP 200 is malformed-response with a short excerpt and no token', async () => {
    const { client } = await rawClient(html(200, PROXY_PAGE));
    const err = await failure(client.getSts());
    expect(err.kind).toBe('malformed-response');
    expect(err.status).toBe(200);
    expect(err.path).toBe(STS_PATH);
    expect(err.message).toContain('<html><head><title>Gateway <redacted>');
    expect(err.message).not.toContain('x'.repeat(200));
  });

  it('HTML at HTTP 502 is a server error', async () => {
    const { client } = await rawClient(html(502, '<html><body>Bad Gateway</body></html>'));
    const err = await failure(client.listWaylines());
    expect(err.kind).toBe('server');
    expect(err.status).toBe(502);
    expect(err.message).toContain('Bad Gateway');
  });

  it('truncated JSON is malformed-response', async () => {
    const { client } = await rawClient(html(200, '{"code":0,"message":"success","data":{"list":[{"id":'));
    expect((await failure(client.listWaylines())).kind).toBe('malformed-response');
  });

  it.each(['content-length', 'chunked'])(
    'an answer over the size cap is malformed-response (%s)',
    async (mode) => {
      const big = JSON.stringify({ code: 0, data: 'y'.repeat(4096) });
      const { client } = await rawClient(
        (_req, res) => {
          const length = mode === 'chunked' ? {} : { 'content-length': Buffer.byteLength(big) };
          res.writeHead(200, { 'content-type': 'application/json', ...length });
          if (mode === 'chunked') res.write(big.slice(0, 2000));
          res.end(mode === 'chunked' ? big.slice(2000) : big);
        },
        { maxBodyBytes: 1024 },
      );
      const err = await failure(client.getSts());
      expect(err.kind).toBe('malformed-response');
      expect(err.message).toContain('larger than 1024 bytes');
    },
  );
});

describe('HTTP statuses', () => {
  it('429 with Retry-After seconds is throttled with the hint', async () => {
    const { client } = await rawClient(html(429, '', { 'retry-after': '7' }));
    const err = await failure(client.getSts());
    expect(err.kind).toBe('throttled');
    expect(err.retryAfterMs).toBe(7000);
  });

  it('503 with an HTTP-date Retry-After is throttled; 503 without it is a server error', async () => {
    const when = new Date(Date.now() + 60_000).toUTCString();
    const { client } = await rawClient((req, res) =>
      res.writeHead(503, req.method === 'GET' ? {} : { 'retry-after': when }).end(),
    );
    const throttled = await failure(client.getSts());
    expect(throttled.kind).toBe('throttled');
    expect(throttled.retryAfterMs).toBeGreaterThan(50_000);
    expect(throttled.retryAfterMs).toBeLessThanOrEqual(60_000);
    expect((await failure(client.listWaylines())).kind).toBe('server');
  });

  it('a 4xx with an envelope is rejected with the server code and message', async () => {
    const { client } = await rawClient((_req, res) =>
      res
        .writeHead(400, { 'content-type': 'application/json' })
        .end('{"code":"210001","message":"bad request"}'),
    );
    const err = await failure(client.uploadCallback({ result: 0, name: 'a.JPG', object_key: 'media/a.JPG' }));
    expect(err).toMatchObject({
      kind: 'rejected',
      status: 400,
      serverCode: 210001,
      serverMessage: 'bad request',
    });
  });

  it('a redirect is not followed (the token would go along) and is rejected', async () => {
    const { client, hits } = await rawClient(html(302, '', { location: 'https://elsewhere.example/x' }));
    const err = await failure(client.getSts());
    expect(err.kind).toBe('rejected');
    expect(err.message).toContain('https://elsewhere.example/x');
    expect(hits).toHaveLength(1);
  });

  it('HTTP 403 with an empty body is auth', async () => {
    const { client } = await rawClient(html(403, ''));
    expect((await failure(client.getSts())).kind).toBe('auth');
  });
});

describe('time and cancellation', () => {
  it('no headers within timeoutMs is a timeout', async () => {
    const { client } = await rawClient(() => undefined, { timeoutMs: 200 });
    const started = Date.now();
    const err = await failure(client.getSts());
    expect(err.kind).toBe('timeout');
    expect(Date.now() - started).toBeLessThan(2000);
  });

  it('a body that stalls after the headers is a timeout too (per-call timeoutMs)', async () => {
    const { client } = await rawClient((_req, res) => {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.write('{"code":0,');
    });
    expect((await failure(client.getSts({ timeoutMs: 200 }))).kind).toBe('timeout');
  });

  it("the caller's abort is cancelled, not timeout", async () => {
    const { client } = await rawClient(() => undefined, { timeoutMs: 5000 });
    const ctl = new AbortController();
    setTimeout(() => ctl.abort(), 100);
    const err = await failure(client.getSts({ signal: ctl.signal }));
    expect(err.kind).toBe('cancelled');
    expect(err.retryable).toBe(false);
  });

  it('an already aborted signal sends nothing', async () => {
    const { client, hits } = await rawClient(html(200, '{"code":0}'));
    expect((await failure(client.getSts({ signal: AbortSignal.abort() }))).kind).toBe('cancelled');
    expect(hits).toHaveLength(0);
  });
});

describe('network failures', () => {
  it('a connection reset before the answer is network', async () => {
    const { client } = await rawClient((req) => req.socket.destroy());
    expect((await failure(client.getSts())).kind).toBe('network');
  });

  it('a connection dropped in the middle of the body is network', async () => {
    const { client } = await rawClient((req, res) => {
      res.writeHead(200, { 'content-type': 'application/json', 'content-length': '200' });
      res.write('{"code":0,"data":');
      setTimeout(() => req.socket.destroy(), 20);
    });
    expect((await failure(client.getSts())).kind).toBe('network');
  });

  it('a refused connection (closed port) is network', async () => {
    const probe = http.createServer();
    const port = await listen(probe);
    await new Promise<void>((resolve) => probe.close(() => resolve()));
    servers.splice(servers.indexOf(probe), 1);
    const client = new ApiClient({ baseUrl: `http://127.0.0.1:${port}`, workspaceId: 'ws-1', token: TOKEN });
    const err = await failure(client.getSts());
    expect(err.kind).toBe('network');
    expect(err.message).toContain('ECONNREFUSED');
  });
});
