/**
 * Issue 20, "no file read twice from the card", with the real CLI under
 * strace: a card offloaded to two local destinations and uploaded from the
 * copies (`sync --copy-to A --copy-to B` to its end, against the real
 * reference service), every read call of the agent's process and threads on
 * a file under the card added up by path (test/bench/lib/read-once.mjs, the
 * benchmark's proof). Each card file is read exactly once: its size in bytes,
 * none mapped. A page-cache hit counts too (the device counter cannot see it).
 * The card holds videos with and without an SRT beside them: a video is
 * described from its folder's photos, which must then come from their copies.
 * A peer test: strace is a Debian package (.ci/run installs it for this tier).
 */
import { execFile, spawnSync } from 'node:child_process';
import crypto from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { startService, type RunningService } from '../../main/service/index.js';
import { readsUnder, straceArgs } from '../bench/lib/read-once.mjs';
import { tempDir } from '../support/harness.js';
import { buildRtkCard } from '../support/rtk-card.js';

const BIN = path.resolve('dist/main/cli/bin.js');
let dir: string;
let svc: RunningService;

beforeAll(async () => {
  expect(fs.existsSync(BIN), 'run npm run build first').toBe(true);
  dir = tempDir('dms-read-once-');
  svc = await startService({ dataDir: path.join(dir, 'svc'), logger: false });
});
afterAll(async () => {
  await svc.close();
  fs.rmSync(dir, { recursive: true, force: true });
});

/** Every file under a folder, absolute. */
function files(root: string): string[] {
  return fs
    .readdirSync(root, { recursive: true, withFileTypes: true })
    .flatMap((e) => (e.isFile() ? [path.join(e.parentPath, e.name)] : []));
}

it('every byte of the card is read once: copies, their read-back, metadata and the upload from the copies', async () => {
  expect(spawnSync('strace', ['-V']).status, 'strace is needed (apt-get install strace)').toBe(0);
  const card = buildRtkCard({ root: path.join(dir, 'card'), mission: 'Quarry', exposures: 5 });
  const flight = path.join(card.root, card.folder);
  // Videos come last, once the photos they are described from are copied. One has its SRT, one has none.
  for (const [n, srt] of [
    ['DJI_20240506101600_0006_W', true],
    ['DJI_20240506101700_0007_W', false],
  ] as const) {
    fs.writeFileSync(path.join(flight, `${n}.MP4`), crypto.randomBytes(3 * 1024 * 1024 + 5));
    if (srt) fs.copyFileSync(path.resolve('test/fixtures/dji/SRT/p4_rtk.SRT'), path.join(flight, `${n}.SRT`));
  }
  const [ssd, t7, state] = ['SSD', 'T7_BACKUP', 'state'].map((d) => path.join(dir, d));
  for (const d of [ssd!, t7!, state!]) fs.mkdirSync(d);
  const log = path.join(dir, 'strace.log');
  // Not spawnSync: the service runs in this process and must answer meanwhile.
  const r = await promisify(execFile)(
    'strace',
    [
      ...straceArgs(log),
      process.execPath,
      BIN,
      'sync',
      card.root,
      '--json',
      '--state',
      state!,
      '--server',
      svc.baseUrl,
      '--workspace',
      svc.workspaceId,
      '--copy-to',
      ssd!,
      '--copy-to',
      t7!,
    ],
    { env: { ...process.env, DMS_TOKEN: svc.token }, timeout: 150_000, maxBuffer: 64 << 20 },
  );
  const lines = r.stdout
    .split('\n')
    .filter((l) => l.startsWith('{'))
    .map((l) => JSON.parse(l) as Record<string, unknown>);
  const verdict = lines.find((l) => l['type'] === 'verdict') as { workspace: { safe: boolean } } | undefined;
  const local = lines.find((l) => l['type'] === 'local-verdict') as { safe: boolean } | undefined;
  expect(local?.safe).toBe(true);
  expect(verdict?.workspace.safe).toBe(true);

  const { files: read, mmaps } = readsUnder(log, card.root);
  expect(mmaps).toEqual([]);
  const onCard = files(card.root);
  expect(onCard.length).toBeGreaterThan(8);
  // Bytes read per card file, against its size: each exactly once.
  const got = Object.fromEntries(onCard.map((f) => [path.relative(card.root, f), read.get(f)?.bytes ?? 0]));
  const want = Object.fromEntries(onCard.map((f) => [path.relative(card.root, f), fs.statSync(f).size]));
  expect(got).toEqual(want);
}, 180_000);
