/**
 * The two requests that carry the bytes to an S3-compatible bucket (PutObject
 * and UploadPart), sent with undici and signed with the SDK's own SigV4
 * signer, instead of through S3Client.send.
 *
 * Why: measured against the embedded bucket, one 64 KiB PutObject cost about
 * 1.75 ms of CPU through the SDK's middleware stack (endpoint rules, schema
 * serialisation, retry and user-agent middleware) against about 0.74 ms here.
 * On a card of thousands of small files that was the largest share of the
 * agent's CPU. Everything else (create, list, complete, head: a few requests
 * per file at most) stays on the SDK. The reference service's HEAD (SignedHead:
 * one or two per fast-upload and callback, thousands a minute under load) is
 * signed the same way, for the same reason.
 *
 * What is not hand-written: the signature (@smithy/signature-v4, the SDK's
 * signer) and the bucket's URL (resolved once per client by the SDK's own
 * endpoint rules: path or virtual-host style, custom endpoints). The body is
 * sent as UNSIGNED-PAYLOAD with Content-MD5, which the bucket checks: the
 * same integrity as the SDK path for streamed bodies, with no SHA-256 pass.
 */
import { createHash, createHmac, createSecretKey, type BinaryLike, type KeyObject } from 'node:crypto';
import http from 'node:http';
import https from 'node:https';
import type { Readable } from 'node:stream';
import type { S3Client } from '@aws-sdk/client-s3';
import { SignatureV4 } from '@smithy/signature-v4';
import { request, type Dispatcher } from 'undici';
import type { BucketTarget } from './types.js';

/** Thrown for a bucket's error answer, shaped like the SDK's errors so s3Failure() reads it. */
export class S3HttpError extends Error {
  readonly $metadata: { httpStatusCode: number };
  readonly $fault: 'client' | 'server';
  constructor(code: string, status: number, message: string) {
    super(message);
    this.name = code;
    this.$metadata = { httpStatusCode: status };
    this.$fault = status >= 500 ? 'server' : 'client';
  }
}

/** SHA-256 / HMAC for the signer, from node:crypto (the interface @smithy/types asks for). */
type SourceData = string | ArrayBuffer | ArrayBufferView;
const bytes = (d: SourceData): BinaryLike =>
  typeof d === 'string'
    ? d
    : d instanceof ArrayBuffer
      ? new Uint8Array(d)
      : new Uint8Array(d.buffer, d.byteOffset, d.byteLength);
export class NodeSha256 {
  private readonly h;
  constructor(secret?: SourceData) {
    this.h = secret === undefined ? createHash('sha256') : createHmac('sha256', hmacKey(secret));
  }
  update(data: SourceData): void {
    this.h.update(bytes(data));
  }
  digest(): Promise<Uint8Array> {
    return Promise.resolve(new Uint8Array(this.h.digest()));
  }
  reset(): void {
    // One digest per instance: the signer never reuses one.
  }
}

/**
 * The HMAC keys of a signature as KeyObjects, made once per key: the signer
 * uses the same few on every request (the secret key, for its cache of
 * signing keys, and the day's signing key), and an HMAC made from raw key
 * bytes cost about 18 µs against 4 µs from a KeyObject (two per PUT and
 * per HEAD). Kept in memory only, as the credentials themselves are.
 */
const hmacKeys = new Map<string, KeyObject>();
const HMAC_KEYS_KEPT = 16;

function hmacKey(secret: SourceData): KeyObject {
  const raw = bytes(secret);
  // The key is its bytes (a string's UTF-8): the same bytes, the same key.
  const buf = typeof raw === 'string' ? Buffer.from(raw, 'utf8') : Buffer.from(raw as Uint8Array);
  const id = buf.toString('latin1');
  let key = hmacKeys.get(id);
  if (key === undefined) {
    if (hmacKeys.size >= HMAC_KEYS_KEPT) hmacKeys.clear();
    key = createSecretKey(buf);
    hmacKeys.set(id, key);
  }
  return key;
}

