/**
 * Raw S3 requests signed with the SDK's own SigV4 signer, for tests that
 * must send what no SDK call would: a wrong secret, a forged upload id, a
 * Host header of their choosing, a copy source. Sent with node:http, which
 * (unlike fetch) lets the Host header be set.
 */
import http from 'node:http';
import { S3Client } from '@aws-sdk/client-s3';
import { SignatureV4 } from '@smithy/signature-v4';
import { NodeSha256 } from '../../main/core/storage/s3-put.js';
import type { Loose } from './helpers.js';

export interface RawRequest {
  method: string;
  /** Already encoded, e.g. `/media/<prefix>/a%20b.jpg`. */
  path: string;
  query?: Record<string, string>;
  headers?: Record<string, string>;
  body?: Buffer | string;
  /** Signed and sent instead of the endpoint's host:port. */
  host?: string;
  /** Signs with this secret instead of the issued one. */
  secret?: string;
  /** Sends no session token. */
  noToken?: boolean;
  /**
   * Header values are sent as their UTF-8 bytes and signed as those bytes,
   * as botocore does with non-ASCII metadata (Node writes header strings as
   * latin1, and our SHA-256 would hash them as UTF-8 again).
   */
  utf8Headers?: boolean;
  /** Sends from this local address (127.0.0.x: another client of the same machine). */
  localAddress?: string;
}

export interface RawAnswer {
  status: number;
  headers: http.IncomingHttpHeaders;
  body: string;
  bytes: Buffer;
  /** The S3 error code of the answer (`<Code>` or x-amz-error-code), if any. */
  code: string | undefined;
}

/**
 * SHA-256 of text as latin1, one byte per character: the signer hands over
 * its canonical request as UTF-8, which is turned back into the raw header
 * bytes it stands for (every input of the signer is text).
 */
class Latin1Sha256 extends NodeSha256 {
  override update(data: string | ArrayBuffer | ArrayBufferView): void {
    const text =
      typeof data === 'string'
        ? data
        : Buffer.from(
            data instanceof ArrayBuffer ? data : data.buffer,
            data instanceof ArrayBuffer ? 0 : data.byteOffset,
            data.byteLength,
          ).toString('utf8');
    super.update(Buffer.from(text, 'latin1'));
  }
}

export function signer(
  sts: Loose,
  secret = sts.credentials.access_key_secret as string,
  withToken = true,
  latin1 = false,
): SignatureV4 {
  return new SignatureV4({
    service: 's3',
    region: sts.region,
    sha256: latin1 ? Latin1Sha256 : NodeSha256,
    uriEscapePath: false,
    applyChecksum: false,
    credentials: {
      accessKeyId: sts.credentials.access_key_id,
      secretAccessKey: secret,
      ...(withToken ? { sessionToken: sts.credentials.security_token as string } : {}),
    },
  });
}

/** Signs `r` with the STS credentials (header form) and sends it to the STS endpoint. */
export async function rawS3(sts: Loose, r: RawRequest): Promise<RawAnswer> {
  const endpoint = new URL(sts.endpoint);
  const body = r.body === undefined ? undefined : Buffer.from(r.body);
  const given = Object.entries(r.headers ?? {}).map(([k, v]) => [
    k,
    r.utf8Headers ? Buffer.from(v, 'utf8').toString('latin1') : v,
  ]);
  const headers: Record<string, string> = {
    host: r.host ?? endpoint.host,
    'x-amz-content-sha256': 'UNSIGNED-PAYLOAD',
    ...(body ? { 'content-length': String(body.length) } : {}),
    ...Object.fromEntries(given),
  };
  const s = signer(sts, r.secret, !r.noToken, r.utf8Headers);
  const signed = await s.sign({
    method: r.method,
    protocol: 'http:',
    hostname: endpoint.hostname,
    port: Number(endpoint.port),
    path: r.path,
    query: r.query ?? {},
    headers,
  });
  const qs = new URLSearchParams(r.query ?? {}).toString().replace(/\+/g, '%20');
  return send(endpoint, r.method, `${r.path}${qs ? `?${qs}` : ''}`, signed.headers, body, r.localAddress);
}

export function send(
  endpoint: URL,
  method: string,
  path: string,
  headers: Record<string, string>,
  body?: Buffer,
  localAddress?: string,
): Promise<RawAnswer> {
  return new Promise((resolve, reject) => {
    const req = http.request(
      {
        host: endpoint.hostname,
        port: endpoint.port,
        method,
        path,
        headers,
        agent: false,
        ...(localAddress !== undefined ? { localAddress } : {}),
      },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () => {
          const bytes = Buffer.concat(chunks);
          const text = bytes.toString('utf8');
          const header = res.headers['x-amz-error-code'];
          resolve({
            status: res.statusCode ?? 0,
            headers: res.headers,
            body: text,
            bytes,
            code:
              /<Code>([^<]+)<\/Code>/.exec(text)?.[1] ?? (typeof header === 'string' ? header : undefined),
          });
        });
        res.on('error', reject);
      },
    );
    req.on('error', reject);
    req.end(body);
  });
}

/** An AWS SDK client from the STS answer with the SDK's own defaults (CRC32 checksums on), unlike helpers' s3From. */
export function sdkDefaultsClient(sts: Loose): S3Client {
  return new S3Client({
    endpoint: sts.endpoint,
    region: sts.region,
    forcePathStyle: true,
    credentials: {
      accessKeyId: sts.credentials.access_key_id,
      secretAccessKey: sts.credentials.access_key_secret,
      sessionToken: sts.credentials.security_token,
    },
  });
}
