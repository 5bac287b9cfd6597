import { createHmac, randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import http, { createServer, type ServerResponse } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import { join } from 'node:path';
import type { Logger } from 'pino';
import { hashToken } from '../auth.js';
import { writeSecretFile } from '../bootstrap.js';
import type { Db } from '../db.js';
import { answerClientError, clientErrorKind, guardConnections } from '../connections.js';
import { checkingInterval, type ServiceLimits } from '../limits.js';
import {
  errorDocument,
  newRequestId,
  refusedBeforeRequest,
  requestTimeout,
  sendError,
} from './s3-protocol.js';
import { s3Handler, type Credential } from './s3-server.js';
import { SIGNING_REGION } from './sigv4.js';
import { BucketStore } from './store.js';
import type { BucketBackend } from './types.js';

export const EMBEDDED_BUCKET = 'media';
export const EMBEDDED_REGION = SIGNING_REGION;

interface CredentialRow {
  workspace_id: string;
  session_token_hash: string;
  expires_at: number;
  endpoint_host: string;
  object_key_prefix: string;
}

function formatHost(host: string): string {
  return host.includes(':') && !host.startsWith('[') ? `[${host}]` : host;
}

const WILDCARD_HOSTS = new Set(['0.0.0.0', '::', '']);

/**
 * The embedded bucket: our own strict S3 subset (s3-server.ts) in this
 * process, objects under `<dataDir>/bucket` (store.ts). Credentials behave
 * like real temporary ones: every request's SigV4 signature is verified with
 * the secret of its access key, the session token must match, they expire,
 * and they reach only their workspace's prefix. The secret key is derived
 * from the access key id with a per-data-dir key (`<dataDir>/bucket-key`), so
 * no secret is stored in the database and issued credentials survive a
 * restart of the service until they expire.
 */
export async function startEmbeddedBucket(opts: {
  dataDir: string;
  host: string;
  /** 0: any free port. */
  port?: number;
  db: Db;
  limits: ServiceLimits;
  log: Logger | null;
}): Promise<BucketBackend> {
  const { limits } = opts;
  const directory = join(opts.dataDir, 'bucket');
  const signingKey = loadSigningKey(opts.dataDir);
  // A pure function of the access key id: kept for the credentials in use (every request asks).
  const secrets = new Map<string, string>();
  const deriveSecret = (accessKeyId: string): string => {
    let secret = secrets.get(accessKeyId);
    if (secret === undefined) {
      secret = createHmac('sha256', signingKey).update(accessKeyId).digest('base64url');
      if (secrets.size >= 1024) secrets.clear();
      secrets.set(accessKeyId, secret);
    }
    return secret;
  };
  const store = new BucketStore(directory, opts.db, limits);

  const insert = opts.db.prepare<[string, string, string, number, string]>(
    'INSERT INTO bucket_credentials (access_key_id, workspace_id, session_token_hash, expires_at, endpoint_host) VALUES (?, ?, ?, ?, ?)',
  );
  const find = opts.db.prepare<[string], CredentialRow>(`
    SELECT c.workspace_id, c.session_token_hash, c.expires_at, c.endpoint_host, w.object_key_prefix
    FROM bucket_credentials c JOIN workspaces w ON w.id = c.workspace_id WHERE c.access_key_id = ?`);
  const sweep = opts.db.prepare<[number]>('DELETE FROM bucket_credentials WHERE expires_at < ?');
  const bindHost = WILDCARD_HOSTS.has(opts.host) ? '127.0.0.1' : opts.host;

  // A credential's row never changes once issued (it is only swept after it expired, and every
  // request checks the expiry), nor does its workspace's prefix: read once, not per request.
  const known = new Map<string, Credential>();
  const credential = (accessKeyId: string): Credential | undefined => {
    const cached = known.get(accessKeyId);
    if (cached) return cached;
    const row = find.get(accessKeyId);
    if (!row) return undefined;
    const found: Credential = {
      workspaceId: row.workspace_id,
      prefix: row.object_key_prefix,
      secret: deriveSecret(accessKeyId),
      sessionTokenHash: row.session_token_hash,
      expiresAt: row.expires_at,
      endpointHost: row.endpoint_host,
    };
    if (known.size >= 1024) known.clear();
    known.set(accessKeyId, found);
    return found;
  };

  const handler = s3Handler({
    bucket: EMBEDDED_BUCKET,
    store,
    credential,
    hashSessionToken: hashToken,
    defaultHost: bindHost,
    maxObjectBytes: limits.maxObjectBytes,
    maxPartBytes: limits.maxPartBytes,
    completeKeepAliveMs: Math.min(5000, Math.ceil(limits.idleTimeoutMs / 3)),
    onInternalError: (err) => opts.log?.error({ err }, 'embedded bucket: request failed'),
  });
  const server = createServer(
    {
      // A connection must send its request's headers in time...
      headersTimeout: limits.headersTimeoutMs,
      // ...but a request has no deadline as a whole: an upload that keeps sending is served however
      // long it takes, and one that stops is cut by the idle timeout below (limits.ts, idleTimeoutMs).
      requestTimeout: 0,
      keepAliveTimeout: limits.keepAliveTimeoutMs,
      connectionsCheckingInterval: checkingInterval(limits.headersTimeoutMs),
    },
    handler,
  );
  // Answered by the handler itself, after the request passed its checks: a
  // refused upload never gets "100 Continue", so its body is never sent.
  server.on('checkContinue', handler);
  // Any other Expect value: served as S3 serves it (HTTP lets a server ignore
  // an expectation it does not know), not Node's bare 417 without S3's error.
  server.on('checkExpectation', handler);
  server.timeout = limits.idleTimeoutMs;
  server.on('timeout', answerIdle);
  // Requests Node's parser refuses (URL and headers over 16 KiB, CR/LF in a header...): S3's XML error.
  server.on('clientError', (err: NodeJS.ErrnoException, socket: Socket) =>
    answerClientError(err, socket, (e) => {
      const refusal = refusedBeforeRequest(clientErrorKind(e), { maxHeaderBytes: http.maxHeaderSize });
      return { status: refusal.status, contentType: 'application/xml', body: errorDocument(refusal) };
    }),
  );
  // Connections per client address, and room made at the cap, as at the API (after the handlers above).
  guardConnections(server, limits);
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(opts.port ?? 0, opts.host, () => resolve());
  });
  const port = (server.address() as AddressInfo).port;
  const endpointFor = (host: string): string => `http://${formatHost(host)}:${port}`;

  return {
    name: EMBEDDED_BUCKET,
    endpoint: endpointFor(bindHost),
    dataDir: directory,
    prefixFor: (workspacePrefix) => workspacePrefix,
    issue({ workspaceId, prefix, expireSeconds, requestHost }) {
      const now = Date.now();
      sweep.run(now);
      for (const [id, c] of known) if (c.expiresAt < now) known.delete(id);
      const accessKeyId = `ASIA${randomBase32(16)}`;
      const sessionToken = randomBytes(48).toString('base64');
      // Bound to all interfaces: answer with the host the client used to reach
      // us, since 127.0.0.1 would be wrong for a client on another machine.
      const host = WILDCARD_HOSTS.has(opts.host) && requestHost ? requestHost : bindHost;
      insert.run(accessKeyId, workspaceId, hashToken(sessionToken), now + expireSeconds * 1000, host);
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
    objectInfo(key) {
      const obj = store.object(key);
      return Promise.resolve(obj ? { size: obj.size, md5: obj.md5 } : null);
    },
    async close() {
      await new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections(); // keep-alive sockets of SDK clients would hold close() open
      });
    },
  };
}

/**
 * A connection on which nothing moved for the idle timeout (Node leaves it
 * to this listener). A request in the middle of its body gets S3's answer,
 * RequestTimeout, so its client knows to send it again instead of seeing the
 * connection drop; then the connection is closed, as is any other.
 */
function answerIdle(socket: Socket): void {
  const res = (socket as Socket & { _httpMessage?: ServerResponse | null })._httpMessage;
  if (!res || res.headersSent || socket.destroyed) {
    socket.destroy();
    return;
  }
  const requestId = res.getHeader('x-amz-request-id');
  sendError(res, requestTimeout(), {
    head: res.req.method === 'HEAD',
    close: true,
    requestId: typeof requestId === 'string' ? requestId : newRequestId(),
  });
  // The request too: answered, it is no longer one Node aborts with its connection, and the
  // handler would wait for the rest of its body forever (keeping the file it was writing).
  const cut = (): void => {
    res.req.destroy();
    socket.destroy();
  };
  res.once('finish', cut);
  // A client that reads nothing either: the answer may never leave.
  setTimeout(cut, 2_000).unref();
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
