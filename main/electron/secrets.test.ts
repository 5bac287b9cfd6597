import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Writable } from 'node:stream';
import pino from 'pino';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import {
  readTokenFile as readStoredToken,
  writeTokenFile as writeStoredToken,
} from '../core/session/token-file.js';
import { ENCRYPTED_TOKEN_FILE, SafeTokenStore, type SafeStorageLike } from './secrets.js';

// A fake of Electron's safeStorage (the real one needs the Electron binary and an OS keyring):
// a reversible XOR "cipher", enough to prove the file never holds the token as text.
function fakeSafeStorage(opts: {
  available: boolean;
  backend?: string;
}): SafeStorageLike & { calls: number } {
  const xor = (b: Buffer) => Buffer.from(b.map((x) => x ^ 0x5a));
  return {
    calls: 0,
    isEncryptionAvailable: () => opts.available,
    encryptString(s) {
      this.calls++;
      return Buffer.concat([Buffer.from('v10'), xor(Buffer.from(s, 'utf8'))]);
    },
    decryptString: (b) => {
      if (b.subarray(0, 3).toString() !== 'v10') throw new Error('bad ciphertext');
      return xor(b.subarray(3)).toString('utf8');
    },
    getSelectedStorageBackend: () => opts.backend ?? 'gnome_libsecret',
  };
}

function captureLogger() {
  const lines: string[] = [];
  const stream = new Writable({
    write(chunk: Buffer, _enc, cb) {
      lines.push(chunk.toString());
      cb();
    },
  });
  return { logger: pino({ level: 'debug' }, stream), lines };
}

const TOKEN = 'tok_9f8e7d6c5b4a39281706f5e4d3c2b1a0';
const SIGNED = { server: 'https://media.example.com', workspaceId: 'ws-1', token: TOKEN };
let dir: string;
beforeEach(() => {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'dms-secrets-'));
});
afterEach(() => fs.rmSync(dir, { recursive: true, force: true }));

describe('secret store', () => {
  it('with a keyring: the token is encrypted in token.enc (0600), never in plain text, and reads back', () => {
    const safe = fakeSafeStorage({ available: true });
    const store = new SafeTokenStore({ stateDir: dir, safeStorage: safe, platform: 'linux' });
    expect(store.encrypted).toBe(true);
    store.write(SIGNED);
    const file = path.join(dir, ENCRYPTED_TOKEN_FILE);
    const bytes = fs.readFileSync(file);
    expect(bytes.includes(Buffer.from(TOKEN))).toBe(false);
    expect(bytes.toString('latin1')).not.toContain(TOKEN);
    if (process.platform !== 'win32') expect(fs.statSync(file).mode & 0o777).toBe(0o600);
    expect(fs.existsSync(path.join(dir, 'token'))).toBe(false); // no plain copy
    expect(store.read()).toEqual(SIGNED);
    expect(safe.calls).toBe(1);
  });

  it("without a keyring: the CLI's owner-only token file, and one warning without the secret", () => {
    const { logger, lines } = captureLogger();
    const store = new SafeTokenStore({
      stateDir: dir,
      safeStorage: fakeSafeStorage({ available: false }),
      logger,
    });
    expect(store.encrypted).toBe(false);
    store.write(SIGNED);
    store.write({ ...SIGNED, token: `${TOKEN}-2` });
    const file = path.join(dir, 'token');
    if (process.platform !== 'win32') expect(fs.statSync(file).mode & 0o777).toBe(0o600);
    // Same format the CLI reads: `drone-media-sync` commands share the sign-in.
    expect(readStoredToken(file)).toEqual({ ...SIGNED, token: `${TOKEN}-2` });
    expect(fs.existsSync(path.join(dir, ENCRYPTED_TOKEN_FILE))).toBe(false);
    expect(lines).toHaveLength(1);
    expect(lines[0]).toContain('owner-only file');
    expect(lines.join('')).not.toContain(TOKEN);
  });

  it("Linux's basic_text backend (a fixed key) counts as no keyring", () => {
    const store = new SafeTokenStore({
      stateDir: dir,
      safeStorage: fakeSafeStorage({ available: true, backend: 'basic_text' }),
      platform: 'linux',
    });
    expect(store.encrypted).toBe(false);
  });

  it('reads a sign-in made with the CLI, and the newer of the two files wins', async () => {
    const store = new SafeTokenStore({ stateDir: dir, safeStorage: fakeSafeStorage({ available: true }) });
    writeStoredToken(path.join(dir, 'token'), { ...SIGNED, token: 'from-cli' });
    expect(store.read()?.token).toBe('from-cli');
    await new Promise((r) => setTimeout(r, 20));
    store.write({ ...SIGNED, token: 'from-app' });
    expect(store.read()?.token).toBe('from-app');
  });

  it('an undecryptable file (keyring reset) reads as "not signed in", with a warning; sign-out removes both files', () => {
    const { logger, lines } = captureLogger();
    fs.writeFileSync(path.join(dir, ENCRYPTED_TOKEN_FILE), 'garbage');
    const store = new SafeTokenStore({
      stateDir: dir,
      safeStorage: fakeSafeStorage({ available: true }),
      logger,
    });
    expect(store.read()).toBeNull();
    expect(lines.join('')).toContain('could not be decrypted');
    writeStoredToken(path.join(dir, 'token'), SIGNED);
    store.clear();
    expect(fs.readdirSync(dir)).toEqual([]);
    expect(store.read()).toBeNull();
  });
});
