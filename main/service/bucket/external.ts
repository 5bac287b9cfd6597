import { S3Client } from '@aws-sdk/client-s3';
import { AssumeRoleCommand, STSClient } from '@aws-sdk/client-sts';
import type { StsResult } from '../../core/api/types.js';
import { SignedHead } from '../../core/storage/s3-put.js';
import { parseProviderError, StorageProviderError, type BucketBackend, type ObjectInfo } from './types.js';
import { validateExternalBucketConfig, type ExternalBucketConfig } from './external-config.js';

export { validateExternalBucketConfig, type ExternalBucketConfig };

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

/** AWS, Ceph RGW and Alibaba refuse sessions shorter than 15 minutes. */
const clampDuration = (s: number): number => Math.min(Math.max(Math.floor(s), 900), 43_200);
/**
 * `expire` as clients read it: the configured lifetime, or less if the
 * provider's credentials end sooner. A configured lifetime under the
 * provider's 15 minutes is honoured this way: clients come back for new
 * credentials after it, though the old ones would still work.
 */
const expireSeconds = (expiration: Date | string | undefined, configured: number): number =>
  expiration === undefined
    ? configured
    : Math.min(configured, Math.max(0, Math.floor((new Date(expiration).getTime() - Date.now()) / 1000)));

export function createExternalBucket(
  input: ExternalBucketConfig,
  opts: { providerIdleMs: number } = { providerIdleMs: 20_000 },
): BucketBackend {
  // Idle limits on the provider's sockets: an STS that takes the request and never answers
  // fails it, as one that refuses does (without them a request waited for ever).
  const requestHandler = { connectionTimeout: 10_000, socketTimeout: opts.providerIdleMs };
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
          requestHandler,
        });
  const head = new SignedHead();
  const sts =
    cfg.provider === 'ali'
      ? null
      : new STSClient({
          region: cfg.region,
          credentials: keys,
          requestHandler,
          ...(cfg.stsEndpoint
            ? { endpoint: cfg.stsEndpoint }
            : cfg.provider === 'minio'
              ? { endpoint: cfg.endpoint }
              : {}),
        });

  // Error answers are read here, before the SDK's parser: it cannot read RGW's S3-form
  // errors and would say only "UnknownError" (see ProviderAnswerError).
  sts?.middlewareStack.add(
    (next) => async (args) => {
      const out = await next(args);
      const res = out.response as { statusCode?: number; body?: unknown };
      if (typeof res.statusCode === 'number' && res.statusCode >= 300) {
        const err = parseProviderError(res.statusCode, await readSome(res.body, 64 * 1024));
        // What the SDK's own errors carry: its signer learns the provider's clock from the
        // answer's Date (RGW's clock minutes off: RequestTimeTooSkewed) and its retry asks again.
        throw Object.assign(err, { $response: out.response, $metadata: { httpStatusCode: res.statusCode } });
      }
      return out;
    },
    { step: 'deserialize', priority: 'low', name: 'dmsProviderErrors' },
  );

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
            expire: expireSeconds(c.Expiration, req.expireSeconds),
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
          expire: expireSeconds(c.Expiration, req.expireSeconds),
          security_token: c.SecurityToken,
        },
      };
    } catch (err) {
      // The provider's text (account ids, role ARNs) goes to the service log only.
      throw new StorageProviderError(
        `Could not get temporary credentials from the ${cfg.provider} STS. The service's operator finds the reason in its log.`,
        { cause: err },
      );
    }
  }

  /**
   * HEAD gives the size and the ETag; a single-part object's ETag is its MD5
   * (S3, MinIO, OSS without KMS encryption). A multipart ETag is not: md5 null.
   */
  async function objectInfo(key: string): Promise<ObjectInfo | null> {
    const md5Of = (etag: string | undefined): string | null => {
      const plain = etag?.replace(/"/g, '').toLowerCase();
      return plain !== undefined && /^[0-9a-f]{32}$/.test(plain) ? plain : null;
    };
    try {
      if (s3) {
        // Signed HEAD without the SDK's middleware: one or two per fast-upload and callback (s3-put.ts).
        const out = await head.send(s3, { bucket: cfg.bucket, endpoint: cfg.endpoint }, key);
        return out && { size: out.size, md5: md5Of(out.etag) };
      }
      const { default: OSS } = await import('ali-oss');
      const oss = new OSS({
        region: cfg.region,
        endpoint: cfg.endpoint,
        bucket: cfg.bucket,
        accessKeyId: cfg.accessKeyId,
        accessKeySecret: cfg.secretAccessKey,
      });
      const { res } = await oss.head(key);
      const headers = res.headers as Record<string, string | undefined>;
      return { size: Number(headers['content-length'] ?? 0), md5: md5Of(headers.etag) };
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
        return null;
      throw new StorageProviderError(
        "Could not check the object in the bucket. The service's operator finds the reason in its log.",
        { cause: err },
      );
    }
  }

  return {
    async probe(expire: number) {
      await issue({ workspaceId: 'check', prefix: cfg.objectKeyPrefix ?? 'check', expireSeconds: expire });
    },
    name: cfg.bucket,
    endpoint: cfg.endpoint,
    dataDir: '',
    prefixFor: (workspacePrefix) =>
      cfg.objectKeyPrefix ? `${cfg.objectKeyPrefix}/${workspacePrefix}` : workspacePrefix,
    issue,
    objectInfo,
    close() {
      s3?.destroy();
      sts?.destroy();
      return Promise.resolve();
    },
  };
}

/** Up to `max` bytes of a response body (a Node stream), as text; '' when there is none. */
async function readSome(body: unknown, max: number): Promise<string> {
  if (body === null || typeof body !== 'object' || !(Symbol.asyncIterator in body)) return '';
  const chunks: Buffer[] = [];
  let size = 0;
  try {
    for await (const chunk of body as AsyncIterable<Buffer | string>) {
      const b = Buffer.isBuffer(chunk) ? chunk : Buffer.from(chunk);
      chunks.push(b);
      size += b.length;
      if (size >= max) break;
    }
  } catch {
    // What arrived is enough to name the error.
  }
  return Buffer.concat(chunks).subarray(0, max).toString('utf8');
}
