import { spawn } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { AGENT_ENV, AGENT_V8_FLAGS } from '../../main/core/node-flags.js';
import { startService, type RunningService } from '../../main/service/index.js';
import { makeCard, tempDir } from '../support/harness.js';
import { hostile, startHostileServer } from '../support/hostile-server.js';
import { startSampleBucket, startSampleServer } from '../support/sample-server.js';

// The built CLI as a user runs it, against the reference service over HTTP.
const BIN = path.resolve('dist/main/cli/bin.js');
let dir: string;
let svc: RunningService;
beforeAll(async () => {
  dir = tempDir('dms-cli-');
  svc = await startService({ dataDir: path.join(dir, 'svc'), logger: false });
});
afterAll(async () => {
  await svc.close();
  fs.rmSync(dir, { recursive: true, force: true });
});

function cli(
  args: string[],
  opts: { input?: string; env?: NodeJS.ProcessEnv } = {},
): Promise<{ code: number | null; out: string; err: string }> {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, [BIN, ...args], {
      env: { ...process.env, DMS_STATE_DIR: '', ...opts.env },
    });
    let out = '';
    let err = '';
    child.stdout.on('data', (d) => (out += String(d)));
    child.stderr.on('data', (d) => (err += String(d)));
    child.stdin.end(opts.input ?? '');
    child.on('exit', (code) => resolve({ code, out, err }));
  });
}

const server = () => ['--server', svc.baseUrl, '--token', svc.token, '--workspace', svc.workspaceId];

