/**
 * Finds the Chromium that the UI suite drives, so that `npm ci && npm test`
 * needs no browser installed by hand. In order:
 *  1. CHROMIUM_PATH, when set (a broken one is an error, never skipped);
 *  2. a Chromium or Chrome on PATH (Debian's chromium, Ubuntu's chromium-browser, google-chrome);
 *  3. the Chromium inside the dev dependency @sparticuz/chromium (Linux x64; it
 *     needs only libnss3, libnspr4 and libexpat1, which this project's machines have).
 * A candidate counts when `<binary> --version` answers. The packaged one is
 * unpacked once per version into node_modules/.cache: not with the package's own
 * executablePath(), which unpacks into the shared /tmp and reuses whatever file
 * is there under that name, even one cut short by a killed run.
 */
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import { pipeline } from 'node:stream/promises';
import { fileURLToPath } from 'node:url';
import zlib from 'node:zlib';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..');
const DEFAULT_CACHE = path.join(ROOT, 'node_modules', '.cache', 'dms-ui-chromium');
const SYSTEM_NAMES = ['chromium', 'chromium-browser', 'google-chrome', 'google-chrome-stable'];
const PACKAGE = '@sparticuz/chromium';

export interface FoundBrowser {
  executablePath: string;
  /** Where it came from and what it says it is, e.g. "PATH: Chromium 156.0.8078.79". */
  description: string;
}

export interface FindOptions {
  env?: NodeJS.ProcessEnv;
  /** Where the packaged Chromium is unpacked. */
  cacheDir?: string;
}

/** The first Chromium that runs; throws one message naming every candidate and why it failed. */
export async function findChromium(opts: FindOptions = {}): Promise<FoundBrowser> {
  const env = opts.env ?? process.env;
  const chosen = env.CHROMIUM_PATH;
  if (chosen) {
    const answer = versionOf(chosen, env);
    if (answer.ok) return { executablePath: chosen, description: `CHROMIUM_PATH: ${answer.text}` };
    throw new Error(`CHROMIUM_PATH=${chosen} does not run (${answer.text}): correct it or unset it.`);
  }
  const tried: string[] = [];
  for (const name of SYSTEM_NAMES) {
    const file = onPath(name, env);
    if (!file) continue;
    const answer = versionOf(file, env);
    if (answer.ok) return { executablePath: file, description: `PATH: ${answer.text}` };
    tried.push(`${file}: ${answer.text}`);
  }
  if (tried.length === 0) tried.push(`no ${SYSTEM_NAMES.join(', ')} on PATH`);
  try {
    const { file, version } = await unpackPackaged(opts.cacheDir ?? DEFAULT_CACHE);
    const answer = versionOf(file, env);
    if (answer.ok) return { executablePath: file, description: `${PACKAGE} ${version}: ${answer.text}` };
    tried.push(`${PACKAGE} ${version} (${file}): ${answer.text}`);
  } catch (err) {
    tried.push(`${PACKAGE}: ${(err as Error).message}`);
  }
  throw new Error(
    `No Chromium for the UI tests. Tried: ${tried.join('; ')}. ` +
      `Run npm ci (it installs ${PACKAGE}, Linux x64), install Chromium or Chrome, or set CHROMIUM_PATH.`,
  );
}

function onPath(name: string, env: NodeJS.ProcessEnv): string | undefined {
  for (const dir of (env.PATH ?? '').split(path.delimiter)) {
    const file = path.join(dir || '.', name);
    try {
      fs.accessSync(file, fs.constants.X_OK);
      if (fs.statSync(file).isFile()) return file;
    } catch {
      // not here
    }
  }
  return undefined;
}

/** `--version`'s answer, or why the binary does not run (a missing shared library says which). */
function versionOf(file: string, env: NodeJS.ProcessEnv): { ok: boolean; text: string } {
  const r = spawnSync(file, ['--version'], { env, encoding: 'utf8', timeout: 30_000 });
  if (r.error) return { ok: false, text: r.error.message };
  const out = r.stdout.trim();
  if (r.status === 0 && out) return { ok: true, text: out.split('\n').at(-1)! };
  const why = r.stderr.trim().split('\n').at(-1) || `exit ${r.status ?? r.signal}`;
  return { ok: false, text: why };
}

async function unpackPackaged(cacheDir: string): Promise<{ file: string; version: string }> {
  if (process.platform !== 'linux' || process.arch !== 'x64')
    throw new Error(`ships a Linux x64 build only (this is ${process.platform} ${process.arch})`);
  let entry: string;
  try {
    entry = createRequire(import.meta.url).resolve(PACKAGE);
  } catch {
    throw new Error('not installed');
  }
  const pkgDir = path.resolve(path.dirname(entry), '..');
  const { version } = JSON.parse(fs.readFileSync(path.join(pkgDir, 'package.json'), 'utf8')) as {
    version: string;
  };
  const file = path.join(cacheDir, version, 'chromium');
  if (fs.existsSync(file)) return { file, version };
  // Unpacked under a name of its own, then renamed: a run killed half-way, or
  // two suites unpacking at once, never leave a partial binary under `file`.
  fs.mkdirSync(path.dirname(file), { recursive: true });
  const partial = `${file}.${process.pid}.partial`;
  try {
    await pipeline(
      fs.createReadStream(path.join(pkgDir, 'bin', 'chromium.br')),
      zlib.createBrotliDecompress(),
      fs.createWriteStream(partial, { mode: 0o755 }),
    );
    fs.renameSync(partial, file);
  } finally {
    fs.rmSync(partial, { force: true });
  }
  return { file, version };
}
