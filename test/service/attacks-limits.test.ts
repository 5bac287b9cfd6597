/**
 * Item 6 of the issue: a signed-in client cannot hold sockets, spend the
 * service's CPU on password guesses, fill its tables or its disk. The
 * service runs with short limits here (every limit is an option, the
 * defaults are in the README's Security section); the assertions use
 * generous upper bounds so a busy machine does not fail them.
 */
import { readdirSync } from 'node:fs';
import http from 'node:http';
import net from 'node:net';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CODES } from '../../main/service/index.js';
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

describe('6. a client that stops sending', () => {
  // Short timeouts on a service of its own: a password check can take longer than one here.
  let s: Awaited<ReturnType<typeof startTemp>>;
  beforeAll(async () => {
    s = await startTemp({
      limits: {
        headersTimeoutMs: TIMEOUT_MS,
        idleTimeoutMs: TIMEOUT_MS,
        requestTimeoutMs: 3 * TIMEOUT_MS,
        bucketRequestTimeoutMs: 3 * TIMEOUT_MS,
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
    const endpoint = new URL(sts.endpoint);
    const key = `${sts.object_key_prefix}/half.jpg`;
    const signed = await signer(sts).sign({
      method: 'PUT',
      protocol: 'http:',
      hostname: endpoint.hostname,
      port: Number(endpoint.port),
      path: `/media/${key}`,
      query: {},
      headers: { host: endpoint.host, 'content-length': '1000', 'x-amz-content-sha256': 'UNSIGNED-PAYLOAD' },
    });
    const head = Object.entries(signed.headers)
      .map(([k, v]) => `${k}: ${v}\r\n`)
      .join('');
    const halfBody = await stall(sts.endpoint, `PUT /media/${key} HTTP/1.1\r\n${head}\r\n0123456789`);

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

/** A login from a chosen loopback address (127.0.0.x all reach the service). */
function login(
  body: unknown,
  localAddress = '127.0.0.1',
): Promise<{ status: number; retryAfter?: string; body: Loose }> {
  const url = new URL(s.baseUrl);
  const data = JSON.stringify(body);
  return new Promise((resolve, reject) => {
    const req = http.request(
      {
        host: url.hostname,
        port: url.port,
        path: '/manage/api/v1/login',
        method: 'POST',
        localAddress,
        agent: false,
        headers: { 'content-type': 'application/json', 'content-length': Buffer.byteLength(data) },
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
