/**
 * Issue 20, "free the card at the speed of the card", with the real CLI
 * (`sync --copy-to`) against the real reference service and its bucket, real
 * files on disk: a card copied to two local destinations is called locally
 * safe as soon as both copies are written and read back, the upload goes on
 * from the copies once the card is gone, and each copy carries an ASC MHL
 * history that the official schema accepts. Not locally safe when a
 * destination cannot take the card, is unplugged mid-way, or a copy changed.
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import crypto from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startService, type RunningService } from '../../main/service/index.js';
import { HAVE_XSD, validateMhl } from '../support/ascmhl-xsd.js';
import { getObject, tempDir, until } from '../support/harness.js';
import { buildRtkCard } from '../support/rtk-card.js';
// The sizes the card's verdict and the window say (shared/sizes.ts): the CLI's line must agree.
import { formatBytes } from '../../main/shared/sizes.js';

const BIN = path.resolve('dist/main/cli/bin.js');
let dir: string;
let svc: RunningService;

beforeAll(async () => {
  expect(fs.existsSync(BIN), 'run npm run build first').toBe(true);
  dir = tempDir('dms-local-');
  svc = await startService({ dataDir: path.join(dir, 'svc'), logger: false });
});
afterAll(async () => {
  await svc.close();
  fs.rmSync(dir, { recursive: true, force: true });
});

const md5 = (b: Buffer) => crypto.createHash('md5').update(b).digest('hex');

/** Every file under a folder, relative, sorted (the copies' ascmhl/ left out). */
function tree(root: string): string[] {
  const out: string[] = [];
  const walk = (d: string, rel: string): void => {
    for (const e of fs.readdirSync(d, { withFileTypes: true })) {
      const r = rel ? `${rel}/${e.name}` : e.name;
      if (e.isDirectory()) {
        if (r !== 'ascmhl') walk(path.join(d, e.name), r);
      } else out.push(r);
    }
  };
  walk(root, '');
  return out.sort();
}

/** A survey card: real photos in an RTK flight with its MRK and PPK files, a video with its SRT and LRF, and MISC/. */
function fullCard(name: string): string {
  const c = buildRtkCard({ root: path.join(dir, name), mission: 'Quarry', exposures: 6 });
  const flight = path.join(c.root, c.folder);
  const video = path.join(flight, 'DJI_20240506101600_0007_W');
  fs.writeFileSync(`${video}.MP4`, crypto.randomBytes(6 * 1024 * 1024 + 5));
  fs.copyFileSync(path.resolve('test/fixtures/dji/SRT/p4_rtk.SRT'), `${video}.SRT`);
  fs.writeFileSync(`${video}.LRF`, crypto.randomBytes(300 * 1024));
  fs.mkdirSync(path.join(c.root, 'MISC', 'LOG'), { recursive: true });
  fs.writeFileSync(path.join(c.root, 'MISC', 'LOG', 'FLY001.DAT'), crypto.randomBytes(20 * 1024));
  return c.root;
}

interface Running {
  lines: Array<Record<string, unknown>>;
  done: Promise<{ code: number | null; stdout: string; stderr: string }>;
}

