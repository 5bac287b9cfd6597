import { randomBytes, scryptSync } from 'node:crypto';
import { readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CODES, TOKEN_TTL_SECONDS } from '../../main/service/index.js';
import { call, openTables, paths, startTemp } from './helpers.js';

let s: Awaited<ReturnType<typeof startTemp>>;
let pilotPassword: string;
beforeAll(async () => {
  s = await startTemp();
  pilotPassword = readFileSync(join(s.dataDir, 'pilot-password'), 'utf8').trim();
});
afterAll(async () => {
  await s.stop();
});

const login = (body: unknown) => call(s, 'POST', '/manage/api/v1/login', { body, token: null });

describe('login', () => {
  it('keeps the generated pilot password in a file only its owner can read', () => {
    expect(pilotPassword).toMatch(/^[\w-]{16}$/);
    expect(statSync(join(s.dataDir, 'pilot-password')).mode & 0o777).toBe(0o600);
  });

  it('gives a working token for pilot', async () => {
    const r = await login({ username: 'pilot', password: pilotPassword, flag: 2 });
    expect(r.status).toBe(200);
    expect(r.body).toEqual({
      code: 0,
      message: 'success',
      data: {
        access_token: expect.any(String),
        workspace_id: s.workspaceId,
        username: 'pilot',
        expires_in: TOKEN_TTL_SECONDS,
      },
    });
    const w = await call(s, 'GET', paths(s.workspaceId).waylines, { token: r.body.data.access_token });
    expect(w.body.code).toBe(0);
  });

  it('answers a wrong password or an unknown user with HTTP 200 and code 401', async () => {
    for (const body of [
      { username: 'pilot', password: 'wrong-password', flag: 2 },
      { username: 'nobody', password: pilotPassword, flag: 2 },
    ]) {
      const r = await login(body);
      expect(r.status).toBe(200);
      expect(r.body).toEqual({ code: CODES.LOGIN_FAILED, message: 'Wrong username or password.' });
    }
  });

  it('names the missing field', async () => {
    const r = await login({ username: 'pilot' });
    expect(r.status).toBe(400);
    expect(r.body).toEqual({ code: CODES.INVALID_REQUEST, message: 'password is required (string).' });
  });

  it('works for users created by the admin, in their workspace', async () => {
    const ws = await s.admin.createWorkspace('Survey team');
    await s.admin.createUser('surveyor', 'a-long-password', ws);
    await expect(s.admin.createUser('surveyor', 'another-password', ws)).rejects.toThrow();
    await expect(s.admin.createUser('short', 'short', ws)).rejects.toThrow(/at least 8/);
    const r = await login({ username: 'surveyor', password: 'a-long-password', flag: 2 });
    expect(r.body.data.workspace_id).toBe(ws);
  });
});

describe('password hashes', () => {
  it("are scrypt at OWASP's cost; an older, cheaper hash still verifies and is upgraded at login", async () => {
    const ws = await s.admin.createWorkspace('Old hashes');
    await s.admin.createUser('veteran', 'an-old-password', ws);
    const db = openTables(s);
    try {
      const hashOf = async () =>
        (
          await db.get<{ password_hash: string }>('SELECT password_hash FROM users WHERE username = ?', [
            'veteran',
          ])
        )?.password_hash;
      expect(await hashOf()).toMatch(/^scrypt\$131072\$8\$1\$/);
      // What earlier versions stored: N=2^14.
      const salt = randomBytes(16);
      const key = scryptSync('an-old-password', salt, 32, { N: 16384, r: 8, p: 1 });
      const old = ['scrypt', 16384, 8, 1, salt.toString('base64'), key.toString('base64')].join('$');
      await db.run('UPDATE users SET password_hash = ? WHERE username = ?', [old, 'veteran']);
      expect((await login({ username: 'veteran', password: 'wrong-password' })).body.code).toBe(
        CODES.LOGIN_FAILED,
      );
      expect(await hashOf()).toBe(old);
      expect((await login({ username: 'veteran', password: 'an-old-password' })).body.code).toBe(0);
      expect(await hashOf()).toMatch(/^scrypt\$131072\$8\$1\$/);
      expect((await login({ username: 'veteran', password: 'an-old-password' })).body.code).toBe(0);
    } finally {
      await db.close();
    }
  });
});

describe('token refresh', () => {
  it('gives a new token for a valid one and revokes the old one', async () => {
    const first = (await login({ username: 'pilot', password: pilotPassword, flag: 2 })).body.data
      .access_token;
    const r = await call(s, 'POST', '/manage/api/v1/token/refresh', { token: first });
    expect(r.body).toMatchObject({
      code: 0,
      data: { workspace_id: s.workspaceId, username: 'pilot', expires_in: TOKEN_TTL_SECONDS },
    });
    const second = r.body.data.access_token;
    expect(second).not.toBe(first);
    expect((await call(s, 'POST', paths(s.workspaceId).sts, { token: second })).body.code).toBe(0);
    // The old one is revoked: test/service/attacks-api.test.ts.
  });

  it('refuses an expired, revoked, or missing token with HTTP 401', async () => {
    const revoked = await s.admin.createToken();
    await s.admin.revokeToken(revoked);
    for (const [token, code] of [
      [await s.admin.createToken({ ttlSeconds: -5 }), CODES.TOKEN_EXPIRED],
      [revoked, CODES.TOKEN_REVOKED],
      [null, CODES.TOKEN_MISSING],
    ] as const) {
      const r = await call(s, 'POST', '/manage/api/v1/token/refresh', { token });
      expect(r.status).toBe(401);
      expect(r.body.code).toBe(code);
    }
  });
});
