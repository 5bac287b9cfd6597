/**
 * The data layer on whichever backend the suite runs on: SQLite in `npm test`,
 * PostgreSQL in `npm run test:postgres` (helpers.ts). Tests marked
 * "PostgreSQL:" need several service instances on one database, which only
 * PostgreSQL allows; they run in that tier.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import pg from 'pg';
import {
  CODES,
  InstanceConflictError,
  startService,
  type PostgresConfig,
  type RunningService,
} from '../../main/service/index.js';
import { connectionOptions } from '../../main/service/data/config.js';
import { PostgresDb } from '../../main/service/data/postgres.js';
import { INSTANCE_LOCK } from '../../main/service/data/instance-lock.js';
import type { SqlDb } from '../../main/service/data/sql.js';
import { findKnownSql, knownTinyQuery, MediaStore, type NewMedia } from '../../main/service/media-store.js';
import { LoginThrottle, RateLimit } from '../../main/service/client-limits.js';
import {
  call,
  onPostgres,
  openTables,
  paths,
  putObject,
  md5Hex,
  removeDir,
  startTemp,
  tempDir,
} from './helpers.js';
import { until } from '../support/harness.js';

let s: Awaited<ReturnType<typeof startTemp>>;
beforeAll(async () => {
  s = await startTemp();
});
afterAll(async () => {
  await s.stop();
});

const backend = onPostgres ? 'PostgreSQL' : 'SQLite';

/** The plan of `sql` as the backend prints it, one line per step. */
async function plan(db: SqlDb, sql: string, params: readonly unknown[]): Promise<string> {
  if (db.kind === 'postgres') {
    const rows = await db.all<{ 'QUERY PLAN': string }>(`EXPLAIN ${sql}`, params as never);
    return rows.map((r) => r['QUERY PLAN'].slice(0, 160)).join('\n');
  }
  const rows = await db.all<{ detail: string }>(`EXPLAIN QUERY PLAN ${sql}`, params as never);
  return rows.map((r) => r.detail).join('\n');
}

function record(workspaceId: string, over: Partial<NewMedia> = {}): NewMedia {
  return {
    workspaceId,
    fingerprint: 'ab'.repeat(16),
    name: 'DJI_0001.JPG',
    path: 'DJI_202401010800_001',
    objectKey: `${workspaceId}/DJI_0001.JPG`,
    result: 0,
    subFileType: null,
    metadata: null,
    ext: null,
    source: 'callback',
    ...over,
  };
}

describe(`exactly once (${backend})`, () => {
  it('the same record inserted 50 times at once through two connections is one row: the unique index decides', async () => {
    const ws = await s.admin.createWorkspace('Concurrent callbacks');
    const [a, b] = [openTables(s), openTables(s)];
    try {
      const stores = [new MediaStore(a), new MediaStore(b)];
      const results = await Promise.all(
        Array.from({ length: 50 }, (_, i) => stores[i % 2]!.insert(record(ws))),
      );
      expect(results.filter(Boolean)).toHaveLength(1);
      expect(await s.admin.mediaRecords(ws)).toHaveLength(1);
      // A plain INSERT of the same file is refused by the database itself.
      await expect(
        a.run(
          `INSERT INTO media (workspace_id, fingerprint, name, path, object_key, result, source, created_at)
           VALUES (?, ?, ?, ?, ?, 0, 'callback', 0)`,
          [ws, 'ab'.repeat(16), 'DJI_0001.JPG', 'DJI_202401010800_001', `${ws}/DJI_0001.JPG`],
        ),
      ).rejects.toThrow(/unique/i);
      // Another name, or a failed upload of the same file, is another record.
      expect(await stores[0]!.insert(record(ws, { name: 'DJI_0001 copy.JPG' }))).toBe(true);
      expect(await stores[1]!.insert(record(ws, { result: 1 }))).toBe(true);
      expect(await stores[0]!.insert(record(ws, { result: 7 }))).toBe(false);
    } finally {
      await a.close();
      await b.close();
    }
  });
});

describe(`the first record of a content (${backend})`, () => {
  it('fast-upload finds the first successful record of a fingerprint, whatever came after', async () => {
    const ws = await s.admin.createWorkspace('First record');
    const db = openTables(s);
    try {
      const media = new MediaStore(db);
      expect(await media.insert(record(ws, { name: 'failed.JPG', result: 1 }))).toBe(true);
      for (const name of ['first.JPG', 'second.JPG', 'third.JPG'])
        expect(await media.insert(record(ws, { name }))).toBe(true);
      expect((await media.findKnown(ws, 'AB'.repeat(16)))?.name).toBe('first.JPG');
      expect(await media.findKnown(ws, 'cd'.repeat(16))).toBeUndefined();
    } finally {
      await db.close();
    }
  });
});

