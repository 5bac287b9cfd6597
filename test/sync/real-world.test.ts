/**
 * What a run against the world found (issue "Hold against real servers, real
 * cards and real crashes"), each as the crew would meet it: the real CLI
 * (built JS) against the real reference service over HTTP and its bucket.
 */
import { spawn } from 'node:child_process';
import crypto from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import Database from 'better-sqlite3';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ApiClient } from '../../main/core/api/client.js';
import type { StsResult } from '../../main/core/api/types.js';
import { startService, type RunningService } from '../../main/service/index.js';
import { DJI_FILES, FIXTURES, getObject, makeCard, tempDir } from '../support/harness.js';

const BIN = path.resolve('dist/main/cli/bin.js');
const MiB = 1024 * 1024;
let dir: string;
let a: RunningService;
let b: RunningService;

beforeAll(async () => {
  expect(fs.existsSync(BIN), 'run npm run build first').toBe(true);
  dir = tempDir('dms-world-');
  [a, b] = await Promise.all([
    startService({ dataDir: path.join(dir, 'server-a'), logger: false }),
    startService({ dataDir: path.join(dir, 'server-b'), logger: false }),
  ]);
});
afterAll(async () => {
  await Promise.all([a.close(), b.close()]);
  fs.rmSync(dir, { recursive: true, force: true });
});

/** The CLI's arguments and environment for a server (the token in DMS_TOKEN, never on the command line). */
function against(svc: RunningService | null): { args: string[]; env: NodeJS.ProcessEnv } {
  const env = { ...process.env, DMS_LOG_LEVEL: 'warn' };
  if (!svc) return { args: [], env };
  return {
    args: ['--server', svc.baseUrl, '--workspace', svc.workspaceId],
    env: { ...env, DMS_TOKEN: svc.token },
  };
}

interface Ran {
  status: number | null;
  stdout: string;
  stderr: string;
}

/** Runs the CLI without blocking this process: the services answer from it. */
function cli(argv: string[], env: NodeJS.ProcessEnv, input?: string): Promise<Ran> {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, [BIN, ...argv], { env, stdio: ['pipe', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d: Buffer) => (stdout += String(d)));
    child.stderr.on('data', (d: Buffer) => (stderr += String(d)));
    child.stdin.end(input ?? '');
    child.on('close', (status) => resolve({ status, stdout, stderr }));
  });
}

function sync(
  state: string,
  roots: string[],
  svc: RunningService | null,
  extra: string[] = [],
): Promise<Ran> {
  const { args, env } = against(svc);
  return cli(['sync', ...roots, '--json', '--state', state, ...args, ...extra], env);
}

const callbacks = async (svc: RunningService) =>
  (await svc.admin.mediaRecords(svc.workspaceId)).filter((r) => r.source === 'callback');
const sts = (svc: RunningService): Promise<StsResult> =>
  new ApiClient({ baseUrl: svc.baseUrl, workspaceId: svc.workspaceId, token: svc.token }).getSts();
const md5 = (buf: Buffer) => crypto.createHash('md5').update(buf).digest('hex');

/** Every file of the card reached `svc` exactly once (callbacks after the first `since`), as a byte-identical object. */
async function deliveredOnce(svc: RunningService, card: string, names: string[], since = 0): Promise<void> {
  const records = (await callbacks(svc)).slice(since);
  expect(records.map((r) => r.name).sort()).toEqual([...names].sort());
  const creds = await sts(svc);
  for (const r of records) {
    const local = fs.readFileSync(
      fs
        .readdirSync(card, { recursive: true, encoding: 'utf8' })
        .map((f) => path.join(card, f))
        .find((f) => path.basename(f) === r.name)!,
    );
    expect(md5(await getObject(creds, r.object_key))).toBe(md5(local));
  }
}

