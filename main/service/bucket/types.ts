import type { StsResult } from '../../core/api/types.js';

/** What the bucket knows of a stored object. */
export interface ObjectInfo {
  size: number;
  /** Hex MD5 of the whole object, or null when the provider cannot tell (external multipart objects). */
  md5: string | null;
}

/** Where the media of the service's workspaces goes: the embedded bucket or a real one. */
export interface BucketBackend {
  readonly name: string;
  /** Default endpoint (scheme, host, port), as clients should use it. */
  readonly endpoint: string;
  /** Local directory of the objects; '' for an external bucket. */
  readonly dataDir: string;
  /** Full object key prefix (no trailing '/') of a workspace, from the workspace's own prefix. */
  prefixFor(workspacePrefix: string): string;
  /**
   * Temporary credentials limited to `prefix` for `expireSeconds`.
   * `requestHost` is the Host the client used to reach the service (see embedded.ts).
   */
  issue(req: {
    workspaceId: string;
    prefix: string;
    expireSeconds: number;
    requestHost?: string;
  }): Promise<StsResult>;
  /** Size and MD5 of the object, or null when there is no such object. */
  objectInfo(key: string): Promise<ObjectInfo | null>;
  /**
   * External buckets: asks the provider's STS for credentials of `expireSeconds`
   * once (no workspace's prefix), throwing StorageProviderError as issue() does.
   * Absent for the embedded bucket, which signs them itself.
   */
  probe?(expireSeconds: number): Promise<void>;
  close(): Promise<void>;
}

/**
 * Raised when the storage provider (STS, HEAD) fails; becomes HTTP 502 with
 * code 502001. Its message goes to the client: it names what failed, never
 * the provider's own text (account ids, ARNs), which stays in `cause` for the log.
 */
export class StorageProviderError extends Error {
  /** The provider's own answer for the log ("HTTP 400 InvalidArgument (request tx…)", "ECONNREFUSED …"). */
  readonly providerReason: string;
  /** The provider answered and refused (HTTP 4xx): the settings are wrong, trying again will not help. */
  readonly refused: boolean;
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = 'StorageProviderError';
    const reason = providerReason(options?.cause);
    this.providerReason = reason.text;
    this.refused =
      reason.status !== undefined && reason.status >= 400 && reason.status < 500 && reason.status !== 429;
  }
}

/**
 * An error answer of the provider as it came (Code, Message, RequestId of
 * its XML): Ceph RGW answers STS errors in S3's `<Error>` form, which the
 * AWS SDK's STS client cannot read (it made them all "UnknownError").
 */
export class ProviderAnswerError extends Error {
  readonly $metadata: { httpStatusCode: number };
  constructor(
    readonly status: number,
    readonly code: string | undefined,
    readonly providerMessage: string | undefined,
    readonly requestId: string | undefined,
  ) {
    super(`HTTP ${status}${code ? ` ${code}` : ''}${providerMessage ? `: ${providerMessage}` : ''}`);
    this.name = code ?? 'ProviderAnswerError';
    // Read by the SDK's retry strategy: a 5xx is tried again as before.
    this.$metadata = { httpStatusCode: status };
  }
}

const XML_ENTITIES: Record<string, string> = { amp: '&', lt: '<', gt: '>', quot: '"', apos: "'" };

/** The Code, Message and RequestId of an AWS (`<ErrorResponse><Error>…`) or S3/RGW (`<Error>…`) error body. */
export function parseProviderError(status: number, body: string): ProviderAnswerError {
  const field = (name: string): string | undefined => {
    const raw = new RegExp(`<${name}>([^<]*)</${name}>`).exec(body)?.[1];
    const text = raw?.replace(/&(amp|lt|gt|quot|apos);/g, (_m, e: string) => XML_ENTITIES[e] ?? '').trim();
    return text ? text.slice(0, 500) : undefined;
  };
  return new ProviderAnswerError(status, field('Code'), field('Message'), field('RequestId'));
}

/** What the provider said, from whatever its client threw (ProviderAnswerError, AWS SDK, ali-oss, a socket error). */
export function providerReason(err: unknown): { text: string; status?: number } {
  const e = (err ?? {}) as {
    name?: string;
    code?: unknown;
    message?: string;
    status?: unknown;
    requestId?: string;
    $metadata?: { httpStatusCode?: number; requestId?: string };
    cause?: unknown;
  };
  if (err instanceof ProviderAnswerError)
    return { text: err.message + (err.requestId ? ` (request ${err.requestId})` : ''), status: err.status };
  const status = e.$metadata?.httpStatusCode ?? (typeof e.status === 'number' ? e.status : undefined);
  const requestId = e.$metadata?.requestId ?? e.requestId;
  const code = typeof e.code === 'string' ? e.code : e.name;
  const message = typeof e.message === 'string' ? e.message : String(err);
  if (status !== undefined)
    return {
      text: `HTTP ${status} ${code ?? ''}${message && message !== code ? `: ${message}` : ''}${requestId ? ` (request ${requestId})` : ''}`,
      status,
    };
  if (e.cause !== undefined && e.cause !== null && typeof e.code !== 'string') {
    const inner = providerReason(e.cause);
    return {
      text: `${message}: ${inner.text}`,
      ...(inner.status !== undefined ? { status: inner.status } : {}),
    };
  }
  return { text: typeof e.code === 'string' ? `${e.code}: ${message}` : message };
}
