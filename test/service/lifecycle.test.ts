import { PutObjectCommand } from '@aws-sdk/client-s3';
import Database from 'better-sqlite3';
import { readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import { pino } from 'pino';
import { afterEach, describe, expect, it } from 'vitest';
import { SCHEMA_VERSION } from '../../main/service/migrations.js';
import { SchemaTooNewError, startService } from '../../main/service/index.js';
import { call, getSts, md5Hex, paths, putObject, removeDir, s3From, tempDir } from './helpers.js';

const dirs: string[] = [];
const fresh = () => {
  const d = tempDir();
  dirs.push(d);
  return d;
};
afterEach(() => {
  for (const d of dirs.splice(0)) removeDir(d);
});

describe('restart', () => {
  it('keeps the workspace, the dev token, the media and valid bucket credentials', async () => {
    const dataDir = fresh();
    const a = await startService({ dataDir, logger: false });
    const key = await putObject(a, 'kept.jpg');
    const cb = await call(a, 'POST', paths(a.workspaceId).callback, {
      body: { result: 0, name: 'kept.jpg', object_key: key, fingerprint: md5Hex('content of kept.jpg') },
    });
    expect(cb.body.code).toBe(0);
    const sts = await getSts(a);
    await a.close();
    await a.close(); // idempotent

    const b = await startService({ dataDir, logger: false });
    try {
      expect(b.workspaceId).toBe(a.workspaceId);
      expect(b.token).toBe(a.token);
      expect(b.bucket.objectKeyPrefix).toBe(a.bucket.objectKeyPrefix);
      expect(
        (
          await call(b, 'POST', paths(b.workspaceId).fastUpload, {
            body: { fingerprint: md5Hex('content of kept.jpg'), name: 'copy.jpg' },
          })
        ).body.code,
      ).toBe(0);
      expect(await b.admin.mediaRecords()).toHaveLength(2);
      const waylines = await call(b, 'GET', paths(b.workspaceId).waylines);
      expect(waylines.body.data.pagination.total).toBe(30); // seeded once, not again

      // Credentials issued before the restart still work until they expire (new bucket port, same keys).
      const client = s3From({ ...sts, endpoint: b.bucket.endpoint });
      await client.send(
        new PutObjectCommand({ Bucket: sts.bucket, Key: `${sts.object_key_prefix}/after.jpg`, Body: 'x' }),
      );
      client.destroy();
    } finally {
      await b.close();
    }
  });

  it('stores the dev token only as a hash, in a 0600 file', async () => {
    const dataDir = fresh();
    const s = await startService({ dataDir, logger: false });
    await s.close();
    const file = join(dataDir, 'dev-token');
    expect(readFileSync(file, 'utf8').trim()).toBe(s.token);
    expect(statSync(file).mode & 0o777).toBe(0o600);
    for (const name of ['service.db', 'service.db-wal']) {
      let bytes: Buffer;
      try {
        bytes = readFileSync(join(dataDir, name));
      } catch {
        continue;
      }
      expect(bytes.includes(Buffer.from(s.token))).toBe(false);
    }
  });

  it('replaces a revoked dev token on the next start', async () => {
    const dataDir = fresh();
    const a = await startService({ dataDir, logger: false });
    await a.admin.revokeToken(a.token);
    await a.close();
    const b = await startService({ dataDir, logger: false });
    try {
      expect(b.token).not.toBe(a.token);
      expect((await call(b, 'GET', paths(b.workspaceId).waylines)).body.code).toBe(0);
      expect((await call(b, 'GET', paths(b.workspaceId).waylines, { token: a.token })).status).toBe(401);
    } finally {
      await b.close();
    }
  });
});

describe('schema versions', () => {
  it('refuses a database written by a newer version, and leaves it untouched', async () => {
    const dataDir = fresh();
    const s = await startService({ dataDir, logger: false });
    await s.close();
    const db = new Database(join(dataDir, 'service.db'));
    db.pragma('user_version = 999');
    db.close();
    const attempt = startService({ dataDir, logger: false });
    await expect(attempt).rejects.toBeInstanceOf(SchemaTooNewError);
    await expect(attempt).rejects.toThrow(
      new RegExp(`schema version 999.*only knows versions up to ${SCHEMA_VERSION}.*newer Drone Media Sync`),
    );
    const check = new Database(join(dataDir, 'service.db'));
    expect(check.pragma('user_version', { simple: true })).toBe(999);
    check.close();
  });

  it('creates the tables with WAL and foreign keys on a fresh dir', async () => {
    const dataDir = fresh();
    const s = await startService({ dataDir, logger: false });
    await s.close();
    const db = new Database(join(dataDir, 'service.db'));
    expect(db.pragma('journal_mode', { simple: true })).toBe('wal');
    const tables = db
      .prepare("SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name")
      .pluck()
      .all();
    expect(tables).toEqual([
      'bucket_credentials',
      'bucket_objects',
      'bucket_parts',
      'bucket_uploads',
      'login_failures',
      'media',
      'rate_limits',
      'tokens',
      'users',
      'waylines',
      'workspaces',
    ]);
    expect(db.pragma('user_version', { simple: true })).toBe(SCHEMA_VERSION);
    db.close();
  });

  it('upgrades a version 1 database in place: data kept, the later indexes, bucket and throttle tables added, tiny fingerprints filled in', async () => {
    const dataDir = fresh();
    const s = await startService({ dataDir, logger: false });
    await s.close();
    // Back to what version 1 left behind (its schema had no such indexes, no bucket tables).
    const old = new Database(join(dataDir, 'service.db'));
    old.exec(`DROP INDEX waylines_by_name; DROP INDEX waylines_by_create;
      DROP TABLE bucket_parts; DROP TABLE bucket_uploads; DROP TABLE bucket_objects;
      ALTER TABLE bucket_credentials DROP COLUMN endpoint_host;
      DROP INDEX media_by_tiny_fingerprint; ALTER TABLE media DROP COLUMN tiny_fingerprint;
      DROP TABLE login_failures; DROP TABLE rate_limits;`);
    old.pragma('user_version = 1');
    const workspace = old.prepare('SELECT id FROM workspaces').pluck().get() as string;
    const media =
      old.prepare(`INSERT INTO media (workspace_id, fingerprint, name, object_key, result, ext, source, created_at)
      VALUES (?, ?, ?, ?, 0, ?, 'callback', 0)`);
    media.run(
      workspace,
      'a'.repeat(32),
      'A.JPG',
      `${workspace}/A.JPG`,
      JSON.stringify({ tinny_fingerprint: 'AB_2024_1_2_3_4_5' }),
    );
    media.run(workspace, 'b'.repeat(32), 'B.JPG', `${workspace}/B.JPG`, JSON.stringify({ sn: 'X' }));
    const before = old.prepare('SELECT count(*) FROM waylines').pluck().get();
    old.close();
    const again = await startService({ dataDir, logger: false });
    await again.close();
    const db = new Database(join(dataDir, 'service.db'));
    expect(db.pragma('user_version', { simple: true })).toBe(SCHEMA_VERSION);
    expect(db.prepare('SELECT count(*) FROM waylines').pluck().get()).toBe(before);
    const indexes = db
      .prepare("SELECT name FROM sqlite_master WHERE type = 'index' AND tbl_name = 'waylines'")
      .pluck()
      .all();
    expect(indexes).toEqual(
      expect.arrayContaining(['waylines_by_update', 'waylines_by_name', 'waylines_by_create']),
    );
    const plan = db
      .prepare(
        "EXPLAIN QUERY PLAN SELECT * FROM waylines WHERE workspace_id = 'w' ORDER BY name DESC, id ASC LIMIT 10",
      )
      .all();
    expect(JSON.stringify(plan)).toContain('waylines_by_name');
    const columns = db.prepare('SELECT name FROM pragma_table_info(?)').pluck();
    expect(columns.all('bucket_objects')).toContain('md5');
    expect(columns.all('bucket_credentials')).toContain('endpoint_host');
    expect(db.prepare('SELECT name, tiny_fingerprint FROM media ORDER BY name').all()).toEqual([
      { name: 'A.JPG', tiny_fingerprint: 'ab_2024_1_2_3_4_5' },
      { name: 'B.JPG', tiny_fingerprint: null },
    ]);
    expect(columns.all('login_failures')).toContain('blocked_until');
    db.close();
  });
});

describe('options', () => {
  it('refuses nonsense options before touching anything', async () => {
    await expect(startService({ dataDir: fresh(), logger: false, stsExpireSeconds: 0 })).rejects.toThrow(
      /stsExpireSeconds/,
    );
    await expect(startService({ dataDir: fresh(), logger: false, bodyLimitBytes: 10 })).rejects.toThrow(
      /bodyLimitBytes/,
    );
  });
});

describe('logging', () => {
  it('logs requests but never a token, password or bucket secret', async () => {
    const lines: string[] = [];
    const sink = new Writable({
      write(chunk: Buffer, _enc, done) {
        lines.push(chunk.toString());
        done();
      },
    });
    const dataDir = fresh();
    const s = await startService({ dataDir, logger: pino({ level: 'debug' }, sink) });
    try {
      const password = readFileSync(join(dataDir, 'pilot-password'), 'utf8').trim();
      const login = await call(s, 'POST', '/manage/api/v1/login', {
        token: null,
        body: { username: 'pilot', password, flag: 2 },
      });
      const sts = await getSts(s);
      await call(s, 'GET', '/nowhere');
      const log = lines.join('');
      expect(log).toContain('pilot-password'); // where to find it, once
      expect(log).toContain('/manage/api/v1/login');
      for (const secret of [
        s.token,
        password,
        login.body.data.access_token,
        sts.credentials.access_key_secret,
        sts.credentials.security_token,
      ]) {
        expect(log).not.toContain(secret);
      }
      // One access line per request, when it is answered: what, from where, the answer, how long.
      const access = lines
        .flatMap((l) => l.split('\n'))
        .filter(Boolean)
        .map(
          (l) =>
            JSON.parse(l) as { msg: string; req?: { method: string; url: string; remoteAddress: string } },
        )
        .filter((l) => l.req);
      expect(access.map((l) => `${l.msg} ${l.req!.method} ${l.req!.url}`)).toEqual([
        'request completed POST /manage/api/v1/login',
        `request completed POST ${paths(s.workspaceId).sts}`,
        'request completed GET /nowhere',
      ]);
      expect(access.at(-1)).toMatchObject({
        req: { remoteAddress: '127.0.0.1' },
        res: { statusCode: 404 },
        responseTime: expect.any(Number),
      });
    } finally {
      await s.close();
    }
  });
});
