/** What the peer tests share: the service's configuration for the RGW under test, ... */
import type { ExternalBucketConfig } from '../../../main/service/index.js';
import type { Rgw } from './rgw.js';

/** The RGW deployment as an operator would configure it: S3-compatible, path-style, STS on the same endpoint. */
export function rgwBucketConfig(r: Rgw, change: Partial<ExternalBucketConfig> = {}): ExternalBucketConfig {
  return {
    provider: 'minio',
    endpoint: r.endpoint,
    region: r.region,
    bucket: r.bucket,
    objectKeyPrefix: 'crews',
    accessKeyId: r.accessKeyId,
    secretAccessKey: r.secretAccessKey,
    roleArn: r.roleArn,
    ...change,
  };
}
