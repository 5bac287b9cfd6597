/**
 * Entry point of the storage layer: one Uploader per provider and target
 * provider. S3 and MinIO share the S3 implementation; Alibaba OSS has its own.
 */
// createUploader loads the provider's SDK on first use (see create.ts).
export { createUploader } from './create.js';
export { createS3Uploader } from './s3.js';
export { createOssUploader } from './oss.js';
export type { OssClient, OssClientFactory, OssUploaderOptions } from './oss.js';
export { buildObjectKey, sanitizeSegment, MAX_KEY_BYTES, MAX_SEGMENT_BYTES } from './keys.js';
export type { ObjectKeyInput } from './keys.js';
export { choosePartSize } from './parts.js';
export type * from './types.js';
