/**
 * Issue 29 §3, "every line once, and true": the real CLI (dist/) from a
 * clean HOME, no TTY, read as a crew member reads a terminal. A copy that
 * cannot be made is a destination whose parent is a plain file (it can be
 * neither created nor written, whatever the copy lane does with folders not
 * created yet), so the failure is the same on every machine.
 */
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BIN, runCli, stateUnder } from '../support/cli.js';
import { makeCard, tempDir } from '../support/harness.js';

let dir: string;
beforeAll(() => {
  expect(fs.existsSync(BIN), 'run npm run build first').toBe(true);
  dir = tempDir('dms-every-line-once-');
});
afterAll(() => fs.rmSync(dir, { recursive: true, force: true }));

/** A destination that cannot be: its parent is a file. */
function impossibleDestination(name: string): string {
  const file = path.join(dir, `${name}-a-file`);
  fs.writeFileSync(file, 'not a folder');
  return path.join(file, 'Copies');
}

const nonBlank = (text: string) => text.split('\n').filter((l) => l.trim() !== '');
const repeated = (lines: string[]) => lines.filter((l, i) => lines.indexOf(l) !== i);

describe('sync: each verdict and warning once; the exit code says whether the copies asked for were made', () => {
  it('text: a copy that cannot be made is said once on stderr, each verdict once, and sync exits 4 with the reason', async () => {
    const home = path.join(dir, 'home-text');
    fs.mkdirSync(home);
    const card = makeCard(path.join(dir, 'card-text'));
    const r = await runCli(['sync', card, '--copy-to', impossibleDestination('text')], { home });
    const out = nonBlank(r.out);
    const err = nonBlank(r.err);
    // Every warning once (it was twice: the plain log and the command's own line).
    expect(repeated(err), r.err).toEqual([]);
    // The copies' verdict once (it was said on its own, then again inside the card's verdict).
    const headline = /not safe to format from the copies yet/;
    expect(
      out.filter((l) => headline.test(l)),
      r.out,
    ).toHaveLength(1);
    // No line of the verdicts twice.
    expect(repeated(out.filter((l) => l.trimStart().startsWith('- '))), r.out).toEqual([]);
    // Asked for a copy that was not made: not "0".
    expect(r.code, r.out + r.err).toBe(4);
    expect(
      out.find((l) => l.startsWith('Copies not done: ')),
      r.out,
    ).toMatch(/^Copies not done: card-text/);
  });

  it('--json: one object per event, the same warning never also on stderr; exit 4 and the reason in the summary', async () => {
    const home = path.join(dir, 'home-json');
    fs.mkdirSync(home);
    const card = makeCard(path.join(dir, 'card-json'));
    const r = await runCli(['sync', card, '--json', '--copy-to', impossibleDestination('json')], { home });
    const objects = nonBlank(r.out).map((l) => JSON.parse(l) as { type: string; message?: string });
    const stopped = objects.filter((o) => o.type === 'destination-stopped');
    expect(stopped.length, r.out).toBeGreaterThan(0);
    expect(repeated(objects.map((o) => JSON.stringify(o)))).toEqual([]);
    expect(objects.filter((o) => o.type === 'local-verdict').length, r.out).toBeLessThanOrEqual(1);
    // What is said on stdout as JSON is not said again on stderr.
    for (const o of stopped) expect(r.err).not.toContain(o.message);
    expect(r.code).toBe(4);
    const summary = objects.find((o) => o.type === 'summary') as { copies_not_done?: string[] };
    expect(summary.copies_not_done?.length).toBe(1);
  });

  it('a run that did all it was asked exits 0; `sync --help` lists the exit codes', async () => {
    const home = path.join(dir, 'home-ok');
    fs.mkdirSync(home);
    const card = makeCard(path.join(dir, 'card-ok'));
    const copies = path.join(dir, 'ok-copies');
    fs.mkdirSync(copies);
    const r = await runCli(['sync', card, '--copy-to', copies], { home });
    expect(r.code, r.out + r.err).toBe(0);
    expect(repeated(nonBlank(r.err))).toEqual([]);
    const help = await runCli(['sync', '--help'], { home });
    expect(help.code).toBe(0);
    expect(help.out).toMatch(/Exit codes:/);
    for (const code of [0, 1, 2, 3, 4]) expect(help.out).toMatch(new RegExp(`^ {2}${code} {2}\\S`, 'm'));
  });
});

describe('the built-in local service: "safe to format" says it rests on a folder of this laptop', () => {
  it('the verdict names the folder, and the documented reset warns that deleting it deletes those media', async () => {
    const home = path.join(dir, 'home-local');
    fs.mkdirSync(home);
    const card = makeCard(path.join(dir, 'card-local'));
    const r = await runCli(['sync', card], { home });
    expect(r.code, r.err).toBe(0);
    const folder = path.join(stateUnder(home), 'local-service');
    const where = `in the built-in workspace on this laptop, ${folder}`;
    expect(nonBlank(r.out)[0]).toBe(`card-local: 4 files verified ${where} — safe to format`);
    const json = await runCli(['sync', card, '--json'], { home });
    // Synced before: its verdict again, the same words.
    const verdict = nonBlank(json.out)
      .map((l) => JSON.parse(l) as { type: string; message?: string })
      .find((o) => o.type === 'verdict');
    expect(verdict?.message).toBe(`card-local: 4 files verified ${where} — safe to format`);
    // The reset the docs give for that folder says it deletes those media.
    const doc = fs.readFileSync(path.resolve('docs/logs-and-reset.md'), 'utf8');
    // As read: without the quote marks and line breaks of the Markdown.
    const reset = doc
      .slice(doc.indexOf('## Starting over'), doc.indexOf('## Removing'))
      .replace(/^> ?/gm, '')
      .replace(/\s+/g, ' ');
    expect(reset).toContain('in the built-in workspace on this laptop, <folder>');
    expect(reset).toContain('Deleting the state folder, or `local-service/` in it, deletes those media');
  });
});

