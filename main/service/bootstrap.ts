import { randomBytes, randomUUID } from 'node:crypto';
import { chmodSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { hashPassword, type TokenStore } from './auth.js';
import type { SqlDb } from './data/sql.js';
import { seedDemoWaylines } from './seed.js';

export const DEV_TOKEN_FILE = 'dev-token';
export const PILOT_PASSWORD_FILE = 'pilot-password';
export const DEFAULT_USERNAME = 'pilot';

/** Writes a secret readable by the owner only; via rename so a crash never leaves half a file. */
export function writeSecretFile(file: string, content: string): void {
  const tmp = `${file}.tmp-${process.pid}`;
  writeFileSync(tmp, content, { mode: 0o600 });
  chmodSync(tmp, 0o600); // the mode option is filtered by the umask
  renameSync(tmp, file);
}

function readSecretFile(file: string): string | null {
  try {
    return readFileSync(file, 'utf8').trim() || null;
  } catch {
    return null;
  }
}

export async function createWorkspace(db: SqlDb, name: string, isDefault = false): Promise<string> {
  const id = randomUUID();
  // The workspace id is the object key prefix: unique, and readable in a bucket listing.
  await db.run(
    'INSERT INTO workspaces (id, name, object_key_prefix, is_default, created_at) VALUES (?, ?, ?, ?, ?)',
    [id, name, id, isDefault ? 1 : 0, Date.now()],
  );
  return id;
}

/** The default workspace, created (with its demo waylines) on first start. */
export async function ensureDefaultWorkspace(db: SqlDb): Promise<string> {
  return db.tx(async (t) => {
    const row = await t.get<{ id: string }>('SELECT id FROM workspaces WHERE is_default = 1');
    if (row) return row.id;
    const id = await createWorkspace(t, 'Default workspace', true);
    await seedDemoWaylines(t, id);
    return id;
  });
}

export async function createUser(
  db: SqlDb,
  username: string,
  password: string,
  workspaceId: string,
): Promise<number> {
  if (!/^[\w.@-]{1,64}$/.test(username)) {
    throw new Error('A username is 1 to 64 letters, digits, or . _ @ -');
  }
  if (password.length < 8) throw new Error('A password must be at least 8 characters long.');
  const hash = await hashPassword(password);
  const row = await db.get<{ id: number }>(
    'INSERT INTO users (username, password_hash, workspace_id, created_at) VALUES (?, ?, ?, ?) RETURNING id',
    [username, hash, workspaceId, Date.now()],
  );
  return row?.id ?? 0;
}

export interface Defaults {
  workspaceId: string;
  devToken: string;
  /** Set only on the start that created the pilot user. */
  createdPasswordFile?: string;
}

/**
 * First start: default workspace, user `pilot` with a random password (kept in
 * `<dataDir>/pilot-password`, 0600), and a development token without expiry
 * (`<dataDir>/dev-token`, 0600; the DB has only its hash). Later starts reuse
 * them, so the CLI prints the same token every time. A revoked or missing dev
 * token is replaced by a new one (revoking it is how an operator rotates it).
 */
export async function ensureDefaults(db: SqlDb, dataDir: string, tokens: TokenStore): Promise<Defaults> {
  const workspaceId = await ensureDefaultWorkspace(db);
  const result: Defaults = { workspaceId, devToken: '' };

  const pilot = await findUser(db, DEFAULT_USERNAME);
  if (!pilot) {
    const password = randomBytes(12).toString('base64url');
    await createUser(db, DEFAULT_USERNAME, password, workspaceId);
    const file = join(dataDir, PILOT_PASSWORD_FILE);
    writeSecretFile(file, `${password}\n`);
    result.createdPasswordFile = file;
  }

  const devFile = join(dataDir, DEV_TOKEN_FILE);
  const existing = readSecretFile(devFile);
  const check = existing === null ? null : await tokens.check(existing);
  if (
    existing !== null &&
    check?.ok &&
    check.owner.kind === 'dev' &&
    check.owner.workspaceId === workspaceId
  ) {
    result.devToken = existing;
  } else {
    // SQLite: one dev token at a time, the new one replaces every other. PostgreSQL:
    // each instance's data dir may hold its own (an instance started on a new
    // machine must not revoke the token the others print); revoke by hand to rotate.
    result.devToken = await db.tx(async (t) => {
      if (db.kind === 'sqlite') {
        await t.run("UPDATE tokens SET revoked_at = ? WHERE kind = 'dev' AND revoked_at IS NULL", [
          Date.now(),
        ]);
      }
      return tokens.issue({ workspaceId, userId: null, kind: 'dev' }, null, t);
    });
    writeSecretFile(devFile, `${result.devToken}\n`);
  }
  return result;
}

export interface UserRow {
  id: number;
  username: string;
  password_hash: string;
  workspace_id: string;
}

/** A user by name, whatever its case (SQLite: COLLATE NOCASE; PostgreSQL: the lower(username) index). */
export function findUser(db: SqlDb, username: string): Promise<UserRow | undefined> {
  const where = db.kind === 'postgres' ? 'lower(username) = lower(?)' : 'username = ?';
  return db.get<UserRow>(`SELECT id, username, password_hash, workspace_id FROM users WHERE ${where}`, [
    username,
  ]);
}
