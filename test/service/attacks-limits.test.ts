/**
 * Item 6 of the issue: a signed-in client cannot hold sockets, spend the
 * service's CPU on password guesses, fill its tables or its disk. The
 * service runs with short limits here (every limit is an option, the
 * defaults are in the README's Security section); the assertions use
 * generous upper bounds so a busy machine does not fail them.
 */
import { createHash, randomBytes } from 'node:crypto';
import { readdirSync } from 'node:fs';
import http from 'node:http';
import net from 'node:net';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CODES, DEFAULT_LIMITS } from '../../main/service/index.js';
import { call, getSts, paths, startTemp, type Loose } from './helpers.js';
import { rawS3, signer } from './s3-raw.js';

const TIMEOUT_MS = 1000;
let s: Awaited<ReturnType<typeof startTemp>>;
beforeAll(async () => {
  s = await startTemp({
    limits: {
      maxObjectBytes: 1024 * 1024,
      maxPartBytes: 6 * 1024 * 1024,
      maxObjectsPerWorkspace: 3,
      maxOpenUploadsPerWorkspace: 2,
      stsBurst: 3,
      stsRefillSeconds: 3600,
      // Long enough that the throttled state is still there when the test looks, however slow the machine.
      loginFirstWaitSeconds: 5,
    },
  });
});
afterAll(async () => {
  await s.stop();
});

/** Opens a socket, writes `data`, then sends nothing more; resolves with the ms until the server closed it. */
function stall(url: string, data: string): Promise<{ ms: number; answer: string }> {
  const { hostname, port } = new URL(url);
  return new Promise((resolve, reject) => {
    const started = Date.now();
    let answer = '';
    const socket = net.connect({ host: hostname, port: Number(port) }, () => socket.write(data));
    socket.setEncoding('utf8');
    socket.on('data', (d: string) => (answer += d));
    socket.on('error', () => undefined); // a reset is a close too
    socket.on('close', () => resolve({ ms: Date.now() - started, answer }));
    setTimeout(() => {
      socket.destroy();
      reject(new Error('the server kept a stalled connection open for 20 s'));
    }, 20_000);
  });
}

/** What the bucket says to a connection whose request did not arrive in time. */
const BUCKET_TIMEOUT_MESSAGE = 'The request did not arrive completely in time. Send it again.';

/** Splits a raw HTTP answer into its status and S3 error (code and message). */
function xmlAnswer(text: string): { status: number; code?: string; message?: string } {
  const status = Number(/^HTTP\/1\.1 (\d{3}) /.exec(text)?.[1] ?? 0);
  const code = /<Code>([^<]*)<\/Code>/.exec(text)?.[1];
  const message = /<Message>([^<]*)<\/Message>/.exec(text)?.[1];
  return { status, ...(code !== undefined ? { code } : {}), ...(message !== undefined ? { message } : {}) };
}

/** The request line and signed headers of a PutObject of `length` bytes, up to the blank line. */
async function signedPut(sts: Loose, key: string, length: number, headers: Record<string, string> = {}) {
  const endpoint = new URL(sts.endpoint);
  const signed = await signer(sts).sign({
    method: 'PUT',
    protocol: 'http:',
    hostname: endpoint.hostname,
    port: Number(endpoint.port),
    path: `/media/${key}`,
    query: {},
    headers: {
      host: endpoint.host,
      'content-length': String(length),
      'x-amz-content-sha256': 'UNSIGNED-PAYLOAD',
      ...headers,
    },
  });
  const head = Object.entries(signed.headers)
    .map(([k, v]) => `${k}: ${v}\r\n`)
    .join('');
  return `PUT /media/${key} HTTP/1.1\r\n${head}\r\n`;
}

