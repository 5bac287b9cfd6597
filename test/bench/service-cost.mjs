#!/usr/bin/env node
// CPU of the reference service per request kind (not part of `npm test`): starts
// `serve` from a build, sends N requests of each kind (4 at a time, keep-alive),
// and reads the service's CPU (user + system, /proc/<pid>/stat) around each batch.
// CPU seconds do not depend on the machine's load as wall time does.
//   node test/bench/service-cost.mjs [--dist dist] [--n 2000] [--kb 64] [--node-args "--cpu-prof ..."]
import { spawn } from 'node:child_process';
import { createHash, randomBytes } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { S3Client, PutObjectCommand, HeadObjectCommand } from '@aws-sdk/client-s3';
import http from 'node:http';
import { setTimeout as sleep } from 'node:timers/promises';

const REPO = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..');
const { values: opt } = parseArgs({
  options: {
    dist: { type: 'string', default: 'dist' },
    n: { type: 'string', default: '2000' },
    kb: { type: 'string', default: '64' },
    'node-args': { type: 'string' },
    kinds: { type: 'string', default: 'health,fast-upload,put,head,callback,sts' },
  },
});
const N = Number(opt.n);
const BODY = randomBytes(Number(opt.kb) * 1024);
const MD5 = createHash('md5').update(BODY).digest();
const CONC = 4;
const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'dms-svc-cost-'));
const bin = path.join(path.resolve(REPO, opt.dist), 'main', 'cli', 'bin.js');
const child = spawn(
  process.execPath,
  [...(opt['node-args'] ?? '').split(' ').filter(Boolean), bin, 'serve', '--port', '0', '--data', tmp],
  { env: { ...process.env, DMS_LOG_LEVEL: 'warn' }, stdio: ['ignore', 'pipe', 'inherit'] },
);
// The service goes with this script, whatever ends it.
process.on('exit', () => child.exitCode === null && child.kill('SIGTERM'));
const info = await new Promise((resolve) => {
  let buf = '';
  child.stdout.setEncoding('utf8');
  child.stdout.on('data', (d) => {
    buf += d;
    if (buf.includes('\n')) resolve(JSON.parse(buf.slice(0, buf.indexOf('\n'))));
  });
});
const tick = 100; // USER_HZ
/** The service's CPU seconds so far: user, system (the kernel's share: file creation, writes, sockets). */
const cpuParts = () => {
  const f = fs.readFileSync(`/proc/${child.pid}/stat`, 'utf8').split(') ')[1].split(' ');
  return [Number(f[11]) / tick, Number(f[12]) / tick];
};
const agent = new http.Agent({ keepAlive: true, maxSockets: CONC });
const api = async (p, body) => {
  const res = await globalThis.fetch(`${info.base_url}${p}`, {
    method: 'POST',
    headers: { 'x-auth-token': info.token, 'content-type': 'application/json' },
    body: JSON.stringify(body ?? {}),
  });
  return res.json();
};
const ws = info.workspace_id;
const sts = (await api(`/storage/api/v1/workspaces/${ws}/sts`)).data;
const c = sts.credentials;
const s3 = new S3Client({
  region: sts.region,
  endpoint: sts.endpoint,
  forcePathStyle: true,
  credentials: {
    accessKeyId: c.access_key_id,
    secretAccessKey: c.access_key_secret,
    sessionToken: c.security_token,
  },
  requestHandler: { httpAgent: agent },
  requestChecksumCalculation: 'WHEN_REQUIRED',
});
const key = (i) => `${sts.object_key_prefix}/cost/f${i}.jpg`;
const fp = (i) => createHash('md5').update(`x${i}`).digest('hex');

const KINDS = new Set(opt.kinds.split(','));
async function batch(kind, name, fn) {
  if (!KINDS.has(kind)) return;
  const before = cpuParts();
  const t0 = process.hrtime.bigint();
  let next = 0;
  await Promise.all(
    Array.from({ length: CONC }, async () => {
      while (next < N) await fn(next++);
    }),
  );
  await sleep(300); // the service's CPU figure is updated at ticks
  const [user, sys] = cpuParts().map((v, i) => ((v - before[i]) * 1000) / N);
  const wall = Number(process.hrtime.bigint() - t0) / 1e9;
  console.log(
    `${name.padEnd(32)} ${(user + sys).toFixed(3)} ms CPU/request (user ${user.toFixed(3)}, system ${sys.toFixed(3)})  (${N} in ${wall.toFixed(1)} s wall)`,
  );
}

// The framework's floor: a GET without token, body or database.
await batch('health', 'GET /healthz (floor)', () =>
  globalThis.fetch(`${info.base_url}/healthz`).then((r) => r.arrayBuffer()),
);
await batch('fast-upload', 'fast-upload (unknown)', (i) =>
  api(`/media/api/v1/workspaces/${ws}/fast-upload`, {
    fingerprint: fp(i),
    name: `f${i}.jpg`,
    path: 'DCIM/x',
  }),
);
const put = (i) =>
  s3.send(
    new PutObjectCommand({ Bucket: sts.bucket, Key: key(i), Body: BODY, ContentMD5: MD5.toString('base64') }),
  );
await batch('put', `PUT ${opt.kb} KiB with Content-MD5`, put);
// HEAD and the callback find the object of the first PUT when the PUTs were not measured.
if (!KINDS.has('put')) await put(0);
const have = (i) => (KINDS.has('put') ? i : 0);
await batch('head', 'HEAD', (i) => s3.send(new HeadObjectCommand({ Bucket: sts.bucket, Key: key(have(i)) })));
await batch('callback', 'upload-callback', (i) =>
  api(`/media/api/v1/workspaces/${ws}/upload-callback`, {
    result: 0,
    name: `f${i}.jpg`,
    object_key: key(have(i)),
    fingerprint: createHash('md5').update(BODY).digest('hex'),
    path: 'DCIM/x',
  }),
);
await batch('sts', 'sts', () => api(`/storage/api/v1/workspaces/${ws}/sts`));
child.kill('SIGTERM');
await new Promise((r) => child.once('exit', r));
fs.rmSync(tmp, { recursive: true, force: true });
agent.destroy();
