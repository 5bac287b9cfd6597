/**
 * `serve --bucket-config <file>`: the external bucket mode configured from a
 * JSON file, so the secret key stays off the command line. Against a real S3
 * engine in test/peers/ceph/service.peer.test.ts; here: what a wrong file
 * does, and that a right one is used.
 */
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { tempDir } from '../support/harness.js';

const BIN = path.resolve('dist/main/cli/bin.js');
const SECRET = 'bucket-secret-never-shown-4242';
const good = {
  provider: 'minio',
  // Port 9 on loopback: nothing listens, the STS call is refused at once.
  endpoint: 'http://127.0.0.1:9',
  region: 'us-east-1',
  bucket: 'drone-media',
  accessKeyId: 'AKIDEXAMPLE',
  secretAccessKey: SECRET,
};
let dir: string;
beforeAll(() => {
  dir = tempDir('dms-serve-bucket-');
});
afterAll(() => fs.rmSync(dir, { recursive: true, force: true }));

function serve(file: string) {
  const child = spawn(
    process.execPath,
    [BIN, 'serve', '--data', path.join(dir, 'data'), '--bucket-config', file],
    {
      stdio: ['ignore', 'pipe', 'pipe'],
    },
  );
  let out = '';
  let err = '';
  child.stdout.on('data', (d) => (out += String(d)));
  child.stderr.on('data', (d) => (err += String(d)));
  const exited = new Promise<number | null>((r) => child.on('exit', r));
  return { child, exited, output: () => ({ out, err }) };
}

function writeConfig(name: string, content: string, mode = 0o600): string {
  const file = path.join(dir, name);
  fs.writeFileSync(file, content, { mode });
  fs.chmodSync(file, mode);
  return file;
}

it.each([
  ['a missing file', () => path.join(dir, 'nope.json'), /nope\.json cannot be read \(ENOENT\)\./],
  [
    'a file that is not JSON',
    () => writeConfig('bad.json', `{ "secretAccessKey": "${SECRET}" `),
    /bad\.json is not valid JSON\./,
  ],
  [
    'a wrong field',
    () => writeConfig('field.json', JSON.stringify({ ...good, bucket: 'Bad_Bucket' })),
    /field\.json has a wrong setting: bucket is not valid: must be a valid bucket name/,
  ],
])('%s: exit 2, the file and the reason named, never the secret', async (_name, file, message) => {
  const s = serve(file());
  expect(await s.exited).toBe(2);
  const { out, err } = s.output();
  expect(err).toMatch(message);
  expect(out + err).not.toContain(SECRET);
});

it('a right file is used (STS goes to its endpoint); other users able to read it get a warning', async () => {
  const s = serve(writeConfig('good.json', JSON.stringify(good), 0o644));
  try {
    await new Promise<void>((resolve, reject) => {
      s.child.stdout.on('data', () => s.output().out.includes('\n') && resolve());
      void s.exited.then(() => reject(new Error(`serve ended: ${s.output().err}`)));
    });
    const ready = JSON.parse(s.output().out) as { base_url: string; workspace_id: string; token: string };
    const res = await fetch(`${ready.base_url}/storage/api/v1/workspaces/${ready.workspace_id}/sts`, {
      method: 'POST',
      headers: { 'x-auth-token': ready.token },
    });
    expect(res.status).toBe(502);
    expect(((await res.json()) as { message: string }).message).toMatch(/from the minio STS/);
    expect(s.output().err).toMatch(/other users can read it; run: chmod 600 .*good\.json/);
    expect(s.output().out + s.output().err).not.toContain(SECRET);
  } finally {
    s.child.kill('SIGTERM');
    await s.exited;
  }
});