describe('6. a client that stops sending', () => {
  // Short timeouts on a service of its own: a password check can take longer than one here.
  let s: Awaited<ReturnType<typeof startTemp>>;
  beforeAll(async () => {
    s = await startTemp({
      limits: {
        headersTimeoutMs: TIMEOUT_MS,
        idleTimeoutMs: TIMEOUT_MS,
        requestTimeoutMs: 3 * TIMEOUT_MS,
      },
    });
  });
  afterAll(async () => {
    await s.stop();
  });

  it('is cut within the timeout: half a body to the API or the bucket, half the headers', async () => {
    const api = new URL(s.baseUrl);
    const halfLogin = await stall(
      s.baseUrl,
      `POST /manage/api/v1/login HTTP/1.1\r\nHost: ${api.host}\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{"username":`,
    );
    const halfHeaders = await stall(
      s.bucket.endpoint,
      `PUT /media/x HTTP/1.1\r\nHost: ${new URL(s.bucket.endpoint).host}\r\n`,
    );

    // A properly signed PutObject that promises 1000 bytes and sends 10.
    const sts = await getSts(s);
    const key = `${sts.object_key_prefix}/half.jpg`;
    const halfBody = await stall(sts.endpoint, `${await signedPut(sts, key, 1000)}0123456789`);

    for (const [what, r] of Object.entries({ halfLogin, halfHeaders, halfBody })) {
      // Not before the timeout (the server waited), and well within it plus Node's check interval.
      expect([what, r.ms >= TIMEOUT_MS * 0.9]).toEqual([what, true]);
      expect([what, r.ms < TIMEOUT_MS + 10_000]).toEqual([what, true]);
    }
    // Nothing of the half body stays: no object, no file being received.
    expect((await rawS3(sts, { method: 'HEAD', path: `/media/${key}` })).status).toBe(404);
    // (removed once the server has seen the cut: allow it a moment on a busy machine)
    const tmp = join(s.bucket.dataDir, 'tmp');
    for (let i = 0; i < 50 && readdirSync(tmp).length > 0; i++) await new Promise((r) => setTimeout(r, 100));
    expect(readdirSync(tmp)).toEqual([]);
  });
});

/**
 * Sends `head`, then `body` in slices of a tenth of `rate` every 100 ms (after
 * "100 Continue" when `head` asks for it), like an upload on a slow uplink.
 * Resolves with the answer once the server has given a final one, or closed.
 */
function trickle(
  url: string,
  head: string,
  body: Buffer,
  rate: number,
): Promise<{ ms: number; answer: string }> {
  const { hostname, port } = new URL(url);
  const waitForContinue = /^expect: 100-continue\r$/im.test(head);
  return new Promise((resolve) => {
    const started = Date.now();
    let answer = '';
    let sent = 0;
    let timer: NodeJS.Timeout | undefined;
    const tick = (): void => {
      if (socket.destroyed || sent >= body.length) return;
      const slice = body.subarray(sent, sent + rate / 10);
      sent += slice.length;
      socket.write(slice);
      timer = setTimeout(tick, 100);
    };
    const socket = net.connect({ host: hostname, port: Number(port) }, () => {
      socket.write(head);
      if (!waitForContinue) tick();
    });
    const done = (): void => {
      clearTimeout(timer);
      socket.destroy();
      resolve({ ms: Date.now() - started, answer });
    };
    socket.setEncoding('latin1');
    socket.on('data', (d: string) => {
      answer += d;
      if (waitForContinue && sent === 0 && answer.startsWith('HTTP/1.1 100 Continue\r\n\r\n')) tick();
      // A final answer (not the 100) in full: headers, and the body its Content-Length announces.
      const final = answer.replace(/^HTTP\/1\.1 100 Continue\r\n\r\n/, '');
      const end = final.indexOf('\r\n\r\n');
      const length = Number(/\r\ncontent-length: (\d+)/i.exec(final)?.[1] ?? 0);
      if (end >= 0 && final.length >= end + 4 + length) done();
    });
    socket.on('error', () => undefined);
    socket.on('close', done);
  });
}

describe('6. a client that sends slowly', () => {
  // Every timeout the service has, at 2 s: the body below keeps coming for six times as long.
  const SHORT_MS = 2000;
  let svc: Awaited<ReturnType<typeof startTemp>>;
  beforeAll(async () => {
    const timeouts = Object.keys(DEFAULT_LIMITS).filter((name) => name.endsWith('TimeoutMs'));
    svc = await startTemp({ limits: Object.fromEntries(timeouts.map((name) => [name, SHORT_MS])) });
  });
  afterAll(async () => {
    await svc.stop();
  });

  it('a body trickling at 10 KiB/s for 12 s is served, with or without Expect: 100-continue; one that stops is cut', async () => {
    const sts = await getSts(svc);
    const body = randomBytes(120 * 1024);
    const md5 = createHash('md5').update(body);
    const contentMd5 = md5.copy().digest('base64');
    const key = (name: string): string => `${sts.object_key_prefix}/${name}`;
    const rate = 10 * 1024;
    const [plain, expecting, stalled] = await Promise.all([
      trickle(
        sts.endpoint,
        await signedPut(sts, key('slow.jpg'), body.length, { 'content-md5': contentMd5 }),
        body,
        rate,
      ),
      trickle(
        sts.endpoint,
        await signedPut(sts, key('slow-expect.jpg'), body.length, {
          'content-md5': contentMd5,
          expect: '100-continue',
        }),
        body,
        rate,
      ),
      // Headers and a tenth of the body, then nothing.
      stall(sts.endpoint, `${await signedPut(sts, key('stalled.jpg'), body.length)}${'x'.repeat(12 * 1024)}`),
    ]);
    const status = (answer: string): string =>
      /^HTTP\/1\.1 (?:100 Continue\r\n\r\nHTTP\/1\.1 )?(\d{3})/.exec(answer)?.[1] ?? answer;
    expect([status(plain.answer), status(expecting.answer)]).toEqual(['200', '200']);
    // Served once the whole body was there, not before.
    expect(Math.min(plain.ms, expecting.ms)).toBeGreaterThanOrEqual(11_000);
    const etag = `"${md5.digest('hex')}"`;
    for (const name of ['slow.jpg', 'slow-expect.jpg']) {
      const head = await rawS3(sts, { method: 'HEAD', path: `/media/${key(name)}` });
      expect([name, head.status, head.headers.etag]).toEqual([name, 200, etag]);
    }
    // The one that stopped sending: cut once it had been silent for the idle timeout.
    expect(stalled.ms).toBeGreaterThanOrEqual(SHORT_MS * 0.9);
    expect(stalled.ms).toBeLessThan(SHORT_MS + 10_000);
    // ...with S3's answer, so that its client knows to send it again.
    expect(xmlAnswer(stalled.answer)).toEqual({
      status: 400,
      code: 'RequestTimeout',
      message: BUCKET_TIMEOUT_MESSAGE,
    });
    expect((await rawS3(sts, { method: 'HEAD', path: `/media/${key('stalled.jpg')}` })).status).toBe(404);
  });
});

