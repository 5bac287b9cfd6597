import { randomBytes, randomUUID } from 'node:crypto';
import { chmodSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { hashPassword, type TokenStore } from './auth.js';
import type { Db } from './db.js';
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

export function createWorkspace(db: Db, name: string, isDefault = false): string {
  const id = randomUUID();
  // The workspace id is the object key prefix: unique, and readable in a bucket listing.
  db.prepare(
    'INSERT INTO workspaces (id, name, object_key_prefix, is_default, created_at) VALUES (?, ?, ?, ?, ?)',
  ).run(id, name, id, isDefault ? 1 : 0, Date.now());
  return id;
}

/** The default workspace, created (with its demo waylines) on first start. */
export function ensureDefaultWorkspace(db: Db): string {
  return db.transaction(() => {
    const row = db.prepare<[], { id: string }>('SELECT id FROM workspaces WHERE is_default = 1').get();
    if (row) return row.id;
    const id = createWorkspace(db, 'Default workspace', true);
    seedDemoWaylines(db, id);
    return id;
  })();
}

export async function createUser(
  db: Db,
  username: string,
  password: string,
  workspaceId: string,
): Promise<number> {
  if (!/^[\w.@-]{1,64}$/.test(username)) {
    throw new Error('A username is 1 to 64 letters, digits, or . _ @ -');
  }
  if (password.length < 8) throw new Error('A password must be at least 8 characters long.');
  const hash = await hashPassword(password);
  const info = db
    .prepare('INSERT INTO users (username, password_hash, workspace_id, created_at) VALUES (?, ?, ?, ?)')
    .run(username, hash, workspaceId, Date.now());
  return Number(info.lastInsertRowid);
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
export async function ensureDefaults(db: Db, dataDir: string, tokens: TokenStore): Promise<Defaults> {
  const workspaceId = ensureDefaultWorkspace(db);
  const result: Defaults = { workspaceId, devToken: '' };

  const pilot = db.prepare('SELECT id FROM users WHERE username = ?').get(DEFAULT_USERNAME);
  if (!pilot) {
    const password = randomBytes(12).toString('base64url');
    await createUser(db, DEFAULT_USERNAME, password, workspaceId);
    const file = join(dataDir, PILOT_PASSWORD_FILE);
    writeSecretFile(file, `${password}\n`);
    result.createdPasswordFile = file;
  }

  const devFile = join(dataDir, DEV_TOKEN_FILE);
  const existing = readSecretFile(devFile);
  const check = existing === null ? null : tokens.check(existing);
  if (
    existing !== null &&
    check?.ok &&
    check.owner.kind === 'dev' &&
    check.owner.workspaceId === workspaceId
  ) {
    result.devToken = existing;
  } else {
    db.prepare("UPDATE tokens SET revoked_at = ? WHERE kind = 'dev' AND revoked_at IS NULL").run(Date.now());
    result.devToken = tokens.issue({ workspaceId, userId: null, kind: 'dev' }, null);
    writeSecretFile(devFile, `${result.devToken}\n`);
  }
  return result;
}
