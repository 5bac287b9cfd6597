/**
 * Where the sign-in lives. With an OS keyring (Keychain, DPAPI, libsecret,
 * KWallet) it is encrypted with Electron's safeStorage into `token.enc`
 * (0600). Without one (a Linux box with no keyring, where safeStorage would
 * only obfuscate with a fixed key) it goes to the CLI's owner-only `token`
 * file, which the CLI reads too. Neither path ever logs the token.
 */
import fs from 'node:fs';
import path from 'node:path';
import { silentLogger, type Logger } from '../core/log.js';
import { statePaths } from '../core/paths.js';
import {
  parseStoredToken,
  readTokenFile,
  writeTokenFile,
  type StoredToken,
  type TokenStore,
} from '../core/session/token-file.js';

export type { StoredToken } from '../core/session/token-file.js';

/** The part of Electron's safeStorage used here (injected: tests pass a fake). */
export interface SafeStorageLike {
  isEncryptionAvailable(): boolean;
  encryptString(plainText: string): Buffer;
  decryptString(encrypted: Buffer): string;
  /** Linux only; 'basic_text' means a hard-coded key, i.e. no real protection. */
  getSelectedStorageBackend?(): string;
}

/** The app's sign-in store: the same contract as the CLI's token file. */
export type SecretStore = TokenStore;

export const ENCRYPTED_TOKEN_FILE = 'token.enc';

function mtime(file: string): number {
  try {
    return fs.statSync(file).mtimeMs;
  } catch {
    return -1;
  }
}

export class SafeTokenStore implements SecretStore {
  private readonly encFile: string;
  private readonly plainFile: string;
  private readonly log: Logger;
  private warned = false;

  constructor(
    private readonly opts: {
      stateDir: string;
      safeStorage: SafeStorageLike;
      logger?: Logger;
      platform?: NodeJS.Platform;
    },
  ) {
    this.encFile = path.join(opts.stateDir, ENCRYPTED_TOKEN_FILE);
    this.plainFile = statePaths(opts.stateDir).token;
    this.log = opts.logger ?? silentLogger;
  }

  /** True when the OS keyring protects the token. */
  get encrypted(): boolean {
    const s = this.opts.safeStorage;
    if (!s.isEncryptionAvailable()) return false;
    const linux = (this.opts.platform ?? process.platform) === 'linux';
    return !(linux && s.getSelectedStorageBackend?.() === 'basic_text');
  }

  /**
   * The newest of the two files wins: the app writes the encrypted one, the
   * CLI's `login` the plain one, and the later sign-in is the one meant.
   */
  read(): StoredToken | null {
    const enc = fs.existsSync(this.encFile) ? this.readEncrypted() : null;
    const plain = readTokenFile(this.plainFile);
    if (enc && plain) return mtime(this.encFile) >= mtime(this.plainFile) ? enc : plain;
    return enc ?? plain;
  }

  write(value: StoredToken): void {
    fs.mkdirSync(this.opts.stateDir, { recursive: true, mode: 0o700 });
    if (this.encrypted) {
      const tmp = `${this.encFile}.${process.pid}.tmp`;
      fs.writeFileSync(tmp, this.opts.safeStorage.encryptString(JSON.stringify(value)), { mode: 0o600 });
      fs.renameSync(tmp, this.encFile);
      fs.chmodSync(this.encFile, 0o600);
      return;
    }
    if (!this.warned) {
      this.warned = true;
      this.log.warn(
        { file: this.plainFile },
        'No system keyring is available: the sign-in is kept in an owner-only file instead of encrypted storage.',
      );
    }
    writeTokenFile(this.plainFile, value);
  }

  /** Signing out removes both files: a leftover copy would keep the machine signed in. */
  clear(): void {
    for (const f of [this.encFile, this.plainFile]) fs.rmSync(f, { force: true });
  }

  private readEncrypted(): StoredToken | null {
    if (!this.opts.safeStorage.isEncryptionAvailable()) {
      this.log.warn('The stored sign-in is encrypted but the system keyring is not available now.');
      return null;
    }
    try {
      return parseStoredToken(this.opts.safeStorage.decryptString(fs.readFileSync(this.encFile)));
    } catch {
      // Keyring reset or file from another user: the user signs in again.
      this.log.warn('The stored sign-in could not be decrypted; signing in again will replace it.');
      return null;
    }
  }
}
