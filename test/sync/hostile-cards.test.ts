/**
 * Issue 22, "the verdict and the manifest lie": the real CLI (`sync`, a clean
 * HOME, no TTY) against a server that speaks the contract but misbehaves
 * (test/support/hostile-server.ts: the real service and bucket behind
 * recording proxies) and against cards with hostile names and contents,
 * built by the tests. Nothing may be called "safe to format" or "verified"
 * that was not looked at, and every file found on a card is kept or named
 * with its true reason.
 */
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { runCli, type CliRun } from '../support/cli.js';
import { makeCard, tempDir } from '../support/harness.js';
import { hostile, startHostileServer, type HostileServer } from '../support/hostile-server.js';

let h: HostileServer;
let dir: string;
beforeAll(async () => {
  h = await startHostileServer();
  dir = tempDir('dms-hostile-cards-');
});
afterEach(() => h.clear());
afterAll(async () => {
  await h.close();
  fs.rmSync(dir, { recursive: true, force: true });
});

const FLIGHT = 'DJI_202209021517_001_Waypoint1';

interface Verdict {
  type: 'verdict';
  safe: boolean;
  message: string;
  reasons: string[];
  notes: string[];
  manifest: string;
}

/** `sync <card> --json` as a crew member runs it, against the hostile server; its JSON lines. */
async function sync(name: string, card: string, wrap?: string[]) {
  const home = path.join(dir, `home-${name}`);
  fs.mkdirSync(home, { recursive: true });
  const run = await runCli(['sync', card, '--json', '--server', h.baseUrl, '--workspace', h.workspaceId], {
    home,
    env: { DMS_TOKEN: h.token },
    ...(wrap ? { wrap } : {}),
  });
  const lines = run.out
    .split('\n')
    .filter((l) => l.startsWith('{'))
    .map((l) => JSON.parse(l) as { type: string } & Record<string, unknown>);
  const verdict = lines.find((l) => l.type === 'verdict') as Verdict | undefined;
  return { run, lines, verdict, home };
}

/** What the agent wrote to the bucket since `since`, but its manifests. */
const put = (since: number) =>
  h.bucket.records
    .slice(since)
    .filter((r) => (r.method === 'PUT' || r.method === 'POST') && !String(r.key).includes('/manifests/'));

function report(verdict: Verdict | undefined): {
  files: Array<{ relPath: string; verified: { by?: string; checksum: string } | null }>;
} {
  return JSON.parse(fs.readFileSync(path.join(verdict!.manifest, 'report.json'), 'utf8')) as never;
}

const explain = (r: CliRun): string => `${r.out}\n${r.err}`;

