/**
 * `serve --sts-expire` above the role's session limit, against the real
 * Ceph RGW (rgw.ts): its role is made by `radosgw-admin role create`, whose
 * MaxSessionDuration is 3600 s. The service refuses to start and says the
 * fix; within the limit it starts ready and hands out credentials. (The
 * service tier runs the same against a stub of RGW's STS:
 * test/service/bucket-credentials.test.ts.)
 */
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BIN, rgwBucketConfig } from './peer.js';
import { startRgw, type Rgw } from './rgw.js';

let rgw: Rgw;
let dir: string;
beforeAll(async () => {
  rgw = await startRgw();
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'dms-sts-limit-'));
});
afterAll(async () => {
  await rgw?.stop();
  fs.rmSync(dir, { recursive: true, force: true });
});

/** `serve` with RGW as its bucket; resolves with its ready line, or its exit code and stderr. */
function serve(stsExpire: string, data: string) {
  const config = path.join(dir, 'bucket.json');
  fs.writeFileSync(config, JSON.stringify(rgwBucketConfig(rgw)), { mode: 0o600 });
  const child = spawn(
    process.execPath,
    [BIN, 'serve', '--port', '0', '--data', data, '--bucket-config', config, '--sts-expire', stsExpire],
    { env: { ...process.env, HOME: dir, DMS_STATE_DIR: '' } },
  );
  let out = '';
  let err = '';
  child.stdout.on('data', (d) => (out += String(d)));
  child.stderr.on('data', (d) => (err += String(d)));
  const ready = new Promise<{
    ready?: { base_url: string; workspace_id: string; token: string };
    code?: number | null;
  }>((resolve) => {
    child.stdout.on('data', () => {
      if (out.includes('\n')) resolve({ ready: JSON.parse(out.split('\n')[0]!) });
    });
    child.on('exit', (code) => resolve({ code }));
  });
  const stop = async () => {
    if (child.exitCode !== null || child.signalCode !== null) return;
    const exited = new Promise((r) => child.once('exit', r));
    child.kill('SIGTERM');
    await exited;
  };
  return { ready, stop, err: () => err };
}

describe('--sts-expire and the role of a real Ceph RGW (MaxSessionDuration 3600 s)', () => {
  it("7200 s: refused at start with the fix and RGW's own answer; 3600 s: ready, credentials for 3600 s", async () => {
    const over = serve('7200', path.join(dir, 'over'));
    const refused = await over.ready;
    // Before: it started, /readyz said 200, and every sts answered 502001 ("UnknownError" in the log).
    expect(refused.code, over.err()).toBe(2);
    expect(over.err()).toMatch(
      /^drone-media-sync: The bucket's STS refuses credentials \(HTTP 400 InvalidArgument \(request tx[^)]+\)\) for 7200 s \(--sts-expire\): the role allows 3600 s; lower --sts-expire or raise the role's MaxSessionDuration\.$/m,
    );

    const within = serve('3600', path.join(dir, 'within'));
    try {
      const { ready } = await within.ready;
      expect(ready, within.err()).toBeDefined();
      expect((await fetch(`${ready!.base_url}/readyz`)).status).toBe(200);
      const sts = await fetch(`${ready!.base_url}/storage/api/v1/workspaces/${ready!.workspace_id}/sts`, {
        method: 'POST',
        headers: { 'x-auth-token': ready!.token },
      });
      const body = (await sts.json()) as { code: number; data: { credentials: { expire: number } } };
      expect(body.code).toBe(0);
      expect(body.data.credentials.expire).toBeGreaterThan(3500);
      expect(body.data.credentials.expire).toBeLessThanOrEqual(3600);
    } finally {
      await within.stop();
    }
  });
});
