/**
 * Verified offload end to end: a synthetic RTK survey card (real DJI photos
 * grown into a flight, an MRK with a missing exposure and float fixes, the
 * PPK files) synced by the real CLI to the real reference service; then the
 * "safe to format" verdict under each thing that must stop it.
 */
import { spawn } from 'node:child_process';
import crypto from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import Database from 'better-sqlite3';
import { ApiClient } from '../../main/core/api/client.js';
import { Queue } from '../../main/core/queue/queue.js';
import { startService, type RunningService } from '../../main/service/index.js';
import { getObject, tempDir } from '../support/harness.js';
import { buildRtkCard, type RtkCard } from '../support/rtk-card.js';

const BIN = path.resolve('dist/main/cli/bin.js');
let dir: string;
let svc: RunningService;

beforeAll(async () => {
  expect(fs.existsSync(BIN), 'run npm run build first').toBe(true);
  dir = tempDir('dms-offload-');
  svc = await startService({ dataDir: path.join(dir, 'svc'), logger: false });
});
afterAll(async () => {
  await svc.close();
  fs.rmSync(dir, { recursive: true, force: true });
});

interface Ran {
  status: number | null;
  stdout: string;
  stderr: string;
}

function cli(argv: string[], server: RunningService | null = svc): Promise<Ran> {
  const env = { ...process.env, ...(server ? { DMS_TOKEN: server.token } : {}) };
  const args = server ? ['--server', server.baseUrl, '--workspace', server.workspaceId] : [];
  return new Promise((resolve) => {
    const child = spawn(process.execPath, [BIN, ...argv, ...(argv[0] === 'sync' ? args : [])], {
      env,
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d: Buffer) => (stdout += String(d)));
    child.stderr.on('data', (d: Buffer) => (stderr += String(d)));
    child.on('close', (status) => resolve({ status, stdout, stderr }));
  });
}

const lines = (out: string) =>
  out
    .trim()
    .split('\n')
    .map((l) => JSON.parse(l) as Record<string, unknown>);
const verdictOf = (r: Ran) =>
  lines(r.stdout).find((l) => l['type'] === 'verdict') as {
    safe: boolean;
    message: string;
    reasons: string[];
    flights: Array<Record<string, unknown>>;
  };
const md5 = (b: Buffer) => crypto.createHash('md5').update(b).digest('hex');

function card(name: string, o: Partial<Parameters<typeof buildRtkCard>[0]> = {}): RtkCard {
  return buildRtkCard({ root: path.join(dir, name), mission: 'Quarry', exposures: 12, ...o });
}

describe('an RTK survey card', () => {
  it('syncs every RTK file into the bucket beside its photos; the flight is reported with the missing exposure and the fix counts', async () => {
    const c = card('card-rtk', { missing: [7], float: [3, 4] });
    const state = path.join(dir, 'state-rtk');
    const run = await cli(['sync', c.root, '--json', '--state', state]);
    expect(run.status, run.stderr).toBe(0);

    // Photos by callback; RTK files stored, no callback (they carry no media metadata).
    const records = (await svc.admin.mediaRecords(svc.workspaceId)).filter((r) => r.source === 'callback');
    expect(records.map((r) => r.name).sort()).toEqual(c.photos.map((p) => path.basename(p.relPath)).sort());
    const q = new Queue(path.join(state, 'queue.db'));
    const rtk = q.list({ limit: 1000 }).filter((r) => r.kind === 'rtk');
    q.close();
    expect(rtk.map((r) => r.relPath).sort()).toEqual(c.rtkFiles.map((f) => f.relPath).sort());
    const sts = await new ApiClient({
      baseUrl: svc.baseUrl,
      workspaceId: svc.workspaceId,
      token: svc.token,
    }).getSts();
    const photoFolder = path.posix.dirname(records[0]!.object_key.split('/').slice(0, -2).join('/') + '/x');
    for (const r of rtk) {
      expect(r.state).toBe('done');
      const key = r.state === 'done' ? r.objectKey! : '';
      // Same flight folder in the key as the photos.
      expect(path.posix.dirname(path.posix.dirname(key))).toBe(photoFolder);
      expect(md5(await getObject(sts, key))).toBe(md5(fs.readFileSync(path.join(c.root, r.relPath))));
    }

    const verdict = verdictOf(run);
    expect(verdict.safe).toBe(false);
    const [flight] = verdict.flights;
    expect(flight).toMatchObject({
      missingIndexes: [7],
      exposuresInMrk: 12,
      exposuresFound: 11,
      incomplete: true,
    });
    expect(flight!['rtkCounts']).toMatchObject({ fixed: 10, float: 2, single: 0 });
    expect(verdict.reasons.join(' ')).toMatch(/Flight DJI_\d+_\d+_Quarry is incomplete/);

    // The crew accepts the flight: safe to format, and the manifest says so.
    const accepted = await cli(['report', c.root, '--accept-flight', c.folder, '--state', state]);
    expect(accepted.status, accepted.stderr).toBe(0);
    expect(accepted.stdout).toMatch(/card-rtk: \d+ files verified in workspace .* — safe to format/);
  });
});