/** `watch` running, its lines as they come; stopped with SIGTERM. */
function watching(args: string[], home: string, env: NodeJS.ProcessEnv = {}) {
  const child = spawn(process.execPath, [BIN, 'watch', ...args], {
    env: { ...process.env, HOME: home, DMS_STATE_DIR: '', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  let err = '';
  child.stdout.on('data', (d: Buffer) => (out += String(d)));
  child.stderr.on('data', (d: Buffer) => (err += String(d)));
  const closed = new Promise<void>((resolve) => child.on('close', () => resolve()));
  return {
    get out() {
      return out;
    },
    get err() {
      return err;
    },
    async until(what: string, test: (out: string) => boolean, ms = 60_000): Promise<void> {
      const end = Date.now() + ms;
      while (!test(out)) {
        if (Date.now() > end) throw new Error(`watch: no ${what} in ${ms} ms:\n${out}\n${err}`);
        await sleep(100);
      }
    },
    async stop(): Promise<void> {
      child.kill('SIGTERM');
      await closed;
    },
  };
}

describe('watch: lines as lines, and a pulled card said once', () => {
  it("a card's verdict prints as lines (never a literal \\n), each once; its removal once, never '0 files will continue'", async () => {
    const home = path.join(dir, 'home-watch');
    const media = path.join(dir, 'media');
    fs.mkdirSync(home);
    fs.mkdirSync(media);
    const w = watching(['--mount-root', media, '--copy-to', impossibleDestination('watch')], home);
    try {
      await w.until('start', (o) => o.includes('Watching'));
      makeCard(path.join(media, 'PULL_CARD'));
      await w.until('the verdict', (o) => /^ {2}Report: /m.test(o));
      expect(w.out).not.toContain('\\n');
      expect(repeated(nonBlank(w.out).filter((l) => /safe to format/.test(l))), w.out).toEqual([]);
      expect(repeated(nonBlank(w.err)), w.err).toEqual([]);
      fs.rmSync(path.join(media, 'PULL_CARD'), { recursive: true });
      await w.until('the removal', (o) => o.includes('was removed'));
      // The card monitor, the folder watcher and a scan may each notice: said once all the same.
      await sleep(5_000);
      const removed = nonBlank(w.out).filter((l) => l.includes('was removed'));
      expect(removed, w.out).toHaveLength(1);
      expect(w.out).not.toMatch(/0 files will continue/);
    } finally {
      await w.stop();
    }
    // The headless agent writes the app's log file, where docs/logs-and-reset.md says (Linux, a checkout).
    const logs = path.join(home, '.config', 'drone-media-sync', 'logs');
    expect(w.out).toContain(`Log: ${logs}`);
    const files = fs.readdirSync(logs).filter((f) => /^drone-media-sync\.\d+\.log$/.test(f));
    expect(files.length).toBeGreaterThan(0);
    const entries = files
      .flatMap((f) => nonBlank(fs.readFileSync(path.join(logs, f), 'utf8')))
      .map((l) => JSON.parse(l) as { level: number; msg: string });
    // The warning said once on the terminal is in the file too.
    expect(
      entries.some((e) => e.level === 40 && /Copies/.test(e.msg)),
      JSON.stringify(entries),
    ).toBe(true);
  }, 120_000);

  it('a card pulled with files waiting: "N files will continue" once, and no "0 files" after it', async () => {
    const home = path.join(dir, 'home-pull');
    const media = path.join(dir, 'media-pull');
    fs.mkdirSync(home);
    fs.mkdirSync(media);
    // A server that does not answer: the files stay on the card's side, waiting for it.
    const w = watching(
      ['--mount-root', media, '--server', 'http://127.0.0.1:1', '--workspace', 'ws-1'],
      home,
      {
        DMS_TOKEN: 'a-token',
      },
    );
    try {
      await w.until('start', (o) => o.includes('Watching'));
      makeCard(path.join(media, 'PULL_CARD'));
      await w.until('the scan', (o) => /PULL_CARD: \d+ new file/.test(o));
      fs.rmSync(path.join(media, 'PULL_CARD'), { recursive: true });
      await w.until('the removal', (o) => o.includes('was removed'));
      await sleep(5_000);
      const removed = nonBlank(w.out).filter((l) => l.includes('was removed'));
      expect(removed, w.out).toHaveLength(1);
      expect(removed[0]).toMatch(
        /PULL_CARD was removed; [1-9]\d* files? will continue when it is inserted again/,
      );
      expect(w.out).not.toContain('\\n');
    } finally {
      await w.stop();
    }
  }, 120_000);
});
