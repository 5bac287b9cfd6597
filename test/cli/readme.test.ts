/**
 * Issue 29 §3: every command the README shows runs as written on a fresh
 * checkout. The README's shell lines (fenced `sh` blocks and inline code that
 * starts with the program) are read from the file, so the document cannot
 * drift: each runs in `sh` from the checkout, with a clean HOME and a PATH
 * that holds Node and npm but no installed or linked `drone-media-sync`.
 * Those safe to run here run as written (--version, --help, `sync` of a card
 * made from the fixtures at the README's own path names, mapped under a temp
 * folder, against the built-in local service; `report`); the others (a
 * server, a sign-in, a long-running agent) run with `--help`, which proves the
 * command is there and takes the options the README gives it.
 */
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BIN } from '../support/cli.js';
import { makeCard, tempDir } from '../support/harness.js';

const README = fs.readFileSync(path.resolve('README.md'), 'utf8');
const PROGRAM = 'drone-media-sync';

/** The shell lines of the README that run the program, as written (a trailing `# comment` dropped). */
function programLines(markdown: string): string[] {
  const lines: string[] = [];
  for (const block of markdown.matchAll(/```sh\n([\s\S]*?)```/g))
    for (const l of block[1]!.split('\n')) lines.push(l.replace(/\s+#.*$/, '').trim());
  for (const span of markdown.matchAll(/`([^`\n]+)`/g)) lines.push(span[1]!.trim());
  const runs = new RegExp(`^(npx )?${PROGRAM} `);
  return [...new Set(lines.filter((l) => runs.test(l)))];
}

let dir: string;
let env: NodeJS.ProcessEnv;
beforeAll(() => {
  expect(fs.existsSync(BIN), 'run npm run build first').toBe(true);
  dir = tempDir('dms-readme-');
  env = {
    // Node and npm, nothing installed or linked: a fresh checkout's shell.
    PATH: [path.dirname(process.execPath), '/usr/local/bin', '/usr/bin', '/bin'].join(':'),
    // npx's own cache (its link to this checkout) is kept where the user's npm keeps it.
    npm_config_cache: path.join(os.homedir(), '.npm'),
    npm_config_update_notifier: 'false',
    npm_config_fund: 'false',
    LANG: 'C.UTF-8',
  };
  // The first npx in a cache links the checkout, which can take a while on a loaded machine.
  const warm = spawnSync('sh', ['-c', `npx ${PROGRAM} --version`], {
    env: { ...env, HOME: dir },
    encoding: 'utf8',
    timeout: 240_000,
  });
  expect(warm.status, warm.stderr).toBe(0);
}, 250_000);
afterAll(() => fs.rmSync(dir, { recursive: true, force: true }));

/** A line run in `sh` from the checkout, HOME its own. */
function sh(line: string, home: string) {
  const r = spawnSync('sh', ['-c', line], {
    env: { ...env, HOME: home },
    encoding: 'utf8',
    timeout: 180_000,
  });
  return { code: r.status, out: r.stdout, err: r.stderr };
}

describe('README: every command it shows runs as written', () => {
  const lines = programLines(README);

  it('names the program as a checkout runs it (npx), and says how to put it on PATH', () => {
    expect(lines.length).toBeGreaterThan(5);
    // A bare `drone-media-sync …` is "command not found" in a checkout.
    expect(lines.filter((l) => !l.startsWith('npx '))).toEqual([]);
    expect(README).toMatch(/`npm link`/);
  });

  it('the lines safe to run here run as written; the others are there with the options shown', () => {
    const home = path.join(dir, 'home');
    fs.mkdirSync(home);
    // The README's paths under /media are drives and cards: made under the temp folder at the same names.
    const media = path.join(dir, 'media');
    const failures: string[] = [];
    for (const line of lines) {
      // The program as the line writes it: a bare name is run bare (and is "command not found" here).
      const as = line.startsWith('npx ') ? `npx ${PROGRAM}` : PROGRAM;
      const words = line.split(/\s+/).slice(as === PROGRAM ? 1 : 2);
      const command = words[0] ?? '';
      let run = line;
      if (command === 'sync' && (!words[1] || words[1].startsWith('<'))) run = `${as} sync --help`;
      else if (command === 'sync') {
        run = line.replace(/\/media\//g, `${media}/`);
        makeCard(words[1]!.replace(/^\/media\//, `${media}/`));
        // The drives named by --copy-to are plugged in (their mount points are there).
        for (const [i, w] of words.entries())
          if (words[i - 1] === '--copy-to' && w.startsWith('/media/'))
            fs.mkdirSync(w.replace(/^\/media\//, `${media}/`), { recursive: true });
        // A folder in HOME that is not there yet (~/DroneCopies) is left so: the copy lane creates it.
      } else if (!['--version', '-V', '--help', 'report', 'status'].includes(command) || line.includes('<'))
        run = command.startsWith('<') ? `${as} --help` : `${as} ${command} --help`;
      const r = sh(run, home);
      if (r.code !== 0) failures.push(`${run}\n  exit ${r.code}\n${r.out}${r.err}`);
    }
    expect(failures, failures.join('\n\n')).toEqual([]);
  }, 600_000);

  it("the CLI's hints name the command as it was run, and that command runs", () => {
    const home = path.join(dir, 'home-hint');
    fs.mkdirSync(home);
    const card = makeCard(path.join(dir, 'card-hint'));
    for (const as of [`npx ${PROGRAM}`, `node ${path.relative(process.cwd(), BIN)}`]) {
      // No sign-in for this server: the answer says how to sign in.
      const r = sh(`${as} sync ${card} --server http://127.0.0.1:1 --workspace ws-1`, home);
      expect(r.code, r.err).toBe(3);
      const hint = /Run: (.*?) --server/.exec(r.err)?.[1];
      expect(hint, r.err).toBe(`${as} login`);
      const help = sh(`${hint} --help`, home);
      expect(help.code, help.err).toBe(0);
      expect(help.out).toMatch(/--username/);
    }
  }, 300_000);
});
