/**
 * Issue 21, "never silent": the real CLI from a clean HOME, no TTY, read line
 * by line as it comes (with the time each line came), as a crew member
 * watching a terminal or a log would.
 */
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startService, type RunningService } from '../../main/service/index.js';
import { BIN, runCli } from '../support/cli.js';
import { makeCard, tempDir } from '../support/harness.js';

let dir: string;
beforeAll(() => {
  expect(fs.existsSync(BIN), 'run npm run build first').toBe(true);
  dir = tempDir('dms-never-silent-');
});
afterAll(() => fs.rmSync(dir, { recursive: true, force: true }));

interface Timed {
  at: number;
  stream: 'out' | 'err';
  line: string;
}

/** Runs the CLI (no TTY), every line with the milliseconds since the start. */
function timedCli(args: string[], env: NodeJS.ProcessEnv, home: string) {
  const started = Date.now();
  const lines: Timed[] = [];
  const child = spawn(process.execPath, [BIN, ...args], {
    env: { ...process.env, HOME: home, DMS_STATE_DIR: '', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const collect = (stream: 'out' | 'err') => {
    let partial = '';
    return (d: Buffer) => {
      partial += String(d);
      const parts = partial.split('\n');
      partial = parts.pop() ?? '';
      for (const line of parts) lines.push({ at: Date.now() - started, stream, line });
    };
  };
  child.stdout.on('data', collect('out'));
  child.stderr.on('data', collect('err'));
  const done = new Promise<{ code: number | null; ms: number }>((resolve) =>
    child.on('close', (code) => resolve({ code, ms: Date.now() - started })),
  );
  return { lines, done };
}

describe('sync is never silent', () => {
  it('a server that does not answer: said at once with what to do, the wait shown, then the run ends; status says why files wait', async () => {
    const home = path.join(dir, 'home-closed');
    fs.mkdirSync(home);
    const card = makeCard(path.join(dir, 'card-closed'));
    const run = timedCli(
      ['sync', card, '--server', 'http://127.0.0.1:1', '--workspace', 'ws-1'],
      { DMS_TOKEN: 'a-token' },
      home,
    );
    const { code, ms } = await run.done;
    const shown = run.lines.map((l) => `${l.at} ${l.stream} ${l.line}`).join('\n');
    expect(code, shown).toBe(1);
    // The first failure is said within seconds, long before the end, with what to do.
    const first = run.lines.find((l) =>
      /Nothing answers at this address\. Check the server address and port/.test(l.line),
    );
    expect(first, shown).toBeDefined();
    expect(first!.at).toBeLessThan(Math.min(10_000, ms - 3_000));
    expect(first!.line).toMatch(/Trying again in \d+ s; Ctrl\+C stops, nothing is lost\.$/);
    // No stretch of silence longer than the plain progress interval (plus slack for a loaded machine).
    const times = [0, ...run.lines.map((l) => l.at), ms];
    const longest = Math.max(...times.slice(1).map((t, i) => t - (times[i] ?? 0)));
    expect(longest, shown).toBeLessThan(12_000);
    // It ends saying what happens now; no raw JSON log line reaches the person.
    expect(shown).toMatch(
      /Stopped trying for now: http:\/\/127\.0\.0\.1:1: Nothing answers at this address\..* Nothing was sent; run sync again once it answers\./,
    );
    expect(run.lines.filter((l) => l.line.startsWith('{'))).toEqual([]);
    // Afterwards, `status` says why the files wait, in the run's own words (the technical text under -v).
    const status = await runCli(['status'], { home });
    expect(status.out).toMatch(
      /files? waits?: Nothing answers at this address\. Check the server address and port/,
    );
    expect(status.out).not.toMatch(/ECONNREFUSED|\/media\/api\//);
  }, 120_000);

  it('the next sync, once the server answers, tries every file again: a run that stopped trying leaves nothing stuck', async () => {
    // The service's data and port first, to know its workspace; then down while the first sync runs.
    const data = path.join(dir, 'svc-later');
    let svc: RunningService | null = await startService({ dataDir: data, host: '127.0.0.1', logger: false });
    const port = Number(new URL(svc.baseUrl).port);
    const { workspaceId, token } = svc;
    await svc.close();
    svc = null;
    try {
      const home = path.join(dir, 'home-later');
      fs.mkdirSync(home);
      const card = makeCard(path.join(dir, 'card-later'));
      const args = ['sync', card, '--server', `http://127.0.0.1:${port}`, '--workspace', workspaceId];
      const first = timedCli(args, { DMS_TOKEN: token }, home);
      expect((await first.done).code).toBe(1);
      expect(first.lines.map((l) => l.line).join('\n')).toMatch(/Stopped trying for now/);
      // The server is back (same data, same port): the crew runs sync again, as the last line said.
      svc = await startService({ dataDir: data, host: '127.0.0.1', port, logger: false });
      const again = timedCli(args, { DMS_TOKEN: svc.token }, home);
      const { code } = await again.done;
      const shown = again.lines.map((l) => `${l.at} ${l.stream} ${l.line}`).join('\n');
      expect(code, shown).toBe(0);
      expect(shown).toMatch(/Done with .*: [1-9]\d* uploaded, .* 0 failed, 0 left for later/);
    } finally {
      await svc?.close();
    }
  }, 180_000);

  it('without a terminal, a slow upload shows plain progress lines, and the bytes move with the upload', async () => {
    let svc: RunningService | null = null;
    try {
      svc = await startService({ dataDir: path.join(dir, 'svc'), logger: false });
      const home = path.join(dir, 'home-slow');
      const state = path.join(home, '.config', 'drone-media-sync');
      fs.mkdirSync(state, { recursive: true });
      // A slow uplink: one 2.5 MB video at 400 KiB/s, about six seconds.
      fs.writeFileSync(path.join(state, 'config.json'), JSON.stringify({ bandwidthLimitKiBps: 400 }));
      const card = makeCard(path.join(dir, 'card-slow'), 'DJI_202209021517_001_Waypoint1', []);
      fs.writeFileSync(
        path.join(card, 'DCIM', 'DJI_202209021517_001_Waypoint1', 'notes.DAT'),
        Buffer.alloc(2_500_000, 3),
      );
      const run = timedCli(
        ['sync', card, '--server', svc.baseUrl, '--workspace', svc.workspaceId],
        { DMS_TOKEN: svc.token },
        home,
      );
      const { code } = await run.done;
      const shown = run.lines.map((l) => `${l.at} ${l.stream} ${l.line}`).join('\n');
      expect(code, shown).toBe(0);
      const progress = run.lines.filter((l) => l.line.startsWith('Progress: '));
      expect(progress.length, shown).toBeGreaterThan(0);
      // The bytes shown move while the one file is on its way (before it is done).
      const moving = progress.find((l) => /^Progress: 0\/1 files {2}(?!0 B)[\d.]+ [KM]?B\//.test(l.line));
      expect(moving, shown).toBeDefined();
    } finally {
      await svc?.close();
    }
  }, 120_000);
});
