import type { ServiceContext } from './context.js';
import type { Db } from './db.js';

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

/** Full object key prefix (no trailing '/') of a workspace. */
export function workspacePrefix(ctx: ServiceContext, workspaceId: string): string {
  const row = ctx.db
    .prepare<[string], { object_key_prefix: string }>('SELECT object_key_prefix FROM workspaces WHERE id = ?')
    .get(workspaceId);
  // The auth guard ran first, and a token always names an existing workspace.
  if (!row) throw new Error(`workspace ${workspaceId} vanished`);
  return ctx.bucket.prefixFor(row.object_key_prefix);
}

export class MediaStore {
  private readonly insertStmt;
  private readonly knownStmt;
  private readonly allStmt;
  private readonly byWorkspaceStmt;

  constructor(db: Db) {
    // OR IGNORE + the media_once unique index: a repeated callback or
    // fast-upload for the same file is a no-op, even when two arrive at once.
    this.insertStmt = db.prepare(`
      INSERT OR IGNORE INTO media (workspace_id, fingerprint, name, path, object_key, result, sub_file_type,
                                   metadata, ext, source, created_at)
      VALUES (@workspaceId, @fingerprint, @name, @path, @objectKey, @result, @subFileType,
              @metadata, @ext, @source, @createdAt)`);
    this.knownStmt = db.prepare<[string, string], MediaRow>(
      'SELECT * FROM media WHERE workspace_id = ? AND fingerprint = ? AND result = 0 ORDER BY id LIMIT 1',
    );
    this.allStmt = db.prepare<[], MediaRow>('SELECT * FROM media ORDER BY id');
    this.byWorkspaceStmt = db.prepare<[string], MediaRow>(
      'SELECT * FROM media WHERE workspace_id = ? ORDER BY id',
    );
  }

  /** Records a file; returns false when the same record already existed. */
  insert(m: NewMedia): boolean {
    const info = this.insertStmt.run({
      ...m,
      fingerprint: m.fingerprint?.toLowerCase() ?? null,
      metadata: m.metadata == null ? null : JSON.stringify(m.metadata),
      ext: m.ext == null ? null : JSON.stringify(m.ext),
      createdAt: Date.now(),
    });
    return info.changes > 0;
  }

  /** The first successful upload of this content in the workspace (fingerprint compared case-insensitively). */
  findKnown(workspaceId: string, fingerprint: string): MediaRecord | undefined {
    const row = this.knownStmt.get(workspaceId, fingerprint.toLowerCase());
    return row && parseRow(row);
  }

  list(workspaceId?: string): MediaRecord[] {
    const rows = workspaceId === undefined ? this.allStmt.all() : this.byWorkspaceStmt.all(workspaceId);
    return rows.map(parseRow);
  }
}
