/**
 * `npm start`: the desktop app when Electron and a display are available,
 * otherwise one clear line and the headless agent. Electron's binary is not
 * downloaded by `npm ci` (Electron 45's package has no install script, and
 * allowScripts would block one), so installs work offline; it is fetched here
 * on first use with the package's install.js.
 */
import { spawn, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { invokedAs } from './invocation.js';
import { AGENT_ENV, AGENT_V8_FLAGS } from '../core/node-flags.js';

const require = createRequire(import.meta.url);
const repoRoot = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..', '..');

export function hasDisplay(env: NodeJS.ProcessEnv = process.env, platform = process.platform): boolean {
  if (platform === 'win32' || platform === 'darwin') return true;
  return Boolean(env.DISPLAY || env.WAYLAND_DISPLAY);
}

/** Path of the Electron binary, fetching it once if missing; null when it cannot be had. */
export function ensureElectron(): { binary: string } | { reason: string } {
  let pkgDir: string;
  try {
    pkgDir = path.dirname(require.resolve('electron/package.json'));
  } catch {
    return { reason: 'the electron package is not installed (run npm ci)' };
  }
  if (!fs.existsSync(path.join(pkgDir, 'dist'))) {
    process.stderr.write('Fetching the Electron runtime (first start only)...\n');
    const r = spawnSync(process.execPath, [path.join(pkgDir, 'install.js')], {
      stdio: ['ignore', 'ignore', 'pipe'],
    });
    if (r.status !== 0) {
      // The installer prints a stack; the line that names the error is enough.
      const lines = (r.stderr?.toString() ?? '')
        .split('\n')
        .map((l) => l.trim())
        .filter(Boolean);
      const why = (
        lines.find((l) => /error|ENOTFOUND|ECONN|EAI_AGAIN/i.test(l) && !l.startsWith('at ')) ??
        lines[0] ??
        'download failed'
      ).slice(0, 160);
      return { reason: `the Electron runtime could not be downloaded (${why})` };
    }
  }
  try {
    return { binary: require('electron') as string };
  } catch (err) {
    return { reason: `Electron is not usable here (${(err as Error).message.split('\n')[0]})` };
  }
}

/** Electron's arguments: its main process gets the agent's V8 flags only this way (--js-flags, at start). */
export function electronArgs(appDir: string, extra: readonly string[]): string[] {
  return [`--js-flags=${AGENT_V8_FLAGS.join(' ')}`, appDir, ...extra];
}

function runHeadless(reason: string): void {
  process.stderr.write(
    `Desktop app not started: ${reason}. Running the headless agent instead (${invokedAs()} watch --cards).\n`,
  );
  const child = spawn(
    process.execPath,
    [
      ...AGENT_V8_FLAGS,
      path.join(repoRoot, 'dist', 'main', 'cli', 'bin.js'),
      'watch',
      '--cards',
      ...process.argv.slice(2),
    ],
    {
      stdio: 'inherit',
      env: { ...process.env, ...AGENT_ENV },
    },
  );
  forward(child);
}

function forward(child: ReturnType<typeof spawn>): void {
  for (const sig of ['SIGINT', 'SIGTERM'] as const) process.on(sig, () => child.kill(sig));
  child.on('exit', (code, signal) => process.exit(code ?? (signal ? 1 : 0)));
}

function main(): void {
  if (!hasDisplay()) return runHeadless('no display is available (DISPLAY/WAYLAND_DISPLAY unset)');
  if (!fs.existsSync(path.join(repoRoot, 'dist', 'main', 'electron', 'main.js'))) {
    return runHeadless('this build has no desktop shell (dist/main/electron/main.js is missing)');
  }
  const electron = ensureElectron();
  if ('reason' in electron) return runHeadless(electron.reason);
  const child = spawn(electron.binary, electronArgs(repoRoot, process.argv.slice(2)), { stdio: 'inherit' });
  child.on('error', (err) => runHeadless(`Electron failed to start (${err.message})`));
  forward(child);
}

if (process.argv[1] && fileURLToPath(import.meta.url) === path.resolve(process.argv[1])) main();