describe('switching targets', () => {
  it('local service, then a real server: every file goes to the new server, once, byte-identical', async () => {
    const card = makeCard(path.join(dir, 'card-switch'));
    const state = path.join(dir, 'state-switch');
    const local = await sync(state, [card], null);
    expect(local.status, local.stderr).toBe(0);
    const before = (await callbacks(a)).length;

    const real = await sync(state, [card], a);
    expect(real.status, real.stderr).toBe(0);
    await deliveredOnce(
      a,
      card,
      DJI_FILES.map((f) => path.basename(f)),
      before,
    );

    // Back and forth: nothing is sent twice to a server that has it.
    expect((await sync(state, [card], null)).status).toBe(0);
    const again = await sync(state, [card], a);
    expect(again.status, again.stderr).toBe(0);
    expect((await callbacks(a)).length - before).toBe(DJI_FILES.length);
    // status names the other target's history.
    const status = await cli(['status', '--state', state], process.env);
    expect(status.stdout).toMatch(/^For http:\/\/127\.0\.0\.1:\d+ \(workspace /);
    expect(status.stdout).toMatch(/Earlier, for the built-in local service .*: 4 done\./);
  });

  it('server A mid-upload, then server B: B gets every file, no key or upload id of A is reused', async () => {
    const card = makeCard(path.join(dir, 'card-ab'), 'DJI_202301011200_001_Bridge', ['M3T/M3T_IR.JPG']);
    const video = path.join(card, 'DCIM', 'DJI_202301011200_001_Bridge', 'DJI_20230101120000_0002_W.MP4');
    fs.writeFileSync(video, crypto.randomBytes(30 * MiB + 77));
    const state = path.join(dir, 'state-ab');
    fs.mkdirSync(state, { recursive: true });
    fs.writeFileSync(
      path.join(state, 'config.json'),
      JSON.stringify({ partSizeMiB: 5, concurrency: { files: 1, parts: 1 }, bandwidthLimitKiBps: 8 * 1024 }),
    );
    // A is left mid-multipart (SIGKILL), as when the crew switches servers halfway.
    const { args, env } = against(a);
    const first = spawn(process.execPath, [BIN, 'sync', card, '--state', state, ...args], {
      env,
      stdio: 'ignore',
    });
    const queueFile = path.join(state, 'queue.db');
    const deadline = Date.now() + 20_000;
    while (Date.now() < deadline && partsOf(queueFile) < 1) await sleep(20);
    first.kill('SIGKILL');
    await new Promise((r) => first.once('exit', r));
    const aUpload = uploadOf(queueFile);
    expect(aUpload?.upload_id).toBeTruthy();

    fs.writeFileSync(path.join(state, 'config.json'), JSON.stringify({ partSizeMiB: 5 }));
    const since = (await callbacks(b)).length;
    const run = await sync(state, [card], b);
    expect(run.status, run.stderr).toBe(0);
    await deliveredOnce(b, card, ['M3T_IR.JPG', 'DJI_20230101120000_0002_W.MP4'], since);
    const db = new Database(queueFile, { readonly: true });
    const bRows = db
      .prepare(
        "SELECT object_key FROM files f JOIN targets t ON t.id = f.target_id WHERE t.key LIKE ? AND state = 'done'",
      )
      .all(`%#${b.workspaceId}`) as Array<{ object_key: string }>;
    // A's row stays as A's history, with its upload id; B's objects live under B's prefix.
    const aRow = db.prepare('SELECT state, upload_id FROM files WHERE id = ?').get(aUpload!.id) as {
      state: string;
      upload_id: string;
    };
    db.close();
    expect(aRow).toEqual({ state: 'uploading', upload_id: aUpload!.upload_id });
    const prefix = (await sts(b)).object_key_prefix;
    expect(bRows).toHaveLength(2);
    for (const r of bRows) expect(r.object_key.startsWith(`${prefix}/`)).toBe(true);
  });
});

function partsOf(queueFile: string): number {
  if (!fs.existsSync(queueFile)) return 0;
  const db = new Database(queueFile, { readonly: true, fileMustExist: true });
  try {
    return (db.prepare('SELECT COUNT(*) AS n FROM parts').get() as { n: number }).n;
  } catch {
    return 0; // schema not created yet
  } finally {
    db.close();
  }
}

function uploadOf(queueFile: string): { id: number; upload_id: string } | undefined {
  const db = new Database(queueFile, { readonly: true });
  try {
    return db.prepare('SELECT id, upload_id FROM files WHERE upload_id IS NOT NULL').get() as
      { id: number; upload_id: string } | undefined;
  } finally {
    db.close();
  }
}

describe('a hostile card', () => {
  it('links out of the card send none of their bytes anywhere; the card still syncs its own media', async () => {
    const home = path.join(dir, 'home');
    fs.mkdirSync(path.join(home, '.ssh'), { recursive: true });
    const key = Buffer.from('-----BEGIN OPENSSH PRIVATE KEY-----\nnot a real key, but secret all the same\n');
    fs.writeFileSync(path.join(home, '.ssh', 'id_ed25519'), key);
    fs.mkdirSync(path.join(home, 'Pictures'), { recursive: true });
    fs.writeFileSync(path.join(home, 'Pictures', 'holiday.JPG'), crypto.randomBytes(4096)); // the laptop's own photo
    const card = makeCard(path.join(dir, 'card-links'), 'DJI_202306011000_004_Roof', ['M3T/M3T_IR.JPG']);
    fs.mkdirSync(path.join(card, 'DCIM', '100MEDIA'), { recursive: true });
    fs.symlinkSync(
      path.join(home, '.ssh', 'id_ed25519'),
      path.join(card, 'DCIM', '100MEDIA', 'DJI_0777.JPG'),
    );
    fs.symlinkSync(home, path.join(card, 'DCIM', 'HOME'));

    const before = (await a.admin.mediaRecords(a.workspaceId)).length;
    const run = await sync(path.join(dir, 'state-links'), [card], a);
    expect(run.status, run.stderr).toBe(0);
    const lines = run.stdout
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l) as { type: string; path?: string; reason?: string });
    const skipped = lines.filter((l) => l.type === 'skipped');
    expect(skipped.map((s) => path.basename(s.path!)).sort()).toEqual(['DJI_0777.JPG', 'HOME']);
    expect(skipped[0]!.reason).toMatch(/outside .*nothing of it is read or sent/);
    // The card's own photo arrived; nothing of the key or the home folder did.
    expect((await a.admin.mediaRecords(a.workspaceId)).slice(before).map((r) => r.name)).toEqual([
      'M3T_IR.JPG',
    ]);
    const fingerprints = await svcFingerprints(a);
    expect(fingerprints).not.toContain(md5(key));
    expect(fingerprints).not.toContain(md5(fs.readFileSync(path.join(home, 'Pictures', 'holiday.JPG'))));
    const bucketFiles = fs.readdirSync(a.bucket.dataDir, { recursive: true, encoding: 'utf8' });
    for (const f of bucketFiles) {
      const p = path.join(a.bucket.dataDir, f);
      if (fs.statSync(p).isFile()) expect(fs.readFileSync(p).includes(key)).toBe(false);
    }
  });
});

