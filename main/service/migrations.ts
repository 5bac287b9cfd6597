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
  {
    // The embedded bucket keeps what it knows of objects and multipart uploads
    // here; the bytes are in files whose names the bucket chose (bucket/store.ts).
    description: 'embedded bucket: objects, multipart uploads and parts; host of issued credentials',
    sql: `
      CREATE TABLE bucket_objects (
        key TEXT PRIMARY KEY,          -- full object key, '<workspace prefix>/...'
        workspace_id TEXT NOT NULL REFERENCES workspaces(id),
        file TEXT NOT NULL,            -- random name under bucket/objects/<workspace id>/
        size INTEGER NOT NULL,
        etag TEXT NOT NULL,            -- as S3 gives it, without quotes
        md5 TEXT NOT NULL,             -- hex MD5 of the whole object
        content_type TEXT,
        last_modified INTEGER NOT NULL
      );
      CREATE INDEX bucket_objects_by_workspace ON bucket_objects(workspace_id);

      CREATE TABLE bucket_uploads (
        upload_id TEXT PRIMARY KEY,    -- random, chosen by the bucket
        workspace_id TEXT NOT NULL REFERENCES workspaces(id),
        key TEXT NOT NULL,
        content_type TEXT,
        created_at INTEGER NOT NULL
      );
      CREATE INDEX bucket_uploads_by_workspace ON bucket_uploads(workspace_id);

      CREATE TABLE bucket_parts (
        upload_id TEXT NOT NULL REFERENCES bucket_uploads(upload_id) ON DELETE CASCADE,
        part_number INTEGER NOT NULL CHECK (part_number BETWEEN 1 AND 10000),
        file TEXT NOT NULL,            -- random name under bucket/uploads/<upload id>/
        size INTEGER NOT NULL,
        md5 TEXT NOT NULL,             -- hex; the part's ETag
        last_modified INTEGER NOT NULL,
        PRIMARY KEY (upload_id, part_number)
      );

      -- The host name clients were given with these credentials: requests must use it.
      ALTER TABLE bucket_credentials ADD COLUMN endpoint_host TEXT NOT NULL DEFAULT '';
    `,
  },
  {
    // What S3 keeps with an object and gives back (bucket/s3-headers.ts), the
    // upload an object was completed from (a repeated Complete answers as the
    // first one did), and the flexible checksum of each part (bucket/s3-checksum.ts).
    description: 'embedded bucket: stored object headers, completed upload id, part checksums',
    sql: `
      -- JSON object of header name -> value: cache-control, content-encoding, x-amz-meta-*...
      ALTER TABLE bucket_objects ADD COLUMN headers TEXT NOT NULL DEFAULT '{}';
      ALTER TABLE bucket_objects ADD COLUMN upload_id TEXT;
      ALTER TABLE bucket_uploads ADD COLUMN headers TEXT NOT NULL DEFAULT '{}';
      -- JSON object {"<algorithm>": "<base64>"}, or NULL when the part came without one
      ALTER TABLE bucket_parts ADD COLUMN checksum TEXT;
    `,
  },
];

export const SCHEMA_VERSION = MIGRATIONS.length;
