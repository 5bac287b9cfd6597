/**
 * Schema migrations of the reference service, applied in order. The index of
 * a migration in this array + 1 is the schema version it produces and is kept
 * in `PRAGMA user_version`. Never edit a migration that has shipped: append a
 * new one, because crews keep their data dir between versions.
 */
export interface Migration {
  description: string;
  sql: string;
}

export const MIGRATIONS: readonly Migration[] = [
  {
    description: 'initial schema',
    sql: `
      CREATE TABLE workspaces (
        id TEXT PRIMARY KEY,
        name TEXT NOT NULL,
        -- every object of the workspace lives under '<object_key_prefix>/'
        object_key_prefix TEXT NOT NULL UNIQUE,
        is_default INTEGER NOT NULL DEFAULT 0,
        created_at INTEGER NOT NULL
      );

      CREATE TABLE users (
        id INTEGER PRIMARY KEY,
        username TEXT NOT NULL UNIQUE COLLATE NOCASE,
        password_hash TEXT NOT NULL,
        workspace_id TEXT NOT NULL REFERENCES workspaces(id),
        created_at INTEGER NOT NULL
      );

      -- Only the sha256 of a token is stored: a copied database grants nothing.
      CREATE TABLE tokens (
        hash TEXT PRIMARY KEY,
        workspace_id TEXT NOT NULL REFERENCES workspaces(id),
        user_id INTEGER REFERENCES users(id),
        kind TEXT NOT NULL CHECK (kind IN ('dev', 'login', 'admin')),
        created_at INTEGER NOT NULL,
        expires_at INTEGER,            -- NULL: never expires (dev token)
        revoked_at INTEGER
      );

      CREATE TABLE waylines (
        id TEXT PRIMARY KEY,
        workspace_id TEXT NOT NULL REFERENCES workspaces(id),
        name TEXT NOT NULL,
        drone_model_key TEXT,
        payload_model_keys TEXT NOT NULL DEFAULT '[]',  -- JSON array of strings
        template_types TEXT NOT NULL DEFAULT '[]',      -- JSON array of integers
        favorited INTEGER NOT NULL DEFAULT 0,
        action_type INTEGER NOT NULL DEFAULT 0,
        user_name TEXT,
        start_latitude REAL,
        start_lontitude REAL,
        create_time INTEGER NOT NULL,
        update_time INTEGER NOT NULL
      );
      CREATE INDEX waylines_by_update ON waylines(workspace_id, update_time);

      CREATE TABLE media (
        id INTEGER PRIMARY KEY,
        workspace_id TEXT NOT NULL REFERENCES workspaces(id),
        fingerprint TEXT,              -- always lowercase
        name TEXT NOT NULL,
        path TEXT,
        object_key TEXT NOT NULL,
        result INTEGER NOT NULL,       -- 0 uploaded; non-zero: the client's upload failed
        sub_file_type INTEGER,
        metadata TEXT,                 -- JSON
        ext TEXT,                      -- JSON
        source TEXT NOT NULL CHECK (source IN ('callback', 'fast-upload')),
        created_at INTEGER NOT NULL
      );
      CREATE INDEX media_by_fingerprint ON media(workspace_id, fingerprint) WHERE result = 0;
      -- One record per file, whatever the number of retried callbacks: the
      -- sample server fails fast-upload on duplicates, we make them impossible.
      CREATE UNIQUE INDEX media_once ON media(
        workspace_id, ifnull(fingerprint, ''), object_key, ifnull(path, ''), name, result <> 0
      );

      -- Temporary credentials of the embedded bucket. No secret is stored:
      -- the secret key is derived from the access key id (see bucket/embedded.ts).
      CREATE TABLE bucket_credentials (
        access_key_id TEXT PRIMARY KEY,
        workspace_id TEXT NOT NULL REFERENCES workspaces(id),
        session_token_hash TEXT NOT NULL,
        expires_at INTEGER NOT NULL
      );
    `,
  },
  {
    // The load test (test/load) showed sorts of a whole library per request
    // for these two orders once a workspace holds a thousand waylines.
    description: 'indexes for waylines ordered by name and by create_time',
    sql: `
      CREATE INDEX waylines_by_name ON waylines(workspace_id, name);
      CREATE INDEX waylines_by_create ON waylines(workspace_id, create_time);
    `,
  },
];

export const SCHEMA_VERSION = MIGRATIONS.length;
