/**
 * `drone-media-sync serve` as an operator runs it (the built CLI in dist/,
 * real HTTP, the real database of the tier: SQLite in `npm test`, the
 * throw-away PostgreSQL cluster in `npm run test:postgres`): a data folder
 * not there yet, errors in the service's words, the log at a terminal and
 * in a file, `serve reset-password`, two instances started at once.
 */
import { GetObjectCommand, PutObjectCommand } from '@aws-sdk/client-s3';
import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { inject } from 'vitest';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { CODES } from '../../main/service/index.js';
import { call, md5Hex, onPostgres, paths, removeDir, s3From, tempDatabase, tempDir } from './helpers.js';
import { stsStub } from './sts-stub.js';

const BIN = path.resolve('dist/main/cli/bin.js');
/** How the hints name this program when it is run as `node dist/main/cli/bin.js` (a checkout). */
const AS_RUN = `node ${path.relative(process.cwd(), BIN)}`;
const PG_PASSWORD: string | undefined = inject('pgPassword');

interface Served {
  child: ChildProcess;
  /** The ready line, or the exit code when it stopped first. */
  ready: Promise<{ ready?: { base_url: string; token: string }; code?: number | null }>;
  out: () => string;
  err: () => string;
  stop(): Promise<void>;
}

const started: Served[] = [];
const dirs: string[] = [];
afterEach(async () => {
  await Promise.all(started.splice(0).map((s) => s.stop()));
  for (const dir of dirs.splice(0)) removeDir(dir);
});

function dir(): string {
  const d = tempDir();
  dirs.push(d);
  return d;
}

/** Runs the CLI (`serve …` or `serve reset-password …`), stdout and stderr kept apart. */
function cli(args: string[], env: NodeJS.ProcessEnv = {}): Served {
  const child = spawn(process.execPath, [BIN, ...args], {
    env: {
      ...process.env,
      HOME: dir(),
      DMS_STATE_DIR: '',
      DMS_LOG_LEVEL: undefined,
      ...(PG_PASSWORD ? { PGPASSWORD: PG_PASSWORD } : {}),
      ...env,
    },
  });
  let out = '';
  let err = '';
  child.stdout.on('data', (d) => (out += String(d)));
  child.stderr.on('data', (d) => (err += String(d)));
  const ready = new Promise<{ ready?: { base_url: string; token: string }; code?: number | null }>(
    (resolve) => {
      child.stdout.on('data', () => {
        if (out.includes('\n') && out.startsWith('{')) resolve({ ready: JSON.parse(out.split('\n')[0]!) });
      });
      child.on('exit', (code) => resolve({ code }));
    },
  );
  const served: Served = {
    child,
    ready,
    out: () => out,
    err: () => err,
    async stop() {
      if (child.exitCode !== null || child.signalCode !== null) return;
      const exited = new Promise((r) => child.once('exit', r));
      child.kill('SIGTERM');
      await exited;
    },
  };
  started.push(served);
  return served;
}

/** `--database` for this tier: a fresh PostgreSQL database, or none (SQLite in the data folder). */
async function databaseArgs(): Promise<{ args: string[]; drop(): Promise<void> }> {
  const db = await tempDatabase();
  return { args: db.config.kind === 'postgres' ? ['--database', db.config.url] : [], drop: () => db.drop() };
}

async function login(baseUrl: string, password: string): Promise<{ code: number; token?: string }> {
  const res = await fetch(`${baseUrl}/manage/api/v1/login`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ username: 'pilot', password }),
  });
  const body = (await res.json()) as { code: number; data?: { access_token: string } };
  return { code: body.code, ...(body.data ? { token: body.data.access_token } : {}) };
}

const backend = onPostgres ? 'PostgreSQL' : 'SQLite';
/** Words of the agent's card messages that must never appear in the service's. */
const CARD_WORDS = /card|queue|Retry/i;

