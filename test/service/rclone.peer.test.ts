/**
 * rclone, a real third-party S3 client (Debian's package, not a dependency of
 * the product), against the embedded bucket: copy up (rclone 1.60 signs
 * single PUTs as UNSIGNED-PAYLOAD with Content-MD5, parts with their SHA-256
 * and Expect: 100-continue), list, copy back, check.
 * A peer test: `npm test` does not run it (rclone is not there on a fresh
 * machine); the peer tier (`npm run test:peers`, every *.peer.test.ts in test/)
 * does once `apt-get install -y rclone` has.
 */
import { execFile } from 'node:child_process';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CODES } from '../../main/service/index.js';
import { call, getSts, md5Hex, paths, startTemp, tempDir, removeDir, type Loose } from './helpers.js';

const run = promisify(execFile);

let s: Awaited<ReturnType<typeof startTemp>>;
let work: string;
beforeAll(async () => {
  s = await startTemp();
  work = tempDir();
});
afterAll(async () => {
  await s.stop();
  removeDir(work);
});

/** rclone configured only through environment variables (no config file), as the benchmark does. */
function rcloneEnv(sts: Loose, secret = sts.credentials.access_key_secret): NodeJS.ProcessEnv {
  const p = 'RCLONE_CONFIG_DMS_';
  const env: NodeJS.ProcessEnv = {
    ...process.env,
    RCLONE_CONFIG: join(work, 'none.conf'),
    [`${p}TYPE`]: 's3',
    [`${p}PROVIDER`]: 'Minio',
    [`${p}ACCESS_KEY_ID`]: sts.credentials.access_key_id,
    [`${p}SECRET_ACCESS_KEY`]: secret,
    [`${p}SESSION_TOKEN`]: sts.credentials.security_token,
    [`${p}ENDPOINT`]: sts.endpoint,
    [`${p}REGION`]: sts.region,
    [`${p}FORCE_PATH_STYLE`]: 'true',
    // The bucket exists and credentials cannot create buckets.
    [`${p}NO_CHECK_BUCKET`]: 'true',
    // Multipart from 5 MiB, so a 12 MiB file goes in three parts.
    [`${p}UPLOAD_CUTOFF`]: '5M',
    [`${p}CHUNK_SIZE`]: '5M',
  };
  delete env.AWS_CA_BUNDLE; // rclone refuses to start with it
  return env;
}

const rclone = (args: string[], env: NodeJS.ProcessEnv) =>
  run('rclone', ['--retries', '1', '--low-level-retries', '1', ...args], { env, maxBuffer: 16 << 20 });

/** Deterministic incompressible-looking bytes. */
function bytes(n: number, seed: number): Buffer {
  const b = Buffer.allocUnsafe(n);
  let x = seed;
  for (let i = 0; i < n; i++) {
    x = (x * 1103515245 + 12345) >>> 0;
    b[i] = x >>> 24;
  }
  return b;
}

