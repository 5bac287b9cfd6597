/**
 * Issue 30, "an unreachable server ends a one-shot run fast, and says the
 * truth": the real CLI (dist/) against real sockets on loopback — a closed
 * port, a port speaking another protocol, a port that accepts and never
 * answers, https:// to the reference service (plain HTTP), and a server
 * answering 503. Each run ends by itself within 60 s with one reason, the
 * same from the first line to the last, and no request path or error code.
 */
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import http from 'node:http';
import net from 'node:net';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startService, type RunningService } from '../../main/service/index.js';
import { BIN, runCli } from '../support/cli.js';
import { makeCard, tempDir } from '../support/harness.js';
import { refusingPort } from '../support/refusing-port.js';

let dir: string;
let svc: RunningService;
const closers: Array<() => void> = [];
beforeAll(async () => {
  expect(fs.existsSync(BIN), 'run npm run build first').toBe(true);
  dir = tempDir('dms-unreachable-');
  svc = await startService({ dataDir: path.join(dir, 'svc'), logger: false });
});
afterAll(async () => {
  for (const c of closers) c();
  await svc.close();
  fs.rmSync(dir, { recursive: true, force: true });
});

/** A loopback TCP server doing `onConn` with each connection; its address. */
async function tcp(onConn: (s: net.Socket) => void): Promise<string> {
  const sockets = new Set<net.Socket>();
  const server = net.createServer((s) => {
    sockets.add(s);
    s.on('error', () => undefined);
    s.on('close', () => sockets.delete(s));
    onConn(s);
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  closers.push(() => {
    for (const s of sockets) s.destroy();
    server.close();
  });
  return `http://127.0.0.1:${(server.address() as net.AddressInfo).port}`;
}

/** A port that refuses every connection and stays so (test/support/refusing-port.ts). */
async function closedPort(): Promise<string> {
  return `http://127.0.0.1:${await refusingPort()}`;
}

async function busyServer(): Promise<string> {
  const server = http.createServer((_req, res) => {
    res.writeHead(503, { 'content-type': 'application/json', 'retry-after': '1' });
    res.end(JSON.stringify({ code: 503001, message: 'restarting', data: null }));
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  closers.push(() => {
    server.closeAllConnections();
    server.close();
  });
  return `http://127.0.0.1:${(server.address() as net.AddressInfo).port}`;
}

interface Timed {
  at: number;
  line: string;
}

function timedSync(
  name: string,
  server: string,
): Promise<{ code: number | null; ms: number; lines: Timed[] }> {
  const home = path.join(dir, `home-${name}`);
  fs.mkdirSync(home);
  const card = makeCard(path.join(dir, `card-${name}`));
  const started = Date.now();
  const lines: Timed[] = [];
  const child = spawn(process.execPath, [BIN, 'sync', card, '--server', server, '--workspace', 'ws-1'], {
    env: { ...process.env, HOME: home, DMS_STATE_DIR: '', DMS_TOKEN: 'a-token' },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  // A hang is bounded (the assertion on the time says it failed).
  const kill = setTimeout(() => child.kill('SIGKILL'), 150_000);
  let partial = '';
  const collect = (d: Buffer) => {
    partial += String(d);
    const parts = partial.split('\n');
    partial = parts.pop() ?? '';
    for (const line of parts) lines.push({ at: Date.now() - started, line });
  };
  child.stdout.on('data', collect);
  child.stderr.on('data', collect);
  return new Promise((resolve) =>
    child.on('close', (code) => {
      clearTimeout(kill);
      resolve({ code, ms: Date.now() - started, lines });
    }),
  );
}

describe('a one-shot sync against a server that cannot take anything', () => {
  it('closed, not HTTP, silent, https:// to http, busy (503): ends within 60 s with its one reason, said first and last', async () => {
    const cases: Array<{ name: string; server: string; reason: RegExp }> = [
      { name: 'closed', server: await closedPort(), reason: /Nothing answers at this address/ },
      {
        name: 'not-http',
        server: await tcp((s) => s.end('SSH-2.0-OpenSSH_9.2\r\nProtocol mismatch.\r\n')),
        reason: /not like a Drone Media Sync server/,
      },
      { name: 'silent', server: await tcp(() => undefined), reason: /No answer from the server within 10 s/ },
      {
        name: 'https-to-http',
        server: svc.baseUrl.replace(/^http:/, 'https:'),
        reason: /speaks plain HTTP, not HTTPS/,
      },
      { name: 'busy', server: await busyServer(), reason: /busy or restarting/ },
    ];
    const runs = await Promise.all(cases.map((c) => timedSync(c.name, c.server)));
    cases.forEach((c, i) => {
      const run = runs[i]!;
      const shown = `${c.name} (${run.ms} ms):\n${run.lines.map((l) => `${l.at} ${l.line}`).join('\n')}`;
      expect(run.code, shown).toBe(1);
      expect(run.ms, shown).toBeLessThanOrEqual(60_000);
      // Every line about the server gives the same reason, from the first to the last.
      const label = c.server.replace(/\/$/, '');
      const about = run.lines.filter(
        (l) => l.line.startsWith(`${label}: `) || l.line.startsWith('Stopped trying'),
      );
      expect(about.length, shown).toBeGreaterThanOrEqual(2);
      for (const l of about) expect(l.line, shown).toMatch(c.reason);
      expect(about[0]!.at, shown).toBeLessThan(30_000);
      expect(about.at(-1)!.line, shown).toMatch(/Nothing was sent; run sync again once it answers\.$/);
      // The card's verdict says the truth (issue 30): nothing is in flight, so nothing is "on the
      // way"; the files wait for the next run, for the reason the run stopped, and say what to do.
      expect(shown).not.toMatch(/on the way|wait until they are done/);
      const texts = run.lines.map((l) => l.line);
      expect(texts, shown).toContain(`card-${c.name}: not safe to format yet — 4 not uploaded yet`);
      const why = texts.find((l) => l.startsWith('  - 4 files not uploaded yet ('));
      expect(why, shown).toMatch(c.reason);
      expect(why, shown).toMatch(/[;?] [Rr]un sync again once it answers\.$/);
      // Never a contradiction: the non-HTTP port is not "could not be reached", a plain-HTTP server has no certificate problem.
      expect(shown).not.toMatch(/could not be reached|certificate|had a problem/);
      // No request path, error code or invented rate reaches the crew.
      for (const l of run.lines) {
        expect(l.line, shown).not.toMatch(/\/api\/v1\/|\bE[A-Z]{4,}\b|ERR_[A-Z_]+|\(HTTP \d{3}\)/);
        expect(l.line, shown).not.toMatch(/\d+(\.\d+)? ?[KMG]?B\/s|left\b.*~|~\d+ s left/);
      }
    });
    // `status` afterwards (issue 30): why files wait in the words the run used, the stored
    // technical text (request path, error code) only with -v.
    for (const name of ['closed', 'silent']) {
      const c = cases.find((x) => x.name === name)!;
      const home = path.join(dir, `home-${name}`);
      const plain = await runCli(['status'], { home });
      const shown = `${name}:\n${plain.out}${plain.err}`;
      expect(plain.code, shown).toBe(0);
      const waits = plain.out.split('\n').filter((l) => /^ {2}\d+ files? waits?: /.test(l));
      expect(waits.length, shown).toBeGreaterThanOrEqual(1);
      for (const l of waits) expect(l, shown).toMatch(c.reason);
      expect(plain.out, shown).not.toMatch(/\/api\/v1\/|\bE[A-Z]{4,}\b|\d+ ms\b|Details:/);
      expect(plain.out, shown).toContain(`card-${name}: not safe to format yet — 4 not uploaded yet`);
      expect(plain.out, shown).not.toMatch(/on the way/);
      const verbose = await runCli(['status', '-v'], { home });
      expect(verbose.code).toBe(0);
      expect(verbose.out, verbose.out).toMatch(/\n {4}Details: .*\/api\/v1\/workspaces\/ws-1\//);
    }
  }, 200_000);
});

describe('watch against a server that does not answer', () => {
  it('keeps trying: the reason once, then when the next try comes (growing waits, never "1 s" over and over)', async () => {
    const server = await closedPort();
    const home = path.join(dir, 'home-watch');
    fs.mkdirSync(home);
    const card = makeCard(path.join(dir, 'card-watch'));
    const started = Date.now();
    const child = spawn(process.execPath, [BIN, 'watch', card, '--server', server, '--workspace', 'ws-1'], {
      env: { ...process.env, HOME: home, DMS_STATE_DIR: '', DMS_TOKEN: 'a-token' },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let text = '';
    child.stdout.on('data', (d: Buffer) => (text += String(d)));
    child.stderr.on('data', (d: Buffer) => (text += String(d)));
    const closed = new Promise((r) => child.on('close', r));
    // Long enough for three rounds of the offline wait (about 1-2, 2-4, 4-8 s), bounded.
    const stop = setTimeout(() => child.kill('SIGINT'), 25_000);
    const hard = setTimeout(() => child.kill('SIGKILL'), 60_000);
    await closed;
    clearTimeout(stop);
    clearTimeout(hard);
    const shown = `${Date.now() - started} ms\n${text}`;
    const lines = text.split('\n');
    expect(
      lines.filter((l) => /Nothing answers at this address/.test(l)),
      shown,
    ).toHaveLength(1);
    const waits = lines.filter((l) => /still no answer; next try in \d+ s\.$/.test(l));
    expect(waits.length, shown).toBeGreaterThanOrEqual(1);
    expect(lines.filter((l) => /next try in 1 s/.test(l)).length, shown).toBeLessThanOrEqual(1);
    expect(text).not.toMatch(/\/api\/v1\/|ECONNREFUSED/);
  }, 90_000);
});
