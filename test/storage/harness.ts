/**
 * Test support for the storage suites: a real s3rver over HTTP on a random
 * port, an optional recording / fault-injecting HTTP proxy in front of it,
 * random source files, and a plain S3 client to read objects back.
 */
import { createHash, randomBytes } from 'node:crypto';
import { mkdtemp, open, rm } from 'node:fs/promises';
import http from 'node:http';
import net from 'node:net';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { createRequire } from 'node:module';
import { GetObjectCommand, S3Client } from '@aws-sdk/client-s3';
import type { BucketTarget, TargetProvider } from '../../main/core/storage/types.js';
import { refusingPort } from '../support/refusing-port.js';

// s3rver ships no types: the little we use of it (s3rver 3.7.1).
interface S3rverInstance {
  run(): Promise<AddressInfo>;
  close(): Promise<void>;
}
type S3rverCtor = new (opts: {
  port: number;
  address: string;
  directory: string;
  silent: boolean;
  configureBuckets: Array<{ name: string }>;
  key?: Buffer;
  cert?: Buffer;
}) => S3rverInstance;
const S3rver = createRequire(import.meta.url)('s3rver') as S3rverCtor;

export const MiB = 1024 * 1024;
export const BUCKET = 'media';
export const GOOD = {
  accessKeyId: 'S3RVER',
  secretAccessKey: 'S3RVER',
  sessionToken: 'session-token-secret-123',
};

export interface S3rverHandle {
  endpoint: string;
  port: number;
  directory: string;
  close(): Promise<void>;
}

/** `tls`: serve HTTPS with this key and certificate (s3rver's own option). */
export async function startS3rver(tls?: { key: Buffer; cert: Buffer }): Promise<S3rverHandle> {
  const directory = await mkdtemp(path.join(tmpdir(), 'dms-s3rver-'));
  const server = new S3rver({
    port: 0,
    address: '127.0.0.1',
    directory,
    silent: true,
    configureBuckets: [{ name: BUCKET }],
    ...(tls ?? {}),
  });
  const { port } = await server.run();
  return {
    endpoint: `${tls ? 'https' : 'http'}://127.0.0.1:${port}`,
    port,
    directory,
    async close() {
      await server.close();
      await rm(directory, { recursive: true, force: true });
    },
  };
}

export function makeTarget(
  endpoint: string,
  creds: Partial<typeof GOOD> = {},
  expiresInMs = 3600_000,
): BucketTarget {
  return {
    provider: 'minio',
    bucket: BUCKET,
    endpoint,
    region: 'us-east-1',
    objectKeyPrefix: 'ws',
    credentials: { ...GOOD, ...creds, expiresAt: Date.now() + expiresInMs },
  };
}

export const fixedTarget =
  (endpoint: string): TargetProvider =>
  () =>
    Promise.resolve(makeTarget(endpoint));

export interface TempFile {
  path: string;
  size: number;
  md5Hex: string;
}

/** A file of random bytes, written in 8 MiB slices so memory stays flat. */
export async function makeFile(dir: string, name: string, size: number): Promise<TempFile> {
  const file = path.join(dir, name);
  const handle = await open(file, 'w');
  const hash = createHash('md5');
  try {
    for (let done = 0; done < size;) {
      const chunk = randomBytes(Math.min(8 * MiB, size - done));
      hash.update(chunk);
      await handle.write(chunk, 0, chunk.length, done);
      done += chunk.length;
    }
  } finally {
    await handle.close();
  }
  return { path: file, size, md5Hex: hash.digest('hex') };
}

export const tempDir = (): Promise<string> => mkdtemp(path.join(tmpdir(), 'dms-src-'));

/** Reads an object back with a plain client and returns its size and MD5. */
export async function objectDigest(endpoint: string, key: string): Promise<{ size: number; md5Hex: string }> {
  const client = new S3Client({
    endpoint,
    region: 'us-east-1',
    forcePathStyle: true,
    credentials: { accessKeyId: 'S3RVER', secretAccessKey: 'S3RVER' },
    requestChecksumCalculation: 'WHEN_REQUIRED',
    responseChecksumValidation: 'WHEN_REQUIRED',
  });
  try {
    const out = await client.send(new GetObjectCommand({ Bucket: BUCKET, Key: key }));
    const hash = createHash('md5');
    let size = 0;
    for await (const chunk of out.Body as AsyncIterable<Buffer>) {
      hash.update(chunk);
      size += chunk.length;
    }
    return { size, md5Hex: hash.digest('hex') };
  } finally {
    client.destroy();
  }
}

