import type { Logger } from 'pino';
import type { TokenStore } from './auth.js';
import type { CredentialsCheck } from './bucket/credentials-check.js';
import type { BucketBackend } from './bucket/types.js';
import type { SqlDb } from './data/sql.js';
import type { ServiceLimits } from './limits.js';

/** What the route modules share. */
export interface ServiceContext {
  db: SqlDb;
  tokens: TokenStore;
  bucket: BucketBackend;
  /** Whether bucket credentials can be had (start, /readyz, every sts). */
  credentials: CredentialsCheck;
  /** Mutable: admin.setStsExpireSeconds() changes it at run time. */
  settings: { stsExpireSeconds: number };
  log: Logger | null;
  limits: ServiceLimits;
  /** draining: SIGTERM was received (new requests refused); inFlight: requests being answered. */
  lifecycle: { draining: boolean; inFlight: number };
}
