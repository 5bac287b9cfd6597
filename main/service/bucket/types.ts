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
  close(): Promise<void>;
}

/**
 * Raised when the storage provider (STS, HEAD) fails; becomes HTTP 502 with
 * code 502001. Its message goes to the client: it names what failed, never
 * the provider's own text (account ids, ARNs), which stays in `cause` for the log.
 */
export class StorageProviderError extends Error {
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = 'StorageProviderError';
  }
}
