import { z } from 'zod';
import { parseOrThrow } from '../envelope.js';

/**
 * A real bucket instead of the embedded one. The service keeps long-term
 * keys and hands out only AssumeRole credentials scoped (by session policy)
 * to the workspace's prefix. aws and minio use the AWS STS API (MinIO
 * implements AssumeRole on its own endpoint); ali uses Alibaba Cloud STS via
 * ali-oss. Ceph RGW is `minio` (path-style, STS on its endpoint) with the
 * roleArn of an RGW role: tested against a real one in test/peers/ceph/.
 * AWS, MinIO and Alibaba themselves: only this validation is tested.
 */
export interface ExternalBucketConfig {
  provider: 'aws' | 'minio' | 'ali';
  /** Bucket endpoint as clients use it, with scheme: https://s3.eu-west-1.amazonaws.com, http://10.0.0.5:9000. */
  endpoint: string;
  region: string;
  bucket: string;
  /** Optional common prefix; each workspace gets `<objectKeyPrefix>/<workspace id>`. */
  objectKeyPrefix?: string;
  accessKeyId: string;
  secretAccessKey: string;
  /** Required for aws and ali; MinIO ignores it, Ceph RGW needs it. */
  roleArn?: string;
  /** STS endpoint; default: AWS's regional one (aws), the bucket endpoint (minio), Alibaba's (ali). */
  stsEndpoint?: string;
}

const httpUrl = z
  .string()
  .max(512)
  .refine((s) => /^https?:\/\/[^/\s]+/.test(s) && URL.canParse(s), 'must be an http:// or https:// URL');

const schema = z
  .object({
    provider: z.enum(['aws', 'minio', 'ali']),
    endpoint: httpUrl,
    region: z.string().min(1).max(64),
    bucket: z
      .string()
      .regex(
        /^[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]$/,
        'must be a valid bucket name (3-63 lowercase letters, digits, . or -)',
      ),
    objectKeyPrefix: z
      .string()
      .max(256)
      .regex(/^(?:[^/\s][^\s]*[^/\s]|[^/\s])?$/, 'must not start or end with / nor contain spaces')
      .optional(),
    accessKeyId: z.string().min(1).max(256),
    secretAccessKey: z.string().min(1).max(512),
    roleArn: z.string().min(1).max(2048).optional(),
    stsEndpoint: httpUrl.optional(),
  })
  .refine((c) => c.provider === 'minio' || c.roleArn !== undefined, {
    path: ['roleArn'],
    message: 'roleArn is required for the aws and ali providers',
  });

/** Throws an Error naming the wrong field ("externalBucket: bucket must be ..."). Secrets never appear in it. */
export function validateExternalBucketConfig(input: unknown): ExternalBucketConfig {
  try {
    return parseOrThrow(schema, input, 'externalBucket config');
  } catch (err) {
    throw new Error(`externalBucket: ${(err as Error).message}`, { cause: err });
  }
}
