/**
 * Issue 33: a card re-inserted whose files are all done says "nothing to do"
 * without loading what only sending needs. The real CLI against the real
 * reference service; the modules a run loads are recorded by Node's own
 * module hooks (an --import given in NODE_OPTIONS, as a user could).
 */
import fs from 'node:fs';
import path from 'node:path';
import Database from 'better-sqlite3';
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

/** `sync <card> --json` against the test's service, with its own state folder. */
const syncArgs = (card: string, state: string): string[] => [
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

it('a re-inserted card of done files loads no HTTP client and sends nothing', async () => {
  const card = makeCard(path.join(dir, 'card'));
  const home = path.join(dir, 'home');
  const state = path.join(dir, 'state');
  fs.mkdirSync(home);
  const args = syncArgs(card, state);
  const env = { DMS_TOKEN: svc.token };
  const first = await runCli(args, { home, env });
  expect(first.code, first.err).toBe(0);
  const summary = (out: string) => JSON.parse(out.trim().split('\n').at(-1)!) as Record<string, unknown>;
  const files = summary(first.out).uploaded as number;
  expect(files).toBeGreaterThan(0);

  // The card's verdict, kept with the stamp of what made it (rows, settings, the code itself).
  const keptVerdict = (): string | undefined => {
    const db = new Database(path.join(state, 'queue.db'), { readonly: true });
    try {
      return db
        .prepare<[], { value: string }>(
          "SELECT value FROM meta WHERE key LIKE 'card-verdict % %' AND key NOT LIKE '% flights'",
        )
        .get()?.value;
    } finally {
      db.close();
    }
  };
  const kept = keptVerdict();
  expect(kept).toBeDefined();

  const hook = path.join(dir, 'hook.mjs');
  fs.writeFileSync(hook, HOOK);
  const loaded = path.join(dir, 'loaded.txt');
  const again = await runCli(args, {
    home,
    env: { ...env, NODE_OPTIONS: `--import=${hook}`, DMS_TEST_LOADED: loaded },
  });
  expect(again.code, again.err).toBe(0);
  expect(summary(again.out)).toMatchObject({ skipped: files, uploaded: 0, fast_uploaded: 0, bytes_sent: 0 });
  // Given again by this second process, not made again (a new one would be kept anew).
  expect(keptVerdict()).toBe(kept);
  const urls = fs.readFileSync(loaded, 'utf8').split('\n');
  // The hook saw the run: the CLI's own modules are there.
  expect(urls.some((u) => u.endsWith('/dist/main/cli/commands/sync.js'))).toBe(true);
  // Before: undici's 109 modules (60-180 ms of the start on a loaded 2-core machine).
  expect(urls.filter((u) => u.includes('/node_modules/undici/'))).toEqual([]);
  // Before: pino-roll for a log file sync does not write, and its date-fns (304 modules, 60-100 ms).
  expect(urls.filter((u) => /\/node_modules\/(pino-roll|date-fns)\//.test(u))).toEqual([]);
  // Before: chokidar and readdirp (6 modules) for a folder watcher a one-shot sync never starts.
  expect(urls.filter((u) => /\/node_modules\/(chokidar|readdirp)\//.test(u))).toEqual([]);
  // Before: zod (its modules 55-90 ms of CPU, the settings' schemas 20-30 ms more) for a run with
  // no settings file, a token given in the environment and no file info read: nothing to check.
  expect(urls.filter((u) => u.includes('/node_modules/zod/'))).toEqual([]);
  // Before: the metadata reader with exifr (26 modules, 20-30 ms of CPU) and, for a flight's
  // clock, the photo's frame checks with jpeg-js: no file is read.
  expect(
    urls.filter((u) => /\/node_modules\/(exifr|jpeg-js)\/|\/media\/(metadata|frame)\.js$/.test(u)),
  ).toEqual([]);
  // Before: the link's D-Bus client (60 ms) and its connection to the system bus (50-90 ms),
  // for a gate no part is asked of: nothing is sent.
  expect(urls.filter((u) => /\/node_modules\/@jellybrick\/dbus-next\/|\/link\/nm-dbus\.js$/.test(u))).toEqual(
    [],
  );
});

it('a re-inserted card: a file grown, a file touched, one added and one removed are each seen', async () => {
  const card = makeCard(path.join(dir, 'card-changed'));
  const home = path.join(dir, 'home-changed');
  fs.mkdirSync(home);
  const args = syncArgs(card, path.join(dir, 'state-changed'));
  const env = { DMS_TOKEN: svc.token };
  const flight = path.join(card, 'DCIM', fs.readdirSync(path.join(card, 'DCIM'))[0]!);
  const files = fs
    .readdirSync(flight)
    .sort()
    .map((f) => path.join(flight, f));
  const dayAgo = new Date(Date.now() - 86_400_000);
  for (const f of files) fs.utimesSync(f, dayAgo, dayAgo); // a card shot yesterday
  const first = await runCli(args, { home, env });
  expect(first.code, first.err).toBe(0);
  expect(files.length).toBeGreaterThanOrEqual(4);
  const [grown, touched, removed, model] = files as [string, string, string, string];
  fs.appendFileSync(grown, 'one byte more');
  const hourAgo = new Date(Date.now() - 3_600_000);
  fs.utimesSync(touched, hourAgo, hourAgo); // same size, same content, another time
  fs.rmSync(removed);
  const added = path.join(flight, `NEW_${path.basename(model)}`);
  fs.writeFileSync(added, Buffer.concat([fs.readFileSync(model), Buffer.from('another file')]));

  const again = await runCli(args, { home, env });
  const lines = again.out
    .trim()
    .split('\n')
    .map((l) => JSON.parse(l) as Record<string, unknown>);
  const seen = lines.filter((l) => l.type === 'file');
  // Each change is looked at again (read and sent, or found on the server); the removed file is not.
  // (M3T_IR.JPG, the model of the added file, is looked at again too, by the old build as well.)
  const paths = seen.map((l) => l.path);
  expect(paths).toEqual(expect.arrayContaining([added, grown, touched]));
  expect(paths).not.toContain(removed);
  expect(seen.every((l) => l.outcome !== 'failed')).toBe(true);
  // Every file on the card now is either looked at again or recognised as done.
  expect(lines.at(-1)).toMatchObject({ skipped: files.length - seen.length, failed: 0, pending: 0 });
});