/** `sync <card> --json --copy-to …` in the background, against the service; its JSON lines as they come. */
function sync(
  name: string,
  card: string,
  dests: string[],
  config: Record<string, unknown> = {},
  command: 'sync' | 'watch' = 'sync',
): Running & { child: ChildProcess } {
  const state = path.join(dir, `state-${name}`);
  fs.mkdirSync(state, { recursive: true });
  fs.writeFileSync(path.join(state, 'config.json'), JSON.stringify(config));
  const child = spawn(
    process.execPath,
    [
      BIN,
      command,
      card,
      '--json',
      '--state',
      state,
      '--server',
      svc.baseUrl,
      '--workspace',
      svc.workspaceId,
      ...dests.flatMap((d) => ['--copy-to', d]),
    ],
    { env: { ...process.env, DMS_TOKEN: svc.token }, stdio: ['ignore', 'pipe', 'pipe'] },
  );
  const lines: Array<Record<string, unknown>> = [];
  let stdout = '';
  let stderr = '';
  let partial = '';
  child.stdout.on('data', (d: Buffer) => {
    stdout += String(d);
    partial += String(d);
    const parts = partial.split('\n');
    partial = parts.pop() ?? '';
    for (const l of parts) if (l.startsWith('{')) lines.push(JSON.parse(l) as Record<string, unknown>);
  });
  child.stderr.on('data', (d: Buffer) => (stderr += String(d)));
  const done = new Promise<{ code: number | null; stdout: string; stderr: string }>((resolve) =>
    child.on('close', (code) => resolve({ code, stdout, stderr })),
  );
  return { lines, done, child };
}

/** `watch <card> --json --copy-to …`: the agent as the app runs it (a file is read once it has rested). */
function watch(name: string, card: string, dests: string[]): Running & { child: ChildProcess } {
  return sync(name, card, dests, {}, 'watch');
}

const ofType = (r: Running, type: string) => r.lines.filter((l) => l['type'] === type);

