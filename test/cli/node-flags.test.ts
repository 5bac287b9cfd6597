/**
 * Every way the agent is started gives Node the agent's V8 flags
 * (main/core/node-flags.ts): V8 reads them only at start, so a launcher that
 * forgets them runs the agent with a young generation of 128 MiB (issue 33:
 * about 100 MiB more RSS on a 10,000-file card). The headless `npm start`
 * is checked on a real child process in cli.test.ts; Electron cannot run
 * here, so its arguments are checked as start.ts builds them.
 */
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { expect, it } from 'vitest';
import { AGENT_ENV, AGENT_V8_FLAGS } from '../../main/core/node-flags.js';
import { electronArgs } from '../../main/cli/start.js';

const firstLine = () =>
  fs.readFileSync(path.resolve('dist/main/cli/bin.js'), 'utf8').split('\n')[0] as string;
const assignments = Object.entries(AGENT_ENV).map(([k, v]) => `${k}=${v}`);

it('bin.js starts Node with the agent flags and environment (its first line)', () => {
  expect(firstLine()).toBe(`#!/usr/bin/env -S ${assignments.join(' ')} node ${AGENT_V8_FLAGS.join(' ')}`);
  expect(AGENT_V8_FLAGS).toContain('--max-semi-space-size=8');
  expect(AGENT_V8_FLAGS).toContain('--heap-growing-percent=100');
  expect(AGENT_ENV).toEqual({ MALLOC_ARENA_MAX: '2' });
});

it('that first line, run by the system as a script starts, gives Node both', () => {
  // A script with bin.js's first line, executed directly (the kernel hands it to /usr/bin/env -S).
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'dms-shebang-'));
  try {
    const script = path.join(dir, 'probe.js');
    fs.writeFileSync(
      script,
      `${firstLine()}\nconsole.log(JSON.stringify({ env: process.env.MALLOC_ARENA_MAX, execArgv: process.execArgv }));\n`,
      { mode: 0o755 },
    );
    const env: NodeJS.ProcessEnv = {
      ...process.env,
      PATH: `${path.dirname(process.execPath)}${path.delimiter}${process.env.PATH ?? ''}`,
    };
    delete env.MALLOC_ARENA_MAX;
    const r = spawnSync(script, [], { encoding: 'utf8', env });
    expect(r.status, r.stderr).toBe(0);
    expect(JSON.parse(r.stdout)).toEqual({ env: AGENT_ENV.MALLOC_ARENA_MAX, execArgv: AGENT_V8_FLAGS });
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
});

it('npm run cli gives the same flags before bin.js', () => {
  const pkg = JSON.parse(fs.readFileSync('package.json', 'utf8')) as { scripts: Record<string, string> };
  expect(pkg.scripts.cli).toBe(`node ${AGENT_V8_FLAGS.join(' ')} dist/main/cli/bin.js`);
});

it("the desktop app's main process gets them through Electron's --js-flags", () => {
  expect(electronArgs('/app', ['--hidden'])).toEqual([
    `--js-flags=${AGENT_V8_FLAGS.join(' ')}`,
    '/app',
    '--hidden',
  ]);
});
