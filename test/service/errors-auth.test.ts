import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CODES } from '../../main/service/index.js';
import { call, paths, startTemp } from './helpers.js';

let s: Awaited<ReturnType<typeof startTemp>>;
beforeAll(async () => {
  s = await startTemp({ bodyLimitBytes: 4096 });
});
afterAll(async () => {
  await s.stop();
});

/** The four contract endpoints with a minimal valid request each. */
function endpoints(ws: string): [string, string, unknown][] {
  const p = paths(ws);
  return [
    ['GET', p.waylines, undefined],
    ['POST', p.sts, undefined],
    ['POST', p.fastUpload, { fingerprint: 'abc' }],
    ['POST', p.callback, { result: 1, name: 'a.jpg', object_key: `${ws}/a.jpg` }],
  ];
}

describe('authentication on the four endpoints', () => {
  it('answers with the dev token', async () => {
    for (const [method, path, body] of endpoints(s.workspaceId)) {
      const r = await call(s, method, path, { body });
      expect(r.status, path).toBe(200);
      expect(typeof r.body.code).toBe('number');
    }
  });

  it('refuses a missing token with HTTP 401 and the envelope', async () => {
    for (const [method, path, body] of endpoints(s.workspaceId)) {
      const r = await call(s, method, path, { body, token: null });
      expect(r.status).toBe(401);
      expect(r.body).toEqual({ code: CODES.TOKEN_MISSING, message: expect.stringContaining('x-auth-token') });
    }
  });

  it('refuses an unknown, an expired and a revoked token', async () => {
    const expired = await s.admin.createToken({ ttlSeconds: 0 });
    const revoked = await s.admin.createToken();
    expect(await s.admin.revokeToken(revoked)).toBe(true);
    expect(await s.admin.revokeToken(revoked)).toBe(false);
    const cases: [string, number][] = [
      ['not-a-token', CODES.TOKEN_INVALID],
      [expired, CODES.TOKEN_EXPIRED],
      [revoked, CODES.TOKEN_REVOKED],
    ];
    for (const [method, path, body] of endpoints(s.workspaceId)) {
      for (const [token, code] of cases) {
        const r = await call(s, method, path, { body, token });
        expect(r.status).toBe(401);
        expect(r.body.code).toBe(code);
        expect(r.body.message).toMatch(/Sign in again/);
      }
    }
  });

  it('refuses a valid token on another workspace with HTTP 403', async () => {
    const other = await s.admin.createWorkspace('Other crew');
    const otherToken = await s.admin.createToken({ workspaceId: other });
    for (const [method, path, body] of endpoints(other)) {
      const r = await call(s, method, path, { body }); // dev token of the default workspace
      expect(r.status).toBe(403);
      expect(r.body.code).toBe(CODES.WRONG_WORKSPACE);
      expect(r.body.message).toContain(s.workspaceId);
    }
    // ...while that workspace's own token works there.
    const r = await call(s, 'GET', paths(other).waylines, { token: otherToken });
    expect(r.body).toMatchObject({ code: 0, data: { list: [], pagination: { total: 0 } } });
  });
});

describe('every error is the envelope', () => {
  it('unknown route: 404', async () => {
    const r = await call(s, 'GET', '/wayline/api/v2/nothing');
    expect(r.status).toBe(404);
    expect(r.body).toEqual({
      code: CODES.ROUTE_NOT_FOUND,
      message: expect.stringContaining('/wayline/api/v2/nothing'),
    });
  });

  it('wrong method on a known route: 405 with Allow', async () => {
    const res = await fetch(`${s.baseUrl}${paths(s.workspaceId).sts}`, {
      headers: { 'x-auth-token': s.token },
    });
    expect(res.status).toBe(405);
    expect(res.headers.get('allow')).toBe('POST');
    expect(await res.json()).toEqual({
      code: CODES.METHOD_NOT_ALLOWED,
      message: expect.stringContaining('use POST'),
    });
  });

  it('malformed JSON: 400', async () => {
    const r = await call(s, 'POST', paths(s.workspaceId).fastUpload, { raw: '{"fingerprint": ' });
    expect(r.status).toBe(400);
    expect(r.body.code).toBe(CODES.INVALID_JSON);
    expect(r.body.message).toMatch(/^The request body is not valid JSON/);
  });

  it('body over the limit: 413', async () => {
    const r = await call(s, 'POST', paths(s.workspaceId).fastUpload, {
      body: { fingerprint: 'a', name: 'x'.repeat(5000) },
    });
    expect(r.status).toBe(413);
    expect(r.body).toEqual({
      code: CODES.BODY_TOO_LARGE,
      message: 'The request body is larger than the limit of 4096 bytes.',
    });
  });

  it('a body that is not JSON: 415', async () => {
    const r = await call(s, 'POST', paths(s.workspaceId).fastUpload, {
      raw: 'fingerprint=abc',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
    });
    expect(r.status).toBe(415);
    expect(r.body.code).toBe(CODES.UNSUPPORTED_MEDIA_TYPE);
    expect(r.body.message).toContain('Content-Type: application/json');
  });

  it('a JSON body that is not an object, and a missing body: 400', async () => {
    let r = await call(s, 'POST', paths(s.workspaceId).fastUpload, { raw: '[1,2]' });
    expect(r.status).toBe(400);
    expect(r.body).toEqual({
      code: CODES.INVALID_REQUEST,
      message: 'The request body must be a JSON object.',
    });
    r = await call(s, 'POST', paths(s.workspaceId).fastUpload);
    expect(r.body).toEqual({
      code: CODES.INVALID_REQUEST,
      message: 'The request body is required (a JSON object).',
    });
  });

  it('bad percent-encoding in the URL: 400', async () => {
    const r = await call(s, 'GET', '/wayline/api/v1/workspaces/%zz/waylines');
    expect(r.status).toBe(400);
    expect(r.body.code).toBe(CODES.INVALID_REQUEST);
  });

  it('an empty JSON body on sts is accepted (clients send Content-Type without a body)', async () => {
    const r = await call(s, 'POST', paths(s.workspaceId).sts, { raw: '' });
    expect(r.body.code).toBe(0);
  });
});
