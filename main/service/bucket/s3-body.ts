/**
 * Reading a request body, once the request passed every other check: its
 * declared length, Content-MD5, SHA-256 (of the signature) and flexible
 * checksum are all verified on the bytes as they stream in, and clients that
 * wait for "100 Continue" get it only then, so a refused upload never sends
 * its body.
 */
import { createHash } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { checksumMismatch, checksummer, type DeclaredChecksum } from './s3-checksum.js';
import { S3Error } from './s3-protocol.js';
import { UNSIGNED, type Claim } from './sigv4.js';
import type { BucketStore, Received } from './store.js';

function contentLength(req: IncomingMessage, max: number): number {
  const raw = req.headers['content-length'];
  if (raw === undefined || !/^\d{1,15}$/.test(raw)) {
    throw new S3Error(411, 'MissingContentLength', 'You must provide the Content-Length HTTP header.');
  }
  if (+raw > max) {
    throw new S3Error(
      400,
      'EntityTooLarge',
      `Your proposed upload exceeds the maximum allowed size (${max} bytes).`,
    );
  }
  return +raw;
}

function contentMd5(req: IncomingMessage): Buffer | undefined {
  const given = req.headers['content-md5'];
  if (given === undefined) return undefined;
  const raw = Array.isArray(given) ? given.join(',') : given;
  const digest = Buffer.from(raw, 'base64');
  if (digest.length !== 16 || digest.toString('base64') !== raw.trim()) {
    throw new S3Error(400, 'InvalidDigest', 'The Content-MD5 you specified is not valid.');
  }
  return digest;
}

const badMd5 = (): S3Error =>
  new S3Error(400, 'BadDigest', 'The Content-MD5 you specified did not match what we received.');

const shaMismatch = (): S3Error =>
  new S3Error(
    400,
    'XAmzContentSHA256Mismatch',
    "The provided 'x-amz-content-sha256' header does not match what was computed.",
  );

/** Clients that wait for "100 Continue" get it only once the request has passed every check. */
function sayContinue(req: IncomingMessage, res: ServerResponse): void {
  if (req.headers.expect?.toLowerCase() === '100-continue') res.writeContinue();
}

/** Reads an object's or a part's body into tmp/, checking its length and every digest it declares. */
export async function receiveBody(
  req: IncomingMessage,
  res: ServerResponse,
  store: BucketStore,
  claim: Claim,
  max: number,
  checksum: DeclaredChecksum | undefined,
): Promise<Received> {
  const length = contentLength(req, max);
  const md5 = contentMd5(req);
  sayContinue(req, res);
  const sha = claim.payloadHash === UNSIGNED ? undefined : createHash('sha256');
  const flexible = checksum && checksummer(checksum.algorithm);
  const got = await store.receive(
    req,
    (chunk) => {
      sha?.update(chunk);
      flexible?.update(chunk);
    },
    length,
  );
  const fail = async (err: S3Error): Promise<never> => {
    await store.discard(got.tmp);
    throw err;
  };
  if (got.size !== length)
    await fail(
      new S3Error(
        400,
        'IncompleteBody',
        'You did not provide the number of bytes specified by the Content-Length HTTP header.',
      ),
    );
  if (md5 && !md5.equals(got.md5)) await fail(badMd5());
  if (sha && sha.digest('hex') !== claim.payloadHash) {
    await fail(shaMismatch());
  }
  if (checksum && flexible?.value() !== checksum.value) await fail(checksumMismatch(checksum.algorithm));
  return got;
}

/** A small XML body (CompleteMultipartUpload), with its Content-MD5 and SHA-256 checked. */
export async function readSmallBody(
  req: IncomingMessage,
  res: ServerResponse,
  claim: Claim,
  max: number,
): Promise<string> {
  const md5 = contentMd5(req);
  sayContinue(req, res);
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of req as AsyncIterable<Buffer>) {
    size += chunk.length;
    if (size > max) throw new S3Error(400, 'MaxMessageLengthExceeded', 'Your request was too big.');
    chunks.push(chunk);
  }
  const body = Buffer.concat(chunks);
  if (md5 && !md5.equals(createHash('md5').update(body).digest())) throw badMd5();
  if (
    claim.payloadHash !== UNSIGNED &&
    createHash('sha256').update(body).digest('hex') !== claim.payloadHash
  ) {
    throw shaMismatch();
  }
  return body.toString('utf8');
}
