import { HeadObjectCommand, S3Client } from '@aws-sdk/client-s3';
import { AssumeRoleCommand, STSClient } from '@aws-sdk/client-sts';
import { z } from 'zod';
import type { StsResult } from '../../core/api/types.js';
import { parseOrThrow } from '../envelope.js';
import { StorageProviderError, type BucketBackend } from './types.js';

/**
 * A real bucket instead of the embedded one. The service keeps long-term
 * keys and hands out only AssumeRole credentials scoped (by session policy)
 * to the workspace's prefix. aws and minio use the AWS STS API (MinIO
 * implements AssumeRole on its own endpoint); ali uses Alibaba Cloud STS via
 * ali-oss. Not exercised against real clouds in tests: only this validation is.
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
  /** Required for aws and ali; MinIO ignores it. */
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

function sessionName(workspaceId: string): string {
  return `dms-${workspaceId}`.replace(/[^\w+=,.@-]/g, '-').slice(0, 64);
}

function awsPolicy(partition: string, bucket: string, prefix: string): string {
  return JSON.stringify({
    Version: '2012-10-17',
    Statement: [
      {
        Effect: 'Allow',
        Action: ['s3:PutObject', 's3:GetObject', 's3:AbortMultipartUpload', 's3:ListMultipartUploadParts'],
        Resource: [`arn:${partition}:s3:::${bucket}/${prefix}/*`],
      },
      {
        Effect: 'Allow',
        Action: ['s3:ListBucket'],
        Resource: [`arn:${partition}:s3:::${bucket}`],
        Condition: { StringLike: { 's3:prefix': [`${prefix}/*`] } },
      },
    ],
  });
}

function aliPolicy(bucket: string, prefix: string): string {
  return JSON.stringify({
    Version: '1',
    Statement: [
      {
        Effect: 'Allow',
        Action: ['oss:PutObject', 'oss:GetObject', 'oss:AbortMultipartUpload', 'oss:ListParts'],
        Resource: [`acs:oss:*:*:${bucket}/${prefix}/*`],
      },
    ],
  });
}

/** AWS and Alibaba refuse sessions shorter than 15 minutes. */
const clampDuration = (s: number): number => Math.min(Math.max(Math.floor(s), 900), 43_200);
const secondsUntil = (date: Date | string | undefined, fallback: number): number =>
  date === undefined ? fallback : Math.max(0, Math.floor((new Date(date).getTime() - Date.now()) / 1000));

export function createExternalBucket(input: ExternalBucketConfig): BucketBackend {
  const cfg = validateExternalBucketConfig(input);
  const keys = { accessKeyId: cfg.accessKeyId, secretAccessKey: cfg.secretAccessKey };
  const s3 =
    cfg.provider === 'ali'
      ? null
      : new S3Client({
          region: cfg.region,
          endpoint: cfg.endpoint,
          forcePathStyle: cfg.provider === 'minio',
          credentials: keys,
        });
  const sts =
    cfg.provider === 'ali'
      ? null
      : new STSClient({
          region: cfg.region,
          credentials: keys,
          ...(cfg.stsEndpoint
            ? { endpoint: cfg.stsEndpoint }
            : cfg.provider === 'minio'
              ? { endpoint: cfg.endpoint }
              : {}),
        });

  async function issue(req: {
    workspaceId: string;
    prefix: string;
    expireSeconds: number;
  }): Promise<StsResult> {
    const base = {
      bucket: cfg.bucket,
      endpoint: cfg.endpoint,
      object_key_prefix: req.prefix,
      provider: cfg.provider,
      region: cfg.region,
    };
    const duration = clampDuration(req.expireSeconds);
    try {
      if (sts) {
        const partition = cfg.region.startsWith('cn-') ? 'aws-cn' : 'aws';
        const out = await sts.send(
          new AssumeRoleCommand({
            // MinIO ignores the role; AWS requires one (checked by validation).
            RoleArn: cfg.roleArn ?? 'arn:minio:iam:::role/dms',
            RoleSessionName: sessionName(req.workspaceId),
            DurationSeconds: duration,
            Policy: awsPolicy(partition, cfg.bucket, req.prefix),
          }),
        );
        const c = out.Credentials;
        if (!c?.AccessKeyId || !c.SecretAccessKey || !c.SessionToken)
          throw new Error('the answer has no credentials');
        return {
          ...base,
          credentials: {
            access_key_id: c.AccessKeyId,
            access_key_secret: c.SecretAccessKey,
            expire: secondsUntil(c.Expiration, duration),
            security_token: c.SessionToken,
          },
        };
      }
      const { default: OSS } = await import('ali-oss');
      const client = new OSS.STS({ accessKeyId: cfg.accessKeyId, accessKeySecret: cfg.secretAccessKey });
      const { credentials: c } = await client.assumeRole(
        cfg.roleArn ?? '',
        aliPolicy(cfg.bucket, req.prefix),
        duration,
        sessionName(req.workspaceId),
      );
      return {
        ...base,
        credentials: {
          access_key_id: c.AccessKeyId,
          access_key_secret: c.AccessKeySecret,
          expire: secondsUntil(c.Expiration, duration),
          security_token: c.SecurityToken,
        },
      };
    } catch (err) {
      throw new StorageProviderError(
        `Could not get temporary credentials from the ${cfg.provider} STS: ${(err as Error).message}. Check the externalBucket settings.`,
        { cause: err },
      );
    }
  }

  async function objectExists(key: string): Promise<boolean> {
    try {
      if (s3) {
        await s3.send(new HeadObjectCommand({ Bucket: cfg.bucket, Key: key }));
        return true;
      }
      const { default: OSS } = await import('ali-oss');
      const oss = new OSS({
        region: cfg.region,
        endpoint: cfg.endpoint,
        bucket: cfg.bucket,
        accessKeyId: cfg.accessKeyId,
        accessKeySecret: cfg.secretAccessKey,
      });
      await oss.head(key);
      return true;
    } catch (err) {
      const e = err as {
        name?: string;
        code?: string;
        status?: number;
        $metadata?: { httpStatusCode?: number };
      };
      if (
        e.name === 'NotFound' ||
        e.code === 'NoSuchKey' ||
        e.status === 404 ||
        e.$metadata?.httpStatusCode === 404
      )
        return false;
      throw new StorageProviderError(`Could not check the object in the bucket: ${(err as Error).message}`, {
        cause: err,
      });
    }
  }

  return {
    name: cfg.bucket,
    endpoint: cfg.endpoint,
    dataDir: '',
    prefixFor: (workspacePrefix) =>
      cfg.objectKeyPrefix ? `${cfg.objectKeyPrefix}/${workspacePrefix}` : workspacePrefix,
    issue,
    objectExists,
    close() {
      s3?.destroy();
      sts?.destroy();
      return Promise.resolve();
    },
  };
}
