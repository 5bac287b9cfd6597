import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import https from 'node:https';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { ApiClient } from '../../main/core/api/client.js';
import { makeTestCa } from '../support/certs.js';
import { dispatcherWithCa, loadCaFile } from '../../main/core/tls.js';

// A real HTTPS server with a certificate from a throw-away CA made by openssl.
let dir: string;
let server: https.Server;
let baseUrl: string;

beforeAll(async () => {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'dms-tls-'));
  const ca = makeTestCa(dir);
  server = https.createServer({ key: ca.key, cert: ca.cert }, (_req, res) => {
    res.setHeader('content-type', 'application/json');
    res.end(
      JSON.stringify({
        code: 0,
        message: 'success',
        data: { list: [], pagination: { page: 1, page_size: 10, total: 0 } },
      }),
    );
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  baseUrl = `https://127.0.0.1:${(server.address() as { port: number }).port}`;
});
afterAll(async () => {
  await new Promise((r) => server.close(r));
  fs.rmSync(dir, { recursive: true, force: true });
});

it('refuses a server whose certificate is not trusted, with a plain reason', async () => {
  const api = new ApiClient({ baseUrl, workspaceId: 'ws', token: 't' });
  await expect(api.listWaylines({})).rejects.toMatchObject({
    kind: 'network',
    message: expect.stringMatching(/certificate/i),
  });
});

it('trusts it once its CA is configured (caFile), and still refuses other certificates', async () => {
  const api = new ApiClient({
    baseUrl,
    workspaceId: 'ws',
    token: 't',
    dispatcher: dispatcherWithCa(loadCaFile(path.join(dir, 'ca.pem'))),
  });
  await expect(api.listWaylines({})).resolves.toMatchObject({ pagination: { total: 0 } });
  // a CA file that is not the server's CA: still refused, never ignored
  {
    fs.writeFileSync(path.join(dir, 'other.cnf'), '');
    execFileSync(
      'openssl',
      [
        'req',
        '-x509',
        '-newkey',
        'ec',
        '-pkeyopt',
        'ec_paramgen_curve:prime256v1',
        '-nodes',
        '-keyout',
        'o.key',
        '-out',
        'other.pem',
        '-days',
        '2',
        '-subj',
        '/CN=Other CA',
      ],
      { cwd: dir, stdio: 'pipe' },
    );
    const other = new ApiClient({
      baseUrl,
      workspaceId: 'ws',
      token: 't',
      dispatcher: dispatcherWithCa(loadCaFile(path.join(dir, 'other.pem'))),
    });
    await expect(other.listWaylines({})).rejects.toMatchObject({ kind: 'network' });
  }
});

it('says clearly when the CA file is missing or not a certificate', () => {
  expect(() => loadCaFile(path.join(dir, 'nope.pem'))).toThrow(/cannot be read/);
  fs.writeFileSync(path.join(dir, 'junk.pem'), 'hello');
  expect(() => loadCaFile(path.join(dir, 'junk.pem'))).toThrow(/no PEM certificate/);
});
