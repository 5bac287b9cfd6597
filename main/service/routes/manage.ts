import type { FastifyInstance } from 'fastify';
import { z } from 'zod';
import { authenticate, TOKEN_TTL_SECONDS, verifyPassword } from '../auth.js';
import type { ServiceContext } from '../context.js';
import { CODES, ok, parseOrThrow, type Envelope, zInt } from '../envelope.js';

const loginSchema = z.object({
  username: z.string().min(1).max(64),
  password: z.string().min(1).max(256),
  // 2 = pilot / ground client in DJI's API; any integer is accepted, it does not change the answer.
  flag: zInt().nullish(),
});

interface UserRow {
  id: number;
  username: string;
  password_hash: string;
  workspace_id: string;
}

// Compared against when the user does not exist, so that a wrong username
// takes as long as a wrong password (no user enumeration by timing).
const DUMMY_HASH = 'scrypt$16384$8$1$AAAAAAAAAAAAAAAAAAAAAA==$AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=';

/** Sign-in endpoints outside the contract, shaped like DJI's sample server so its clients work unchanged. */
export function registerManageRoutes(app: FastifyInstance, ctx: ServiceContext): void {
  const findUser = ctx.db.prepare<[string], UserRow>(
    'SELECT id, username, password_hash, workspace_id FROM users WHERE username = ?',
  );
  const findUserById = ctx.db.prepare<[number], { username: string }>(
    'SELECT username FROM users WHERE id = ?',
  );

  app.post('/manage/api/v1/login', async (req) => {
    const body = parseOrThrow(loginSchema, req.body);
    const user = findUser.get(body.username);
    const good = await verifyPassword(body.password, user?.password_hash ?? DUMMY_HASH);
    if (!user || !good) {
      // HTTP 200 with code 401, as the sample server answers a failed login.
      return { code: CODES.LOGIN_FAILED, message: 'Wrong username or password.' } satisfies Envelope;
    }
    const token = ctx.tokens.issue(
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

  // A new token for a still-valid one. The old token stays valid until it
  // expires, so requests already in flight with it do not fail.
  app.post('/manage/api/v1/token/refresh', (req) => {
    const owner = authenticate(ctx.tokens, req);
    const token = ctx.tokens.issue(
      { workspaceId: owner.workspaceId, userId: owner.userId, kind: 'login' },
      TOKEN_TTL_SECONDS,
    );
    const username = owner.userId === null ? undefined : findUserById.get(owner.userId)?.username;
    return Promise.resolve(
      ok({
        access_token: token,
        workspace_id: owner.workspaceId,
        ...(username ? { username } : {}),
        expires_in: TOKEN_TTL_SECONDS,
      }),
    );
  });
}