describe('"safe to format" appears only when it holds', () => {
  // A complete flight unless told otherwise (the builder leaves out exposure 7 by default).
  async function synced(name: string, o: Partial<Parameters<typeof buildRtkCard>[0]> = {}) {
    const c = card(name, { missing: [], float: [], ...o });
    const state = path.join(dir, `state-${name}`);
    const run = await cli(['sync', c.root, '--json', '--state', state]);
    return { c, state, run };
  }

  it('a complete flight, everything acknowledged and in the bucket: safe', async () => {
    const { run, state } = await synced('card-ok');
    expect(run.status, run.stderr).toBe(0);
    expect(verdictOf(run)).toMatchObject({ safe: true, reasons: [] });
    expect(verdictOf(run).message).toMatch(/^card-ok: 16 files verified in workspace .* — safe to format$/);
    // `status` says it too, from the queue alone.
    const status = await cli(['status', '--state', state], null);
    expect(status.stdout).toMatch(/^card-ok: 16 files verified in workspace .* — safe to format$/m);
  });

  it('not with a file missing from the bucket after its callback', async () => {
    // Content of its own (another day), so that its photos are uploaded, not fast-uploaded.
    const { c, state, run } = await synced('card-gone', {
      start: { year: 2024, month: 6, day: 2, hour: 9, minute: 0, second: 0 },
    });
    expect(verdictOf(run).safe).toBe(true);
    // Look again at every object each time (the default waits 10 minutes between looks).
    fs.writeFileSync(path.join(state, 'config.json'), JSON.stringify({ recheckAfterMinutes: 0 }));
    // Someone deletes one object from the bucket after the server acknowledged it.
    const q = new Queue(path.join(state, 'queue.db'));
    const photo = q
      .list({ states: ['done'], limit: 100 })
      .find((r) => r.kind === 'media' && r.state === 'done' && r.objectKey);
    q.close();
    const key = photo!.state === 'done' ? photo!.objectKey! : '';
    await removeObject(key);
    const again = await cli(['sync', c.root, '--json', '--state', state]);
    const v = verdictOf(again);
    expect(v.safe).toBe(false);
    expect(v.reasons.join(' ')).toMatch(/missing from the bucket .* although the server acknowledged them/);
  });

  it('not with an incomplete flight (a missing exposure), until the crew accepts it', async () => {
    const { run } = await synced('card-incomplete', { missing: [2] });
    expect(verdictOf(run).safe).toBe(false);
    expect(verdictOf(run).message).toMatch(/1 flight incomplete/);
  });

  it('not when the RTK companions are missing', async () => {
    const { run } = await synced('card-noobs', { companions: ['nav'] });
    expect(verdictOf(run).safe).toBe(false);
    expect(verdictOf(run).reasons.join(' ')).toMatch(/incomplete/);
  });
});

describe("a card's manifest in the bucket", () => {
  it('follows the card: a second generation replaces the report and the chain there, no warning', async () => {
    // Not safe at first (an exposure missing); the crew accepts the flight; the next run writes generation 2.
    const c = card('card-again', { missing: [2], float: [] });
    const state = path.join(dir, 'state-again');
    const first = await cli(['sync', c.root, '--json', '--state', state]);
    expect(verdictOf(first).safe, first.stderr).toBe(false);
    expect((await cli(['report', c.root, '--accept-flight', c.folder, '--state', state])).status).toBe(0);
    const again = await cli(['sync', c.root, '--json', '--state', state]);
    const shown = `${again.stdout}${again.stderr}`;
    expect(again.status, shown).toBe(0);
    expect(verdictOf(again).safe, shown).toBe(true);
    // Before: "could not be uploaded: Another upload put a different file where this one goes".
    expect(shown).not.toMatch(/could not be uploaded|different file/);

    const manifest = (lines(again.stdout).find((l) => l['type'] === 'verdict') as { manifest: string })
      .manifest;
    const sts = await new ApiClient({
      baseUrl: svc.baseUrl,
      workspaceId: svc.workspaceId,
      token: svc.token,
    }).getSts();
    const key = (rel: string) =>
      [sts.object_key_prefix, 'manifests', path.basename(manifest), rel].filter((p) => p !== '').join('/');
    for (const rel of ['report.json', 'report.html', 'ascmhl/ascmhl_chain.xml'])
      expect(md5(await getObject(sts, key(rel))), rel).toBe(md5(fs.readFileSync(path.join(manifest, rel))));
    // Both generations' hash lists are there, each as written.
    const mhls = fs.readdirSync(path.join(manifest, 'ascmhl')).filter((f) => f.endsWith('.mhl'));
    expect(mhls).toHaveLength(2);
    for (const f of mhls)
      expect(md5(await getObject(sts, key(`ascmhl/${f}`))), f).toBe(
        md5(fs.readFileSync(path.join(manifest, 'ascmhl', f))),
      );
  });
});

/**
 * Deletes an object of the embedded bucket behind the agent's back, as an
 * operator freeing space by hand would (the bucket takes a missing file for an
 * absent object).
 */
async function removeObject(key: string): Promise<void> {
  const db = new Database(path.join(dir, 'svc', 'service.db'), { readonly: true });
  const row = db.prepare('SELECT workspace_id, file FROM bucket_objects WHERE key = ?').get(key) as {
    workspace_id: string;
    file: string;
  };
  db.close();
  await fs.promises.rm(path.join(svc.bucket.dataDir, 'objects', row.workspace_id, row.file));
}