describe('the verdict and the manifest never lie', () => {
  it('a server answering "known" for every fingerprint: nothing sent, and the card is NOT called safe', async () => {
    const card = makeCard(path.join(dir, 'card-known'), FLIGHT);
    h.answer('fast-upload', hostile.knownForEverything());
    const before = h.bucket.records.length;
    const { run, verdict } = await sync('known', card);
    expect(put(before), explain(run)).toEqual([]);
    expect(verdict?.safe, explain(run)).toBe(false);
    expect(verdict?.message).toMatch(/not safe to format yet — .*on the server's word only/);
    expect(verdict?.reasons.join(' ')).toMatch(
      /already in workspace .* on the server's word only .*could not be checked in the bucket/,
    );
    // The manifest says what was looked at: nothing. Never "match" for what was not compared.
    const media = report(verdict).files.filter((f) => /\.JPG$/i.test(f.relPath));
    expect(media.length).toBeGreaterThan(0);
    for (const f of media) expect(f.verified).toMatchObject({ by: 'server', checksum: 'not-given' });
  });

  it('a callback answer naming another object_key: the file is named, the card not called safe', async () => {
    const card = makeCard(path.join(dir, 'card-other-key'), FLIGHT, ['M30T/M30T_IR.JPG']);
    h.answer('upload-callback', hostile.callbackNaming(`${h.workspaceId}/somewhere/else.JPG`));
    const { run, verdict } = await sync('other-key', card);
    expect(verdict?.safe, explain(run)).toBe(false);
    expect(verdict?.reasons.join(' ')).toMatch(
      /recorded by the server under another object than the one uploaded and checked \(M30T_IR\.JPG\)/,
    );
  });

  it(
    'a permanently broken storage answer (code 0, no data): each file says so, the run ends with its verdict',
    { timeout: 120_000 },
    async () => {
      const card = makeCard(path.join(dir, 'card-sts'), FLIGHT);
      h.answer('sts', hostile.stsWithoutData());
      const started = Date.now();
      const { run, verdict, lines } = await sync('sts', card);
      const took = Date.now() - started;
      expect(run.code, explain(run)).toBe(1);
      // Bounded: a few rounds of the shared backoff, not minutes.
      expect(took).toBeLessThan(90_000);
      expect(verdict?.safe).toBe(false);
      const summary = lines.find((l) => l.type === 'summary') as unknown as {
        files: Array<{ reason: string }>;
      };
      expect(summary.files.length).toBeGreaterThan(0);
      for (const f of summary.files) expect(f.reason).toMatch(/no storage credentials/);
    },
  );
});

describe('every file found on a card is kept, or named with its true reason', () => {
  it('a photo (and a flight folder) whose name is not valid UTF-8: named, not safe, sync exits 1', async () => {
    const card = makeCard(path.join(dir, 'card-names'), FLIGHT, ['M30T/M30T_IR.JPG']);
    const flight = path.join(card, 'DCIM', FLIGHT);
    // Latin-1 bytes no UTF-8 decoder accepts: the name cannot round-trip through a string.
    const bad = Buffer.concat([
      Buffer.from(`${flight}/DJI_`),
      Buffer.from([0xff, 0xfe]),
      Buffer.from('.JPG'),
    ]);
    fs.writeFileSync(bad, fs.readFileSync(path.join(flight, 'M30T_IR.JPG')));
    const badFolder = Buffer.concat([
      Buffer.from(`${card}/DCIM/DJI_`),
      Buffer.from([0xe9]),
      Buffer.from('_X'),
    ]);
    fs.mkdirSync(badFolder);
    fs.writeFileSync(Buffer.concat([badFolder, Buffer.from('/DJI_0001.JPG')]), 'photo');
    const { run, verdict, lines } = await sync('names', card);
    expect(run.code, explain(run)).toBe(1);
    const skipped = lines.filter((l) => l.type === 'skipped').map((l) => String(l.reason));
    expect(skipped.some((r) => /DJI_\uFFFD\uFFFD\.JPG has a name that is not valid text/.test(r))).toBe(true);
    expect(
      skipped.some((r) => /^The folder DCIM\/DJI_\uFFFD_X has a name that is not valid text/.test(r)),
    ).toBe(true);
    expect(verdict?.safe).toBe(false);
    expect(verdict?.reasons.join(' ')).toMatch(/Not kept anywhere: .*not valid text/);
  });

  it('a 0-byte .JPG is kept as a file, a pipe named .JPG is named and never read: the rest syncs', async () => {
    const card = makeCard(path.join(dir, 'card-empty'), FLIGHT, ['M30T/M30T_IR.JPG']);
    const flight = path.join(card, 'DCIM', FLIGHT);
    fs.writeFileSync(path.join(flight, 'DJI_0002.JPG'), '');
    expect(spawnSync('mkfifo', [path.join(flight, 'DJI_0003.JPG')]).status).toBe(0);
    const { run, verdict, lines } = await sync('empty', card);
    expect(run.code, explain(run)).toBe(0);
    const files = lines.filter((l) => l.type === 'file') as unknown as Array<{
      path: string;
      outcome: string;
    }>;
    expect(files.find((f) => f.path.endsWith('DJI_0002.JPG'))?.outcome).toBe('stored');
    expect(files.find((f) => f.path.endsWith('M30T_IR.JPG'))?.outcome).toMatch(/^(fast-)?uploaded$/);
    const skipped = lines.filter((l) => l.type === 'skipped').map((l) => String(l.reason));
    expect(skipped).toEqual([expect.stringMatching(/DJI_0003\.JPG is not a regular file \(a pipe/)]);
    expect(verdict?.safe, run.err + JSON.stringify(report(verdict))).toBe(true);
    expect(verdict?.notes.join(' ')).toMatch(/not regular files .*DJI_0003\.JPG/);
  });

  it('a photo this user may not read: "permission denied", not "was the card removed?"', async () => {
    const card = makeCard(path.join(dir, 'card-denied'), FLIGHT, ['M30T/M30T_IR.JPG', 'M3T/M3T_IR.JPG']);
    const locked = path.join(card, 'DCIM', FLIGHT, 'M3T_IR.JPG');
    fs.chmodSync(locked, 0o000);
    // Root reads anything: the CLI runs without its capabilities, as any user would.
    const { run, verdict, lines } = await sync('denied', card, ['setpriv', '--bounding-set=-all', '--']);
    fs.chmodSync(locked, 0o644);
    expect(run.code, explain(run)).toBe(1);
    // Named with its reason and left for the next run (issue 30): not queued to fail, so the
    // next run takes it once its permissions are fixed.
    expect(lines.some((l) => l.type === 'file' && String(l.path).endsWith('M3T_IR.JPG'))).toBe(false);
    const skipped = lines.find((l) => l.type === 'skipped' && String(l.path).endsWith('M3T_IR.JPG')) as
      { reason: string } | undefined;
    expect(skipped?.reason, explain(run)).toMatch(
      /M3T_IR\.JPG cannot be read \(permission denied\): it is left for the next run/,
    );
    expect(skipped?.reason).not.toMatch(/card removed/);
    expect(verdict?.safe).toBe(false);
  });
});