describe('rclone against the embedded bucket', () => {
  it('copies files up (single and multipart, odd names), lists them, and copies them back byte for byte', async () => {
    const src = join(work, 'card');
    mkdirSync(join(src, 'DCIM'), { recursive: true });
    const files: Record<string, Buffer> = {
      'DCIM/DJI_0001.JPG': bytes(70_000, 1),
      'DCIM/name with spaces+plus (1) é.JPG': bytes(1000, 2),
      'DCIM/DJI_0002.MP4': bytes(12 * 1024 * 1024 + 17, 3),
      'empty.txt': Buffer.alloc(0),
    };
    for (const [name, content] of Object.entries(files)) writeFileSync(join(src, name), content);
    const sts = await getSts(s);
    const env = rcloneEnv(sts);
    const dest = `dms:${sts.bucket}/${sts.object_key_prefix}/rclone`;

    await rclone(['copy', src, dest], env);
    const listed = JSON.parse((await rclone(['lsjson', '-R', '--files-only', dest], env)).stdout) as {
      Path: string;
      Size: number;
    }[];
    expect(listed.map((f) => [f.Path, f.Size]).sort()).toEqual(
      Object.entries(files)
        .map(([name, content]) => [name, content.length])
        .sort(),
    );
    // rclone's own comparison: sizes, and MD5s where the ETag gives them.
    await rclone(['check', src, dest], env);

    const back = join(work, 'back');
    await rclone(['copy', dest, back], env);
    for (const [name, content] of Object.entries(files)) {
      expect(readFileSync(join(back, name)).equals(content)).toBe(true);
    }

    // The bucket knows each object's MD5, multipart included: callbacks with it are accepted.
    for (const [name, content] of Object.entries(files)) {
      const r = await call(s, 'POST', paths(s.workspaceId).callback, {
        body: {
          result: 0,
          name: name.split('/').pop(),
          object_key: `${sts.object_key_prefix}/rclone/${name}`,
          fingerprint: md5Hex(content),
        },
      });
      expect(r.body.code).toBe(0);
    }
  });

  it('lists, checks and copies names that sort next to the delimiter: a second copy sends nothing', async () => {
    // DCIM0 sorts right after the common prefix DCIM/ ('0' follows '/'): it
    // was lost from listings, so `check` saw a difference and every `copy`
    // sent it again.
    const names = [
      'DCIM/100MEDIA/DJI_0001.JPG',
      'DCIM0',
      'DCIM1.txt',
      'a/b',
      'a-',
      'a.',
      'a0',
      'a~',
      'é/x',
      'é.',
      'é0',
      '🚁/y',
      '🚁0',
    ];
    const src = join(work, 'edges');
    for (const [i, name] of names.entries()) {
      mkdirSync(dirname(join(src, name)), { recursive: true });
      writeFileSync(join(src, name), bytes(100 + i, 10 + i));
    }
    const sts = await getSts(s);
    const env = rcloneEnv(sts);
    const dest = `dms:${sts.bucket}/${sts.object_key_prefix}/edges`;
    const copied = (log: string): string[] =>
      [...log.matchAll(/INFO {2}: (.+?): Copied \(new\)/g)].map((m) => m[1]!).sort();

    const first = await rclone(['copy', '-v', src, dest], env);
    expect(copied(first.stderr)).toEqual([...names].sort());
    const listed = (await rclone(['lsf', '-R', '--files-only', dest], env)).stdout
      .split('\n')
      .filter(Boolean);
    expect(listed.sort()).toEqual([...names].sort());
    await rclone(['check', src, dest], env);
    const second = await rclone(['copy', '-v', src, dest], env);
    expect(copied(second.stderr)).toEqual([]);
    expect(second.stderr).not.toMatch(/Copied/);
  });

  it('is refused with a wrong secret, and outside its own prefix', async () => {
    const sts = await getSts(s);
    const src = join(work, 'one');
    mkdirSync(src, { recursive: true });
    writeFileSync(join(src, 'a.jpg'), 'a');
    const wrong = rcloneEnv(sts, `${sts.credentials.access_key_secret.slice(0, -2)}xx`);
    await expect(
      rclone(['copy', src, `dms:${sts.bucket}/${sts.object_key_prefix}/x`], wrong),
    ).rejects.toThrow(/SignatureDoesNotMatch/);
    const other = await s.admin.createWorkspace('Other crew');
    await expect(rclone(['lsjson', `dms:${sts.bucket}/${other}`], rcloneEnv(sts))).rejects.toThrow(
      /AccessDenied/,
    );
    await expect(rclone(['lsjson', `dms:${sts.bucket}`], rcloneEnv(sts))).rejects.toThrow(/AccessDenied/);
    // Nothing arrived for the callback to find.
    const r = await call(s, 'POST', paths(s.workspaceId).callback, {
      body: {
        result: 0,
        name: 'a.jpg',
        object_key: `${sts.object_key_prefix}/x/a.jpg`,
        fingerprint: md5Hex('a'),
      },
    });
    expect(r.body.code).toBe(CODES.OBJECT_NOT_FOUND);
  });
});
