import { createHmac, randomBytes, randomUUID } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import { hashToken } from '../auth.js';
import { writeSecretFile } from '../bootstrap.js';
import type { Db } from '../db.js';
import type { BucketBackend } from './types.js';

export const EMBEDDED_BUCKET = 'media';
export const EMBEDDED_REGION = 'us-east-1';

// s3rver ships no types; these are the parts we use (checked against s3rver 3.7.1).
interface S3rverInstance {
  store: { existsObject(bucket: string, key: string): Promise<boolean> };
  configureBuckets(): Promise<unknown>;
  callback(): (req: IncomingMessage, res: ServerResponse) => void;
  logger: { close(): void; exceptions: { unhandle(): void } };
}
type S3rverCtor = new (options: Record<string, unknown>) => S3rverInstance;
interface S3rverAccount {
  createKeyPair(accessKeyId: string, secret: string): void;
  revokeAccessKey(accessKeyId: string): void;
}
const require = createRequire(import.meta.url);
const S3rver = require('s3rver') as S3rverCtor;
const { DUMMY_ACCOUNT } = require('s3rver/lib/models/account.js') as { DUMMY_ACCOUNT: S3rverAccount };

interface CredentialRow {
  workspace_id: string;
  session_token_hash: string;
  expires_at: number;
  object_key_prefix: string;
}

function formatHost(host: string): string {
  return host.includes(':') && !host.startsWith('[') ? `[${host}]` : host;
}

const WILDCARD_HOSTS = new Set(['0.0.0.0', '::', '']);

/**
 * The embedded bucket: s3rver in this process, objects under `<dataDir>/bucket`.
 *
 * s3rver's own checks are thin: it accepts unsigned requests, and for AWS
 * signature V4 (what every current SDK sends) it only checks that the access
 * key id is registered — the signature itself is never verified. So in front
 * of it sits a gate that makes the STS credentials behave like real temporary
 * ones as far as possible without verifying signatures:
 *   - a request must carry an access key id issued by our STS and not expired
 *     (ExpiredToken otherwise), and the matching session token
 *     (x-amz-security-token), which is random per issue;
 *   - object requests must stay under the workspace's prefix (AccessDenied);
 *   - only listing/HEAD is allowed on the bucket itself.
 * The secret key is derived from the access key id with a per-data-dir key
 * (`<dataDir>/bucket-key`), so no secret is stored in the database and issued
 * credentials survive a restart of the service until they expire.
 * s3rver does not implement ListParts nor AbortMultipartUpload.
 */
export async function startEmbeddedBucket(opts: {
  dataDir: string;
  host: string;
  db: Db;
}): Promise<BucketBackend> {
  const directory = join(opts.dataDir, 'bucket');
  const signingKey = loadSigningKey(opts.dataDir);
  const deriveSecret = (accessKeyId: string): string =>
    createHmac('sha256', signingKey).update(accessKeyId).digest('base64url');

  const s3rver = new S3rver({
    directory,
    silent: true,
    vhostBuckets: false, // path-style only, so the gate reads bucket and key from the path
    configureBuckets: [{ name: EMBEDDED_BUCKET, configs: [] }],
  });
  await s3rver.configureBuckets();
  const s3handler = s3rver.callback();

  const insert = opts.db.prepare<[string, string, string, number]>(
    'INSERT INTO bucket_credentials (access_key_id, workspace_id, session_token_hash, expires_at) VALUES (?, ?, ?, ?)',
  );
  const find = opts.db.prepare<[string], CredentialRow>(`
    SELECT c.workspace_id, c.session_token_hash, c.expires_at, w.object_key_prefix
    FROM bucket_credentials c JOIN workspaces w ON w.id = c.workspace_id WHERE c.access_key_id = ?`);
  const sweep = opts.db.prepare<[number]>('DELETE FROM bucket_credentials WHERE expires_at < ?');
  // s3rver's key registry is process-wide: remember ours to remove them on close.
  const registered = new Set<string>();

  const gate = (req: IncomingMessage, res: ServerResponse): void => {
    const url = new URL(req.url ?? '/', 'http://bucket.invalid');
    if (req.method === 'OPTIONS') return s3handler(req, res); // CORS preflight carries no credentials
    const cred = readCredential(req, url);
    if (!cred)
      return deny(
        req,
        res,
        403,
        'AccessDenied',
        "Anonymous access is not allowed: sign requests with the credentials from the service's sts endpoint.",
      );
    const row = find.get(cred.accessKeyId);
    if (!row)
      return deny(
        req,
        res,
        403,
        'InvalidAccessKeyId',
        'The AWS Access Key Id you provided does not exist in our records.',
      );
    if (row.expires_at <= Date.now())
      return deny(req, res, 400, 'ExpiredToken', 'The provided token has expired.');
    if (!cred.sessionToken || hashToken(cred.sessionToken) !== row.session_token_hash) {
      return deny(req, res, 400, 'InvalidToken', 'The provided token is malformed or otherwise invalid.');
    }
    const scope = checkScope(req.method ?? 'GET', url.pathname, row.object_key_prefix);
    if (scope) return deny(req, res, 403, 'AccessDenied', scope);
    if (!registered.has(cred.accessKeyId)) {
      DUMMY_ACCOUNT.createKeyPair(cred.accessKeyId, deriveSecret(cred.accessKeyId));
      registered.add(cred.accessKeyId);
    }
    s3handler(req, res);
  };

  const server = createServer(gate);
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, opts.host, () => resolve());
  });
  const port = (server.address() as AddressInfo).port;
  const bindHost = WILDCARD_HOSTS.has(opts.host) ? '127.0.0.1' : opts.host;
  const endpointFor = (host: string): string => `http://${formatHost(host)}:${port}`;

  return {
    name: EMBEDDED_BUCKET,
    endpoint: endpointFor(bindHost),
    dataDir: directory,
    prefixFor: (workspacePrefix) => workspacePrefix,
    issue({ workspaceId, prefix, expireSeconds, requestHost }) {
      const now = Date.now();
      sweep.run(now);
      for (const id of registered) {
        if (!find.get(id)) {
          DUMMY_ACCOUNT.revokeAccessKey(id);
          registered.delete(id);
        }
      }
      const accessKeyId = `ASIA${randomBase32(16)}`;
      const sessionToken = randomBytes(48).toString('base64');
      insert.run(accessKeyId, workspaceId, hashToken(sessionToken), now + expireSeconds * 1000);
      // Bound to all interfaces: answer with the host the client used to reach
      // us, since 127.0.0.1 would be wrong for a client on another machine.
      const host = WILDCARD_HOSTS.has(opts.host) && requestHost ? requestHost : bindHost;
      return Promise.resolve({
        bucket: EMBEDDED_BUCKET,
        endpoint: endpointFor(host),
        object_key_prefix: prefix,
        provider: 'minio' as const, // self-hosted, S3 API, path-style: what clients do for MinIO fits
        region: EMBEDDED_REGION,
        credentials: {
          access_key_id: accessKeyId,
          access_key_secret: deriveSecret(accessKeyId),
          expire: expireSeconds,
          security_token: sessionToken,
        },
      });
    },
    objectExists: (key) => s3rver.store.existsObject(EMBEDDED_BUCKET, key),
    async close() {
      await new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections(); // keep-alive sockets of SDK clients would hold close() open
      });
      for (const id of registered) DUMMY_ACCOUNT.revokeAccessKey(id);
      registered.clear();
      s3rver.logger.exceptions.unhandle();
      s3rver.logger.close();
    },
  };
}