describe(`indexed look-ups (${backend})`, () => {
  // The size matters: on a few thousand rows PostgreSQL rightly prefers reading the table.
  it('fast-upload and a batch of 1,000 tiny fingerprints use their indexes on 200,000 records, never a scan', async () => {
    const ws = await s.admin.createWorkspace('Big library');
    const db = openTables(s);
    try {
      // Same SQL on both backends: a recursive series, 200,000 rows in one workspace.
      await db.run(
        `INSERT INTO media (workspace_id, fingerprint, name, path, object_key, result, source, created_at, tiny_fingerprint)
         WITH RECURSIVE g(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM g WHERE i < 200000)
         SELECT CAST(? AS TEXT), 'f' || i, 'n' || i, NULL, 'k' || i, 0, 'callback', 0, 't' || i FROM g`,
        [ws],
      );
      await db.run('ANALYZE');
      const fast = await plan(db, findKnownSql(db), [ws, 'f777']);
      const tinyList = Array.from({ length: 1000 }, (_, i) => `t${i * 17 + 1}`);
      const tiny = await plan(db, ...knownTinyQuery(db, ws, tinyList));
      console.log(
        `${backend} plan, fast-upload look-up:\n${fast}\n${backend} plan, 1,000 tiny fingerprints:\n${tiny}`,
      );
      expect(fast).toContain('media_by_fingerprint');
      expect(tiny).toContain('media_by_tiny_fingerprint');
      for (const p of [fast, tiny]) expect(p).not.toMatch(/Seq Scan on media|^SCAN media$/m);
      if (db.kind === 'postgres') await preparedOnce(ws, tinyList);
    } finally {
      await db.close();
    }
  });
});

/**
 * PostgreSQL: the service's statements are prepared once per connection
 * (data/postgres.ts), so after a few runs PostgreSQL plans them once for any
 * parameters (a generic plan). That plan must still use the indexes.
 */
async function preparedOnce(ws: string, tinyList: string[]): Promise<void> {
  const one = new PostgresDb({ ...(s.dbConfig as PostgresConfig), maxConnections: 1 }, null);
  try {
    const media = new MediaStore(one);
    for (let i = 0; i < 8; i++) {
      expect((await media.findKnown(ws, `f${i + 1}`))?.name).toBe(`n${i + 1}`);
      expect(await media.knownTiny(ws, tinyList)).toHaveLength(1000);
    }
    const statements = await one.all<{ name: string; statement: string; generic_plans: number }>(
      'SELECT name, statement, generic_plans FROM pg_prepared_statements',
    );
    const named = (part: string) => {
      const found = statements.filter((p) => p.statement.includes(part));
      expect(found, `one prepared statement for ${part}`).toHaveLength(1);
      return found[0]!;
    };
    for (const st of [named('fingerprint = $2'), named('tiny_fingerprint = ANY($2)')]) {
      expect(st.generic_plans, st.statement).toBeGreaterThan(0);
      // EXPLAIN EXECUTE takes no parameters of its own: the values as literals.
      const second = st.statement.includes('ANY')
        ? `ARRAY[${tinyList.map((t) => pg.escapeLiteral(t)).join(', ')}]`
        : pg.escapeLiteral('f777');
      const planned = await one.all<{ 'QUERY PLAN': string }>(
        `EXPLAIN EXECUTE ${st.name}(${pg.escapeLiteral(ws)}, ${second})`,
      );
      const text = planned.map((r) => r['QUERY PLAN']).join('\n');
      expect(text).toMatch(/media_by_(tiny_)?fingerprint/);
      expect(text).not.toMatch(/Seq Scan on media/);
    }
  } finally {
    await one.close();
  }
}

