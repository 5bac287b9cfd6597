#!/usr/bin/env node
// Row 4 (5,000 × 64 KiB files) is bound by CPU on two shared cores: what do a small file's
// parts cost the agent at the least? Not part of `npm test`. Measures, each alone and
// idle otherwise (process CPU, user + system, so the machine's load matters less):
//  - a bare HTTP client's CPU per small JSON POST (undici.request, as the agent's API client,
//    and node:http), three at a time on keep-alive, against a bare node:http server in
//    another process: the floor of each of the agent's three requests a file;
//  - the queue's five state changes of a small file (hashed, not-known, uploaded,
//    callback-sent, recorded) and its commits, as raw SQL on the real schema (a Queue file
//    with 5,000 rows): the floor of the queue's share.
// Compare with the service's CPU per request kind (service-cost.mjs) and the agent's CPU per
// file in the bench (`--only small`). Run after `npm run build`:
//   node test/bench/row4-floor.mjs [--n 4000]
import { Buffer } from 'node:buffer';
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import http from 'node:http';
import { createRequire } from 'node:module';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { parseArgs } from 'node:util';

const REPO = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..');
const { values: opt } = parseArgs({ options: { n: { type: 'string', default: '4000' } } });
const N = Number(opt.n);
const undici = createRequire(path.join(REPO, 'package.json'))('undici');

/** A server answering every POST with the envelope of "nothing", in its own process. */
async function startServer() {
  const code = `
    const http = require('node:http');
    const s = http.createServer((req, res) => {
      req.resume();
      req.on('end', () => { res.setHeader('content-type', 'application/json'); res.end('{"code":0,"message":"success","data":{}}'); });
    });
    s.keepAliveTimeout = 60000;
    s.listen(0, '127.0.0.1', () => console.log(s.address().port));`;
  const child = spawn(process.execPath, ['-e', code], { stdio: ['ignore', 'pipe', 'inherit'] });
  const port = await new Promise((resolve) =>
    child.stdout.once('data', (d) => resolve(Number(String(d).trim()))),
  );
  return { child, port };
}

async function clientCost(port, kind) {
  const url = `http://127.0.0.1:${port}/media/api/v1/workspaces/w/fast-upload`;
  const body = JSON.stringify({
    fingerprint: 'a'.repeat(32),
    name: 'DJI_20240506101000_0001_W.JPG',
    ext: {
      drone_model_key: '0-77-0',
      payload_model_key: '1-66-0',
      is_original: true,
      tinny_fingerprint: 'b'.repeat(32),
      sn: '1581F5FHD',
    },
  });
  const headers = { 'content-type': 'application/json', authorization: `Bearer ${'x'.repeat(120)}` };
  const pool = new undici.Agent({ connections: 3 });
  const agent = new http.Agent({ keepAlive: true, maxSockets: 3 });
  const one =
    kind === 'undici'
      ? async () => {
          const r = await undici.request(url, { method: 'POST', body, headers, dispatcher: pool });
          return JSON.parse(await r.body.text());
        }
      : () =>
          new Promise((resolve, reject) => {
            const req = http.request(
              url,
              { method: 'POST', agent, headers: { ...headers, 'content-length': Buffer.byteLength(body) } },
              (res) => {
                let s = '';
                res.setEncoding('utf8');
                res.on('data', (d) => (s += d));
                res.on('end', () => resolve(JSON.parse(s)));
              },
            );
            req.on('error', reject);
            req.end(body);
          });
  const round = async () => {
    let left = N;
    const worker = async () => {
      while (left-- > 0) await one();
    };
    await Promise.all([worker(), worker(), worker()]);
  };
  await round(); // warm: connections, JIT
  const c0 = process.cpuUsage();
  await round();
  const c = process.cpuUsage(c0);
  await pool.close();
  agent.destroy();
  return (c.user + c.system) / N / 1000;
}

async function queueCost() {
  const { Queue } = await import(pathToFileURL(path.join(REPO, 'dist/main/core/queue/queue.js')).href);
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'dms-row4-floor-'));
  const files = 5000;
  try {
    const q = new Queue(path.join(dir, 'queue.db'));
    q.bindTarget({ key: 'bench', label: 'bench', workspaceId: 'w' });
    q.observe(
      Array.from({ length: files }, (_, i) => ({
        sourceId: 'card:bench',
        relPath: `DCIM/DJI_202405061015_001_Quarry/DJI_${String(i).padStart(4, '0')}.JPG`,
        absPath: `/media/CARD/DCIM/DJI_202405061015_001_Quarry/DJI_${String(i).padStart(4, '0')}.JPG`,
        size: 65536,
        mtimeMs: 1_700_000_000_000,
      })),
    );
    const db = q.db; // the real schema, indexes and triggers
    const ids = db.prepare('SELECT id FROM files').pluck().all();
    const info = JSON.stringify({ name: 'DJI_0001.JPG', metadata: { note: 'x'.repeat(700) } });
    const steps = [
      "UPDATE files SET state='hashed', fingerprint=@f, tiny_fingerprint=@f, info_json=@info, updated_at=@t WHERE id=@id AND state='discovered'",
      "UPDATE files SET state='fast-upload-checked', updated_at=@t WHERE id=@id AND state='hashed'",
      "UPDATE files SET state='uploaded', object_key=@k, bytes_sent=65536, updated_at=@t WHERE id=@id AND state='fast-upload-checked'",
      "UPDATE files SET state='callback-sent', updated_at=@t WHERE id=@id AND state='uploaded'",
      "UPDATE files SET state='done', updated_at=@t WHERE id=@id AND state='callback-sent'",
    ].map((sql) => db.prepare(sql));
    let changed = 0;
    const c0 = process.cpuUsage();
    // As the queue does: the changes that may wait share a commit with the one that may not
    // (callback-sent), and 'recorded' waits for the next file's.
    for (const id of ids) {
      const p = {
        id,
        t: Date.now(),
        f: '0123456789abcdef0123456789abcdef',
        info,
        k: 'media/w/0123/DJI_0001.JPG',
      };
      if (!db.inTransaction) db.exec('BEGIN');
      for (const s of steps.slice(0, 4)) changed += s.run(p).changes;
      db.exec('COMMIT');
      db.exec('BEGIN');
      changed += steps[4].run(p).changes;
    }
    if (db.inTransaction) db.exec('COMMIT');
    const c = process.cpuUsage(c0);
    if (changed !== files * 5) throw new Error(`${changed} changes, expected ${files * 5}`);
    q.close();
    return (c.user + c.system) / files / 1000;
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
}

const { child, port } = await startServer();
try {
  for (const kind of ['undici', 'http', 'undici', 'http'])
    console.log(
      `client CPU per small POST (${kind.padEnd(6)}): ${(await clientCost(port, kind)).toFixed(3)} ms`,
    );
} finally {
  child.kill();
}
for (let i = 0; i < 2; i++)
  console.log(
    `queue: five state changes and two commits per small file: ${(await queueCost()).toFixed(3)} ms CPU`,
  );
