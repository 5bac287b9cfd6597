import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { findChromium } from './find-chromium.js';

// The browser finder of the UI suite, with real binaries: stand-in "system"
// browsers are shell scripts on a PATH of the test's own; the packaged one is
// the real Chromium of @sparticuz/chromium, unpacked into a temporary cache.

let dir: string;
let cacheDir: string;
const onLinuxX64 = process.platform === 'linux' && process.arch === 'x64';

function fakeBrowser(bin: string, name: string, script: string): string {
  fs.mkdirSync(bin, { recursive: true });
  const file = path.join(bin, name);
  fs.writeFileSync(file, `#!/bin/sh\n${script}\n`, { mode: 0o755 });
  return file;
}

beforeAll(() => {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'dms-browser-'));
  cacheDir = path.join(dir, 'cache');
});
afterAll(() => fs.rmSync(dir, { recursive: true, force: true }));

describe('findChromium', () => {
  it.skipIf(!onLinuxX64)(
    'with no browser on PATH, unpacks the packaged Chromium once and runs it',
    async () => {
      const env = { PATH: path.join(dir, 'empty') };
      const found = await findChromium({ env, cacheDir });
      expect(found.description).toMatch(/^@sparticuz\/chromium \d+\.\d+\.\d+: Chromium \d+\./);
      expect(found.executablePath.startsWith(cacheDir + path.sep)).toBe(true);
      const unpacked = fs.statSync(found.executablePath);
      expect(unpacked.size).toBeGreaterThan(50 * 1024 * 1024);
      expect(fs.readdirSync(path.dirname(found.executablePath))).toEqual(['chromium']); // no partial file left
      // A second call reuses it.
      const again = await findChromium({ env, cacheDir });
      expect(again.executablePath).toBe(found.executablePath);
      expect(fs.statSync(again.executablePath).mtimeMs).toBe(unpacked.mtimeMs);
    },
    120_000,
  );

  it('prefers a Chromium on PATH that runs', async () => {
    const bin = path.join(dir, 'good-bin');
    const file = fakeBrowser(bin, 'chromium', 'echo "Chromium 999.0.0.0 stand-in"');
    const found = await findChromium({ env: { PATH: bin }, cacheDir });
    expect(found).toEqual({ executablePath: file, description: 'PATH: Chromium 999.0.0.0 stand-in' });
  });

  it.skipIf(!onLinuxX64)(
    'skips a system browser that does not run and takes the packaged one',
    async () => {
      const bin = path.join(dir, 'broken-bin');
      fakeBrowser(
        bin,
        'google-chrome',
        'echo "google-chrome: error while loading shared libraries: libnss3.so" >&2; exit 127',
      );
      const found = await findChromium({ env: { PATH: bin }, cacheDir });
      expect(found.description).toMatch(/^@sparticuz\/chromium /);
    },
    120_000,
  );

  it('a CHROMIUM_PATH that does not run is an error, not skipped', async () => {
    const bin = path.join(dir, 'chosen-bin');
    const bad = fakeBrowser(bin, 'my-chrome', 'echo "cannot open display" >&2; exit 1');
    fakeBrowser(bin, 'chromium', 'echo "Chromium 999.0.0.0 stand-in"');
    await expect(findChromium({ env: { PATH: bin, CHROMIUM_PATH: bad }, cacheDir })).rejects.toThrow(
      `CHROMIUM_PATH=${bad} does not run (cannot open display): correct it or unset it.`,
    );
  });

  it('names every candidate and what to do when none runs', async () => {
    const bin = path.join(dir, 'nothing-bin');
    fakeBrowser(bin, 'chromium', 'echo "chromium: libnss3.so: cannot open shared object file" >&2; exit 127');
    const notADir = path.join(dir, 'not-a-dir');
    fs.writeFileSync(notADir, '');
    const err = await findChromium({ env: { PATH: bin }, cacheDir: notADir }).catch((e: Error) => e);
    expect(err).toBeInstanceOf(Error);
    const message = (err as Error).message;
    expect(message).toContain(
      `${path.join(bin, 'chromium')}: chromium: libnss3.so: cannot open shared object file`,
    );
    expect(message).toMatch(/@sparticuz\/chromium: /);
    expect(message).toContain('Run npm ci');
    expect(message).toContain('set CHROMIUM_PATH');
  });
});
