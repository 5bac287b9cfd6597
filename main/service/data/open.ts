import type { Logger } from 'pino';
import { openDatabase, type Db } from '../db.js';
import { describeDatabase, type DatabaseConfig } from './config.js';
import { PostgresDb } from './postgres.js';
import type { SqlDb } from './sql.js';
import { SqliteDb } from './sqlite.js';

/** A second instance that cannot share the database safely: `serve` stops with this message. */
export class InstanceConflictError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'InstanceConflictError';
  }
}

/** The service's tables on one backend, plus the SQLite file the embedded bucket keeps its own in. */
export interface ServiceDatabase {
  db: SqlDb;
  /** 'sqlite' or postgres://user@host:port/database: for logs, never a password. */
  description: string;
  /** Schema up to date, then `bootstrap`; on PostgreSQL one instance at a time. */
  startup<T>(bootstrap: () => Promise<T>): Promise<T>;
  /** The embedded bucket's database: the data dir's SQLite file, its workspaces kept in step. */
  bucketDb(): Promise<Db>;
  /** Tells the bucket's file about a new workspace (PostgreSQL with the embedded bucket). */
  workspaceCreated(): Promise<void>;
  close(): Promise<void>;
}

export async function openServiceDatabase(opts: {
  dataDir: string;
  database: DatabaseConfig;
  embeddedBucket: boolean;
  log: Logger | null;
  /** Take the instance lock (PostgreSQL); false for one-off tools such as importWaylines. */
  lock?: boolean;
}): Promise<ServiceDatabase> {
  if (opts.database.kind === 'sqlite') {
    const raw = openDatabase(opts.dataDir);
    return {
      db: new SqliteDb(raw),
      description: 'sqlite',
      startup: (bootstrap) => bootstrap(),
      bucketDb: () => Promise.resolve(raw),
      workspaceCreated: () => Promise.resolve(),
      close() {
        raw.close();
        return Promise.resolve();
      },
    };
  }

  const description = describeDatabase(opts.database.url);
  const pg = new PostgresDb(opts.database, opts.log);
  let bucketFile: Db | null = null;
  try {
    if (opts.lock !== false && !(await pg.holdInstanceLock(opts.embeddedBucket ? 'exclusive' : 'shared'))) {
      throw new InstanceConflictError(
        opts.embeddedBucket
          ? `Another drone-media-sync service already uses the database ${description}. This one has the ` +
              'embedded bucket, whose files stay on this machine, so it must be the only service on that ' +
              'database. To run several instances, give every one of them the same external bucket with ' +
              '--bucket-config (for example Ceph RGW): see docs/deploy.md.'
          : `A drone-media-sync service with the embedded bucket already uses the database ${description}; ` +
              'its files are on its own machine, so no other instance may share that database. Stop it, or ' +
              'start it with --bucket-config too: see docs/deploy.md.',
      );
    }
  } catch (err) {
    await pg.close();
    throw err;
  }
  opts.log?.info(`database: ${description}`);

  // The bucket's tables refer to workspaces: its SQLite file gets a copy of their rows.
  const mirror = async (file: Db): Promise<void> => {
    const rows = await pg.all<{
      id: string;
      name: string;
      object_key_prefix: string;
      is_default: number;
      created_at: number;
    }>('SELECT id, name, object_key_prefix, is_default, created_at FROM workspaces');
    const insert = file.prepare(
      'INSERT OR IGNORE INTO workspaces (id, name, object_key_prefix, is_default, created_at) VALUES (?, ?, ?, ?, ?)',
    );
    file.transaction(() => {
      for (const r of rows) insert.run(r.id, r.name, r.object_key_prefix, r.is_default, r.created_at);
    })();
  };
  return {
    db: pg,
    description,
    startup: (bootstrap) => pg.startup(bootstrap),
    async bucketDb() {
      bucketFile ??= openDatabase(opts.dataDir);
      await mirror(bucketFile);
      return bucketFile;
    },
    async workspaceCreated() {
      if (bucketFile) await mirror(bucketFile);
    },
    async close() {
      bucketFile?.close();
      await pg.close();
    },
  };
}
