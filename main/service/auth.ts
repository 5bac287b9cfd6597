import { createHash, randomBytes, scrypt, timingSafeEqual } from 'node:crypto';
import type { FastifyRequest } from 'fastify';
import type { SqlDb } from './data/sql.js';
import { ApiError, CODES } from './envelope.js';

/** Lifetime of tokens from login, refresh and admin.createToken (like the sample server's 24 h JWT). */
export const TOKEN_TTL_SECONDS = 24 * 3600;

export type TokenKind = 'dev' | 'login' | 'admin';

export interface TokenOwner {
  workspaceId: string;
  userId: number | null;
  kind: TokenKind;
}

export function newSecret(): string {
  return randomBytes(32).toString('base64url');
}

/** A token has 256 random bits: a fast hash is enough, no salt needed. */
export function hashToken(token: string): string {
  return createHash('sha256').update(token, 'utf8').digest('hex');
}

/**
 * OWASP's current recommendation for scrypt (N=2^17, r=8, p=1): 128 MiB and
 * up to a second or more of one core per hash. Hashes keep their parameters,
 * so older ones still verify and are upgraded at the next successful login.
 */
const SCRYPT = { N: 2 ** 17, r: 8, p: 1, keylen: 32 };
/** Highest N accepted from a stored hash: keeps a tampered row from asking for gigabytes. */
const MAX_N = 2 ** 20;

function scryptAsync(
  password: string,
  salt: Buffer,
  keylen: number,
  N: number,
  r: number,
  p: number,
): Promise<Buffer> {
  // scrypt needs 128 * N * r bytes; Node refuses over 32 MiB unless told.
  const maxmem = 128 * N * r * p + 32 * 1024 * 1024;
  return new Promise((resolve, reject) => {
    scrypt(password, salt, keylen, { N, r, p, maxmem }, (err, key) => (err ? reject(err) : resolve(key)));
  });
}

const encodeHash = (N: number, r: number, p: number, salt: Buffer, key: Buffer): string =>
  ['scrypt', N, r, p, salt.toString('base64'), key.toString('base64')].join('$');

/** `scrypt$N$r$p$<salt b64>$<key b64>`: parameters travel with the hash so they can be raised later. */
export async function hashPassword(password: string): Promise<string> {
  const salt = randomBytes(16);
  const key = await scryptAsync(password, salt, SCRYPT.keylen, SCRYPT.N, SCRYPT.r, SCRYPT.p);
  return encodeHash(SCRYPT.N, SCRYPT.r, SCRYPT.p, salt, key);
}

/**
 * Compared against when the user does not exist, so that a wrong username
 * costs as long as a wrong password (no user enumeration by timing).
 */
export const DUMMY_PASSWORD_HASH = encodeHash(
  SCRYPT.N,
  SCRYPT.r,
  SCRYPT.p,
  Buffer.alloc(16),
  Buffer.alloc(32),
);

function parseHash(stored: string): { N: number; r: number; p: number; salt: Buffer; key: Buffer } | null {
  const [scheme, n, r, p, salt, key, ...rest] = stored.split('$');
  if (scheme !== 'scrypt' || !n || !r || !p || !salt || !key || rest.length > 0) return null;
  const [N, R, P] = [+n, +r, +p];
  if (![N, R, P].every(Number.isSafeInteger) || N < 2 || N > MAX_N || R < 1 || R > 32 || P < 1 || P > 16)
    return null;
  return { N, r: R, p: P, salt: Buffer.from(salt, 'base64'), key: Buffer.from(key, 'base64') };
}

export async function verifyPassword(password: string, stored: string): Promise<boolean> {
  const h = parseHash(stored);
  if (!h || h.key.length < 16) return false;
  const actual = await scryptAsync(password, h.salt, h.key.length, h.N, h.r, h.p);
  return timingSafeEqual(actual, h.key);
}

/** True when the hash was made with other parameters than today's: rehash it after a good login. */
export function needsRehash(stored: string): boolean {
  const h = parseHash(stored);
  return !h || h.N !== SCRYPT.N || h.r !== SCRYPT.r || h.p !== SCRYPT.p;
}

interface TokenRow {
  workspace_id: string;
  user_id: number | null;
  kind: TokenKind;
  expires_at: number | null;
  revoked_at: number | null;
}

export type TokenCheck = { ok: true; owner: TokenOwner } | { ok: false; code: number; message: string };

/** At most this many verified tokens are remembered (a crew has a handful; the cap bounds memory). */
const MAX_VERIFIED = 10_000;

interface Verified {
  owner: TokenOwner;
  expiresAt: number | null;
  /** The database's outsideWrites() when the row was read. */
  version: number;
}