/** One request from a chosen loopback address (127.0.0.x all reach the service), on a connection of its own. */
function fromAddress(
  baseUrl: string,
  opts: {
    method: string;
    path: string;
    body?: unknown;
    headers?: Record<string, string>;
    localAddress?: string;
  },
): Promise<{ status: number; retryAfter?: string; body: Loose }> {
  const url = new URL(baseUrl);
  const data = opts.body === undefined ? undefined : JSON.stringify(opts.body);
  return new Promise((resolve, reject) => {
    const req = http.request(
      {
        host: url.hostname,
        port: url.port,
        path: opts.path,
        method: opts.method,
        localAddress: opts.localAddress ?? '127.0.0.1',
        agent: false,
        headers: {
          ...opts.headers,
          ...(data === undefined
            ? {}
            : { 'content-type': 'application/json', 'content-length': Buffer.byteLength(data) }),
        },
      },
      (res) => {
        let text = '';
        res.setEncoding('utf8');
        res.on('data', (d: string) => (text += d));
        res.on('end', () =>
          resolve({
            status: res.statusCode ?? 0,
            ...(res.headers['retry-after'] ? { retryAfter: res.headers['retry-after'] } : {}),
            body: JSON.parse(text),
          }),
        );
      },
    );
    req.on('error', reject);
    req.end(data);
  });
}

/** A login from a chosen loopback address. */
const login = (body: unknown, localAddress = '127.0.0.1') =>
  fromAddress(s.baseUrl, { method: 'POST', path: '/manage/api/v1/login', body, localAddress });

describe('6. password guessing', () => {
  it('40 wrong passwords in a row end in HTTP 429 with Retry-After, per address and per username', async () => {
    await s.admin.createUser('guessed', 'the-right-password');
    const answers = [];
    for (let i = 0; i < 40; i++) answers.push(await login({ username: 'guessed', password: `wrong-${i}` }));
    const checked = answers.filter((a) => a.body.code === CODES.LOGIN_FAILED).length;
    const throttled = answers.filter((a) => a.status === 429);
    // The first five are checked; after that every try is refused unchecked (no scrypt).
    expect(checked).toBe(5);
    expect(throttled.length).toBe(35);
    const last = answers.at(-1)!;
    expect(last.status).toBe(429);
    expect(Number(last.retryAfter)).toBeGreaterThanOrEqual(1);
    expect(Number(last.retryAfter)).toBeLessThanOrEqual(5);
    expect(last.body).toEqual({
      code: CODES.LOGIN_THROTTLED,
      message: `Too many wrong passwords from this computer or for this user. Wait ${last.retryAfter} s, then sign in again.`,
    });
    // The username is throttled from another address, even with the right password...
    const elsewhere = await login({ username: 'guessed', password: 'the-right-password' }, '127.0.0.2');
    expect(elsewhere.status).toBe(429);
    // ...and this address for another user.
    expect((await login({ username: 'pilot', password: 'whatever-it-is' })).status).toBe(429);
    // After the wait, the right password works again.
    const wait = Math.max(...answers.map((a) => Number(a.retryAfter ?? 0)));
    await new Promise((r) => setTimeout(r, wait * 1000 + 100));
    const ok = await login({ username: 'guessed', password: 'the-right-password' }, '127.0.0.3');
    expect(ok.body.code).toBe(0);
  });
});