describe('drone-media-sync', () => {
  it('sync --json: one line per file and a summary; exit 0 when all done; a second run skips everything', async () => {
    const card = makeCard(path.join(dir, 'card-json'), 'DJI_202209021517_001_Waypoint1', [
      'M30T/M30T_IR.JPG',
      'M3T/M3T_IR.JPG',
    ]);
    const state = path.join(dir, 'state-json');
    const r = await cli(['sync', card, '--json', '--state', state, ...server()]);
    expect(r.code, r.err).toBe(0);
    const lines = r.out
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l));
    expect(lines.filter((l) => l.type === 'file').map((l) => l.outcome)).toEqual(['uploaded', 'uploaded']);
    expect(lines.at(-1)).toMatchObject({ type: 'summary', uploaded: 2, failed: 0, pending: 0 });
    const again = await cli(['sync', card, '--json', '--state', state, ...server()]);
    expect(JSON.parse(again.out.trim().split('\n').at(-1)!)).toMatchObject({
      skipped: 2,
      uploaded: 0,
      bytes_sent: 0,
    });
    expect(r.out + r.err + again.out + again.err).not.toContain(svc.token);
  });

  it('sync exits non-zero with a reason per file it could not finish; status and retry show and requeue them', async () => {
    // A stand-in of DJI's sample server refuses cameras outside its device list
    // (Mavic 2 Enterprise Advanced); the bucket is a real s3rver.
    const bucket = await startSampleBucket(path.join(dir, 's3'));
    const sample = await startSampleServer({ sts: bucket.sts });
    try {
      const card = makeCard(path.join(dir, 'card-bad'), 'DJI_202302150739_001_Roof', [
        'M2EA/M2EA_IR.JPG',
        'M30T/M30T_IR.JPG',
      ]);
      const state = path.join(dir, 'state-bad');
      const r = await cli([
        'sync',
        card,
        '--state',
        state,
        '--server',
        sample.baseUrl,
        '--token',
        'sample-token',
        '--workspace',
        sample.workspaceId,
      ]);
      expect(r.code).toBe(1);
      expect(r.out).toMatch(/1 uploaded.*1 failed/);
      expect(r.out).toMatch(/FAILED .*M2EA_IR\.JPG: /);
      const status = await cli(['status', '--json', '--state', state]);
      const s = JSON.parse(status.out);
      expect(s.counts.failed.files).toBe(1);
      expect(s.problems[0].kind).toBe('rejected');
      const retry = await cli(['retry', '--all', '--state', state]);
      expect(retry.out).toMatch(/^1 file will be retried/);
    } finally {
      await sample.close();
      await bucket.close();
    }
  });

  it('refuses a missing folder and a bad settings file with a plain sentence', async () => {
    const missing = await cli([
      'sync',
      path.join(dir, 'no-such-card'),
      ...server(),
      '--state',
      path.join(dir, 's1'),
    ]);
    expect(missing.code).not.toBe(0);
    expect(missing.err).toMatch(/is not a folder that exists. Is the card inserted\?/);
    // A photo named instead of its card: a wrong option (exit 2), and what to name instead.
    const photo = path.join(dir, 'DJI_0001.JPG');
    fs.writeFileSync(photo, 'a photo');
    const file = await cli(['sync', photo, ...server(), '--state', path.join(dir, 's1')]);
    expect(file.code).toBe(2);
    expect(file.err).toContain(
      `${photo} is a file, not a folder: name the card, or a folder of it, and every file under it is sent. To send this file, name the folder that holds it (${dir}); files already sent are not sent again.`,
    );
    // `watch` takes the same folders: refused the same way, before it starts watching anything.
    const watchFile = await cli(['watch', photo, ...server(), '--state', path.join(dir, 's1')]);
    expect(watchFile.code).toBe(2);
    expect(watchFile.err).toContain(`${photo} is a file, not a folder:`);
    const watchMissing = await cli([
      'watch',
      path.join(dir, 'no-such-card'),
      ...server(),
      '--state',
      path.join(dir, 's1'),
    ]);
    expect(watchMissing.code).not.toBe(0);
    expect(watchMissing.err).toMatch(/is not a folder that exists. Is the card inserted\?/);
    expect(watchMissing.out).not.toMatch(/Found|Watching/);
    const state = path.join(dir, 's2');
    fs.mkdirSync(state);
    fs.writeFileSync(path.join(state, 'config.json'), JSON.stringify({ concurrency: { files: 0 } }));
    const bad = await cli(['sync', dir, '--state', state, ...server()]);
    expect(bad.code).toBe(2);
    expect(bad.err).toMatch(/concurrency\.files at least 1/);
  });

  it('waylines: filters, order and paging reach the server; human and JSON output', async () => {
    const r = await cli([
      'waylines',
      '--template-type',
      '1',
      '--order-by',
      'name asc',
      '--page-size',
      '3',
      '--json',
      ...server(),
    ]);
    expect(r.code, r.err).toBe(0);
    const page = JSON.parse(r.out);
    expect(page.list.length).toBeLessThanOrEqual(3);
    expect(page.list.every((w: { template_types: number[] }) => w.template_types.includes(1))).toBe(true);
    const names = page.list.map((w: { name: string }) => w.name);
    expect([...names].sort()).toEqual(names);
    const human = await cli(['waylines', '--favorited', ...server()]);
    expect(human.out).toMatch(/^Waylines 1-\d+ of \d+/);
  });

  it('waylines --json against a server whose answer nests 10^5 levels deep: one clear line, exit 1, no stack overflow', async () => {
    const h = await startHostileServer();
    try {
      h.answer('waylines', hostile.waylinesNested(100_000));
      const args = ['--server', h.baseUrl, '--workspace', h.workspaceId, '--json'];
      const r = await cli(['waylines', ...args], {
        env: { DMS_TOKEN: h.token, DMS_STATE_DIR: path.join(dir, 'deep') },
      });
      expect(r.code).toBe(1);
      expect(r.out).toBe('');
      expect(r.err).toMatch(
        /^drone-media-sync: The server sent an answer that cannot be valid \(nested more than 64 levels deep\), so it was not used\./,
      );
      expect(r.err).not.toMatch(/Maximum call stack|upload/i);
    } finally {
      await h.close();
    }
  });

  it('login reads the password from stdin and stores the token owner-only', async () => {
    const password = fs.readFileSync(path.join(dir, 'svc', 'pilot-password'), 'utf8').trim();
    const state = path.join(dir, 'state-login');
    const r = await cli(['login', '--server', svc.baseUrl, '--username', 'pilot', '--state', state], {
      input: `${password}\n`,
    });
    expect(r.code, r.err).toBe(0);
    expect(r.out).toMatch(/Signed in to .* as pilot/);
    const st = fs.statSync(path.join(state, 'token'));
    expect(st.mode & 0o777).toBe(0o600);
    // the stored sign-in is used by later commands without --token
    const w = await cli(['waylines', '--state', state, '--server', svc.baseUrl, '--page-size', '1']);
    expect(w.code, w.err).toBe(0);
    const wrong = await cli(['login', '--server', svc.baseUrl, '--username', 'pilot', '--state', state], {
      input: 'nope\n',
    });
    expect(wrong.code).toBe(3);
    expect(wrong.err).toMatch(/sign|password/i);
  });

  // Its start-up time is measured by the benchmark, not asserted here.
  it('serve prints exactly one JSON line when ready and stops cleanly on SIGTERM', async () => {
    const child = spawn(process.execPath, [BIN, 'serve', '--port', '0', '--data', path.join(dir, 'served')]);
    let out = '';
    const line = await new Promise<string>((resolve, reject) => {
      child.stdout.on('data', (d) => {
        out += String(d);
        if (out.includes('\n')) resolve(out);
      });
      setTimeout(() => reject(new Error('no ready line within 20 s')), 20_000);
    });
    const ready = JSON.parse(line.trim());
    expect(Object.keys(ready).sort()).toEqual(['base_url', 'token', 'workspace_id']);
    const res = await fetch(`${ready.base_url}/wayline/api/v1/workspaces/${ready.workspace_id}/waylines`, {
      headers: { 'x-auth-token': ready.token },
    });
    expect(((await res.json()) as { code: number }).code).toBe(0);
    child.kill('SIGTERM');
    const code = await new Promise((r) => child.on('exit', r));
    expect(code).toBe(0);
    expect(out.trim().split('\n')).toHaveLength(1);
  });

  it('npm start without a display says so in one line and runs the headless agent', async () => {
    const state = path.join(dir, 'state-start');
    const env: NodeJS.ProcessEnv = { ...process.env, DISPLAY: '', WAYLAND_DISPLAY: '' };
    delete env.MALLOC_ARENA_MAX; // the agent's environment must come from start.js
    const child = spawn(
      process.execPath,
      [
        path.resolve('dist/main/cli/start.js'),
        '--server',
        svc.baseUrl,
        '--token',
        svc.token,
        '--workspace',
        svc.workspaceId,
        '--state',
        state,
      ],
      { env },
    );
    let out = '';
    let err = '';
    child.stdout.on('data', (d) => (out += String(d)));
    child.stderr.on('data', (d) => (err += String(d)));
    const end = Date.now() + 15_000;
    while (!out.includes('Watching') && Date.now() < end) await new Promise((r) => setTimeout(r, 50));
    // The headless agent runs with the agent's V8 flags and environment (node-flags.ts), as bin.js's first line gives them.
    const kids = fs.readFileSync(`/proc/${child.pid}/task/${child.pid}/children`, 'utf8').trim().split(/\s+/);
    const argv = fs.readFileSync(`/proc/${kids[0]}/cmdline`, 'utf8').split('\0');
    if (kids.length !== 1 || argv[1] !== AGENT_V8_FLAGS[0]) child.kill('SIGTERM'); // no agent left behind
    expect(kids).toHaveLength(1);
    expect(argv.slice(1, 1 + AGENT_V8_FLAGS.length)).toEqual(AGENT_V8_FLAGS);
    const environ = fs.readFileSync(`/proc/${kids[0]}/environ`, 'utf8').split('\0');
    for (const [k, v] of Object.entries(AGENT_ENV)) expect(environ).toContain(`${k}=${v}`);
    // still running although idle: a long-running agent must not exit by itself
    await new Promise((r) => setTimeout(r, 6000));
    expect(child.exitCode).toBeNull();
    const exited = new Promise((r) => child.on('exit', r));
    child.kill('SIGTERM');
    expect(await exited).toBe(0);
    expect(err.split('\n').filter((l) => l.startsWith('Desktop app not started'))).toHaveLength(1);
    expect(err).toMatch(/no display is available/);
    expect(out).toMatch(/Watching \(http:\/\/127\.0\.0\.1/);
  });
});