async function svcFingerprints(svc: RunningService): Promise<string[]> {
  return (await svc.admin.mediaRecords(svc.workspaceId)).map((r) => (r.fingerprint ?? '').toLowerCase());
}

describe('the restart nobody waits for', () => {
  it('SIGKILL, then the same sync at once (the killed one not even reaped): completes with one callback per file', async () => {
    const card = makeCard(path.join(dir, 'card-kill'), 'DJI_202301011200_001_Bridge', DJI_FILES);
    const video = path.join(card, 'DCIM', 'DJI_202301011200_001_Bridge', 'DJI_20230101120000_0009_W.MP4');
    fs.writeFileSync(video, crypto.randomBytes(24 * MiB + 5));
    const state = path.join(dir, 'state-kill');
    fs.mkdirSync(state, { recursive: true });
    fs.writeFileSync(
      path.join(state, 'config.json'),
      JSON.stringify({ partSizeMiB: 5, concurrency: { files: 1, parts: 1 }, bandwidthLimitKiBps: 8 * 1024 }),
    );
    const k = await startService({ dataDir: path.join(dir, 'server-kill'), logger: false });
    const { args, env } = against(k);
    // sh starts the CLI, prints its pid and becomes `sleep`, which never reaps it.
    const sh = spawn(
      'sh',
      [
        '-c',
        '"$0" "$@" & echo $!; exec sleep 60',
        process.execPath,
        BIN,
        'sync',
        card,
        '--state',
        state,
        ...args,
      ],
      { env, stdio: ['ignore', 'pipe', 'ignore'] },
    );
    try {
      const pid = await new Promise<number>((resolve) =>
        sh.stdout.once('data', (d: Buffer) => resolve(Number(String(d).trim()))),
      );
      const queueFile = path.join(state, 'queue.db');
      const deadline = Date.now() + 20_000;
      while (Date.now() < deadline && partsOf(queueFile) < 1) await sleep(20);
      expect(partsOf(queueFile)).toBeGreaterThan(0);
      process.kill(pid, 'SIGKILL');
      const run = await sync(state, [card], k);
      expect(run.status, run.stderr).toBe(0);
      await deliveredOnce(k, card, [...DJI_FILES.map((f) => path.basename(f)), path.basename(video)]);
    } finally {
      sh.kill('SIGKILL');
      await k.close();
    }
  });
});

