/**
 * TokenStore on a real SQLite file: a valid token is read from the tokens
 * table once for many requests, and a revocation, whoever writes it (this
 * store, or another process through its own connection like `serve
 * reset-password`), and an expiry are still seen at the very next request.
 */
import Database from 'better-sqlite3';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { TokenStore } from './auth.js';
import { openDatabase } from './db.js';
import type { SqlDb } from './data/sql.js';
import { SqliteDb } from './data/sqlite.js';
import { CODES } from './envelope.js';

let dir: string;
let db: SqliteDb;
/** Statements that read the tokens table, through `counted`. */
let tokenReads: number;
let counted: SqlDb;
const owner = { workspaceId: 'w1', userId: null, kind: 'admin' as const };

beforeEach(() => {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'dms-auth-'));
  const raw = openDatabase(dir);
  raw
    .prepare('INSERT INTO workspaces (id, name, object_key_prefix, created_at) VALUES (?, ?, ?, ?)')
    .run('w1', 'crew', 'w1', Date.now());
  db = new SqliteDb(raw);
  tokenReads = 0;
  counted = new Proxy(db, {
    get(target, key, receiver) {
      if (key !== 'get') return Reflect.get(target, key, receiver) as unknown;
      return (sql: string, params?: never[]) => {
        if (/\bFROM tokens\b/.test(sql)) tokenReads++;
        return target.get(sql, params);
      };
    },
  });
});
afterEach(async () => {
  vi.restoreAllMocks();
  await db.close();
  fs.rmSync(dir, { recursive: true, force: true });
});

describe('TokenStore.check', () => {
  it('reads a valid token once for 100 requests', async () => {
    const tokens = new TokenStore(counted);
    const token = await tokens.issue(owner, 3600);
    for (let i = 0; i < 100; i++) expect(await tokens.check(token)).toEqual({ ok: true, owner });
    expect(tokenReads).toBe(1);
  });

  it('sees a revocation by this store at the next request', async () => {
    const tokens = new TokenStore(counted);
    const token = await tokens.issue(owner, 3600);
    expect((await tokens.check(token)).ok).toBe(true);
    expect(await tokens.revoke(token)).toBe(true);
    expect(await tokens.check(token)).toMatchObject({ ok: false, code: CODES.TOKEN_REVOKED });
  });

  it('sees a revocation written by another connection (another process) at the next request', async () => {
    const tokens = new TokenStore(counted);
    const token = await tokens.issue(owner, 3600);
    const other = await tokens.issue(owner, 3600);
    expect((await tokens.check(token)).ok).toBe(true);
    expect((await tokens.check(other)).ok).toBe(true);
    const outside = new Database(db.raw.name);
    try {
      outside.prepare('UPDATE tokens SET revoked_at = ? WHERE user_id IS NULL').run(Date.now());
    } finally {
      outside.close();
    }
    expect(await tokens.check(token)).toMatchObject({ ok: false, code: CODES.TOKEN_REVOKED });
    expect(await tokens.check(other)).toMatchObject({ ok: false, code: CODES.TOKEN_REVOKED });
  });

  it('sees an expiry at the first request after it, without reading the row again', async () => {
    const tokens = new TokenStore(counted);
    const token = await tokens.issue(owner, 60);
    expect((await tokens.check(token)).ok).toBe(true);
    const later = Date.now() + 61_000;
    vi.spyOn(Date, 'now').mockReturnValue(later);
    expect(await tokens.check(token)).toMatchObject({ ok: false, code: CODES.TOKEN_EXPIRED });
    expect(tokenReads).toBe(1);
  });

  it('refuses an unknown token every time', async () => {
    const tokens = new TokenStore(counted);
    for (let i = 0; i < 3; i++)
      expect(await tokens.check('not-a-token')).toMatchObject({ ok: false, code: CODES.TOKEN_INVALID });
    expect(tokenReads).toBe(3);
  });
});
