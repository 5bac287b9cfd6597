import type { Logger } from 'pino';
import type { TokenStore } from './auth.js';
import type { BucketBackend } from './bucket/types.js';
import type { Db } from './db.js';
import type { ServiceLimits } from './limits.js';

/** What the route modules share. */
export interface ServiceContext {
  db: Db;
  tokens: TokenStore;
  bucket: BucketBackend;
  /** Mutable: admin.setStsExpireSeconds() changes it at run time. */
  settings: { stsExpireSeconds: number };
  log: Logger | null;
  limits: ServiceLimits;
}