describe(`tiny fingerprints endpoint (${backend})`, () => {
  it('answers which of a batch the workspace has, case-insensitively, only for successful uploads of this workspace', async () => {
    const tinyPath = `/media/api/v1/workspaces/${s.workspaceId}/files/tiny-fingerprints`;
    const key = await putObject(s, 'tiny/DJI_0100.JPG', 'tiny content');
    const tinyFp = `${md5Hex('tiny content')}_2024_3_1_8_0_0`;
    const callback = (body: object) => call(s, 'POST', paths(s.workspaceId).callback, { body });
    expect(
      (
        await callback({
          result: 0,
          name: 'DJI_0100.JPG',
          object_key: key,
          fingerprint: md5Hex('tiny content'),
          ext: { tinny_fingerprint: tinyFp.toUpperCase() },
        })
      ).body.code,
    ).toBe(0);
    // A failed upload does not make its tiny fingerprint known.
    await callback({
      result: 1,
      name: 'lost.JPG',
      object_key: `${key}.lost`,
      ext: { tinny_fingerprint: 'lost_1' },
    });

    const ask = (list: unknown, token = s.token) =>
      call({ baseUrl: s.baseUrl, token }, 'POST', tinyPath, { body: { tiny_fingerprints: list } });
    const r = await ask([tinyFp.toUpperCase(), 'lost_1', 'never_seen']);
    expect(r.status).toBe(200);
    expect(r.body).toEqual({ code: 0, message: 'success', data: { tiny_fingerprints: [tinyFp] } });
    expect((await ask([])).body.data.tiny_fingerprints).toEqual([]);

    const other = await s.admin.createWorkspace('Other crew');
    const otherToken = await s.admin.createToken({ workspaceId: other });
    const elsewhere = await call(
      { baseUrl: s.baseUrl, token: otherToken },
      'POST',
      tinyPath.replace(s.workspaceId, other),
      {
        body: { tiny_fingerprints: [tinyFp] },
      },
    );
    expect(elsewhere.body.data.tiny_fingerprints).toEqual([]);

    const tooMany = await ask(Array.from({ length: 1001 }, (_, i) => `x${i}`));
    expect(tooMany.status).toBe(400);
    expect(tooMany.body.message).toBe('tiny_fingerprints must be at most 1000.');
    expect((await ask('not a list')).body.message).toBe('tiny_fingerprints must be an array.');
  });
});

describe(`throttling counters in the database (${backend})`, () => {
  it('failures counted through one connection hold back a try through another, as two instances would', async () => {
    const [a, b] = [openTables(s), openTables(s)];
    try {
      const opts = { free: 2, firstWaitSeconds: 30, maxWaitSeconds: 900 };
      const [one, two] = [new LoginThrottle(a, opts), new LoginThrottle(b, opts)];
      const keys = ['ip:192.0.2.7', 'user:shared'];
      for (let i = 0; i < 2; i++) {
        expect(await one.begin(keys)).toBe(0);
        await one.finish(keys, false, 'user:shared');
      }
      expect(await two.begin(keys)).toBeGreaterThanOrEqual(29);
      const [ra, rb] = [
        new RateLimit(a, { burst: 3, refillSeconds: 60 }),
        new RateLimit(b, { burst: 3, refillSeconds: 60 }),
      ];
      const takes = [ra, rb, ra, rb].map((r) => () => r.take('sts:t'));
      // PostgreSQL: at once (row locks order them). SQLite: one after the other, as two
      // processes would be; two connections of one process would wait on each other's lock.
      const taken = onPostgres
        ? await Promise.all(takes.map((t) => t()))
        : [await takes[0]!(), await takes[1]!(), await takes[2]!(), await takes[3]!()];
      expect(taken.filter((w) => w === 0)).toHaveLength(3);
      expect(Math.max(...taken)).toBeGreaterThan(0);
    } finally {
      await a.close();
      await b.close();
    }
  });

  it('a take whose clock is a little behind the last one refills nothing and takes nothing extra', async () => {
    // Two instances' clocks a millisecond apart, or a take that waited for the row lock behind a
    // later one: the burst of 3 is still 3 (a negative refill made it 2, found under load in CI).
    const db = openTables(s);
    try {
      const limit = new RateLimit(db, { burst: 3, refillSeconds: 60 });
      const key = `sts:behind-${Date.now()}`;
      const t0 = Date.now();
      const taken = [
        await limit.take(key, t0),
        await limit.take(key, t0 - 1),
        await limit.take(key, t0 - 1),
        await limit.take(key, t0 - 1),
      ];
      expect(taken.slice(0, 3)).toEqual([0, 0, 0]);
      expect(taken[3]).toBeGreaterThan(0);
    } finally {
      await db.close();
    }
  });
});