function loadSigningKey(dataDir: string): Buffer {
  const file = join(dataDir, 'bucket-key');
  try {
    const hex = readFileSync(file, 'utf8').trim();
    if (/^[0-9a-f]{64}$/.test(hex)) return Buffer.from(hex, 'hex');
  } catch {
    // first start: created below
  }
  const key = randomBytes(32);
  writeSecretFile(file, key.toString('hex'));
  return key;
}

const BASE32 = 'ABCDEFGHIJKLMNOPQRSTUVWXYZ234567';
function randomBase32(n: number): string {
  return [...randomBytes(n)].map((b) => BASE32[b % 32]).join('');
}

function readCredential(
  req: IncomingMessage,
  url: URL,
): { accessKeyId: string; sessionToken?: string } | null {
  const auth = req.headers.authorization ?? '';
  const headerToken = req.headers['x-amz-security-token'];
  const sessionToken =
    (Array.isArray(headerToken) ? headerToken[0] : headerToken) ??
    url.searchParams.get('X-Amz-Security-Token') ??
    undefined;
  const v4 =
    /Credential=([^/,\s]+)\//.exec(auth) ?? /^([^/]+)\//.exec(url.searchParams.get('X-Amz-Credential') ?? '');
  const v2 = /^AWS ([^:\s]+):/.exec(auth);
  const accessKeyId = v4?.[1] ?? v2?.[1] ?? url.searchParams.get('AWSAccessKeyId') ?? undefined;
  if (!accessKeyId) return null;
  return sessionToken === undefined ? { accessKeyId } : { accessKeyId, sessionToken };
}

/** Returns why the request is outside the credential's scope, or null when it is allowed. */
function checkScope(method: string, pathname: string, prefix: string): string | null {
  const [, bucket = '', ...rest] = pathname.split('/');
  if (bucket !== EMBEDDED_BUCKET)
    return `These credentials only give access to the bucket ${EMBEDDED_BUCKET}.`;
  if (rest.length === 0 || (rest.length === 1 && rest[0] === '')) {
    return method === 'GET' || method === 'HEAD'
      ? null
      : 'These credentials cannot change the bucket itself.';
  }
  let key: string;
  try {
    key = decodeURIComponent(rest.join('/'));
  } catch {
    return 'The object key is not correctly URL-encoded.';
  }
  // s3rver maps keys to files with path.join: '..' would escape the bucket directory.
  if (key.split('/').some((s) => s === '.' || s === '..'))
    return 'Object keys with . or .. segments are not allowed.';
  return key.startsWith(`${prefix}/`) ? null : `These credentials only give access to keys under ${prefix}/.`;
}

function deny(
  req: IncomingMessage,
  res: ServerResponse,
  status: number,
  code: string,
  message: string,
): void {
  const escaped = message.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;');
  const body = `<?xml version="1.0" encoding="UTF-8"?>\n<Error><Code>${code}</Code><Message>${escaped}</Message><RequestId>${randomUUID()}</RequestId></Error>`;
  // Connection: close, because we answer without reading a possibly large body.
  res.writeHead(status, {
    'content-type': 'application/xml',
    'content-length': Buffer.byteLength(body),
    connection: 'close',
  });
  res.end(req.method === 'HEAD' ? undefined : body);
}
