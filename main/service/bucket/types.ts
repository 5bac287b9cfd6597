import type { StsResult } from '../../core/api/types.js';

/** Where the media of the service's workspaces goes: the embedded s3rver or a real bucket. */
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
  objectExists(key: string): Promise<boolean>;
  close(): Promise<void>;
}

/** Raised when the storage provider (STS, HEAD) fails; becomes HTTP 502 with code 502001. */
export class StorageProviderError extends Error {
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = 'StorageProviderError';
  }
}