describe('one row per content in flight', () => {
  it('the card and a copy of it in another folder: bytes and callback once per content', async () => {
    const card = makeCard(path.join(dir, 'card-twin'), 'DJI_202209021517_001_Waypoint1', DJI_FILES);
    const copy = makeCard(path.join(dir, 'copy-twin'), 'DJI_202209021517_001_Waypoint1', DJI_FILES);
    const svc = await startService({ dataDir: path.join(dir, 'server-twin'), logger: false });
    try {
      const run = await cli(
        [
          'sync',
          card,
          copy,
          '--json',
          '--state',
          path.join(dir, 'state-twin'),
          '--server',
          svc.baseUrl,
          '--workspace',
          svc.workspaceId,
        ],
        {
          ...process.env,
          DMS_TOKEN: svc.token,
        },
      );
      expect(run.status, run.stderr).toBe(0);
      const summary = JSON.parse(run.stdout.trim().split('\n').at(-1)!) as {
        uploaded: number;
        fast_uploaded: number;
        bytes_sent: number;
      };
      // A plain folder is known by its content (issue 29): the copy is the same card, its files the
      // same rows, recognised; before that, a copy in another folder went up by fast-upload.
      expect(summary).toMatchObject({ uploaded: DJI_FILES.length, failed: 0, pending: 0 });
      expect(summary.bytes_sent).toBe(
        DJI_FILES.reduce((n, f) => n + fs.statSync(path.join(FIXTURES, f)).size, 0),
      );
      expect(await callbacks(svc)).toHaveLength(DJI_FILES.length);
    } finally {
      await svc.close();
    }
  });
});

describe('the token on the command line', () => {
  it('--token warns that it is visible to other users; --token-stdin does not', async () => {
    const card = makeCard(path.join(dir, 'card-token'), 'DJI_202209021517_001_Waypoint1', ['M3T/M3T_IR.JPG']);
    const base = [
      'sync',
      card,
      '--state',
      path.join(dir, 'state-token'),
      '--server',
      a.baseUrl,
      '--workspace',
      a.workspaceId,
    ];
    const { DMS_TOKEN: _none, ...env } = process.env;
    const visible = await cli([...base, '--token', a.token], env);
    expect(visible.status, visible.stderr).toBe(0);
    expect(visible.stderr).toMatch(
      /--token is visible to other users in the process list\. Prefer DMS_TOKEN, --token-stdin/,
    );
    const piped = await cli([...base, '--token-stdin'], env, `${a.token}\n`);
    expect(piped.status, piped.stderr).toBe(0);
    expect(piped.stderr).not.toMatch(/visible/);
  });
});
