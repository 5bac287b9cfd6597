/**
 * Issue 33: a card re-inserted whose files are all done says "nothing to do"
 * without loading what only sending needs. The real CLI against the real
 * reference service; the modules a run loads are recorded by Node's own
 * module hooks (an --import given in NODE_OPTIONS, as a user could).
 */
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { startService, type RunningService } from '../../main/service/index.js';
import { BIN, runCli } from '../support/cli.js';
import { makeCard, tempDir } from '../support/harness.js';

let dir: string;
let svc: RunningService;
beforeAll(async () => {
  expect(fs.existsSync(BIN), 'run npm run build first').toBe(true);
  dir = tempDir('dms-no-op-');
  svc = await startService({ dataDir: path.join(dir, 'svc'), logger: false });
});
afterAll(async () => {
  await svc.close();
  fs.rmSync(dir, { recursive: true, force: true });
});

const HOOK = `
import { registerHooks } from 'node:module';
import fs from 'node:fs';
const seen = new Set();
registerHooks({ load(url, context, next) { seen.add(url); return next(url, context); } });
process.on('exit', () => fs.writeFileSync(process.env.DMS_TEST_LOADED, [...seen].join('\\n')));
`;

it('a re-inserted card of done files loads no HTTP client and sends nothing', async () => {
  const card = makeCard(path.join(dir, 'card'));
  const home = path.join(dir, 'home');
  const state = path.join(dir, 'state');
  fs.mkdirSync(home);
  const args = [
    'sync',
    card,
    '--json',
    '--state',
    state,
    '--server',
    svc.baseUrl,
    '--workspace',
    svc.workspaceId,
  ];
  const env = { DMS_TOKEN: svc.token };
  const first = await runCli(args, { home, env });
  expect(first.code, first.err).toBe(0);
  const summary = (out: string) => JSON.parse(out.trim().split('\n').at(-1)!) as Record<string, unknown>;
  const files = summary(first.out).uploaded as number;
  expect(files).toBeGreaterThan(0);

  const hook = path.join(dir, 'hook.mjs');
  fs.writeFileSync(hook, HOOK);
  const loaded = path.join(dir, 'loaded.txt');
  const again = await runCli(args, {
    home,
    env: { ...env, NODE_OPTIONS: `--import=${hook}`, DMS_TEST_LOADED: loaded },
  });
  expect(again.code, again.err).toBe(0);
  expect(summary(again.out)).toMatchObject({ skipped: files, uploaded: 0, fast_uploaded: 0, bytes_sent: 0 });
  const urls = fs.readFileSync(loaded, 'utf8').split('\n');
  // The hook saw the run: the CLI's own modules are there.
  expect(urls.some((u) => u.endsWith('/dist/main/cli/commands/sync.js'))).toBe(true);
  // Before: undici's 109 modules (60-180 ms of the start on a loaded 2-core machine).
  expect(urls.filter((u) => u.includes('/node_modules/undici/'))).toEqual([]);
  // Before: pino-roll for a log file sync does not write, and its date-fns (304 modules, 60-100 ms).
  expect(urls.filter((u) => /\/node_modules\/(pino-roll|date-fns)\//.test(u))).toEqual([]);
  // Before: chokidar and readdirp (6 modules) for a folder watcher a one-shot sync never starts.
  expect(urls.filter((u) => /\/node_modules\/(chokidar|readdirp)\//.test(u))).toEqual([]);
});
