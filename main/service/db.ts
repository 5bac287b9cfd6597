import Database from 'better-sqlite3';
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { MIGRATIONS, SCHEMA_VERSION } from './migrations.js';

export type Db = Database.Database;

export const DB_FILE = 'service.db';

/** The data dir was written by a newer version of the service: opening it could destroy data. */
export class SchemaTooNewError extends Error {
  constructor(
    readonly file: string,
    readonly found: number,
    readonly known: number,
  ) {
    super(
      `The database ${file} has schema version ${found}, but this version of the service only knows ` +
        `versions up to ${known}. It was written by a newer Drone Media Sync: upgrade, or use another data dir.`,
    );
    this.name = 'SchemaTooNewError';
  }
}

/**
 * Opens (creating if needed) the service database in `dataDir` and brings its
 * schema up to date. WAL lets importWaylines() write while a service runs on
 * the same file; busy_timeout makes the two wait for each other instead of
 * failing with SQLITE_BUSY.
 */
export function openDatabase(dataDir: string): Db {
  mkdirSync(dataDir, { recursive: true });
  const file = join(dataDir, DB_FILE);
  const db = new Database(file);
  try {
    db.pragma('journal_mode = WAL');
    // Said here, not left to the build's default: a commit is in the operating system when it
    // returns (a killed or crashed service loses nothing it answered), and the file is synced at
    // each WAL checkpoint. A power cut may lose the last commits, never the file's consistency
    // (as the embedded bucket's object files, written without fsync). docs/deploy.md says so.
    db.pragma('synchronous = NORMAL');
    db.pragma('foreign_keys = ON');
    db.pragma('busy_timeout = 5000');
    migrate(db, file);
    return db;
  } catch (err) {
    db.close();
    throw err;
  }
}

function migrate(db: Db, file: string): void {
  const current = db.pragma('user_version', { simple: true }) as number;
  if (current > SCHEMA_VERSION) throw new SchemaTooNewError(file, current, SCHEMA_VERSION);
  // One step per transaction (a crash leaves the file at a known version), each taking the
  // write lock first (IMMEDIATE) and reading the version under it: two instances started at
  // once on one file run each step once, the second finding it done.
  const step = db.transaction((): boolean => {
    const version = db.pragma('user_version', { simple: true }) as number;
    const migration = MIGRATIONS[version];
    if (version >= SCHEMA_VERSION || !migration) return false;
    db.exec(migration.sql);
    db.pragma(`user_version = ${version + 1}`);
    return true;
  });
  while (step.immediate());
}