/** Sign-in tokens and their revocation, in the database: every instance of a deployment sees the same. */
export class TokenStore {
  /**
   * Tokens found valid, by token: a request with one of them reads no row
   * while no other connection has written to the database since (SQLite's
   * data_version; `serve reset-password` is such a write) and this store has
   * not revoked it. Expiry is checked at every use. PostgreSQL: never used,
   * another instance may revoke a token at any moment.
   */
  private readonly verified = new Map<string, Verified>();

  constructor(private readonly db: SqlDb) {}

  /** Returns the plain token; only its hash is kept. `ttlSeconds` null = never expires. */
  async issue(owner: TokenOwner, ttlSeconds: number | null, db: SqlDb = this.db): Promise<string> {
    const token = newSecret();
    const now = Date.now();
    const expires = ttlSeconds === null ? null : now + ttlSeconds * 1000;
    await db.run(
      'INSERT INTO tokens (hash, workspace_id, user_id, kind, created_at, expires_at) VALUES (?, ?, ?, ?, ?, ?)',
      [hashToken(token), owner.workspaceId, owner.userId, owner.kind, now, expires],
    );
    return token;
  }

  async check(token: string, db: SqlDb = this.db): Promise<TokenCheck> {
    const version = db === this.db ? db.outsideWrites() : null;
    const known = version === null ? undefined : this.verified.get(token);
    if (known?.version === version) return expiry(known.owner, known.expiresAt);
    const row = await db.get<TokenRow>(
      'SELECT workspace_id, user_id, kind, expires_at, revoked_at FROM tokens WHERE hash = ?',
      [hashToken(token)],
    );
    if (!row) {
      return {
        ok: false,
        code: CODES.TOKEN_INVALID,
        message: 'The access token is not valid. Sign in again.',
      };
    }
    if (row.revoked_at !== null) {
      return {
        ok: false,
        code: CODES.TOKEN_REVOKED,
        message: 'The access token was revoked. Sign in again.',
      };
    }
    const owner: TokenOwner = { workspaceId: row.workspace_id, userId: row.user_id, kind: row.kind };
    if (version !== null) {
      if (this.verified.size >= MAX_VERIFIED) this.verified.clear();
      this.verified.set(token, { owner, expiresAt: row.expires_at, version });
    }
    return expiry(owner, row.expires_at);
  }

  async revoke(token: string): Promise<boolean> {
    this.verified.delete(token);
    const changed = await this.db.run(
      'UPDATE tokens SET revoked_at = ? WHERE hash = ? AND revoked_at IS NULL',
      [Date.now(), hashToken(token)],
    );
    // Again: a check that read the row before this commit may have remembered it meanwhile.
    this.verified.delete(token);
    return changed > 0;
  }
}

function expiry(owner: TokenOwner, expiresAt: number | null): TokenCheck {
  if (expiresAt !== null && expiresAt <= Date.now()) {
    return {
      ok: false,
      code: CODES.TOKEN_EXPIRED,
      message: 'The access token has expired. Sign in again or refresh the token.',
    };
  }
  return { ok: true, owner };
}

declare module 'fastify' {
  interface FastifyRequest {
    /** Set by the auth hook on the contract's endpoints. */
    tokenOwner?: TokenOwner;
  }
}

/** The request's `x-auth-token`, trimmed; undefined when absent or empty. */
export function requestToken(req: FastifyRequest): string | undefined {
  const header = req.headers['x-auth-token'];
  const token = (Array.isArray(header) ? header[0] : header)?.trim();
  return token === '' ? undefined : token;
}

/** Reads and checks `x-auth-token`; HTTP 401 envelope when it is not usable. */
export async function authenticate(tokens: TokenStore, req: FastifyRequest): Promise<TokenOwner> {
  const token = requestToken(req);
  if (token === undefined) {
    throw new ApiError(
      401,
      CODES.TOKEN_MISSING,
      'The x-auth-token header is missing. Sign in and send the access token.',
    );
  }
  const result = await tokens.check(token);
  if (!result.ok) throw new ApiError(401, result.code, result.message);
  return result.owner;
}

/**
 * preHandler of the four contract endpoints: a valid token whose workspace is
 * the path's workspace_id. The sample server skips the second check; we refuse
 * (HTTP 403), because a token must never reach another crew's media.
 */
export function workspaceGuard(tokens: TokenStore) {
  return async (req: FastifyRequest<{ Params: { workspace_id?: string } }>): Promise<void> => {
    const owner = await authenticate(tokens, req);
    const wanted = req.params.workspace_id ?? '';
    if (wanted !== owner.workspaceId) {
      throw new ApiError(
        403,
        CODES.WRONG_WORKSPACE,
        `This access token belongs to workspace ${owner.workspaceId}, not to workspace ${wanted}. ` +
          'Use the workspace_id returned at sign-in.',
      );
    }
    req.tokenOwner = owner;
  };
}
