/**
 * Issue 33: the CLI keeps V8's compiled modules in the OS cache folder
 * (cli/compile-cache.ts), so a second run does not compile them again; a
 * cache folder that cannot be made or written changes nothing the CLI says.
 * The real built CLI, real folders.
 */
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { BIN, runCli } from '../support/cli.js';
import { tempDir } from '../support/harness.js';

let dir: string;
beforeAll(() => {
  expect(fs.existsSync(BIN), 'run npm run build first').toBe(true);
  dir = tempDir('dms-compile-cache-');
});
afterAll(() => fs.rmSync(dir, { recursive: true, force: true }));

/** Every file under `root`. */
const filesUnder = (root: string): string[] =>
  fs.existsSync(root) ? (fs.readdirSync(root, { recursive: true }) as string[]) : [];

it('a run leaves its compiled modules in ~/.cache, and the next run says the same', async () => {
  const home = path.join(dir, 'home');
  fs.mkdirSync(home);
  const cache = path.join(home, '.cache', 'drone-media-sync', 'compile-cache');
  const first = await runCli(['status', '--json'], { home });
  expect(first.code, first.err).toBe(0);
  // Before: no cache folder at all.
  expect(filesUnder(cache).length).toBeGreaterThan(10);
  const second = await runCli(['status', '--json'], { home });
  expect(second.code, second.err).toBe(0);
  expect(second.out).toBe(first.out);
  expect(second.err).toBe(first.err);
});

it('XDG_CACHE_HOME is followed; a cache folder that cannot be made changes nothing', async () => {
  const home = path.join(dir, 'home2');
  fs.mkdirSync(home);
  const xdg = path.join(dir, 'xdg-cache');
  const plain = await runCli(['status', '--json'], { home, env: { XDG_CACHE_HOME: xdg } });
  expect(plain.code, plain.err).toBe(0);
  expect(filesUnder(path.join(xdg, 'drone-media-sync', 'compile-cache')).length).toBeGreaterThan(10);
  // A file where the folder would go (root may write anywhere, not there); a path under /proc,
  // where Node's own recursive mkdir never returns.
  const blocked = path.join(dir, 'a-file');
  fs.writeFileSync(blocked, 'not a folder');
  for (const place of [blocked, '/proc/dms-no-such-folder']) {
    const run = await runCli(['status', '--json'], { home, env: { XDG_CACHE_HOME: place } });
    expect(run.code, run.err).toBe(0);
    expect(run.out).toBe(plain.out);
    expect(run.err).toBe(plain.err);
  }
  expect(fs.readFileSync(blocked, 'utf8')).toBe('not a folder');
});