/** S3's URI encoding of a key: every byte but unreserved characters and '/' escaped. */
export function encodeKey(key: string): string {
  return key
    .split('/')
    .map((s) =>
      encodeURIComponent(s).replace(/[!'()*]/g, (c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`),
    )
    .join('/');
}

interface Signing {
  signer: SignatureV4;
  bucketUrl: URL;
}

export interface PutRequest {
  key: string;
  /**
   * Made once a connection is free for this PUT, just before it is signed
   * (parts.ts pacedBody: it also waits for the bandwidth limit's turn).
   */
  body: () => Promise<Buffer | Readable>;
  length: number;
  md5: string;
  contentType?: string;
  /** UploadPart when set; PutObject otherwise. */
  part?: { uploadId: string; partNumber: number };
  /** Sends If-None-Match: * (PutObject only): the bucket refuses to replace an existing object. */
  ifNoneMatch?: boolean;
  signal?: AbortSignal;
}

const ERROR_BODY_MAX = 64 * 1024;

/**
 * At most `size` holders at once; the others wait in line, first come first
 * served. One that gives up (its signal aborts) leaves the line at once.
 */
export class Slots {
  private free: number;
  private readonly line: Array<() => void> = [];

  constructor(size: number) {
    this.free = Math.max(1, size);
  }

  /** Resolves with the function that gives the slot back (once). */
  async take(signal?: AbortSignal): Promise<() => void> {
    if (this.free > 0) this.free--;
    else await this.wait(signal);
    let given = false;
    return () => {
      if (given) return;
      given = true;
      const next = this.line.shift();
      if (next) next();
      else this.free++;
    };
  }

  private wait(signal: AbortSignal | undefined): Promise<void> {
    const aborted = (): Error => new DOMException('The operation was aborted', 'AbortError');
    if (signal?.aborted === true) return Promise.reject(aborted());
    return new Promise((resolve, reject) => {
      const turn = (): void => {
        signal?.removeEventListener('abort', onAbort);
        resolve();
      };
      const onAbort = (): void => {
        this.line.splice(this.line.indexOf(turn), 1);
        reject(aborted());
      };
      this.line.push(turn);
      signal?.addEventListener('abort', onAbort, { once: true });
    });
  }
}

/**
 * Signed PUTs for the clients of one uploader. Signing material is cached per
 * S3Client, i.e. per set of credentials (session.ts builds a new client when
 * they change), so a refresh never signs with stale keys.
 *
 * At most `connections` PUTs are under way at once (the dispatcher's own
 * number of connections); the others wait here, before their body is made
 * and before they are signed. Waiting in the dispatcher's queue instead, a
 * PUT would go out with a signature as old as the wait, which buckets refuse
 * after 15 minutes: an easy wait behind parts trickling up a slow uplink.
 */
export class SignedPut {
  private readonly cache = new WeakMap<S3Client, Promise<Signing>>();
  private readonly slots: Slots;

  constructor(
    private readonly dispatcher: Dispatcher,
    private readonly timeouts: { headersMs: number; bodyMs: number },
    connections: number,
  ) {
    this.slots = new Slots(connections);
  }

  async send(client: S3Client, t: BucketTarget, req: PutRequest): Promise<string | undefined> {
    const release = await this.slots.take(req.signal);
    try {
      return await this.sendNow(client, t, req);
    } finally {
      release();
    }
  }

  private async sendNow(client: S3Client, t: BucketTarget, req: PutRequest): Promise<string | undefined> {
    const { signer, bucketUrl } = await signingOf(this.cache, client, t);
    const path = objectPath(bucketUrl, req.key);
    const query: Record<string, string> = req.part
      ? { partNumber: String(req.part.partNumber), uploadId: req.part.uploadId }
      : {};
    const headers: Record<string, string> = {
      host: bucketUrl.host,
      'content-length': String(req.length),
      'content-md5': req.md5,
      'x-amz-content-sha256': 'UNSIGNED-PAYLOAD',
      ...(req.contentType !== undefined && !req.part ? { 'content-type': req.contentType } : {}),
      ...(req.ifNoneMatch === true && !req.part ? { 'if-none-match': '*' } : {}),
    };
    const body = await req.body();
    const { url, signed } = await signRequest(client, signer, bucketUrl, 'PUT', path, query, headers);
    const res = await request(url, {
      method: 'PUT',
      headers: signed.headers,
      body,
      dispatcher: this.dispatcher,
      ...(req.signal ? { signal: req.signal } : {}),
      headersTimeout: this.timeouts.headersMs,
      bodyTimeout: this.timeouts.bodyMs,
    });
    if (res.statusCode >= 200 && res.statusCode < 300) {
      // Drained so the connection goes back to the pool.
      await res.body.dump();
      const etag = res.headers.etag;
      return Array.isArray(etag) ? etag[0] : etag;
    }
    const text = await readCapped(res.body, ERROR_BODY_MAX);
    const err = bucketError(res.statusCode, text);
    if (err.name === 'RequestTimeTooSkewed') adoptBucketClock(client, res.headers.date);
    throw err;
  }
}

/** Signs a request to the bucket with the bucket's time as the client learnt it (see adoptBucketClock). */
async function signRequest(
  client: S3Client,
  signer: SignatureV4,
  bucketUrl: URL,
  method: 'PUT' | 'HEAD',
  path: string,
  query: Record<string, string>,
  headers: Record<string, string>,
): Promise<{ url: URL; signed: { headers: Record<string, string> } }> {
  const signed = await signer.sign(
    {
      method,
      protocol: bucketUrl.protocol,
      hostname: bucketUrl.hostname,
      ...(bucketUrl.port !== '' ? { port: Number(bucketUrl.port) } : {}),
      path,
      query,
      headers,
    },
    { signingDate: new Date(Date.now() + client.config.systemClockOffset) },
  );
  const url = new URL(bucketUrl.origin);
  url.pathname = path;
  for (const [k, v] of Object.entries(query)) url.searchParams.set(k, v);
  return { url, signed };
}

/** The time an answer's Date header says, in ms since the epoch, or NaN. */
const dateOf = (date: string | string[] | undefined): number =>
  Date.parse(Array.isArray(date) ? (date[0] ?? '') : (date ?? ''));

/**
 * A bucket refuses signatures more than 15 minutes off its own clock. As the
 * SDK does for its own requests, the client then signs with the bucket's
 * time (from the answer's Date header): a field laptop with a wrong clock
 * still uploads. The caller sends the request again (s3.ts).
 */
function adoptBucketClock(client: S3Client, date: string | string[] | undefined): void {
  const bucketNow = dateOf(date);
  if (!Number.isNaN(bucketNow)) client.config.systemClockOffset = bucketNow - Date.now();
}

/**
 * HEAD of one object, signed as SignedPut signs (no SDK middleware): its size
 * and ETag, or null when the bucket has no such object. Other answers throw
 * an S3HttpError (a HEAD's error has no body: its code is said by status).
 */
export class SignedHead {
  private readonly cache = new WeakMap<S3Client, Promise<Signing>>();

  async send(
    client: S3Client,
    t: Pick<BucketTarget, 'bucket' | 'endpoint'>,
    key: string,
  ): Promise<{ size: number; etag: string | undefined } | null> {
    const offset = client.config.systemClockOffset;
    const res = await this.once(client, t, key);
    // A refusal with the bucket's clock far from the one this HEAD was signed with (its error has
    // no body to say so): sign with the bucket's time and ask once more, as the SDK does. Compared
    // with the clock it was signed with: HEADs in flight at once all learn it, not just the first.
    if (res.status === 403 && skewedFrom(offset, res.headers.date)) {
      adoptBucketClock(client, res.headers.date);
      return answerOf(await this.once(client, t, key));
    }
    return answerOf(res);
  }

  private async once(
    client: S3Client,
    t: Pick<BucketTarget, 'bucket' | 'endpoint'>,
    key: string,
  ): Promise<{ status: number; headers: http.IncomingHttpHeaders }> {
    const { signer, bucketUrl } = await signingOf(this.cache, client, t);
    const { url, signed } = await signRequest(
      client,
      signer,
      bucketUrl,
      'HEAD',
      objectPath(bucketUrl, key),
      {},
      {
        host: bucketUrl.host,
        'x-amz-content-sha256': 'UNSIGNED-PAYLOAD',
      },
    );
    return headRequest(url, signed.headers);
  }
}

/** A clock this far from the bucket's is taken for the cause of a refusal (the SDK's own threshold). */
const SKEW_MS = 5 * 60 * 1000;

function skewedFrom(offset: number, date: string | string[] | undefined): boolean {
  const bucketNow = dateOf(date);
  return !Number.isNaN(bucketNow) && Math.abs(bucketNow - (Date.now() + offset)) >= SKEW_MS;
}

function answerOf(res: {
  status: number;
  headers: http.IncomingHttpHeaders;
}): { size: number; etag: string | undefined } | null {
  if (res.status === 404) return null;
  if (res.status < 200 || res.status >= 300) throw bucketError(res.status, '');
  return { size: Number(res.headers['content-length'] ?? 0), etag: res.headers.etag };
}

/**
 * Kept-alive connections for HEAD: undici closes its connection after every
 * HEAD (in case a server sends a body anyway), which would cost a TCP (and
 * TLS) handshake per check; Node's own client keeps them, as the SDK's does.
 */
const HEAD_AGENTS = {
  'http:': new http.Agent({ keepAlive: true, maxSockets: 64 }),
  'https:': new https.Agent({ keepAlive: true, maxSockets: 64 }),
};
const HEAD_TIMEOUT_MS = 30_000;

function headRequest(
  url: URL,
  headers: Record<string, string>,
): Promise<{ status: number; headers: http.IncomingHttpHeaders }> {
  return new Promise((resolve, reject) => {
    const agent = url.protocol === 'https:' ? HEAD_AGENTS['https:'] : HEAD_AGENTS['http:'];
    const send = url.protocol === 'https:' ? https.request : http.request;
    const req = send(url, { method: 'HEAD', headers, agent }, (res) => {
      res.resume();
      res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers }));
      res.on('error', reject);
    });
    req.on('error', reject);
    req.setTimeout(HEAD_TIMEOUT_MS, () =>
      req.destroy(new Error(`no answer to HEAD in ${HEAD_TIMEOUT_MS / 1000} s`)),
    );
    req.end();
  });
}