describe('6. credentials and storage', () => {
  it('limits STS issues per token, with Retry-After; another token is not affected', async () => {
    const token = await s.admin.createToken();
    const codes = [];
    let last: Loose;
    for (let i = 0; i < 5; i++) {
      last = await call({ baseUrl: s.baseUrl, token }, 'POST', paths(s.workspaceId).sts);
      codes.push(last.body.code);
    }
    expect(codes).toEqual([0, 0, 0, CODES.STS_THROTTLED, CODES.STS_THROTTLED]);
    expect(last.status).toBe(429);
    expect(last.body.message).toMatch(
      /^Too many requests for bucket credentials with this token\. Wait \d+ s/,
    );
    const other = await s.admin.createToken();
    expect(
      (await call({ baseUrl: s.baseUrl, token: other }, 'POST', paths(s.workspaceId).sts)).body.code,
    ).toBe(0);
  });

  it('refuses bodies over the size limit before reading them, and objects and uploads over the caps', async () => {
    const ws = await s.admin.createWorkspace('Capped');
    const sts = await getSts(s, ws, await s.admin.createToken({ workspaceId: ws }));
    const key = (n: string) => `/media/${sts.object_key_prefix}/${n}`;
    const big = await rawS3(sts, {
      method: 'PUT',
      path: key('big.bin'),
      headers: { 'content-length': String(1024 * 1024 + 1) },
    });
    expect([big.status, big.code]).toEqual([400, 'EntityTooLarge']);
    const noLength = await rawS3(sts, {
      method: 'PUT',
      path: key('chunked.bin'),
      headers: { 'transfer-encoding': 'chunked' },
    });
    expect([noLength.status, noLength.code]).toEqual([411, 'MissingContentLength']);

    for (const n of ['1', '2', '3'])
      expect((await rawS3(sts, { method: 'PUT', path: key(n), body: n })).status).toBe(200);
    const fourth = await rawS3(sts, { method: 'PUT', path: key('4'), body: '4' });
    expect([fourth.status, fourth.code]).toEqual([400, 'InvalidRequest']);
    expect(fourth.body).toContain('already holds 3 objects');
    expect((await rawS3(sts, { method: 'PUT', path: key('1'), body: 'replaced' })).status).toBe(200);

    const create = () => rawS3(sts, { method: 'POST', path: key('1'), query: { uploads: '' } });
    expect((await create()).status).toBe(200);
    expect((await create()).status).toBe(200);
    const third = await create();
    expect([third.status, third.code]).toEqual([400, 'InvalidRequest']);
    expect(third.body).toContain('2 unfinished multipart uploads');
  });

  it('a 10 MB JSON body gets the 413 envelope and no reset, even when the client writes it all before it reads', async () => {
    const url = new URL(s.baseUrl);
    const length = 10 * 1024 * 1024;
    const outcome = await new Promise<{ answer: string; errors: string[] }>((resolve) => {
      const sock = net.connect({ host: url.hostname, port: Number(url.port) });
      let answer = '';
      const errors: string[] = [];
      sock.setEncoding('utf8');
      sock.on('data', (d: string) => (answer += d));
      sock.on('error', (err: NodeJS.ErrnoException) => errors.push(err.code ?? err.message));
      sock.on('close', () => resolve({ answer, errors }));
      sock.write(
        `POST ${paths(s.workspaceId).callback} HTTP/1.1\r\nHost: ${url.host}\r\nx-auth-token: ${s.token}\r\n` +
          `Content-Type: application/json\r\nContent-Length: ${length}\r\n\r\n`,
      );
      // The whole body in one write (as curl or a script's HTTP library sends it), then the end.
      sock.end(Buffer.alloc(length, ' '));
      setTimeout(() => sock.destroy(new Error('no close within 20 s')), 20_000).unref();
    });
    // Before: errors ['EPIPE'] (the service closed the connection under the body still on its way).
    expect(outcome.errors).toEqual([]);
    expect(rawAnswer(outcome.answer)).toEqual({
      status: 413,
      body: {
        code: CODES.BODY_TOO_LARGE,
        message: `The request body is larger than the limit of ${256 * 1024} bytes.`,
      },
    });
  });

  it('closes connections beyond the cap at once', async () => {
    const capped = await startTemp({ limits: { maxConnections: 3 } });
    try {
      const { hostname, port } = new URL(capped.baseUrl);
      const sockets = await Promise.all(
        Array.from(
          { length: 6 },
          () =>
            new Promise<net.Socket>((resolve) => {
              const sock = net.connect({ host: hostname, port: Number(port) }, () => resolve(sock));
              sock.on('error', () => undefined);
            }),
        ),
      );
      const closed = await Promise.all(
        sockets.map(
          (sock) =>
            new Promise<boolean>((resolve) => {
              if (sock.destroyed) return resolve(true);
              sock.once('close', () => resolve(true));
              setTimeout(() => resolve(false), 2000);
            }),
        ),
      );
      expect(closed.filter(Boolean).length).toBe(3);
      // Once the open ones are gone, the service serves again (the server counts them down as they close).
      for (const sock of sockets) sock.destroy();
      let served = false;
      for (let i = 0; i < 50 && !served; i++) {
        served = await call(capped, 'GET', paths(capped.workspaceId).waylines).then(
          (r) => r.body.code === 0,
          () => false,
        );
        if (!served) await new Promise((r) => setTimeout(r, 100));
      }
      expect(served).toBe(true);
    } finally {
      await capped.stop();
    }
  });
});

