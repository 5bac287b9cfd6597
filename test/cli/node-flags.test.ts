/**
 * Every way the agent is started gives Node the agent's V8 flags
 * (main/core/node-flags.ts): V8 reads them only at start, so a launcher that
 * forgets them runs the agent with a young generation of 128 MiB (issue 33:
 * about 100 MiB more RSS on a 10,000-file card). The headless `npm start`
 * is checked on a real child process in cli.test.ts; Electron cannot run
 * here, so its arguments are checked as start.ts builds them.
 */
import fs from 'node:fs';
import path from 'node:path';
import { expect, it } from 'vitest';
import { AGENT_V8_FLAGS } from '../../main/core/node-flags.js';
import { electronArgs } from '../../main/cli/start.js';

it('bin.js starts Node with the agent flags (its first line)', () => {
  const first = fs.readFileSync(path.resolve('dist/main/cli/bin.js'), 'utf8').split('\n')[0];
  expect(first).toBe(`#!/usr/bin/env -S node ${AGENT_V8_FLAGS.join(' ')}`);
  expect(AGENT_V8_FLAGS).toContain('--max-semi-space-size=8');
  expect(AGENT_V8_FLAGS).toContain('--heap-growing-percent=100');
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
