/** Runs the real CLI (built JS, as a user runs it) against the rig's service proxy. */
import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import type { Rig, Workspace } from './rig.js';

export const BIN = path.resolve('dist/main/cli/bin.js');

export interface CliRun {
  child: ChildProcess;
  /** Resolves with the exit code (null when killed by a signal). */
  exit: Promise<{
    code: number | null;
    signal: NodeJS.Signals | null;
    stdout: string;
    stderr: string;
    ms: number;
  }>;
  stdout(): string;
}

/** `drone-media-sync sync <root> --json` with its own state dir; output is also kept in <state>/cli-output-<n>.txt for the secrets scan. */
export function runSync(
  rig: Rig,
  w: Workspace,
  state: string,
  roots: string[],
  opts: { killAfterMs?: number } = {},
): CliRun {
  if (!fs.existsSync(BIN)) throw new Error(`${BIN} is missing: run npm run build first`);
  fs.mkdirSync(state, { recursive: true });
  const t0 = Date.now();
  const child = spawn(
    process.execPath,
    [
      BIN,
      'sync',
      ...roots,
      '--json',
      '--state',
      state,
      '--server',
      rig.service.url,
      '--token',
      w.token,
      '--workspace',
      w.ws,
    ],
    {
      stdio: ['ignore', 'pipe', 'pipe'],
    },
  );
  let out = '';
  let err = '';
  child.stdout.on('data', (d) => (out += String(d)));
  child.stderr.on('data', (d) => (err += String(d)));
  // A hard limit: a hung CLI fails the test instead of hanging it.
  const limit = setTimeout(() => child.kill('SIGKILL'), opts.killAfterMs ?? 60_000);
  const exit = new Promise<{
    code: number | null;
    signal: NodeJS.Signals | null;
    stdout: string;
    stderr: string;
    ms: number;
  }>((resolve) => {
    child.on('exit', (code, signal) => {
      clearTimeout(limit);
      // Keep what it printed beside its state, for the secrets scan.
      let n = 0;
      while (fs.existsSync(path.join(state, `cli-output-${n}.txt`))) n++;
      try {
        fs.writeFileSync(path.join(state, `cli-output-${n}.txt`), `${out}\n--- stderr ---\n${err}`);
      } catch {
        // a full disk in the disk-full test: the output is checked in memory there
      }
      resolve({ code, signal, stdout: out, stderr: err, ms: Date.now() - t0 });
    });
  });
  return { child, exit, stdout: () => out };
}

export function lastJson(stdout: string): Record<string, unknown> | null {
  const lines = stdout
    .trim()
    .split('\n')
    .filter((l) => l.startsWith('{'));
  try {
    return lines.length ? (JSON.parse(lines.at(-1)!) as Record<string, unknown>) : null;
  } catch {
    return null;
  }
}
