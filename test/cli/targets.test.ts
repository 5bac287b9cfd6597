/**
 * Issue 30, "targets are first-class": the real CLI (dist/) against the real
 * reference service on loopback. A card verified on the right server stays
 * verified, in `status`, `report` and its report.html, after a run against a
 * mistyped address; the wrong target can be forgotten, said first.
 */
import fs from 'node:fs';
import path from 'node:path';
import { spawn } from 'node:child_process';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startService, type RunningService } from '../../main/service/index.js';
import { BIN, runCli } from '../support/cli.js';
import { makeCard, tempDir } from '../support/harness.js';

let dir: string;
let svc: RunningService;
beforeAll(async () => {
  expect(fs.existsSync(BIN), 'run npm run build first').toBe(true);
  dir = tempDir('dms-targets-');
  svc = await startService({ dataDir: path.join(dir, 'svc'), logger: false });
});
afterAll(async () => {
  await svc.close();
  fs.rmSync(dir, { recursive: true, force: true });
});

/** A sync against a mistyped address, stopped with Ctrl+C after its rows are queued (how long it tries is another test's matter). */
function wrongSync(card: string, state: string, home: string): Promise<string> {
  return new Promise((resolve) => {
    const child = spawn(
      process.execPath,
      [BIN, 'sync', card, '--state', state, '--server', 'http://127.0.0.1:1', '--workspace', svc.workspaceId],
      {
        env: { ...process.env, HOME: home, DMS_TOKEN: 'a-token', DMS_STATE_DIR: '' },
        stdio: ['ignore', 'pipe', 'pipe'],
      },
    );
    let out = '';
    const collect = (d: Buffer) => {
      out += String(d);
    };
    child.stdout.on('data', collect);
    child.stderr.on('data', collect);
    const stop = setTimeout(() => child.kill('SIGINT'), 6_000);
    const hard = setTimeout(() => child.kill('SIGKILL'), 40_000);
    child.on('close', () => {
      clearTimeout(stop);
      clearTimeout(hard);
      resolve(out);
    });
  });
}