/** The signer and bucket URL of a client, made once per client (i.e. per set of credentials). */
function signingOf(
  cache: WeakMap<S3Client, Promise<Signing>>,
  client: S3Client,
  t: Pick<BucketTarget, 'bucket' | 'endpoint'>,
): Promise<Signing> {
  let signing = cache.get(client);
  if (!signing) {
    signing = prepare(client, t);
    cache.set(client, signing);
  }
  return signing;
}

/** The path of an object's URL: the bucket's path (path style) and the key, escaped as S3 signs it. */
function objectPath(bucketUrl: URL, key: string): string {
  const basePath = bucketUrl.pathname.endsWith('/') ? bucketUrl.pathname : `${bucketUrl.pathname}/`;
  return `${basePath}${encodeKey(key)}`;
}

async function prepare(client: S3Client, t: Pick<BucketTarget, 'bucket' | 'endpoint'>): Promise<Signing> {
  const { endpointProvider } = client.config;
  const endpoint = endpointProvider({
    Bucket: t.bucket,
    Region: await client.config.region(),
    UseFIPS: false,
    UseDualStack: false,
    Accelerate: false,
    ForcePathStyle: client.config.forcePathStyle ?? false,
    ...(t.endpoint !== '' ? { Endpoint: t.endpoint } : {}),
  });
  const credentials = await client.config.credentials();
  const signer = new SignatureV4({
    service: 's3',
    region: await client.config.region(),
    credentials,
    sha256: NodeSha256,
    // S3 signs the path as sent: no second round of escaping.
    uriEscapePath: false,
    applyChecksum: false,
  });
  return { signer, bucketUrl: new URL(endpoint.url.href) };
}

async function readCapped(
  body: AsyncIterable<Buffer | Uint8Array> & { destroy(): void; on(event: 'error', fn: () => void): unknown },
  max: number,
): Promise<string> {
  const chunks: Buffer[] = [];
  let total = 0;
  for await (const c of body) {
    chunks.push(Buffer.from(c));
    total += c.byteLength;
    if (total >= max) {
      // Without a listener, destroy()'s AbortError would be an uncaught exception.
      body.on('error', () => undefined);
      body.destroy();
      break;
    }
  }
  return Buffer.concat(chunks).toString('utf8');
}

/** The code and message of an S3 XML error answer (or the bare status when it has none). */
export function bucketError(status: number, text: string): S3HttpError {
  const code = /<Code>([^<]{1,128})<\/Code>/.exec(text)?.[1];
  const message = /<Message>([^<]{0,1000})<\/Message>/.exec(text)?.[1];
  if (code === undefined) {
    // No readable S3 error: a 2xx/3xx we cannot use is malformed, errors keep their status.
    return new S3HttpError(status === 404 ? 'NotFound' : 'Unknown', status, message ?? `HTTP ${status}`);
  }
  return new S3HttpError(code, status, message ?? code);
}
