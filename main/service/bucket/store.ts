/**
 * Objects and multipart uploads of the embedded bucket. What is known of them
 * (key, size, MD5, ETag, which workspace) is in the service's SQLite; the
 * bytes are in files whose names this store makes up (random hex), never
 * from a request:
 *   <root>/objects/<workspace id>/<random>   one file per object
 *   <root>/uploads/<upload id>/<random>      one file per uploaded part
 *   <root>/tmp/<random>                      a body being received
 * A body is written once into tmp/ while it is hashed, then renamed into
 * place; a crash leaves at most files in tmp/, emptied at start. A small
 * body (SMALL_BODY_BYTES, e.g. a 64 KiB photo's thumbnail-sized file) is kept
 * in memory while it arrives and written with synchronous calls: handing
 * open, write, close and rename each to libuv's thread pool cost more CPU
 * (thread wake-ups, context switches) than the writes themselves. A row whose
 * file was removed by hand counts as absent (and is dropped when met), so an
 * operator may free space by deleting a workspace's folder.
 */
import { createHash, randomBytes } from 'node:crypto';
import {
  createReadStream,
  createWriteStream,
  mkdirSync,
  renameSync,
  rmSync,
  statSync,
  writeFileSync,
} from 'node:fs';
import { rm, unlink } from 'node:fs/promises';
import { join } from 'node:path';
import { finished, type Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import type { Db } from '../db.js';
import { invalidRequest, noSuchUpload, randomHex, S3Error, type CompletedPart } from './s3-protocol.js';

export const MIN_PART_BYTES = 5 * 1024 * 1024;
/** Bodies up to this size (declared) are received in memory and written in one synchronous call. */
export const SMALL_BODY_BYTES = 1024 * 1024;

export interface ObjectRow {
  key: string;
  workspace_id: string;
  file: string;
  size: number;
  etag: string;
  md5: string;
  content_type: string | null;
  last_modified: number;
  /** JSON object of the headers kept with the object (s3-headers.ts). */
  headers: string;
  /** The multipart upload the object was completed from, if it was. */
  upload_id: string | null;
}

export interface UploadRow {
  upload_id: string;
  workspace_id: string;
  key: string;
  content_type: string | null;
  headers: string;
  created_at: number;
}

export interface PartRow {
  part_number: number;
  file: string;
  size: number;
  md5: string;
  last_modified: number;
  /** JSON object {"<algorithm>": "<base64>"} when the part came with a flexible checksum. */
  checksum: string | null;
}

/** A body received into tmp/, hashed on the way. */
export interface Received {
  tmp: string;
  size: number;
  md5: Buffer;
}

/** What is written with an object besides its bytes. */
export interface ObjectMeta {
  size: number;
  md5: string;
  etag: string;
  contentType: string | null;
  headers: Record<string, string>;
  uploadId?: string;
}

/**
 * Decides, at the moment of writing, whether the object now at the key (if
 * any) may be replaced; throws to refuse (s3-conditions.ts).
 */
export type WriteCheck = (current: ObjectRow | undefined) => void;

export interface StoreLimits {
  maxObjectsPerWorkspace: number;
  maxOpenUploadsPerWorkspace: number;
}

const randomName = (): string => randomHex(16);
/** Our upload ids: 32 random bytes, base64url. Anything else is not ours and never reaches a path. */
const UPLOAD_ID = /^[A-Za-z0-9_-]{43}$/;
/** Workspace ids are the service's own UUIDs; checked anyway before they name a folder. */
const WORKSPACE_DIR = /^[A-Za-z0-9-]{1,64}$/;

const exists = (file: string): boolean => {
  try {
    return statSync(file).isFile();
  } catch {
    return false;
  }
};

/** S3's ETag of a multipart object: MD5 of the parts' MD5s (hex in, binary hashed), "-", their number. */
export function multipartEtag(partMd5s: string[]): string {
  const digest = createHash('md5');
  for (const md5 of partMd5s) digest.update(Buffer.from(md5, 'hex'));
  return `${digest.digest('hex')}-${partMd5s.length}`;
}

/**
 * Hands each chunk of `body` to `take`, settling when the body ended (or
 * failed, or was cut before its end). Its 'data' events, not an async
 * iterator: that makes a promise and a microtask per chunk, a real share of
 * a small PUT's CPU.
 */
function eachChunk(body: Readable, take: (chunk: Buffer) => void): Promise<void> {
  return new Promise((resolve, reject) => {
    finished(body, { writable: false }, (err) => {
      body.off('data', take);
      if (err) reject(err);
      else resolve();
    });
    body.on('data', take);
  });
}

export class BucketStore {
  private readonly tmpDir: string;
  private readonly completing = new Set<string>();
  /** Per workspace: at least as many objects as it holds (checkObjectRoom). */
  private readonly counted = new Map<string, number>();
  private readonly q;

  constructor(
    private readonly root: string,
    private readonly db: Db,
    private readonly limits: StoreLimits,
  ) {
    this.tmpDir = join(root, 'tmp');
    rmSync(this.tmpDir, { recursive: true, force: true });
    mkdirSync(this.tmpDir, { recursive: true });
    this.q = {
      object: db.prepare<[string], ObjectRow>('SELECT * FROM bucket_objects WHERE key = ?'),
      dropObject: db.prepare<[string, string]>('DELETE FROM bucket_objects WHERE key = ? AND file = ?'),
      putObject: db.prepare(`
        INSERT INTO bucket_objects (key, workspace_id, file, size, etag, md5, content_type, last_modified, headers, upload_id)
        VALUES (@key, @workspace_id, @file, @size, @etag, @md5, @content_type, @last_modified, @headers, @upload_id)
        ON CONFLICT (key) DO UPDATE SET file = excluded.file, size = excluded.size, etag = excluded.etag,
          md5 = excluded.md5, content_type = excluded.content_type, last_modified = excluded.last_modified,
          headers = excluded.headers, upload_id = excluded.upload_id`),
      countObjects: db.prepare<[string], { n: number }>(
        'SELECT count(*) AS n FROM bucket_objects WHERE workspace_id = ?',
      ),
      // Lower bound inclusive or not; upper bound exclusive (absent only when nothing sorts above the prefix).
      list: {
        fromTo: db.prepare<[string, string, number], ObjectRow>(
          'SELECT * FROM bucket_objects WHERE key >= ? AND key < ? ORDER BY key LIMIT ?',
        ),
        afterTo: db.prepare<[string, string, number], ObjectRow>(
          'SELECT * FROM bucket_objects WHERE key > ? AND key < ? ORDER BY key LIMIT ?',
        ),
        from: db.prepare<[string, number], ObjectRow>(
          'SELECT * FROM bucket_objects WHERE key >= ? ORDER BY key LIMIT ?',
        ),
        after: db.prepare<[string, number], ObjectRow>(
          'SELECT * FROM bucket_objects WHERE key > ? ORDER BY key LIMIT ?',
        ),
      },
      upload: db.prepare<[string], UploadRow>('SELECT * FROM bucket_uploads WHERE upload_id = ?'),
      countUploads: db.prepare<[string], { n: number }>(
        'SELECT count(*) AS n FROM bucket_uploads WHERE workspace_id = ?',
      ),
      createUpload: db.prepare(
        'INSERT INTO bucket_uploads (upload_id, workspace_id, key, content_type, headers, created_at) VALUES (?, ?, ?, ?, ?, ?)',
      ),
      dropUpload: db.prepare<[string]>('DELETE FROM bucket_uploads WHERE upload_id = ?'),
      part: db.prepare<[string, number], PartRow>(
        'SELECT part_number, file, size, md5, last_modified, checksum FROM bucket_parts WHERE upload_id = ? AND part_number = ?',
      ),
      parts: db.prepare<[string, number, number], PartRow>(
        'SELECT part_number, file, size, md5, last_modified, checksum FROM bucket_parts WHERE upload_id = ? AND part_number > ? ORDER BY part_number LIMIT ?',
      ),
      putPart: db.prepare(`
        INSERT INTO bucket_parts (upload_id, part_number, file, size, md5, last_modified, checksum) VALUES (?, ?, ?, ?, ?, ?, ?)
        ON CONFLICT (upload_id, part_number) DO UPDATE SET file = excluded.file, size = excluded.size,
          md5 = excluded.md5, last_modified = excluded.last_modified, checksum = excluded.checksum`),
    };
  }

  private objectDir(workspaceId: string): string {
    if (!WORKSPACE_DIR.test(workspaceId)) throw new Error(`unexpected workspace id ${workspaceId}`);
    return join(this.root, 'objects', workspaceId);
  }

  private uploadDir(uploadId: string): string {
    if (!UPLOAD_ID.test(uploadId)) throw new Error('unexpected upload id');
    return join(this.root, 'uploads', uploadId);
  }

  /**
   * Streams `body` into a new file in tmp/, hashing it; the caller checks the
   * digests (and the size against `declaredBytes`). A body declared small is
   * read into memory (never more than declared) and written in one call.
   */
  async receive(
    body: Readable,
    onChunk?: (chunk: Buffer) => void,
    declaredBytes?: number,
  ): Promise<Received> {
    const tmp = join(this.tmpDir, randomName());
    const md5 = createHash('md5');
    let size = 0;
    const small = declaredBytes !== undefined && declaredBytes <= SMALL_BODY_BYTES;
    const chunks: Buffer[] = [];
    try {
      if (small) {
        await eachChunk(body, (chunk) => {
          size += chunk.length;
          // More than declared is refused by the caller (size !== length): not kept.
          if (size > declaredBytes) return;
          md5.update(chunk);
          onChunk?.(chunk);
          chunks.push(chunk);
        });
        writeFileSync(tmp, chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks));
      } else {
        await pipeline(
          body,
          async function* (source: AsyncIterable<Buffer>) {
            for await (const chunk of source) {
              size += chunk.length;
              md5.update(chunk);
              onChunk?.(chunk);
              yield chunk;
            }
          },
          createWriteStream(tmp),
        );
      }
    } catch (err) {
      await this.discard(tmp);
      throw err;
    }
    return { tmp, size, md5: md5.digest() };
  }

  discard(tmp: string): Promise<void> {
    return unlink(tmp).catch(() => undefined);
  }

  /** The row with its file's path, if the file is still there; a row without its file is dropped. */
  private present(row: ObjectRow | undefined): (ObjectRow & { path: string }) | undefined {
    if (!row) return undefined;
    const path = join(this.objectDir(row.workspace_id), row.file);
    if (exists(path)) return { ...row, path };
    this.q.dropObject.run(row.key, row.file);
    return undefined;
  }

  /** The object, if its row and its file both exist. */
  object(key: string): (ObjectRow & { path: string }) | undefined {
    return this.present(this.q.object.get(key));
  }

  /**
   * Objects with keys from `from` (itself included or not) up to `to`
   * (excluded; undefined: no end), at most `limit` rows looked at, in key
   * order; rows without a file are left out.
   */
  list(from: string, inclusive: boolean, to: string | undefined, limit: number): ObjectRow[] {
    const l = this.q.list;
    const rows =
      to === undefined
        ? (inclusive ? l.from : l.after).all(from, limit)
        : (inclusive ? l.fromTo : l.afterTo).all(from, to, limit);
    return rows.filter((row) => this.present(row) !== undefined);
  }

  /**
   * Room for one more object. Counting a workspace's rows is a scan of its
   * index (a million objects allowed): done once, then `counted` holds an
   * upper bound of the count, raised by each new object this store writes
   * (its only writer) and never lowered (a row dropped only makes it
   * higher than the truth). Counted again only when the bound reaches the
   * limit, so the refusal is decided on the true count.
   */
  private checkObjectRoom(workspaceId: string, current: ObjectRow | undefined): void {
    if (current) return; // a replacement does not add an object
    const bound = this.counted.get(workspaceId);
    if (bound !== undefined && bound < this.limits.maxObjectsPerWorkspace) return;
    const { n } = this.q.countObjects.get(workspaceId) ?? { n: 0 };
    this.counted.set(workspaceId, n);
    if (n >= this.limits.maxObjectsPerWorkspace) {
      throw invalidRequest(
        `This workspace already holds ${n} objects, the limit of this service: ask its operator to raise it.`,
      );
    }
  }

  /**
   * Moves a received body into place as `key`, replacing any previous object
   * unless `check` refuses. The check and the write happen together, with no
   * await between them: two writers cannot both pass an If-None-Match: *.
   */
  async commitObject(
    workspaceId: string,
    key: string,
    tmp: string,
    meta: ObjectMeta,
    check?: WriteCheck,
  ): Promise<void> {
    const dir = this.objectDir(workspaceId);
    const file = randomName();
    try {
      // The folder is made when a rename finds it missing (the first object, or
      // an operator deleted it): not a mkdir per object. A rename is one quick
      // metadata call: made here, not through the thread pool.
      try {
        renameSync(tmp, join(dir, file));
      } catch (err) {
        if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err;
        mkdirSync(dir, { recursive: true });
        renameSync(tmp, join(dir, file));
      }
    } catch (err) {
      await this.discard(tmp);
      throw err;
    }
    const previous = this.q.object.get(key);
    try {
      this.checkObjectRoom(workspaceId, previous);
      check?.(this.present(previous));
    } catch (err) {
      await unlink(join(dir, file)).catch(() => undefined);
      throw err;
    }
    this.q.putObject.run({
      key,
      workspace_id: workspaceId,
      file,
      size: meta.size,
      etag: meta.etag,
      md5: meta.md5,
      content_type: meta.contentType,
      last_modified: Date.now(),
      headers: JSON.stringify(meta.headers),
      upload_id: meta.uploadId ?? null,
    });
    if (previous)
      await unlink(join(this.objectDir(previous.workspace_id), previous.file)).catch(() => undefined);
    else {
      const bound = this.counted.get(workspaceId);
      if (bound !== undefined) this.counted.set(workspaceId, bound + 1);
    }
  }

  createUpload(
    workspaceId: string,
    key: string,
    contentType: string | null,
    headers: Record<string, string>,
  ): string {
    const { n } = this.q.countUploads.get(workspaceId) ?? { n: 0 };
    if (n >= this.limits.maxOpenUploadsPerWorkspace) {
      throw invalidRequest(
        `This workspace already has ${n} unfinished multipart uploads, the limit: complete or abort some first.`,
      );
    }
    const uploadId = randomBytes(32).toString('base64url');
    this.q.createUpload.run(uploadId, workspaceId, key, contentType, JSON.stringify(headers), Date.now());
    return uploadId;
  }

  /**
   * The object `key` holds now, if it was completed from `uploadId` for this
   * workspace: what a repeated CompleteMultipartUpload answers with.
   */
  completedFrom(uploadId: string, workspaceId: string, key: string): ObjectRow | undefined {
    const obj = this.object(key);
    return obj && obj.upload_id === uploadId && obj.workspace_id === workspaceId ? obj : undefined;
  }

  /** The open upload `uploadId` of this workspace and key, if there is one. */
  findUpload(uploadId: string, workspaceId: string, key: string): UploadRow | undefined {
    const row = UPLOAD_ID.test(uploadId) ? this.q.upload.get(uploadId) : undefined;
    return row && row.workspace_id === workspaceId && row.key === key ? row : undefined;
  }

  /**
   * The upload `uploadId`, only if it was created for this workspace and key:
   * an id of another shape, another key or another workspace is NoSuchUpload.
   */
  upload(uploadId: string, workspaceId: string, key: string): UploadRow {
    const row = this.findUpload(uploadId, workspaceId, key);
    if (!row) throw noSuchUpload();
    if (this.completing.has(uploadId)) {
      throw new S3Error(
        409,
        'OperationAborted',
        'This multipart upload is being completed by another request; try again in a moment.',
      );
    }
    return row;
  }

  async commitPart(
    upload: UploadRow,
    partNumber: number,
    got: Received,
    checksum: Record<string, string> | null,
  ): Promise<void> {
    const dir = this.uploadDir(upload.upload_id);
    const file = randomName();
    mkdirSync(dir, { recursive: true });
    renameSync(got.tmp, join(dir, file));
    if (!this.q.upload.get(upload.upload_id)) {
      // Aborted or completed while this part was arriving.
      await rm(dir, { recursive: true, force: true });
      throw noSuchUpload();
    }
    const previous = this.q.part.get(upload.upload_id, partNumber);
    this.q.putPart.run(
      upload.upload_id,
      partNumber,
      file,
      got.size,
      got.md5.toString('hex'),
      Date.now(),
      checksum ? JSON.stringify(checksum) : null,
    );
    if (previous) await unlink(join(dir, previous.file)).catch(() => undefined);
  }

  parts(uploadId: string, after: number, limit: number): PartRow[] {
    return this.q.parts.all(uploadId, after, limit);
  }

  async abort(upload: UploadRow): Promise<void> {
    this.q.dropUpload.run(upload.upload_id);
    await rm(this.uploadDir(upload.upload_id), { recursive: true, force: true });
  }

  /** The parts a CompleteMultipartUpload lists, each checked: uploaded, same ETag, at least 5 MiB but the last. */
  checkParts(upload: UploadRow, wanted: CompletedPart[]): PartRow[] {
    const invalidPart = (n: number): S3Error =>
      new S3Error(
        400,
        'InvalidPart',
        `Part ${n} was not uploaded, or its ETag does not match: list the parts and send their ETags.`,
      );
    const dir = this.uploadDir(upload.upload_id);
    return wanted.map(({ partNumber, etag, checksums }, i) => {
      const row = this.q.part.get(upload.upload_id, partNumber);
      if (!row || row.md5 !== etag || !exists(join(dir, row.file))) throw invalidPart(partNumber);
      // A checksum named in the part list must be the one the part came with.
      const stored = row.checksum ? (JSON.parse(row.checksum) as Record<string, string>) : {};
      for (const [algorithm, value] of Object.entries(checksums)) {
        if (stored[algorithm] !== value) throw invalidPart(partNumber);
      }
      if (i < wanted.length - 1 && row.size < MIN_PART_BYTES) {
        throw new S3Error(
          400,
          'EntityTooSmall',
          `Part ${partNumber} is ${row.size} bytes: every part but the last must be at least 5 MiB.`,
        );
      }
      return row;
    });
  }

  /**
   * Concatenates checked parts into the object, computing the MD5 of the
   * whole object on the way (kept for upload callbacks). Returns S3's
   * multipart ETag: MD5 of the parts' MD5s, "-", the number of parts.
   */
  /**
   * `observe` sees every byte of the object as it is put together;
   * `headers()`, called after, gives the headers to keep with it, or throws
   * to refuse the object.
   */
  async complete(
    upload: UploadRow,
    parts: PartRow[],
    opts: { check?: WriteCheck; observe?: (chunk: Buffer) => void; headers: () => Record<string, string> },
  ): Promise<string> {
    const dir = this.uploadDir(upload.upload_id);
    this.completing.add(upload.upload_id);
    try {
      const md5 = createHash('md5');
      const tmp = join(this.tmpDir, randomName());
      const out = createWriteStream(tmp);
      try {
        await pipeline(async function* () {
          for (const part of parts) {
            for await (const chunk of createReadStream(join(dir, part.file), { highWaterMark: 1 << 20 })) {
              md5.update(chunk as Buffer);
              opts.observe?.(chunk as Buffer);
              yield chunk as Buffer;
            }
          }
        }, out);
      } catch (err) {
        await this.discard(tmp);
        throw err;
      }
      const etag = multipartEtag(parts.map((p) => p.md5));
      const size = parts.reduce((sum, p) => sum + p.size, 0);
      let headers: Record<string, string>;
      try {
        headers = opts.headers(); // may refuse the object (a checksum that does not match)
      } catch (err) {
        await this.discard(tmp);
        throw err;
      }
      await this.commitObject(
        upload.workspace_id,
        upload.key,
        tmp,
        {
          size,
          md5: md5.digest('hex'),
          etag,
          contentType: upload.content_type,
          headers,
          uploadId: upload.upload_id,
        },
        opts.check,
      );
      this.q.dropUpload.run(upload.upload_id);
      await rm(dir, { recursive: true, force: true });
      return etag;
    } finally {
      this.completing.delete(upload.upload_id);
    }
  }
}
