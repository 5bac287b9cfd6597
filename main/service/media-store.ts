import type { ServiceContext } from './context.js';
import { inList, type SqlDb, type SqlValue } from './data/sql.js';

/** One row of the media table, as admin.mediaRecords() returns it (JSON columns parsed). */
export interface MediaRecord {
  id: number;
  workspace_id: string;
  fingerprint: string | null;
  name: string;
  path: string | null;
  object_key: string;
  result: number;
  sub_file_type: number | null;
  metadata: Record<string, unknown> | null;
  ext: Record<string, unknown> | null;
  source: 'callback' | 'fast-upload';
  created_at: number;
}

type MediaRow = Omit<MediaRecord, 'metadata' | 'ext'> & { metadata: string | null; ext: string | null };

export interface NewMedia {
  workspaceId: string;
  fingerprint: string | null;
  name: string;
  path: string | null;
  objectKey: string;
  result: number;
  subFileType: number | null;
  metadata: unknown;
  ext: unknown;
  source: MediaRecord['source'];
}

function parseRow(row: MediaRow): MediaRecord {
  return {
    ...row,
    metadata: row.metadata === null ? null : (JSON.parse(row.metadata) as Record<string, unknown>),
    ext: row.ext === null ? null : (JSON.parse(row.ext) as Record<string, unknown>),
  };
}

/**
 * A workspace's object key prefix is written once, when it is made, and never
 * changed: read once per service, not on every callback and sts request.
 */
const prefixes = new WeakMap<ServiceContext, Map<string, string>>();

/** Full object key prefix (no trailing '/') of a workspace. */
export async function workspacePrefix(ctx: ServiceContext, workspaceId: string): Promise<string> {
  let known = prefixes.get(ctx);
  if (!known) prefixes.set(ctx, (known = new Map<string, string>()));
  const cached = known.get(workspaceId);
  if (cached !== undefined) return cached;
  const row = await ctx.db.get<{ object_key_prefix: string }>(
    'SELECT object_key_prefix FROM workspaces WHERE id = ?',
    [workspaceId],
  );
  // The auth guard ran first, and a token always names an existing workspace.
  if (!row) throw new Error(`workspace ${workspaceId} vanished`);
  const prefix = ctx.bucket.prefixFor(row.object_key_prefix);
  known.set(workspaceId, prefix);
  return prefix;
}

/** At most this many tiny fingerprints per question: 1,000 of DJI's ~50-character form fit the body limit. */
export const MAX_TINY_FINGERPRINTS = 1000;

const COLUMNS =
  'id, workspace_id, fingerprint, name, path, object_key, result, sub_file_type, metadata, ext, source, created_at';

/**
 * The fast-upload look-up on media_by_fingerprint, the first record of that
 * content (lowest id): exported so a test can show its plan on both backends.
 * SQLite: named index, no ORDER BY. An index's entries of one key are kept
 * in rowid order, so its first is the lowest id; with `ORDER BY id` SQLite
 * (built with STAT4) plans the statement again for each new fingerprint
 * bound to it, ~20 µs of CPU against ~3 µs per fast-upload.
 */
export function findKnownSql(db: SqlDb): string {
  const where = 'WHERE workspace_id = ? AND fingerprint = ? AND result = 0';
  return db.kind === 'sqlite'
    ? `SELECT ${COLUMNS} FROM media INDEXED BY media_by_fingerprint ${where} LIMIT 1`
    : `SELECT ${COLUMNS} FROM media ${where} ORDER BY id LIMIT 1`;
}

/** The tiny-fingerprint look-up of a batch (media_by_tiny_fingerprint), for `tiny` already lowercase. */
export function knownTinyQuery(
  db: SqlDb,
  workspaceId: string,
  tiny: readonly string[],
): [string, SqlValue[]] {
  const [inClause, inParams] = inList(db, 'tiny_fingerprint', tiny);
  return [
    `SELECT DISTINCT tiny_fingerprint FROM media WHERE workspace_id = ? AND result = 0 AND ${inClause}`,
    [workspaceId, ...inParams],
  ];
}

export class MediaStore {
  private readonly findKnownSql: string;

  constructor(private readonly db: SqlDb) {
    this.findKnownSql = findKnownSql(db);
  }

  /**
   * Records a file; returns false when the same record already existed.
   * ON CONFLICT DO NOTHING with the media_once unique index: a repeated
   * callback or fast-upload for the same file is a no-op, even when two
   * arrive at once at two instances (the database decides, not a read first).
   */
  async insert(m: NewMedia): Promise<boolean> {
    const tiny = (m.ext as { tinny_fingerprint?: unknown } | null)?.tinny_fingerprint;
    const changed = await this.db.run(
      `INSERT INTO media (workspace_id, fingerprint, name, path, object_key, result, sub_file_type,
                          metadata, ext, source, created_at, tiny_fingerprint)
       VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
       ON CONFLICT DO NOTHING`,
      [
        m.workspaceId,
        m.fingerprint?.toLowerCase() ?? null,
        m.name,
        m.path,
        m.objectKey,
        m.result,
        m.subFileType,
        m.metadata == null ? null : JSON.stringify(m.metadata),
        m.ext == null ? null : JSON.stringify(m.ext),
        m.source,
        Date.now(),
        typeof tiny === 'string' && tiny !== '' ? tiny.toLowerCase() : null,
      ],
    );
    return changed > 0;
  }

  /** The first successful upload of this content in the workspace (fingerprint compared case-insensitively). */
  async findKnown(workspaceId: string, fingerprint: string): Promise<MediaRecord | undefined> {
    const row = await this.db.get<MediaRow>(this.findKnownSql, [workspaceId, fingerprint.toLowerCase()]);
    return row && parseRow(row);
  }

  /**
   * Which of these tiny fingerprints (case-insensitive) a successful upload
   * in the workspace has: one look-up on media_by_tiny_fingerprint for the
   * whole batch, never a scan of the workspace. Answers in lowercase.
   */
  async knownTiny(workspaceId: string, tiny: readonly string[]): Promise<string[]> {
    const wanted = [...new Set(tiny.map((t) => t.toLowerCase()))];
    if (wanted.length === 0) return [];
    const rows = await this.db.all<{ tiny_fingerprint: string }>(
      ...knownTinyQuery(this.db, workspaceId, wanted),
    );
    return rows.map((r) => r.tiny_fingerprint);
  }

  async list(workspaceId?: string): Promise<MediaRecord[]> {
    const rows =
      workspaceId === undefined
        ? await this.db.all<MediaRow>(`SELECT ${COLUMNS} FROM media ORDER BY id`)
        : await this.db.all<MediaRow>(`SELECT ${COLUMNS} FROM media WHERE workspace_id = ? ORDER BY id`, [
            workspaceId,
          ]);
    return rows.map(parseRow);
  }
}