/** Splits a raw HTTP answer into its status and JSON body. */
function rawAnswer(text: string): { status: number; body: Loose } {
  const status = Number(/^HTTP\/1\.1 (\d{3}) /.exec(text)?.[1] ?? 0);
  const body = text.slice(text.indexOf('\r\n\r\n') + 4);
  return { status, body: body === '' ? undefined : JSON.parse(body) };
}

describe('22. requests refused before they exist still get the envelope', () => {
  it('a 100 KB URL, a 1 MB token, a token with CR/LF or a control character, a garbage request line', async () => {
    const host = new URL(s.baseUrl).host;
    const waylines = paths(s.workspaceId).waylines;
    const get = (target: string, token: string) =>
      `GET ${target} HTTP/1.1\r\nHost: ${host}\r\nx-auth-token: ${token}\r\n\r\n`;
    const tooLarge = {
      code: CODES.HEADERS_TOO_LARGE,
      message:
        "The request's URL and headers are larger than 16384 bytes. Check the address and the x-auth-token header (a token is far shorter).",
    };
    const notHttp = {
      code: CODES.BAD_HTTP_REQUEST,
      message:
        'The request is not valid HTTP: a header holds a line break or a control character (was a token read with its newline?), or the request line is malformed.',
    };
    const cases: Array<[string, string, number, unknown]> = [
      ['100 KB URL', get(`${waylines}?name=${'a'.repeat(100 * 1024)}`, s.token), 431, tooLarge],
      ['1 MB token', get(waylines, 't'.repeat(1024 * 1024)), 431, tooLarge],
      ['token with CR/LF', get(waylines, `${s.token.slice(0, 8)}\r\n${s.token.slice(8)}`), 400, notHttp],
      ['token with a bare LF', get(waylines, `${s.token}\nx`), 400, notHttp],
      ['token with a bare CR', get(waylines, `${s.token}\rx`), 400, notHttp],
      ['token with a control character', get(waylines, `${s.token}\u0001`), 400, notHttp],
      ['garbage request line', 'NOT HTTP AT ALL\r\n\r\n', 400, notHttp],
    ];
    for (const [what, data, status, envelope] of cases) {
      const { answer } = await stall(s.baseUrl, data);
      expect([what, rawAnswer(answer)]).toEqual([what, { status, body: envelope }]);
    }
    // A client that sends the whole 1 MB token before reading still gets the answer, not a reset.
    const res = await fetch(`${s.baseUrl}${waylines}`, {
      headers: { 'x-auth-token': 't'.repeat(1024 * 1024) },
    });
    expect([res.status, await res.json()]).toEqual([431, tooLarge]);
    // The service goes on serving.
    expect((await call(s, 'GET', waylines)).body.code).toBe(0);
  });
});

/** What each idle socket received before it was closed. */
const said = new WeakMap<net.Socket, string>();

/** Opens `n` connections from `localAddress` that send nothing; resolves once each is connected or refused. */
async function idleSockets(url: string, n: number, localAddress: string): Promise<net.Socket[]> {
  const { hostname, port } = new URL(url);
  const sockets: net.Socket[] = [];
  // In batches: a thousand SYNs at once overflow the listen backlog and wait a second for a retransmit.
  for (let i = 0; i < n; i += 100) {
    const batch = Array.from(
      { length: Math.min(100, n - i) },
      () =>
        new Promise<net.Socket>((resolve) => {
          const sock = net.connect({ host: hostname, port: Number(port), localAddress });
          sock.on('error', () => undefined);
          // What the server says before it closes is kept (and read, so that 'close' comes).
          sock.setEncoding('utf8');
          sock.on('data', (d: string) => said.set(sock, (said.get(sock) ?? '') + d));
          sock.once('connect', () => resolve(sock));
          sock.once('close', () => resolve(sock));
        }),
    );
    sockets.push(...(await Promise.all(batch)));
  }
  return sockets;
}