describe(`health, readiness and drain (${backend})`, () => {
  it('drain lets a request in flight finish and refuses new ones with 503002 and Connection: close', async () => {
    const t = await startTemp();
    try {
      const health = await fetch(`${t.baseUrl}/healthz`);
      expect([health.status, ((await health.json()) as { code: number }).code]).toEqual([200, 0]);
      expect((await call(t, 'GET', '/readyz', { token: null })).body).toEqual({
        code: 0,
        message: 'success',
        data: { status: 'ready' },
      });
      // A sign-in takes about a second of scrypt: long enough to be in flight.
      const password = (await import('node:fs')).readFileSync(`${t.dataDir}/pilot-password`, 'utf8').trim();
      const login = call(t, 'POST', '/manage/api/v1/login', {
        body: { username: 'pilot', password },
        token: null,
      });
      await new Promise((r) => setTimeout(r, 100));
      let drained = false;
      const draining = t.drain(20_000).then(() => (drained = true));
      const refused = await fetch(`${t.baseUrl}${paths(t.workspaceId).waylines}`, {
        headers: { 'x-auth-token': t.token },
      });
      expect(refused.status).toBe(503);
      expect(refused.headers.get('connection')).toBe('close');
      expect(((await refused.json()) as { code: number }).code).toBe(CODES.SHUTTING_DOWN);
      expect((await call(t, 'GET', '/readyz', { token: null })).status).toBe(503);
      expect(drained).toBe(false);
      expect((await login).body.code).toBe(0);
      await draining;
    } finally {
      await t.stop();
    }
  });
});

