/**
 * The built CLI as a crew member runs it: `node dist/main/cli/bin.js`, no
 * TTY (pipes), a HOME of its own so no settings or sign-in of this machine
 * leak in, and the raw bytes of what it printed.
 */
import { spawn, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';

export const BIN = path.resolve('dist/main/cli/bin.js');

export interface CliRun {
  code: number | null;
  out: string;
  err: string;
  /** Exactly what reached stdout / stderr. */
  outBytes: Buffer;
  errBytes: Buffer;
}

export interface CliOptions {
  /** Standard input (closed after it). */
  input?: string;
  /** HOME for the run (a clean one per test); the state folder is under it unless --state is given. */
  home: string;
  env?: NodeJS.ProcessEnv;
  /** Another Node binary (default: the one running the tests). */
  node?: string;
  /** A command the run is wrapped in, e.g. an unshare that mounts the state folder read-only. */
  wrap?: string[];
}

export function runCli(args: string[], opts: CliOptions): Promise<CliRun> {
  const env: NodeJS.ProcessEnv = { ...process.env, HOME: opts.home, ...opts.env };
  for (const k of [
    'DMS_STATE_DIR',
    'DMS_SERVER',
    'DMS_TOKEN',
    'DMS_WORKSPACE',
    'DMS_LOG_LEVEL',
    'XDG_CONFIG_HOME',
    'XDG_CACHE_HOME',
    'NODE_COMPILE_CACHE',
  ])
    if (!opts.env || !(k in opts.env)) delete env[k];
  const argv = [opts.node ?? process.execPath, BIN, ...args];
  const [cmd, ...rest] = opts.wrap ? [...opts.wrap, ...argv] : argv;
  return new Promise((resolve, reject) => {
    const child = spawn(cmd!, rest, { env, stdio: ['pipe', 'pipe', 'pipe'] });
    const out: Buffer[] = [];
    const err: Buffer[] = [];
    child.stdout.on('data', (d: Buffer) => out.push(d));
    child.stderr.on('data', (d: Buffer) => err.push(d));
    child.on('error', reject);
    child.stdin.end(opts.input ?? '');
    child.on('close', (code) => {
      const outBytes = Buffer.concat(out);
      const errBytes = Buffer.concat(err);
      resolve({ code, out: outBytes.toString('utf8'), err: errBytes.toString('utf8'), outBytes, errBytes });
    });
  });
}

/** The default state folder under a HOME (Linux; the CLI tests run on Linux). */
export const stateUnder = (home: string): string => path.join(home, '.config', 'drone-media-sync');

/**
 * How to run the CLI with `dir` read-only for it: as root (who may write
 * anything) a private mount namespace with `dir` bind-mounted read-only;
 * otherwise the folder's write bits are removed (undone by the returned restore).
 */
export function readOnlyFor(dir: string): { wrap?: string[]; restore: () => void } {
  if (process.getuid?.() === 0) {
    const ok = spawnSync('unshare', ['--mount', 'true']).status === 0;
    if (!ok) throw new Error('unshare --mount is not available: cannot make a read-only folder for root');
    const script = 'mount --bind "$0" "$0" && mount -o remount,bind,ro "$0" && exec "$@"';
    return { wrap: ['unshare', '--mount', 'sh', '-c', script, dir], restore: () => undefined };
  }
  const modes = new Map<string, number>();
  const walk = (p: string): void => {
    const st = fs.statSync(p);
    modes.set(p, st.mode);
    fs.chmodSync(p, st.mode & ~0o222);
    if (st.isDirectory()) for (const e of fs.readdirSync(p)) walk(path.join(p, e));
  };
  walk(dir);
  return {
    restore: () => {
      for (const [p, m] of [...modes].reverse()) fs.chmodSync(p, m);
    },
  };
}

/** What a terminal would act on: ESC, CR, other C0 (not LF/TAB), C1, bidi overrides and isolates. */
// eslint-disable-next-line no-control-regex
export const TERMINAL_CONTROLS = /[\u0000-\u0008\u000b-\u001f\u007f-\u009f\u202a-\u202e\u2066-\u2069]/;
