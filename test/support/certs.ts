import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';

/**
 * A throw-away certificate authority and a server certificate for 127.0.0.1
 * signed by it, made with openssl in `dir` (valid two days). For tests of
 * private-CA setups: the server presents srv.pem, clients trust ca.pem.
 */
export function makeTestCa(dir: string): { caPem: string; caFile: string; key: Buffer; cert: Buffer } {
  const o = (args: string[]) => execFileSync('openssl', args, { cwd: dir, stdio: 'pipe' });
  const ec = ['-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes'];
  o([
    'req',
    '-x509',
    ...ec,
    '-keyout',
    'ca.key',
    '-out',
    'ca.pem',
    '-days',
    '2',
    '-subj',
    '/CN=Test Field CA',
  ]);
  o(['req', ...ec, '-keyout', 'srv.key', '-out', 'srv.csr', '-subj', '/CN=127.0.0.1']);
  fs.writeFileSync(path.join(dir, 'ext.cnf'), 'subjectAltName=IP:127.0.0.1\n');
  o([
    'x509',
    '-req',
    '-in',
    'srv.csr',
    '-CA',
    'ca.pem',
    '-CAkey',
    'ca.key',
    '-CAcreateserial',
    '-out',
    'srv.pem',
    '-days',
    '2',
    '-extfile',
    'ext.cnf',
  ]);
  const caFile = path.join(dir, 'ca.pem');
  return {
    caPem: fs.readFileSync(caFile, 'utf8'),
    caFile,
    key: fs.readFileSync(path.join(dir, 'srv.key')),
    cert: fs.readFileSync(path.join(dir, 'srv.pem')),
  };
}