describe(`serve's data folder and errors (${backend})`, () => {
  it('creates a --data folder that is not there yet, whatever the database', async () => {
    const db = await databaseArgs();
    try {
      const data = path.join(dir(), 'not', 'yet', 'there');
      const s = cli(['serve', '--port', '0', '--data', data, ...db.args]);
      const r = await s.ready;
      // Before, on PostgreSQL: exit 2, "The file is no longer there (was the card removed?)".
      expect(r.ready, s.err()).toBeDefined();
      expect(fs.existsSync(path.join(data, 'pilot-password'))).toBe(true);
      await s.stop();
    } finally {
      await db.drop();
    }
  });

  it('says what is wrong in its own words: --data under a file, a bad --sts-expire', async () => {
    const file = path.join(dir(), 'a-file');
    fs.writeFileSync(file, 'x');
    const under = cli(['serve', '--port', '0', '--data', path.join(file, 'data')]);
    expect((await under.ready).code).toBe(2);
    expect(under.err()).toMatch(/^drone-media-sync: The service could not start: .*a-file.* Check --data /);
    expect(under.err()).not.toMatch(CARD_WORDS);

    const expire = cli(['serve', '--port', '0', '--data', dir(), '--sts-expire', 'an hour']);
    expect((await expire.ready).code).toBe(2);
    // Before: "stsExpireSeconds must be a positive integer (got NaN)." said as a server problem.
    expect(expire.err()).toBe(
      'drone-media-sync: --sts-expire an hour: the lifetime of the bucket credentials is a whole number of seconds (for example 3600).\n',
    );
  });
});

describe(`pilot's password (${backend})`, () => {
  it('serve reset-password gives a new one: the old one and its sign-ins stop working, running instances need no restart', async () => {
    const db = await databaseArgs();
    try {
      const data = dir();
      const s = cli(['serve', '--port', '0', '--data', data, ...db.args]);
      const { ready } = await s.ready;
      expect(ready, s.err()).toBeDefined();
      const file = path.join(data, 'pilot-password');
      const old = fs.readFileSync(file, 'utf8').trim();
      const signedIn = await login(ready!.base_url, old);
      expect(signedIn.code).toBe(0);

      const reset = cli(['serve', 'reset-password', 'pilot', '--data', data, ...db.args]);
      expect((await reset.ready).code, reset.err()).toBe(0);
      expect(reset.out()).toBe(
        `New password for "pilot" in ${file} (readable by you only). Its earlier password and sign-ins no longer work: sign in again with ${AS_RUN} login.\n`,
      );
      const fresh = fs.readFileSync(file, 'utf8').trim();
      expect(fresh).not.toBe(old);
      expect(fs.statSync(file).mode & 0o777).toBe(0o600);
      expect((await login(ready!.base_url, old)).code).toBe(CODES.LOGIN_FAILED);
      expect((await login(ready!.base_url, fresh)).code).toBe(0);
      const waylines = await fetch(`${ready!.base_url}/wayline/api/v1/workspaces/x/waylines`, {
        headers: { 'x-auth-token': signedIn.token! },
      });
      expect(((await waylines.json()) as { code: number }).code).toBe(CODES.TOKEN_REVOKED);

      const nobody = cli(['serve', 'reset-password', 'nobody', '--data', data, ...db.args]);
      expect((await nobody.ready).code).toBe(2);
      expect(nobody.err()).toMatch(/^drone-media-sync: The service has no user "nobody" in /);
    } finally {
      await db.drop();
    }
  });

  it.runIf(!onPostgres)(
    'two serve processes on one data folder started at once: one password file, both accept it',
    async () => {
      const data = dir();
      const both = [0, 1].map(() => cli(['serve', '--port', '0', '--data', data]));
      const answers = await Promise.all(both.map((s) => s.ready));
      // Before: the second stopped with "The queue database failed (SQLITE_CONSTRAINT_UNIQUE)".
      expect(
        answers.map((a) => a.ready !== undefined),
        both.map((s) => s.err()).join('\n'),
      ).toEqual([true, true]);
      const password = fs.readFileSync(path.join(data, 'pilot-password'), 'utf8').trim();
      for (const a of answers) expect((await login(a.ready!.base_url, password)).code).toBe(0);
      // One dev token: the one both print, still valid.
      expect(answers[0]!.ready!.token).toBe(answers[1]!.ready!.token);
    },
  );
});

