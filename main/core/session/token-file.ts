import fs from 'node:fs';
import path from 'node:path';
import { lazySchema } from '../zod.js';

/** A sign-in: the server it is for, the workspace, the access token, and who signed in (when known). */
export interface StoredToken {
  server: string;
  workspaceId: string;
  token: string;
  /** The user name given at sign-in (the app shows who is signed in); absent for a pasted token. */
  user?: string;
}

/** Where a sign-in is kept: the owner-only file (CLI), or the OS keyring (the app). */
export interface TokenStore {
  read(): StoredToken | null;
  write(value: StoredToken): void;
  clear(): void;
}

/** Built at its first use (zod.ts): a token given in the environment reads no file. */
const storedTokenSchema = lazySchema((z) =>
  z.object({
    server: z.string(),
    workspaceId: z.string(),
    token: z.string().min(1),
    user: z.string().max(256).optional(),
  }),
);

/** Parses a stored sign-in; anything else (a damaged or foreign file) is as good as none. */
export function parseStoredToken(text: string): StoredToken | null {
  try {
    const parsed = storedTokenSchema().safeParse(JSON.parse(text));
    return parsed.success ? parsed.data : null;
  } catch {
    return null;
  }
}

export function readTokenFile(file: string): StoredToken | null {
  try {
    return parseStoredToken(fs.readFileSync(file, 'utf8'));
  } catch {
    return null;
  }
}

/** Written atomically and owner-only (0600, folder 0700). */
export function writeTokenFile(file: string, value: StoredToken): void {
  fs.mkdirSync(path.dirname(file), { recursive: true, mode: 0o700 });
  const tmp = `${file}.${process.pid}.tmp`;
  fs.writeFileSync(tmp, JSON.stringify(value) + '\n', { mode: 0o600 });
  fs.renameSync(tmp, file);
  fs.chmodSync(file, 0o600);
}

/** The sign-in in the state folder's `token` file, as `login` writes it. */
export class TokenFile implements TokenStore {
  constructor(private readonly file: string) {}
  read(): StoredToken | null {
    return readTokenFile(this.file);
  }
  write(value: StoredToken): void {
    writeTokenFile(this.file, value);
  }
  clear(): void {
    fs.rmSync(this.file, { force: true });
  }
}
