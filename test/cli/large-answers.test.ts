/**
 * Issue 30, hostile answers the agent reads: the real CLI (dist/) against a
 * loopback server answering a 50 MB waylines page — said to be too large,
 * in the crew's words, with no request path or byte count of the guard.
 */
import fs from 'node:fs';
import http from 'node:http';
import type net from 'node:net';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BIN, runCli } from '../support/cli.js';
import { tempDir } from '../support/harness.js';

let dir: string;
let server: http.Server;
let base: string;
beforeAll(async () => {
  expect(fs.existsSync(BIN), 'run npm run build first').toBe(true);
  dir = tempDir('dms-large-');
  // Every request: a 200 envelope whose body is 50 MB of one wayline name, streamed.
  server = http.createServer((_req, res) => {
    res.writeHead(200, { 'content-type': 'application/json' });
    res.write('{"code":0,"message":"success","data":{"list":[{"id":"w1","name":"');
    const chunk = 'x'.repeat(1024 * 1024);
    let n = 0;
    const more = (): void => {
      while (n < 50) {
        n++;
        if (!res.write(chunk)) return void res.once('drain', more);
      }
      res.end('"}],"pagination":{"page":1,"page_size":10,"total":1}}}');
    };
    res.on('error', () => undefined);
    more();
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  base = `http://127.0.0.1:${(server.address() as net.AddressInfo).port}`;
});
afterAll(async () => {
  server.closeAllConnections();
  await new Promise((r) => server.close(r));
  fs.rmSync(dir, { recursive: true, force: true });
});

describe('answers too large to read', () => {
  it('a 50 MB waylines page: "too large", what to do, exit 1, no path or byte count', async () => {
    const home = path.join(dir, 'home');
    fs.mkdirSync(home);
    const r = await runCli(['waylines', '--server', base, '--workspace', 'ws-1'], {
      home,
      env: { DMS_TOKEN: 'a-token' },
    });
    const all = r.out + r.err;
    expect(r.code, all).toBe(1);
    expect(all).toMatch(/too large \(more than 8 MB/);
    expect(all).toMatch(/--page-size/);
    expect(all).not.toMatch(/not a valid answer|\/api\/v1\/|\d{7,} bytes/);
  }, 60_000);
});

describe('an answer nested too deep', () => {
  it('an STS answer nested 10^5 levels deep: the file fails in the crew words, no path, no parser detail', async () => {
    const { startHostileServer, nestedJson } = await import('../support/hostile-server.js');
    const { makeCard } = await import('../support/harness.js');
    const h = await startHostileServer();
    try {
      h.answer('sts', {
        kind: 'reply',
        status: 200,
        body: `{"code":0,"message":"ok","data":${nestedJson(100_000)}}`,
      });
      const home = path.join(dir, 'home-deep');
      fs.mkdirSync(home);
      const card = makeCard(path.join(dir, 'card-deep'), 'DJI_202209021517_001_Waypoint1', [
        'M30T/M30T_IR.JPG',
      ]);
      const r = await runCli(['sync', card, '--server', h.baseUrl, '--workspace', h.workspaceId], {
        home,
        env: { DMS_TOKEN: h.token },
      });
      const all = r.out + r.err;
      expect(r.code, all).toBe(1);
      expect(all).toMatch(
        /FAILED .*M30T_IR\.JPG: The server sent an answer that cannot be valid \(nested more than 64 levels deep\)/,
      );
      expect(all).not.toMatch(/\/api\/v1\/|nests deeper/);
    } finally {
      await h.close();
    }
  }, 90_000);
});