describe('targets', () => {
  it('a run against a mistyped server never changes what status, report and report.html say of the right one; forget drops it, said first', async () => {
    const home = path.join(dir, 'home');
    fs.mkdirSync(home);
    const state = path.join(dir, 'state');
    const card = makeCard(path.join(dir, 'FRESH_CARD'));
    const env = { DMS_TOKEN: svc.token };
    const right = ['--server', svc.baseUrl, '--workspace', svc.workspaceId];
    const synced = await runCli(['sync', card, '--state', state, ...right], { home, env });
    expect(synced.code, synced.out + synced.err).toBe(0);

    const before = await runCli(['report', card, '--state', state], { home });
    expect(before.code, before.err).toBe(0);
    expect(before.out).toMatch(/verified in .* — safe to format/);
    const htmlOf = (): string[] => {
      const found: string[] = [];
      const walk = (d: string): void => {
        for (const e of fs.readdirSync(d, { withFileTypes: true }))
          if (e.isDirectory()) walk(path.join(d, e.name));
          else if (e.name === 'report.html') found.push(fs.readFileSync(path.join(d, e.name), 'utf8'));
      };
      walk(path.join(state, 'manifests'));
      return found;
    };
    expect(htmlOf().some((h) => /Safe to format/i.test(h))).toBe(true);

    await wrongSync(card, state, home);

    // The right server's facts, on their own: still verified, still safe.
    const report = await runCli(['report', card, '--state', state], { home });
    expect(report.code, report.out + report.err).toBe(0);
    expect(report.out).toMatch(new RegExp(`${svc.baseUrl.replace(/[.:/]/g, '\\$&')}`));
    expect(report.out).toMatch(/verified in .* — safe to format/);
    // The report.html of the right server is still there and still says safe.
    expect(htmlOf().some((h) => /Safe to format/i.test(h) && h.includes(svc.baseUrl))).toBe(true);

    const status = await runCli(['status', '--state', state], { home });
    expect(status.code, status.err).toBe(0);
    const sections = status.out.split(/\n(?=For |Earlier, for )/);
    const rightSection = sections.find((s) => s.startsWith(`For ${svc.baseUrl}`));
    expect(rightSection, status.out).toBeDefined();
    expect(rightSection).toMatch(/safe to format/);
    expect(rightSection).not.toMatch(/not done|127\.0\.0\.1:1\b/);
    const wrongSection = sections.find((s) => s.startsWith('For http://127.0.0.1:1'));
    expect(wrongSection, status.out).toMatch(/never answered/);

    // forget: says what it drops first, drops only with --yes, and only that target.
    const asked = await runCli(['forget', '--server', 'http://127.0.0.1:1', '--state', state], { home });
    expect(asked.code, asked.out + asked.err).toBe(0);
    expect(asked.out).toMatch(/would forget http:\/\/127\.0\.0\.1:1/i);
    expect(asked.out).toMatch(/--yes/);
    const stillThere = await runCli(['status', '--state', state], { home });
    expect(stillThere.out).toMatch(/For http:\/\/127\.0\.0\.1:1/);
    const forgot = await runCli(['forget', '--server', 'http://127.0.0.1:1/', '--yes', '--state', state], {
      home,
    });
    expect(forgot.code, forgot.out + forgot.err).toBe(0);
    expect(forgot.out).toMatch(/Forgot http:\/\/127\.0\.0\.1:1/);
    const after = await runCli(['status', '--state', state], { home });
    expect(after.out).not.toMatch(/127\.0\.0\.1:1\b/);
    expect(after.out).toMatch(/safe to format/);
    const reportAfter = await runCli(['report', card, '--state', state], { home });
    expect(reportAfter.out).toMatch(/verified in .* — safe to format/);
    // A target the queue does not know: said, with the ones it knows, exit 1.
    const unknown = await runCli(['forget', '--server', 'http://127.0.0.1:2', '--yes', '--state', state], {
      home,
    });
    expect(unknown.code).toBe(1);
    expect(unknown.out + unknown.err).toContain(svc.baseUrl);
  }, 120_000);

  it("serve without --data says it serves the built-in service's media; a verdict made against the built-in service stays true once it ran", async () => {
    const home = path.join(dir, 'home-serve');
    fs.mkdirSync(home);
    const state = path.join(dir, 'state-serve');
    const card = makeCard(path.join(dir, 'SERVE_CARD'));
    const local = await runCli(['sync', card, '--state', state], { home });
    expect(local.code, local.out + local.err).toBe(0);
    expect(local.out).toMatch(/safe to format/);

    const serve = spawn(process.execPath, [BIN, 'serve', '--state', state, '--port', '0'], {
      env: { ...process.env, HOME: home, DMS_STATE_DIR: '' },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let err = '';
    serve.stderr.on('data', (d: Buffer) => (err += String(d)));
    const exited = new Promise((r) => serve.on('close', r));
    try {
      const ready = await new Promise<{ base_url: string; workspace_id: string; token: string }>(
        (resolve, reject) => {
          let out = '';
          const t = setTimeout(() => reject(new Error(`serve not ready: ${err}`)), 60_000);
          serve.stdout.on('data', (d: Buffer) => {
            out += String(d);
            const line = out.split('\n').find((l) => l.startsWith('{'));
            if (line) {
              clearTimeout(t);
              resolve(JSON.parse(line));
            }
          });
        },
      );
      // Said at start: the media and workspace of the built-in service, and how to get a server of its own.
      await new Promise((r) => setTimeout(r, 200));
      expect(err).toMatch(/serves the built-in local service's media and workspace .*--data DIR/);
      const viaServe = await runCli(
        ['sync', card, '--state', state, '--server', ready.base_url, '--workspace', ready.workspace_id],
        { home, env: { DMS_TOKEN: ready.token } },
      );
      expect(viaServe.code, viaServe.out + viaServe.err).toBe(0);
    } finally {
      serve.kill('SIGTERM');
      await exited;
    }
    const report = await runCli(['report', card, '--state', state], { home });
    const sections = report.out.split(/\n(?=For )/);
    const builtIn = sections.find((x) => x.startsWith('For the built-in local service'));
    expect(builtIn, report.out).toMatch(/verified in .* — safe to format/);
    const status = await runCli(['status', '--state', state], { home });
    expect(status.out).toMatch(
      /for the built-in local service[^\n]*\n(?:.*\n)*?.*SERVE_CARD: \d+ files verified in .* — safe to format/i,
    );
  }, 180_000);
});