export interface Seen {
  method: string;
  url: URL;
  partNumber: number | undefined;
  /** The Content-MD5 header, for integrity checks by the bucket. */
  contentMd5: string | undefined;
  bytes: number;
  startedAt: number;
}

export interface Canned {
  status: number;
  body?: string;
  headers?: Record<string, string>;
}

export interface ProxyHandle {
  endpoint: string;
  seen: Seen[];
  /** Request body bytes received so far (all requests). */
  bytesIn(): number;
  /** Answer a request ourselves instead of forwarding it (fault injection). */
  intercept: ((req: http.IncomingMessage, url: URL) => Canned | undefined) | undefined;
  close(): Promise<void>;
}

export const s3ErrorXml = (code: string, message = code): string =>
  `<?xml version="1.0" encoding="UTF-8"?>\n<Error><Code>${code}</Code><Message>${message}</Message></Error>`;

/** Set on the requests the proxy forwards upstream (not signed, ignored by the bucket). */
export const PROXY_FORWARD_HEADER = 'x-test-proxy-forward';

/** A recording HTTP proxy in front of s3rver (it sees exactly what the uploader sends). */
export async function startProxy(upstreamPort: number): Promise<ProxyHandle> {
  const seen: Seen[] = [];
  let bytes = 0;
  const handle: ProxyHandle = {
    endpoint: '',
    seen,
    bytesIn: () => bytes,
    intercept: undefined,
    close: () =>
      new Promise((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
  const server = http.createServer((req, res) => {
    const url = new URL(req.url ?? '/', 'http://proxy');
    const pn = url.searchParams.get('partNumber');
    const entry: Seen = {
      method: req.method ?? '',
      url,
      partNumber: pn === null ? undefined : Number(pn),
      contentMd5: req.headers['content-md5'] as string | undefined,
      bytes: 0,
      startedAt: Date.now(),
    };
    seen.push(entry);
    // Counted in the same tick as the pipe: a 'data' listener attached
    // earlier would switch the request to flowing mode and lose bytes.
    req.on('data', (chunk: Buffer) => {
      entry.bytes += chunk.length;
      bytes += chunk.length;
    });
    const canned = handle.intercept?.(req, url);
    if (canned) {
      res.writeHead(canned.status, { 'content-type': 'application/xml', ...canned.headers });
      res.end(canned.body ?? '');
      return;
    }
    const up = http.request(
      {
        host: '127.0.0.1',
        port: upstreamPort,
        method: req.method,
        path: req.url,
        // Marked, so that tests counting this process's own requests can tell these apart.
        headers: { ...req.headers, [PROXY_FORWARD_HEADER]: '1' },
      },
      (upRes) => {
        res.writeHead(upRes.statusCode ?? 502, upRes.headers);
        upRes.pipe(res);
      },
    );
    up.on('error', () => res.destroy());
    // The client went away (abort): cut the upstream request too.
    res.on('close', () => {
      if (!res.writableFinished) up.destroy();
    });
    req.pipe(up);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  handle.endpoint = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return handle;
}

/** A port on which nothing listens, and nothing will during the test file. */
export const closedPort = refusingPort;

/**
 * A slow uplink in front of `target` (host:port): a TCP relay that passes
 * what the client sends at `bytesPerSecond` (64 KiB at a time), and what the
 * server answers as it comes. The client's own socket buffers still take
 * a few MiB at once on loopback, as a real link's would take less.
 */
export async function startUplink(
  target: { host: string; port: number },
  bytesPerSecond: number,
): Promise<{ endpoint: string; close(): Promise<void> }> {
  const SLICE = 64 * 1024;
  const sockets = new Set<net.Socket>();
  const server = net.createServer((client) => {
    const server = net.connect(target);
    for (const s of [client, server]) {
      sockets.add(s);
      s.on('error', () => undefined);
      s.on('close', () => {
        sockets.delete(s);
        client.destroy();
        server.destroy();
      });
    }
    server.pipe(client);
    client.on('data', (data: Buffer) => {
      client.pause();
      let offset = 0;
      const pump = (): void => {
        if (offset >= data.length || server.destroyed) {
          client.resume();
          return;
        }
        const slice = data.subarray(offset, offset + SLICE);
        offset += slice.length;
        server.write(slice);
        setTimeout(pump, (slice.length * 1000) / bytesPerSecond);
      };
      pump();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    endpoint: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    close: () =>
      new Promise((resolve) => {
        for (const s of sockets) s.destroy();
        server.close(() => resolve());
      }),
  };
}
