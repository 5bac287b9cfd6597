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

  if (!(await findUser(db, DEFAULT_USERNAME))) {
    // Two instances starting at once (two `serve` on one data folder) both get here: the
    // insert decides, and only the one whose row went in writes the file.
    const password = newPassword();
    if (await createUserIfAbsent(db, DEFAULT_USERNAME, password, workspaceId)) {
      const file = join(dataDir, PILOT_PASSWORD_FILE);
      writeSecretFile(file, `${password}\n`);
      result.createdPasswordFile = file;
    }
  }

  // In one transaction, the file read in it: a second instance starting at once finds the
  // token the first one wrote instead of revoking it.
  const devFile = join(dataDir, DEV_TOKEN_FILE);
  result.devToken = await db.tx(async (t) => {
    const existing = readSecretFile(devFile);
    const check = existing === null ? null : await tokens.check(existing, t);
    if (
      existing !== null &&
      check?.ok &&
      check.owner.kind === 'dev' &&
      check.owner.workspaceId === workspaceId
    )
      return existing;
    // SQLite: one dev token at a time, the new one replaces every other. PostgreSQL:
    // each instance's data dir may hold its own (an instance started on a new
    // machine must not revoke the token the others print); revoke by hand to rotate.
    if (db.kind === 'sqlite') {
      await t.run("UPDATE tokens SET revoked_at = ? WHERE kind = 'dev' AND revoked_at IS NULL", [Date.now()]);
    }
    const token = await tokens.issue({ workspaceId, userId: null, kind: 'dev' }, null, t);
    writeSecretFile(devFile, `${token}\n`);
    return token;
  });
  return result;
}

const newPassword = (): string => randomBytes(12).toString('base64url');

/** Creates the user unless one of that name exists (whatever its case); true when this call created it. */
async function createUserIfAbsent(
  db: SqlDb,
  username: string,
  password: string,
  workspaceId: string,
): Promise<boolean> {
  const hash = await hashPassword(password);
  const row = await db.get<{ id: number }>(
    'INSERT INTO users (username, password_hash, workspace_id, created_at) VALUES (?, ?, ?, ?) ON CONFLICT DO NOTHING RETURNING id',
    [username, hash, workspaceId, Date.now()],
  );
  return row !== undefined;
}

/** The file `resetPassword` writes a user's new password to: `pilot-password` for pilot. */
export function passwordFileOf(username: string): string {
  return username.toLowerCase() === DEFAULT_USERNAME ? PILOT_PASSWORD_FILE : `${username}-password`;
}

/**
 * A new random password for `username` (the old one stops working, and so do
 * the sign-ins made with it), written to `<dataDir>/<passwordFileOf(user)>`
 * (0600); resolves to that file's path. Null when there is no such user.
 */
export async function resetPassword(db: SqlDb, dataDir: string, username: string): Promise<string | null> {
  const user = await findUser(db, username);
  if (!user) return null;
  const password = newPassword();
  const hash = await hashPassword(password);
  const file = join(dataDir, passwordFileOf(user.username));
  await db.tx(async (t) => {
    await t.run('UPDATE users SET password_hash = ? WHERE id = ?', [hash, user.id]);
    await t.run('UPDATE tokens SET revoked_at = ? WHERE user_id = ? AND revoked_at IS NULL', [
      Date.now(),
      user.id,
    ]);
    // In the transaction: if the file cannot be written, the old password stays.
    writeSecretFile(file, `${password}\n`);
  });
  return file;
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
