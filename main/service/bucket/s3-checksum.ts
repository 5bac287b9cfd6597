/**
 * The flexible checksums of S3 (x-amz-checksum-crc32, -sha1, -sha256) that
 * current SDKs send with every PutObject and UploadPart by default: each is
 * computed while the body streams in and must match, else BadDigest. A
 * single PUT keeps its checksum (given back on GET/HEAD with
 * x-amz-checksum-mode: ENABLED); a part keeps its own, which the part list
 * of CompleteMultipartUpload must repeat when it names one.
 */
import { createHash } from 'node:crypto';
import { crc32 } from 'node:zlib';
import { CHECKSUM_ALGORITHMS, type ChecksumAlgorithm } from './s3-headers.js';
import { invalidRequest, S3Error } from './s3-protocol.js';

export interface DeclaredChecksum {
  algorithm: ChecksumAlgorithm;
  /** Base64, as sent. */
  value: string;
}

const DIGEST_BYTES: Record<ChecksumAlgorithm, number> = { crc32: 4, sha1: 20, sha256: 32 };

/** The checksum a PUT or UploadPart declares, if any (fields already judged by s3-headers.ts). */
export function declaredChecksum(fields: Map<string, string>): DeclaredChecksum | undefined {
  const declared = CHECKSUM_ALGORITHMS.filter((a) => fields.has(`x-amz-checksum-${a}`));
  if (declared.length > 1) {
    throw invalidRequest(
      'Expecting a single x-amz-checksum- header. Multiple checksum Types are not allowed.',
    );
  }
  const sdk = fields.get('x-amz-sdk-checksum-algorithm')?.toLowerCase();
  const algorithm = declared[0];
  if (sdk !== undefined && sdk !== algorithm) {
    throw invalidRequest(
      `x-amz-sdk-checksum-algorithm specified, but no corresponding x-amz-checksum-${sdk} header was found.`,
    );
  }
  if (algorithm === undefined) return undefined;
  const value = fields.get(`x-amz-checksum-${algorithm}`)!.trim();
  checkChecksumValue(algorithm, value);
  return { algorithm, value };
}

/** A checksum value must be the base64 of a digest of its algorithm, as S3 checks. */
export function checkChecksumValue(algorithm: ChecksumAlgorithm, value: string): void {
  const bytes = Buffer.from(value, 'base64');
  if (bytes.length !== DIGEST_BYTES[algorithm] || bytes.toString('base64') !== value) {
    throw invalidRequest(`Value for x-amz-checksum-${algorithm} header is invalid.`);
  }
}

/** Computes `algorithm` over the chunks it is given; `value()` in base64 as S3 writes it. */
export function checksummer(algorithm: ChecksumAlgorithm): {
  update(chunk: Buffer): void;
  value(): string;
} {
  if (algorithm === 'crc32') {
    let crc = 0;
    return {
      update: (chunk) => void (crc = crc32(chunk, crc)),
      value: () => {
        const out = Buffer.alloc(4);
        out.writeUInt32BE(crc >>> 0);
        return out.toString('base64');
      },
    };
  }
  const hash = createHash(algorithm);
  return { update: (chunk) => void hash.update(chunk), value: () => hash.digest('base64') };
}

export const checksumMismatch = (algorithm: ChecksumAlgorithm): S3Error =>
  new S3Error(
    400,
    'BadDigest',
    `The ${algorithm.toUpperCase()} you specified did not match the calculated checksum.`,
  );

/** The header name of a checksum, and the element name of it in S3's XML (ChecksumCRC32...). */
export const checksumHeader = (algorithm: ChecksumAlgorithm): string => `x-amz-checksum-${algorithm}`;
export const checksumElement = (algorithm: ChecksumAlgorithm): string => `Checksum${algorithm.toUpperCase()}`;

/**
 * The checksum a CreateMultipartUpload asks for (x-amz-checksum-algorithm,
 * x-amz-checksum-type), what boto3 and the AWS CLI send by default for big
 * files: every part must then carry it, and the object gets one, COMPOSITE
 * (the checksum of the parts' checksums, "-N") or, for CRC32, FULL_OBJECT.
 */
export interface MultipartChecksum {
  algorithm: ChecksumAlgorithm;
  type: 'COMPOSITE' | 'FULL_OBJECT';
}

const ALGORITHM_FIELD = 'x-amz-checksum-algorithm';
const TYPE_FIELD = 'x-amz-checksum-type';

/** From CreateMultipartUpload's fields (already judged by s3-headers.ts). */
export function declaredMultipartChecksum(fields: Map<string, string>): MultipartChecksum | undefined {
  const algorithm = fields.get(ALGORITHM_FIELD)?.toLowerCase() as ChecksumAlgorithm | undefined;
  const type = fields.get(TYPE_FIELD)?.toUpperCase() ?? 'COMPOSITE';
  if (algorithm === undefined) {
    if (fields.has(TYPE_FIELD)) throw invalidRequest('x-amz-checksum-type needs x-amz-checksum-algorithm.');
    return undefined;
  }
  if (type !== 'COMPOSITE' && type !== 'FULL_OBJECT') {
    throw invalidRequest('x-amz-checksum-type must be COMPOSITE or FULL_OBJECT.');
  }
  if (type === 'FULL_OBJECT' && algorithm !== 'crc32') {
    throw invalidRequest(
      `The FULL_OBJECT checksum type cannot be used with the ${algorithm.toUpperCase()} algorithm.`,
    );
  }
  return { algorithm, type };
}

/** Kept with the upload among its headers, and taken out of them again. */
export function withMultipartChecksum(
  headers: Record<string, string>,
  c: MultipartChecksum | undefined,
): Record<string, string> {
  return c ? { ...headers, [ALGORITHM_FIELD]: c.algorithm, [TYPE_FIELD]: c.type } : headers;
}
export function takeMultipartChecksum(headers: Record<string, string>): {
  checksum: MultipartChecksum | undefined;
  rest: Record<string, string>;
} {
  const { [ALGORITHM_FIELD]: algorithm, [TYPE_FIELD]: type, ...rest } = headers;
  const checksum =
    algorithm !== undefined
      ? {
          algorithm: algorithm as ChecksumAlgorithm,
          type: type === 'FULL_OBJECT' ? 'FULL_OBJECT' : 'COMPOSITE',
        }
      : undefined;
  return { checksum: checksum as MultipartChecksum | undefined, rest };
}

/** S3's COMPOSITE checksum: the checksum of the parts' binary checksums, "-", their number. */
export function compositeChecksum(algorithm: ChecksumAlgorithm, partValues: string[]): string {
  const c = checksummer(algorithm);
  for (const v of partValues) c.update(Buffer.from(v, 'base64'));
  return `${c.value()}-${partValues.length}`;
}