describe("pilot's password with two instances (PostgreSQL)", () => {
  const stub = stsStub();
  beforeAll(() => stub.start());
  afterAll(() => stub.stop());

  it.runIf(onPostgres)(
    'two instances on one database, each with its data folder, started at once: one password file, both accept it; the other says how to get one',
    async () => {
      const db = await databaseArgs();
      try {
        const config = path.join(dir(), 'bucket.json');
        fs.writeFileSync(config, JSON.stringify(stub.bucket()), { mode: 0o600 });
        const folders = [dir(), dir()];
        const both = folders.map((data) =>
          cli(['serve', '--port', '0', '--data', data, '--bucket-config', config, ...db.args]),
        );
        const answers = await Promise.all(both.map((s) => s.ready));
        expect(
          answers.map((a) => a.ready !== undefined),
          both.map((s) => s.err()).join('\n'),
        ).toEqual([true, true]);
        const files = folders.map((d) => path.join(d, 'pilot-password')).filter((f) => fs.existsSync(f));
        expect(files).toHaveLength(1);
        const password = fs.readFileSync(files[0]!, 'utf8').trim();
        for (const a of answers) expect((await login(a.ready!.base_url, password)).code).toBe(0);
        const other = folders.findIndex((d) => !files[0]!.startsWith(d));
        expect(both[other]!.err()).toContain(
          `(its password is not in this data folder: another instance made it; for a new one run ${AS_RUN} serve reset-password pilot --data ${folders[other]} --database ${db.args[1]})`,
        );
      } finally {
        await Promise.all(started.splice(0).map((s) => s.stop()));
        await db.drop();
      }
    },
  );
});

describe("serve's log", () => {
  it('not at a terminal: JSON lines, a request logged, health checks not', async () => {
    const s = cli(['serve', '--port', '0', '--data', dir()]);
    const { ready } = await s.ready;
    expect(ready, s.err()).toBeDefined();
    for (let i = 0; i < 5; i++) {
      await fetch(`${ready!.base_url}/healthz`);
      await fetch(`${ready!.base_url}/readyz`);
    }
    await fetch(`${ready!.base_url}/no-such-page`);
    await s.stop();
    const json = s
      .err()
      .split('\n')
      .filter((l) => l.startsWith('{'))
      .map((l) => JSON.parse(l) as { msg: string; req?: { url: string } });
    const urls = json.filter((l) => l.req).map((l) => l.req!.url);
    // Before: ten health-check lines beside the one request.
    expect(urls).toEqual(['/no-such-page']);
  });

  it('at a terminal: plain lines, no JSON (-v: JSON at debug level)', async () => {
    const run = async (extra: string[]): Promise<string> => {
      // `script` gives serve a pseudo-terminal as stdout and stderr; Ctrl+C stops it as a person would.
      const cmd = [process.execPath, BIN, 'serve', '--port', '0', '--data', dir(), ...extra]
        .map((a) => `'${a}'`)
        .join(' ');
      const child = spawn('script', ['-qfec', cmd, '/dev/null'], {
        env: { ...process.env, HOME: dir(), DMS_STATE_DIR: '', DMS_LOG_LEVEL: undefined },
      });
      let text = '';
      child.stdout.on('data', (d) => (text += String(d)));
      const exited = new Promise((r) => child.once('exit', r));
      try {
        const until = Date.now() + 30_000;
        // Both: the person's line (stderr) comes first, the ready line (stdout) right after.
        while (!/Stop with Ctrl\+C[^]*"token"/.test(text) && Date.now() < until && child.exitCode === null)
          await new Promise((r) => setTimeout(r, 50));
        const base = /"base_url":"([^"]+)"/.exec(text)?.[1];
        expect(base, text).toBeDefined();
        await fetch(`${base}/healthz`);
        await fetch(`${base}/no-such-page`);
        await new Promise((r) => setTimeout(r, 300));
        child.stdin.write('\x03');
        await Promise.race([exited, new Promise((r) => setTimeout(r, 10_000))]);
      } finally {
        child.kill('SIGKILL');
      }
      return text.replace(/\r/g, '');
    };
    const plain = await run([]);
    const lines = plain.split('\n').filter((l) => l !== '');
    // The one JSON line on stdout is for scripts; every other line is plain (before: JSON log lines).
    expect(lines.filter((l) => l.startsWith('{')).map((l) => Object.keys(JSON.parse(l) as object))).toEqual([
      ['base_url', 'workspace_id', 'token'],
    ]);
    expect(lines).toContain(
      'GET /no-such-page 404 ' + /GET \/no-such-page 404 (\d+) ms/.exec(plain)?.[1] + ' ms',
    );
    expect(plain).toMatch(/^Server listening at http:\/\/127\.0\.0\.1:\d+$/m);
    // (after the terminal's echo of Ctrl+C, "^C")
    expect(plain).toMatch(/stopping: finishing the requests in flight, refusing new ones$/m);
    expect(plain).not.toContain('/healthz');

    const verbose = await run(['-v']);
    expect(verbose).toMatch(/^\{"level":20,.*"url":"\/healthz"/m);
  });
});

