import type { FastifyInstance } from 'fastify';
import { z } from 'zod';
import {
  authenticate,
  DUMMY_PASSWORD_HASH,
  hashPassword,
  needsRehash,
  requestToken,
  TOKEN_TTL_SECONDS,
  verifyPassword,
} from '../auth.js';
import { findUser, type UserRow } from '../bootstrap.js';
import type { ServiceContext } from '../context.js';
import { CODES, ok, parseOrThrow, type Envelope, zInt } from '../envelope.js';
import { LoginThrottle, ThrottledError } from '../client-limits.js';

const loginSchema = z.object({
  username: z.string().min(1).max(64),
  password: z.string().min(1).max(256),
  // 2 = pilot / ground client in DJI's API; any integer is accepted, it does not change the answer.
  flag: zInt().nullish(),
});

/** Sign-in endpoints outside the contract, shaped like DJI's sample server so its clients work unchanged. */
export function registerManageRoutes(app: FastifyInstance, ctx: ServiceContext): void {
  const throttle = new LoginThrottle(ctx.db, {
    free: ctx.limits.loginFreeFailures,
    firstWaitSeconds: ctx.limits.loginFirstWaitSeconds,
    maxWaitSeconds: ctx.limits.loginMaxWaitSeconds,
  });

  app.post('/manage/api/v1/login', async (req) => {
    const body = parseOrThrow(loginSchema, req.body);
    // Per client address and per username: one address cannot try many
    // users, many addresses cannot try one user, and neither costs a scrypt
    // once throttled.
    const userKey = `user:${body.username.toLowerCase()}`;
    const keys = [`ip:${req.ip}`, userKey];
    const wait = await throttle.begin(keys);
    if (wait > 0) {
      throw new ThrottledError(
        CODES.LOGIN_THROTTLED,
        `Too many wrong passwords from this computer or for this user. Wait ${wait} s, then sign in again.`,
        wait,
      );
    }
    let user: UserRow | undefined;
    let good = false;
    try {
      user = await findUser(ctx.db, body.username);
      good = (await verifyPassword(body.password, user?.password_hash ?? DUMMY_PASSWORD_HASH)) && !!user;
    } finally {
      await throttle.finish(keys, good, userKey);
    }
    if (!user || !good) {
      // HTTP 200 with code 401, as the sample server answers a failed login.
      return { code: CODES.LOGIN_FAILED, message: 'Wrong username or password.' } satisfies Envelope;
    }
    if (needsRehash(user.password_hash)) {
      await ctx.db.run('UPDATE users SET password_hash = ? WHERE id = ?', [
        await hashPassword(body.password),
        user.id,
      ]);
    }
    const token = await ctx.tokens.issue(
      { workspaceId: user.workspace_id, userId: user.id, kind: 'login' },
      TOKEN_TTL_SECONDS,
    );
    return ok({
      access_token: token,
      workspace_id: user.workspace_id,
      username: user.username,
      expires_in: TOKEN_TTL_SECONDS,
    });
  });

  // A new token for a still-valid one, which is revoked: a stolen token
  // cannot be kept alive by refreshing it alongside its owner.
  app.post('/manage/api/v1/token/refresh', async (req) => {
    const owner = await authenticate(ctx.tokens, req);
    const token = await ctx.tokens.issue(
      { workspaceId: owner.workspaceId, userId: owner.userId, kind: 'login' },
      TOKEN_TTL_SECONDS,
    );
    await ctx.tokens.revoke(requestToken(req) ?? '');
    const username =
      owner.userId === null
        ? undefined
        : (await ctx.db.get<{ username: string }>('SELECT username FROM users WHERE id = ?', [owner.userId]))
            ?.username;
    return ok({
      access_token: token,
      workspace_id: owner.workspaceId,
      ...(username ? { username } : {}),
      expires_in: TOKEN_TTL_SECONDS,
    });
  });
}