describe.runIf(onPostgres)('several instances on one PostgreSQL database', () => {
  const unreachable = {
    provider: 'minio' as const,
    endpoint: 'http://127.0.0.1:9',
    region: 'us-east-1',
    bucket: 'media',
    accessKeyId: 'k',
    secretAccessKey: 'secret-value',
  };

  it('PostgreSQL: a connection cut while a transaction waits between statements fails that request with 503001; the process lives on', async () => {
    const db = openTables(s);
    try {
      const inTx = db.tx(async (t) => {
        const { pid } = (await t.get<{ pid: number }>('SELECT pg_backend_pid() AS pid'))!;
        // Cut from outside (as a PostgreSQL restart does) while this transaction runs no statement:
        // the connection's error arrives with no query to fail.
        await db.get('SELECT pg_terminate_backend(?)', [pid]);
        await new Promise((r) => setTimeout(r, 300));
        return t.get('SELECT 1 AS one');
      });
      await expect(inTx).rejects.toMatchObject({ code: CODES.DATABASE_UNAVAILABLE });
      // The pool opens a new connection for the next request.
      expect(await db.get('SELECT 1 AS one')).toEqual({ one: 1 });
    } finally {
      await db.close();
    }
  });

  it('PostgreSQL: an error on a connection at the moment the pool hands it over is heard; the process lives on', async () => {
    const db = openTables(s) as PostgresDb;
    try {
      // PostgreSQL's "terminating connection" can arrive in the same chunk as the previous user's
      // last answer, and so reach the connection just after the pool gave it to the next user and
      // before any promise continuation runs; the test sends that error at that very moment.
      let sent = false;
      db.pool.on('acquire', (client) => {
        if (sent) return;
        sent = true;
        queueMicrotask(() =>
          client.emit('error', new Error('terminating connection due to administrator command')),
        );
      });
      await db.tx((t) => t.get('SELECT 1 AS one'));
      expect(sent).toBe(true);
      // That connection was dropped, not given back: the next statement runs on a new one.
      expect(db.pool.totalCount).toBe(0);
      expect(await db.get('SELECT 1 AS one')).toEqual({ one: 1 });
    } finally {
      await db.close();
    }
  });

  it('PostgreSQL: refuses a second instance beside one with the embedded bucket, either way round', async () => {
    const [d1, d2] = [tempDir(), tempDir()];
    const embedded = await startTemp({ dataDir: d1 });
    try {
      const second = startService({ dataDir: d2, logger: false, database: embedded.dbConfig });
      await expect(second).rejects.toBeInstanceOf(InstanceConflictError);
      await expect(second).rejects.toThrow(/embedded bucket.*only service on that database.*--bucket-config/);
      const external = startService({
        dataDir: d2,
        logger: false,
        database: embedded.dbConfig,
        externalBucket: unreachable,
      });
      await expect(external).rejects.toThrow(
        /A drone-media-sync service with the embedded bucket already uses/,
      );
    } finally {
      await embedded.stop();
      removeDir(d2);
    }
  });

  it('PostgreSQL: a lost instance lock is taken again; another instance that got in meanwhile makes this one not ready (503004) until it is gone', async () => {
    const [d1, d2] = [tempDir(), tempDir()];
    const embedded = await startTemp({ dataDir: d1 });
    const tables = openTables(embedded);
    // The connection holding the instance lock, as the database sees it.
    const holder = async () =>
      (
        await tables.all<{ pid: number; mode: string }>(
          `SELECT a.pid, l.mode FROM pg_locks l JOIN pg_stat_activity a ON a.pid = l.pid
           WHERE l.locktype = 'advisory' AND l.granted AND a.datname = current_database()
             AND a.application_name = 'drone-media-sync instance lock'`,
        )
      )[0];
    const cut = (pid: number) => tables.run('SELECT pg_terminate_backend(?)', [pid]);
    const other = new pg.Client(connectionOptions(embedded.dbConfig as PostgresConfig));
    try {
      const first = await holder();
      expect(first?.mode).toBe('ExclusiveLock');
      // The connection is cut (as a server restart cuts it): the lock is taken again on a new one.
      await cut(first!.pid);
      await until(
        'the lock taken again',
        async () => ![undefined, first!.pid].includes((await holder())?.pid),
      );
      expect((await holder())?.mode).toBe('ExclusiveLock');
      await expect(
        startService({ dataDir: d2, logger: false, database: embedded.dbConfig }),
      ).rejects.toBeInstanceOf(InstanceConflictError);

      // Another instance (an external bucket's shared lock) waits for the lock and gets it the
      // moment this one's connection is cut, before it can be taken again.
      await other.connect();
      const othersLock = other.query('SELECT pg_advisory_lock_shared($1)', [INSTANCE_LOCK]);
      await cut((await holder())!.pid);
      await othersLock;
      const readyz = () => call(embedded, 'GET', '/readyz', { token: null });
      await until('readiness to say the conflict', async () => (await readyz()).status === 503);
      const answer = await readyz();
      expect(answer.body.code).toBe(CODES.INSTANCE_CONFLICT);
      expect(answer.body.message).toMatch(
        /another drone-media-sync service started on that database meanwhile/,
      );
      expect(answer.body.message).toMatch(/stop one of the two/);
      // The other one stops: this instance holds the database again and is ready.
      await other.end();
      await until('ready again', async () => (await readyz()).status === 200);
      expect((await holder())?.mode).toBe('ExclusiveLock');
    } finally {
      await other.end().catch(() => undefined);
      await tables.close();
      await embedded.stop();
      removeDir(d2);
    }
  });

  it('PostgreSQL: two instances with an external bucket record one failed upload once when both get it at once', async () => {
    const first = await startTemp({ externalBucket: unreachable });
    const dir = tempDir();
    let second: RunningService | null = null;
    try {
      second = await startService({
        dataDir: dir,
        logger: false,
        database: first.dbConfig,
        externalBucket: unreachable,
      });
      // Both instances agree on the workspace, the users, and each other's tokens.
      expect(second.workspaceId).toBe(first.workspaceId);
      const token = await first.admin.createToken();
      const body = {
        result: 1,
        name: 'DJI_0009.JPG',
        object_key: `${first.bucket.objectKeyPrefix}/DJI_0009.JPG`,
      };
      const answers = await Promise.all(
        Array.from({ length: 20 }, (_, i) =>
          call(
            { baseUrl: (i % 2 ? second! : first).baseUrl, token },
            'POST',
            paths(first.workspaceId).callback,
            { body },
          ),
        ),
      );
      expect(answers.map((a) => a.body.code)).toEqual(Array(20).fill(0));
      expect((await first.admin.mediaRecords()).filter((m) => m.name === 'DJI_0009.JPG')).toHaveLength(1);
      // A token revoked through one instance is refused by the other.
      expect(await second.admin.revokeToken(token)).toBe(true);
      expect(
        (await call({ baseUrl: first.baseUrl, token }, 'GET', paths(first.workspaceId).waylines)).body.code,
      ).toBe(CODES.TOKEN_REVOKED);
    } finally {
      await second?.close();
      await first.stop();
      removeDir(dir);
    }
  });
});