const isOpen = (sock: net.Socket): boolean => !sock.destroyed;

async function waitFor(what: string, check: () => boolean, ms: number): Promise<void> {
  const end = Date.now() + ms;
  while (!check()) {
    if (Date.now() > end) throw new Error(`timed out after ${ms} ms waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

/** Twenty requests in a row from `localAddress`: the envelope code of each, or 'refused' (connection closed or reset). */
async function twentyTries(
  svc: { baseUrl: string; token: string; workspaceId: string },
  localAddress: string,
) {
  const codes: unknown[] = [];
  for (let i = 0; i < 20; i++) {
    codes.push(
      await fromAddress(svc.baseUrl, {
        method: 'GET',
        path: paths(svc.workspaceId).waylines,
        headers: { 'x-auth-token': svc.token },
        localAddress,
      }).then(
        (r) => r.body.code,
        () => 'refused',
      ),
    );
  }
  return codes;
}

/** Twenty PutObjects in a row from `localAddress`, each on a connection of its own: the status of each, or 'refused'. */
async function twentyPuts(sts: Loose, localAddress: string): Promise<unknown[]> {
  const statuses: unknown[] = [];
  for (let i = 0; i < 20; i++) {
    const put = rawS3(sts, {
      method: 'PUT',
      path: `/media/${sts.object_key_prefix}/beside-${i}.jpg`,
      body: `photo ${i}`,
      localAddress,
    });
    statuses.push(
      await put.then(
        (r) => r.status,
        () => 'refused',
      ),
    );
  }
  return statuses;
}

type Temp = Awaited<ReturnType<typeof startTemp>>;

/**
 * Issue 22's case on one of the two servers: 1,000 sockets from 127.0.0.1
 * that send nothing, and twenty requests from a client on 127.0.0.2 beside
 * them, each of which must be `served`. Resolves with what each of the
 * sockets the server held was told when it was cut at the headers timeout.
 */
async function idleBeside(server: {
  url: (svc: Temp) => string;
  /** Before the sockets are opened (credentials...). */
  prepare?: (svc: Temp) => Promise<unknown>;
  tries: (svc: Temp, localAddress: string, prepared: unknown) => Promise<unknown[]>;
  served: unknown;
}): Promise<string[]> {
  const HEADERS_MS = 5000;
  const svc = await startTemp({ limits: { headersTimeoutMs: HEADERS_MS, maxConnectionsPerAddress: 16 } });
  const sockets: net.Socket[] = [];
  try {
    const prepared = await server.prepare?.(svc);
    const started = Date.now();
    sockets.push(...(await idleSockets(server.url(svc), 1000, '127.0.0.1')));
    // Beyond the 16 of this address, every connection is closed at once (not after a timeout).
    const settled = await waitFor(
      'the extra connections to be closed',
      () => sockets.filter(isOpen).length <= 16,
      3000,
    ).then(
      () => true,
      () => false,
    );
    const held = sockets.filter(isOpen);
    // Twenty tries from another client address: each one served, while the 16 are still held.
    const codes = await server.tries(svc, '127.0.0.2', prepared);
    expect(codes).toEqual(Array(20).fill(server.served));
    expect([settled, held.length]).toEqual([true, 16]);
    expect(held.filter(isOpen).length).toBe(16);
    // The held ones never sent a request: cut at the headers timeout (plus Node's check interval).
    await waitFor('the held connections to be cut', () => !held.some(isOpen), HEADERS_MS + 10_000);
    expect(Date.now() - started).toBeGreaterThanOrEqual(HEADERS_MS * 0.9);
    // The extras were closed without a word.
    expect(sockets.filter((sock) => !held.includes(sock) && said.has(sock))).toEqual([]);
    return held.map((sock) => said.get(sock) ?? '');
  } finally {
    for (const sock of sockets) sock.destroy();
    await svc.stop();
  }
}

describe('22. idle connections held open', () => {
  it('1,000 idle sockets from one address: the extras are closed at once, the rest cut after the headers timeout, another client is served beside them', async () => {
    const answers = await idleBeside({ url: (svc) => svc.baseUrl, tries: twentyTries, served: 0 });
    // ...with the envelope.
    expect(new Set(answers.map((text) => JSON.stringify(rawAnswer(text))))).toEqual(
      new Set([
        JSON.stringify({
          status: 408,
          body: {
            code: CODES.REQUEST_TIMEOUT,
            message: 'The request did not arrive completely in time. Send it again.',
          },
        }),
      ]),
    );
  });

  it("the same at the embedded bucket: an S3 client on another address is served at once, the held sockets get S3's RequestTimeout", async () => {
    const answers = await idleBeside({
      url: (svc) => svc.bucket.endpoint,
      prepare: (svc) => getSts(svc),
      tries: (_svc, localAddress, sts) => twentyPuts(sts, localAddress),
      served: 200,
    });
    expect(new Set(answers.map((text) => JSON.stringify(xmlAnswer(text))))).toEqual(
      new Set([
        JSON.stringify({
          status: 400,
          code: 'RequestTimeout',
          message: BUCKET_TIMEOUT_MESSAGE,
        }),
      ]),
    );
  });

  it("1,000 idle sockets from one address: that address's next request is served within 2 s, its own longest-idle socket makes room", async () => {
    // The defaults (64 per address, 256 in all, 10 s headers timeout): the promise as `serve` keeps it.
    const svc = await startTemp();
    const sockets: net.Socket[] = [];
    try {
      sockets.push(...(await idleSockets(svc.baseUrl, 1000, '127.0.0.1')));
      await waitFor(
        'the connections beyond the address bound to be closed',
        () => sockets.filter(isOpen).length <= DEFAULT_LIMITS.maxConnectionsPerAddress,
        3000,
      );
      const held = sockets.filter(isOpen);
      // The newest ones are held (each took the place of the longest-idle one before it), from the last batch of 100.
      expect(held.length).toBe(DEFAULT_LIMITS.maxConnectionsPerAddress);
      expect(Math.min(...held.map((sock) => sockets.indexOf(sock)))).toBeGreaterThanOrEqual(900);
      const started = Date.now();
      const first = await twentyTries(svc, '127.0.0.1');
      const ms = Date.now() - started;
      // Before: 'refused' twenty times (each new connection from the address was reset at once).
      expect(first).toEqual(Array(20).fill(0));
      expect(ms).toBeLessThan(20 * 2000);
      // The first try took one held socket's place; each try's connection closes after its answer,
      // leaving its place to the next: the other held sockets are still open.
      expect(held.filter(isOpen).length).toBe(DEFAULT_LIMITS.maxConnectionsPerAddress - 1);
    } finally {
      for (const sock of sockets) sock.destroy();
      await svc.stop();
    }
  });

  it('idle sockets from many addresses filling the cap: a new client is still served, a request in progress is never closed for it', async () => {
    const svc = await startTemp({
      limits: { maxConnections: 40, maxConnectionsPerAddress: 10, headersTimeoutMs: 20_000 },
    });
    const sockets: net.Socket[] = [];
    try {
      const { hostname, port } = new URL(svc.baseUrl);
      // A login in progress: headers sent, half its body still to come.
      const body = JSON.stringify({ username: 'nobody', password: 'not-the-password', flag: 2 });
      let answer = '';
      const busy = net.connect({ host: hostname, port: Number(port), localAddress: '127.0.0.3' });
      sockets.push(busy);
      busy.setEncoding('utf8');
      busy.on('data', (d: string) => (answer += d));
      busy.on('error', () => undefined);
      await new Promise((r) => busy.once('connect', r));
      busy.write(
        `POST /manage/api/v1/login HTTP/1.1\r\nHost: ${hostname}\r\nContent-Type: application/json\r\n` +
          `Content-Length: ${body.length}\r\nConnection: close\r\n\r\n${body.slice(0, 10)}`,
      );
      await new Promise((r) => setTimeout(r, 200));
      // 80 idle connections from eight addresses, 10 each, for a cap of 40.
      for (let a = 10; a < 18; a++) sockets.push(...(await idleSockets(svc.baseUrl, 10, `127.0.0.${a}`)));
      await waitFor('the cap to hold', () => sockets.filter(isOpen).length <= 40, 3000);
      const codes = await twentyTries(svc, '127.0.0.2');
      expect(codes).toEqual(Array(20).fill(0));
      // The login in progress was never closed to make room: it completes and is answered.
      expect(isOpen(busy)).toBe(true);
      // (write, not end: a client that half-closes has its request dropped by Node)
      busy.write(body.slice(10));
      await waitFor('the login answer', () => answer.includes('\r\n\r\n{'), 15_000);
      expect(rawAnswer(answer.slice(0, answer.indexOf('}') + 1)).body.code).toBe(CODES.LOGIN_FAILED);
    } finally {
      for (const sock of sockets) sock.destroy();
      await svc.stop();
    }
  });

  it('the same at the embedded bucket, beside an upload in progress that asked for 100-continue', async () => {
    const svc = await startTemp({
      limits: { maxConnections: 40, maxConnectionsPerAddress: 10, headersTimeoutMs: 20_000 },
    });
    const sockets: net.Socket[] = [];
    try {
      const sts = await getSts(svc);
      const { hostname, port } = new URL(svc.bucket.endpoint);
      // An upload in progress: headers sent, "100 Continue" received, half its body still to come.
      const body = randomBytes(64 * 1024);
      const key = `${sts.object_key_prefix}/in-progress.jpg`;
      const head = await signedPut(sts, key, body.length, { expect: '100-continue', connection: 'close' });
      let answer = '';
      const busy = net.connect({ host: hostname, port: Number(port), localAddress: '127.0.0.3' });
      sockets.push(busy);
      busy.setEncoding('latin1');
      busy.on('data', (d: string) => (answer += d));
      busy.on('error', () => undefined);
      await new Promise((r) => busy.once('connect', r));
      busy.write(head);
      await waitFor('100 Continue', () => answer.startsWith('HTTP/1.1 100 Continue\r\n\r\n'), 5000);
      busy.write(body.subarray(0, body.length / 2));
      // 80 idle connections from eight addresses, 10 each, for a cap of 40.
      for (let a = 10; a < 18; a++) {
        sockets.push(...(await idleSockets(svc.bucket.endpoint, 10, `127.0.0.${a}`)));
      }
      await waitFor('the cap to hold', () => sockets.filter(isOpen).length <= 40, 3000);
      expect(await twentyPuts(sts, '127.0.0.2')).toEqual(Array(20).fill(200));
      // The upload in progress was never closed to make room: it completes and is answered.
      expect(isOpen(busy)).toBe(true);
      busy.write(body.subarray(body.length / 2));
      await waitFor('the upload answer', () => /\r\n\r\nHTTP\/1\.1 \d{3} /.test(answer), 15_000);
      expect(answer).toMatch(/^HTTP\/1\.1 100 Continue\r\n\r\nHTTP\/1\.1 200 OK\r\n/);
      const stored = await rawS3(sts, { method: 'HEAD', path: `/media/${key}` });
      expect(stored.headers['content-length']).toBe(String(body.length));
    } finally {
      for (const sock of sockets) sock.destroy();
      await svc.stop();
    }
  });
});

describe("22. requests refused before they exist still get S3's XML error at the bucket", () => {
  it('a 100 KB URL, a 1 MB header, a header with CR/LF or a control character, a garbage request line', async () => {
    const sts = await getSts(s);
    const host = new URL(sts.endpoint).host;
    const object = `/media/${sts.object_key_prefix}/x.jpg`;
    const get = (target: string, value: string) =>
      `GET ${target} HTTP/1.1\r\nHost: ${host}\r\nx-amz-meta-note: ${value}\r\n\r\n`;
    const tooLarge = {
      status: 400,
      code: 'RequestHeaderSectionTooLarge',
      message:
        "The request's URL and headers are larger than 16384 bytes. Check the object key and the headers (a session token is far shorter).",
    };
    const notHttp = {
      status: 400,
      code: 'BadRequest',
      message:
        'The request is not valid HTTP: a header holds a line break or a control character, or the request line is malformed.',
    };
    const cases: Array<[string, string, unknown]> = [
      ['100 KB URL', get(`${object}?x=${'a'.repeat(100 * 1024)}`, 'n'), tooLarge],
      ['1 MB header', get(object, 't'.repeat(1024 * 1024)), tooLarge],
      ['header with CR/LF', get(object, 'a\r\nb'), notHttp],
      ['header with a bare LF', get(object, 'a\nb'), notHttp],
      ['header with a control character', get(object, 'a\u0001'), notHttp],
      ['garbage request line', 'NOT HTTP AT ALL\r\n\r\n', notHttp],
    ];
    for (const [what, data, expected] of cases) {
      const { answer } = await stall(sts.endpoint, data);
      expect([what, xmlAnswer(answer)]).toEqual([what, expected]);
      expect([what, /\r\ncontent-type: application\/xml\r\n/i.test(answer)]).toEqual([what, true]);
    }
    // A client that sends the whole 1 MB header before reading still gets the answer, not a reset.
    const res = await fetch(`${sts.endpoint}${object}`, {
      headers: { 'x-amz-meta-note': 't'.repeat(1024 * 1024) },
    });
    expect([res.status, xmlAnswer(`HTTP/1.1 ${res.status} \r\n\r\n${await res.text()}`)]).toEqual([
      400,
      tooLarge,
    ]);
    // The bucket goes on serving.
    expect((await rawS3(sts, { method: 'HEAD', path: object })).status).toBe(404);
  });
});