describe(`what serve acknowledged (${backend})`, () => {
  it('survives a SIGKILL: every object and callback answered before it is there after a restart', async () => {
    const db = await databaseArgs();
    try {
      const data = dir();
      const start = async (): Promise<{
        served: Served;
        s: { baseUrl: string; token: string };
        ws: string;
      }> => {
        const served = cli(['serve', '--port', '0', '--data', data, ...db.args]);
        const ready = (await served.ready).ready as
          { base_url: string; token: string; workspace_id: string } | undefined;
        expect(ready, served.err()).toBeDefined();
        return { served, s: { baseUrl: ready!.base_url, token: ready!.token }, ws: ready!.workspace_id };
      };
      const first = await start();
      const sts = (await call(first.s, 'POST', paths(first.ws).sts)).body.data;
      const client = s3From(sts);
      const files = Array.from({ length: 12 }, (_, i) => ({
        name: `DJI_${i}.JPG`,
        body: randomBytes(64 * 1024 + i),
      }));
      // Four at a time, as an agent sends them: PUT, then the callback once the PUT was answered.
      for (let i = 0; i < files.length; i += 4) {
        await Promise.all(
          files.slice(i, i + 4).map(async (f) => {
            const key = `${sts.object_key_prefix}/${f.name}`;
            await client.send(new PutObjectCommand({ Bucket: sts.bucket, Key: key, Body: f.body }));
            const cb = await call(first.s, 'POST', paths(first.ws).callback, {
              body: { result: 0, name: f.name, object_key: key, fingerprint: md5Hex(f.body) },
            });
            expect(cb.body.code).toBe(0);
          }),
        );
      }
      client.destroy();
      const killed = new Promise((r) => first.served.child.once('exit', r));
      first.served.child.kill('SIGKILL');
      await killed;

      const second = await start();
      const again = s3From((await call(second.s, 'POST', paths(second.ws).sts)).body.data);
      try {
        for (const f of files) {
          // The callback's record and its object with that content: fast-upload knows the file.
          const known = await call(second.s, 'POST', paths(second.ws).fastUpload, {
            body: { fingerprint: md5Hex(f.body), name: `copy-${f.name}` },
          });
          expect(known.body.code, f.name).toBe(0);
          const got = await again.send(
            new GetObjectCommand({ Bucket: sts.bucket, Key: `${sts.object_key_prefix}/${f.name}` }),
          );
          expect(Buffer.from(await got.Body!.transformToByteArray()).equals(f.body), f.name).toBe(true);
        }
      } finally {
        again.destroy();
      }
    } finally {
      await db.drop();
    }
  });
});
