/**
 * Entry point of the storage layer: one Uploader per provider and target
 * provider. S3 and MinIO share the S3 implementation; Alibaba OSS has its own.
 */
import type { StorageProvider } from '../api/types.js';
import { DmsError } from '../errors.js';
import { createOssUploader } from './oss.js';
import type { OssUploaderOptions } from './oss.js';
import { createS3Uploader } from './s3.js';
import type { Uploader } from './types.js';

export function createUploader(provider: StorageProvider, opts: OssUploaderOptions): Uploader {
  switch (provider) {
    case 'aws':
    case 'minio':
      return createS3Uploader(opts);
    case 'ali':
      return createOssUploader(opts);
    default:
      throw new DmsError('invalid-input', `Unsupported storage provider "${String(provider)}".`, {
        retryable: false,
      });
  }
}

export { createS3Uploader } from './s3.js';
export { createOssUploader } from './oss.js';
export type { OssClient, OssClientFactory, OssUploaderOptions } from './oss.js';
export { buildObjectKey, sanitizeSegment, MAX_KEY_BYTES, MAX_SEGMENT_BYTES } from './keys.js';
export type { ObjectKeyInput } from './keys.js';
export { choosePartSize } from './parts.js';
export type * from './types.js';
