/**
 * `serve --database postgres://…` when the database cannot be used at start,
 * in the operator's words (the built CLI). Two answers a real PostgreSQL
 * gives that a throw-away cluster cannot be made to give on cue, so a small
 * stand-in on loopback speaks the wire protocol's first exchange as
 * PostgreSQL 15 does:
 * - `sslmode=verify-full` to a server whose certificate this Node does not
 *   trust (its CA is not in Node's bundle: the recipe's private CA): the
 *   stand-in answers the SSLRequest with 'S' and a certificate signed by a CA
 *   made here with openssl;
 * - a server still starting up: the startup message is answered with the
 *   ErrorResponse PostgreSQL sends then (FATAL, 57P03 "the database system is
 *   starting up").
 */
import { execFileSync, spawn } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import tls from 'node:tls';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { removeDir, tempDir } from './helpers.js';

const BIN = path.resolve('dist/main/cli/bin.js');
let dir: string;
const servers: net.Server[] = [];

beforeAll(() => {
  dir = tempDir();
});
afterAll(async () => {
  await Promise.all(servers.map((s) => new Promise((r) => s.close(r))));
  removeDir(dir);
});

function listen(onSocket: (s: net.Socket) => void): Promise<number> {
  const server = net.createServer(onSocket);
  servers.push(server);
  return new Promise((resolve) =>
    server.listen(0, '127.0.0.1', () => resolve((server.address() as net.AddressInfo).port)),
  );
}

/** The first 8 bytes a client sends: its SSLRequest (length 8, code 80877103), or a startup message. */
function isSslRequest(b: Buffer): boolean {
  return b.length >= 8 && b.readInt32BE(0) === 8 && b.readInt32BE(4) === 80877103;
}

/** An ErrorResponse as PostgreSQL writes it: severity, code and message fields. */
function errorResponse(code: string, message: string): Buffer {
  const fields = Buffer.concat(
    [
      ['S', 'FATAL'],
      ['V', 'FATAL'],
      ['C', code],
      ['M', message],
    ].map(([k, v]) => Buffer.from(`${k}${v}\0`)),
  );
  const body = Buffer.concat([fields, Buffer.from([0])]);
  const head = Buffer.alloc(5);
  head.write('E', 0);
  head.writeInt32BE(body.length + 4, 1);
  return Buffer.concat([head, body]);
}

function serve(url: string): Promise<{ code: number | null; err: string }> {
  return new Promise((resolve) => {
    const child = spawn(
      process.execPath,
      [BIN, 'serve', '--port', '0', '--database', url, '--data', path.join(dir, 'data')],
      {
        env: {
          ...process.env,
          HOME: dir,
          DMS_STATE_DIR: '',
          NODE_EXTRA_CA_CERTS: '',
          PGPASSWORD: 'not-used',
        },
      },
    );
    let err = '';
    child.stderr.on('data', (d) => (err += String(d)));
    child.stdout.resume();
    child.on('exit', (code) => resolve({ code, err }));
  });
}

describe('serve on a PostgreSQL it cannot use at start', () => {
  it('a certificate from a CA Node does not trust: says so and names NODE_EXTRA_CA_CERTS', async () => {
    const ca = path.join(dir, 'ca');
    fs.mkdirSync(ca);
    const run = (args: string[]) => execFileSync('openssl', args, { cwd: ca, stdio: 'ignore' });
    run([
      'req',
      '-x509',
      '-newkey',
      'rsa:2048',
      '-nodes',
      '-keyout',
      'ca.key',
      '-out',
      'ca.crt',
      '-days',
      '2',
      '-subj',
      '/CN=dms test CA',
    ]);
    run([
      'req',
      '-newkey',
      'rsa:2048',
      '-nodes',
      '-keyout',
      'db.key',
      '-out',
      'db.csr',
      '-subj',
      '/CN=127.0.0.1',
    ]);
    fs.writeFileSync(path.join(ca, 'ext'), 'subjectAltName=IP:127.0.0.1\n');
    run([
      'x509',
      '-req',
      '-in',
      'db.csr',
      '-CA',
      'ca.crt',
      '-CAkey',
      'ca.key',
      '-CAcreateserial',
      '-out',
      'db.crt',
      '-days',
      '2',
      '-extfile',
      'ext',
    ]);
    const context = tls.createSecureContext({
      key: fs.readFileSync(path.join(ca, 'db.key')),
      cert: fs.readFileSync(path.join(ca, 'db.crt')),
    });
    const port = await listen((socket) => {
      socket.once('data', (first) => {
        if (!isSslRequest(first)) return socket.destroy();
        socket.write('S');
        const secure = new tls.TLSSocket(socket, { isServer: true, secureContext: context });
        secure.on('error', () => socket.destroy());
      });
    });
    const r = await serve(`postgres://dms@127.0.0.1:${port}/dms?sslmode=verify-full`);
    expect(r.code).not.toBe(0);
    expect(r.err).toMatch(/did not|does not trust/);
    expect(r.err).toContain('NODE_EXTRA_CA_CERTS');
    expect(r.err).not.toMatch(/The server had a problem/);
  });

  it('a database still starting up (57P03): says so, not "cannot be reached"', async () => {
    const port = await listen((socket) => {
      socket.on('data', (chunk) => {
        if (isSslRequest(chunk)) socket.write('N');
        else socket.end(errorResponse('57P03', 'the database system is starting up'));
      });
    });
    const r = await serve(`postgres://dms@127.0.0.1:${port}/dms`);
    expect(r.code).not.toBe(0);
    expect(r.err).toMatch(/starting up or shutting down \(57P03\)/);
    expect(r.err).not.toMatch(/cannot be reached/);
  });
});