describe('a card offloaded to two local destinations', () => {
  it('is locally safe once both copies are read back, byte-identical with their MHL; the upload then finishes with the card gone', async () => {
    const card = fullCard('card-full');
    const originals = new Map(tree(card).map((rel) => [rel, fs.readFileSync(path.join(card, rel))]));
    const [ssd, t7] = [path.join(dir, 'SSD'), path.join(dir, 'T7_BACKUP')];
    fs.mkdirSync(ssd);
    fs.mkdirSync(t7);
    // A slow uplink (1 MiB/s, 4G): the copies come to rest long before the upload does.
    const run = sync('full', card, [ssd, t7], { bandwidthLimitKiBps: 1024 });
    await until('the local verdict', () => ofType(run, 'local-verdict').length > 0, 60_000);
    const local = ofType(run, 'local-verdict')[0] as { safe: boolean; message: string; reasons: string[] };
    expect(local.safe, local.reasons.join(' ')).toBe(true);
    expect(local.message).toMatch(
      /^card-full: \d+ files copied and verified on SSD and T7_BACKUP — safe to format$/,
    );
    // Locally safe came first: the upload is still on its way.
    expect(ofType(run, 'verdict')).toEqual([]);
    // Every file of the card (MISC, SRT, LRF, RTK files) on both, byte-identical.
    for (const d of [ssd, t7]) {
      const [folder] = fs.readdirSync(d);
      const copy = path.join(d, folder!);
      expect(tree(copy)).toEqual([...originals.keys()]);
      for (const [rel, bytes] of originals)
        expect(md5(fs.readFileSync(path.join(copy, rel))), rel).toBe(md5(bytes));
      // Its own ASC MHL history: every file listed, the schema's own check passes.
      const mhl = fs.readdirSync(path.join(copy, 'ascmhl')).filter((f) => f.endsWith('.mhl'));
      expect(mhl).toHaveLength(1);
      const xml = fs.readFileSync(path.join(copy, 'ascmhl', mhl[0]!), 'utf8');
      for (const rel of originals.keys()) expect(xml).toContain(`>${rel}</path>`);
      // Each file's MD5 and, beside it, the XXH3-64 its copy's read-back matched (issue 33).
      expect(xml.match(/<\/md5>\s*<xxh3 action="original"[^>]*>[0-9a-f]{16}<\/xxh3>/g)).toHaveLength(
        originals.size,
      );
      if (HAVE_XSD) expect((await validateMhl(xml, 'ASCMHL.xsd')).valid).toBe(true);
    }
    // The crew pulls the card: the upload goes on from the copies.
    fs.renameSync(card, `${card}-pulled`);
    const r = await run.done;
    expect(r.code, r.stdout.slice(-3000) + r.stderr).toBe(0);
    const verdict = ofType(run, 'verdict')[0] as {
      safe: boolean;
      workspace: { safe: boolean };
      reasons: string[];
    };
    expect(verdict.workspace.safe, verdict.reasons.join(' ')).toBe(true);
    // Everything in the bucket, byte-identical to the card.
    const records = await svc.admin.mediaRecords(svc.workspaceId);
    const files = ofType(run, 'file') as Array<{ path: string; outcome: string; error?: { kind: string } }>;
    const done = files.filter((f) => ['uploaded', 'stored', 'fast-uploaded'].includes(f.outcome));
    expect(new Set(done.map((f) => f.path)).size).toBe(originals.size);
    // The pulled card never held a file up: none waited for it, none was missing.
    const byCard = files.filter(
      (f) => f.outcome === 'waiting-for-source' || f.error?.kind === 'source-missing',
    );
    expect(byCard, JSON.stringify(byCard)).toEqual([]);
    // The video described from its SRT (the P4 RTK sample's first fix, longitude first), sent after the card was pulled.
    const video = records.find((m) => m.source === 'callback' && m.name.endsWith('.MP4'));
    expect(video?.metadata?.['shoot_position']).toEqual({ lat: -34.237922, lng: -58.851745 });
    for (const rec of records.filter((m) => m.source === 'callback')) {
      const bytes = [...originals.entries()].find(([rel]) => rel.endsWith(`/${rec.name}`))?.[1];
      expect(bytes, rec.name).toBeDefined();
      expect(md5(await getObject(await stsOf(), rec.object_key)), rec.name).toBe(md5(bytes!));
    }
    // `status` afterwards gives both verdicts of the card, in text and in JSON.
    const state = path.join(dir, 'state-full');
    const status = spawnSync(process.execPath, [BIN, 'status', '--state', state], { encoding: 'utf8' });
    expect(status.status, status.stderr).toBe(0);
    expect(status.stdout).toMatch(/^card-full: \d+ files verified in workspace \S+ — safe to format$/m);
    expect(status.stdout).toMatch(
      /^ {2}Local copies: \d+ files copied and verified on SSD and T7_BACKUP — safe to format$/m,
    );
    expect(status.stdout).toMatch(
      /^ {2}In the workspace: \d+ files verified in workspace \S+ — safe to format$/m,
    );
    const json = spawnSync(process.execPath, [BIN, 'status', '--json', '--state', state], {
      encoding: 'utf8',
    });
    const card0 = (JSON.parse(json.stdout) as { cards: Array<{ local: { safe: boolean } | null }> }).cards[0];
    expect(card0?.local?.safe).toBe(true);
  }, 180_000);

  it('the server unreachable: locally safe at once, and the line says what is in the workspace (nothing yet)', () => {
    const card = path.join(dir, 'card-offline');
    fs.mkdirSync(path.join(card, 'DCIM', 'DJI_202405061015_001_Quarry'), { recursive: true });
    fs.copyFileSync(
      path.resolve('test/fixtures/dji/M30T/M30T_IR.JPG'),
      path.join(card, 'DCIM', 'DJI_202405061015_001_Quarry', 'M30T_IR.JPG'),
    );
    const ssd = path.join(dir, 'SSD_OFFLINE');
    fs.mkdirSync(ssd);
    const state = path.join(dir, 'state-offline');
    fs.mkdirSync(state);
    fs.writeFileSync(path.join(state, 'config.json'), '{}');
    const r = spawnSync(
      process.execPath,
      [
        BIN,
        'sync',
        card,
        '--state',
        state,
        '--server',
        'http://127.0.0.1:1',
        '--workspace',
        'w1',
        '--copy-to',
        ssd,
      ],
      { encoding: 'utf8', env: { ...process.env, DMS_TOKEN: 'x' }, timeout: 90_000 },
    );
    expect(r.stdout).toMatch(
      /^card-offline: 1 file copied and verified on SSD_OFFLINE — safe to format; the upload continues from the copies \(0 bytes of 780 KB in the workspace\)$/m,
    );
  }, 120_000);

  it('not locally safe when a destination cannot take the card: said before anything is written there; the other copy is whole', async () => {
    if (process.getuid?.() !== 0 || spawnSync('mount', ['--version']).status !== 0) return;
    const card = fullCard('card-roomless');
    const ssd = path.join(dir, 'SSD2');
    const small = path.join(dir, 'T7_SMALL');
    fs.mkdirSync(ssd);
    fs.mkdirSync(small);
    expect(spawnSync('mount', ['-t', 'tmpfs', '-o', 'size=2m', 'tmpfs', small]).status).toBe(0);
    try {
      const run = sync('roomless', card, [ssd, small]);
      const r = await run.done;
      const stopped = ofType(run, 'destination-stopped').map((l) => String(l['message']));
      expect(stopped).toEqual([
        expect.stringMatching(/^T7_SMALL: \d+ MB free, the card needs \d+ MB\. Nothing was written there/),
      ]);
      expect(fs.readdirSync(small)).toEqual([]);
      const local = ofType(run, 'local-verdict')[0] as { safe: boolean; reasons: string[] };
      expect(local.safe).toBe(false);
      expect(local.reasons.join(' ')).toMatch(/T7_SMALL: \d+ MB free/);
      // The upload is not held by it: the card still reaches the workspace; the copy asked for
      // was not made, and the exit code says so (issue 29: it was 0).
      expect(r.code, r.stdout.slice(-2000)).toBe(4);
      expect(tree(path.join(ssd, fs.readdirSync(ssd)[0]!))).toEqual(tree(card));
    } finally {
      spawnSync('umount', [small]);
    }
  }, 120_000);

  it('not locally safe when a destination is unplugged mid-way; the other goes on; nothing is written on the laptop instead', async () => {
    const card = fullCard('card-unplugged');
    // Many small files, so the copy is still going when the drive goes away.
    for (let i = 0; i < 60; i++)
      fs.writeFileSync(
        path.join(card, 'MISC', 'LOG', `LOG${String(i).padStart(3, '0')}.TXT`),
        crypto.randomBytes(256 * 1024),
      );
    const ssd = path.join(dir, 'SSD3');
    // The drive's mount point (as udisks makes it) and the destination folder on it.
    const drive = path.join(dir, 'USBDRIVE');
    const usb = path.join(drive, 'USB');
    fs.mkdirSync(ssd);
    fs.mkdirSync(usb, { recursive: true });
    const run = sync('unplugged', card, [ssd, usb], { bandwidthLimitKiBps: 500 });
    await until('the first copies', () => fs.readdirSync(usb).length > 0, 30_000);
    // The mount point goes away with the folder on it, as when a drive is pulled (udisks removes it).
    fs.renameSync(drive, `${drive}-pulled`);
    const r = await run.done;
    expect(fs.existsSync(drive), 'the mount point must not be made again on the laptop').toBe(false);
    const stopped = ofType(run, 'destination-stopped').map((l) => String(l['message']));
    // Said as what it is (issue 29: once "is not there any more (unplugged?)" for any folder gone).
    expect(stopped).toEqual([expect.stringMatching(/^USB: its drive is not plugged in/)]);
    expect(JSON.stringify(run.lines)).not.toMatch(/did not read back/);
    const local = ofType(run, 'local-verdict')[0] as { safe: boolean; reasons: string[] };
    expect(local.safe).toBe(false);
    expect(tree(path.join(ssd, fs.readdirSync(ssd)[0]!))).toEqual(tree(card));
    // A copy asked for was not made: the exit code says so (issue 29: it was 0).
    expect(r.code).toBe(4);
  }, 120_000);

  it('not locally safe while a file on the card is still being written (watch, as the app runs): named once, not copied', async () => {
    const card = fullCard('card-growing');
    // The camera (or a copy onto the card) is still writing this file: it changed just now. Its time
    // is set ahead so that it stays "just changed" however slow this machine is.
    const growing = tree(card).find((p) => p.endsWith('.SRT'))!;
    const later = new Date(Date.now() + 3600_000);
    fs.utimesSync(path.join(card, growing), later, later);
    const ssd = path.join(dir, 'SSD5');
    fs.mkdirSync(ssd);
    const run = watch('growing', card, [ssd]);
    try {
      await until('the local verdict', () => ofType(run, 'local-verdict').length > 0, 60_000);
      const local = ofType(run, 'local-verdict').at(-1) as { safe: boolean; reasons: string[] };
      expect(local.safe).toBe(false);
      expect(local.reasons).toContain(
        `${growing} is still being written: it is read once it has not changed for a moment.`,
      );
      // The rest of the card is copied; the file being written is not there, not even half.
      const copy = path.join(ssd, fs.readdirSync(ssd)[0]!);
      await until('the rest copied', () => tree(copy).length === tree(card).length - 1, 30_000);
      expect(tree(copy)).not.toContain(growing);
      // It is looked at again every few seconds, and said once.
      await new Promise((r) => setTimeout(r, 5000));
      // (The card was just made: at the first look every file was fresh, each said once too.)
      const said = ofType(run, 'skipped').map((l) => String(l['path']));
      expect(said).toContain(path.join(card, growing));
      expect(said.length).toBe(new Set(said).size);
    } finally {
      run.child.kill('SIGINT');
      await run.done;
    }
  }, 120_000);

  it('a copy changed after it was verified: the next look says so, not locally safe; synced again, copied anew (and to a drive added since)', async () => {
    const card = fullCard('card-changed');
    const ssd = path.join(dir, 'SSD4');
    fs.mkdirSync(ssd);
    const run = sync('changed', card, [ssd]);
    expect((await run.done).code).toBe(0);
    const copy = path.join(ssd, fs.readdirSync(ssd)[0]!);
    const victim = tree(copy).find((p) => p.endsWith('.LRF'))!;
    fs.appendFileSync(path.join(copy, victim), 'x');
    const state = path.join(dir, 'state-changed');
    const report = spawnSync(process.execPath, [BIN, 'report', card, '--state', state, '--json'], {
      encoding: 'utf8',
    });
    const json = JSON.parse(report.stdout) as {
      verdict: { safe: boolean };
      local?: { safe: boolean; reasons: string[] };
    };
    expect(json.local?.safe).toBe(false);
    expect(json.local?.reasons.join(' ')).toMatch(
      /SSD4: 1 copy changed or removed since it was verified \(DJI_20240506101600_0007_W\.LRF\)/,
    );
    // What the reason says to do works: the card synced again copies it anew (its upload is long
    // done), and a drive added since gets the whole card; both verified.
    const t7 = path.join(dir, 'T7_LATER');
    fs.mkdirSync(t7);
    const again = sync('changed', card, [ssd, t7]);
    const r2 = await again.done;
    expect(r2.code, r2.stdout.slice(-2000) + r2.stderr).toBe(0);
    const local2 = ofType(again, 'local-verdict').at(-1) as {
      safe: boolean;
      reasons: string[];
      message: string;
    };
    expect(local2.safe, local2.reasons.join(' ')).toBe(true);
    expect(local2.message).toMatch(/copied and verified on SSD4 and T7_LATER — safe to format$/);
    for (const d of [ssd, t7]) {
      const c = path.join(d, fs.readdirSync(d)[0]!);
      expect(tree(c)).toEqual(tree(card));
      for (const rel of tree(card))
        expect(md5(fs.readFileSync(path.join(c, rel))), rel).toBe(md5(fs.readFileSync(path.join(card, rel))));
    }
    // Nothing was uploaded again.
    expect(ofType(again, 'file').filter((f) => f['outcome'] === 'uploaded')).toEqual([]);
  }, 120_000);

  it('synced again with a drive added: the closing line says what this run copied, where; a run that copies nothing says nothing of copies', async () => {
    // As a crew member runs it: a fresh HOME, no terminal, nothing on stdin; every line read.
    const card = fullCard('card-summary');
    const files = tree(card).length;
    const bytes = tree(card).reduce((n, rel) => n + fs.statSync(path.join(card, rel)).size, 0);
    const home = path.join(dir, 'home-summary');
    const [ssd, t7] = [path.join(dir, 'SSD_SUM'), path.join(dir, 'T7_ADDED')];
    fs.mkdirSync(home);
    fs.mkdirSync(ssd);
    fs.mkdirSync(t7);
    const run = async (dests: string[]) => {
      const child = spawn(
        process.execPath,
        [
          BIN,
          'sync',
          card,
          '--server',
          svc.baseUrl,
          '--workspace',
          svc.workspaceId,
          ...dests.flatMap((d) => ['--copy-to', d]),
        ],
        {
          env: { PATH: process.env['PATH'] ?? '', HOME: home, DMS_TOKEN: svc.token },
          stdio: ['ignore', 'pipe', 'pipe'],
        },
      );
      let [stdout, stderr] = ['', ''];
      child.stdout.on('data', (d: Buffer) => (stdout += String(d)));
      child.stderr.on('data', (d: Buffer) => (stderr += String(d)));
      const code = await new Promise<number | null>((resolve) => child.on('close', resolve));
      expect(code, stdout + stderr).toBe(0);
      return stdout.split('\n');
    };
    // First run: the card is copied to the SSD, then uploaded.
    const first = await run([ssd]);
    expect(first.filter((l) => l.startsWith('Copied'))).toEqual([
      `Copied and verified in this run: ${files} files (${formatBytes(bytes)}) to SSD_SUM.`,
    ]);
    // A drive added: synced again, the card is copied to it (and only to it); nothing is uploaded.
    const again = await run([ssd, t7]);
    expect(again.filter((l) => l.startsWith('Copied'))).toEqual([
      `Copied and verified in this run: ${files} files (${formatBytes(bytes)}) to T7_ADDED.`,
    ]);
    expect(again).toContainEqual(expect.stringMatching(/: 0 uploaded, 0 already on the server, \d+ skipped/));
    // The card's local verdict once, when its copies are at rest: never "not safe yet" for copies half made.
    expect(again.filter((l) => l.startsWith('card-summary: ') && l.includes('copied and verified'))).toEqual([
      `card-summary: ${files} files copied and verified on SSD_SUM and T7_ADDED — safe to format`,
    ]);
    expect(again.join('\n')).not.toMatch(/not safe to format from the copies yet/);
    // Nor a generation of the drive's ASC MHL history written for a copy half made: one, whole.
    const t7Card = path.join(t7, fs.readdirSync(t7)[0]!);
    const generations = fs.readdirSync(path.join(t7Card, 'ascmhl')).filter((f) => f.endsWith('.mhl'));
    expect(generations).toHaveLength(1);
    const xml = fs.readFileSync(path.join(t7Card, 'ascmhl', generations[0]!), 'utf8');
    for (const rel of tree(card)) expect(xml).toContain(`>${rel}</path>`);
    // Both hold a verified copy already: this run copies nothing, and its summary says nothing of copies.
    const third = await run([ssd, t7]);
    expect(third.filter((l) => /copied/i.test(l) && !/copied and verified on/.test(l))).toEqual([]);
    expect(third).toContainEqual(expect.stringMatching(/^Done with .*: 0 uploaded, /));
  }, 240_000);
});

async function stsOf() {
  const { ApiClient } = await import('../../main/core/api/client.js');
  return new ApiClient({ baseUrl: svc.baseUrl, workspaceId: svc.workspaceId, token: svc.token }).getSts();
}
