/**
 * A queue row as the engine uses it: parsed once when read, into a type
 * narrowed by its state (a hashed row has its fingerprint and file info, an
 * uploaded one its object key), so no step has to assert what it holds.
 * A row whose columns contradict its state is damage, reported as such.
 */
import { QueueDamagedError } from '../errors.js';
import { fileInfoSchema, type FileInfo } from './file-info.js';
import { laneAt, type FileClass, type LaneName } from './lanes.js';
import type { FileState, Outcome } from '../../shared/states.js';

export type { Outcome } from '../../shared/states.js';

/** Media (photos, videos: a callback each) or RTK/PPK files (no callback: they carry no media metadata). */
import type { FileKind } from '../media/discover.js';

export type { FileKind } from '../media/discover.js';

/**
 * The object as last checked in the bucket of the row's target. `by`:
 * 'bucket' when we looked (HEAD: size, and the MD5 where the ETag is one);
 * 'server' when the server said it holds this content (fast-upload "known",
 * no key of ours to look at).
 */
export interface Verification {
  at: number;
  by: 'bucket' | 'server';
  found: boolean;
  size: number | null;
  checksum: 'match' | 'mismatch' | 'not-given';
}

/** The columns of `files`, as SQLite returns them. */
export interface RawRow {
  id: number;
  target_id: number;
  kind: FileKind;
  source_id: string;
  rel_path: string;
  abs_path: string;
  size: number;
  mtime_ms: number;
  state: FileState;
  resume_state: FileState | null;
  fingerprint: string | null;
  tiny_fingerprint: string | null;
  info_json: string | null;
  object_key: string | null;
  upload_id: string | null;
  part_size: number | null;
  outcome: Outcome | null;
  callback_unknown: number;
  bytes_sent: number;
  attempts: number;
  next_attempt_at: number;
  error_kind: string | null;
  error_message: string | null;
  created_at: number;
  updated_at: number;
  done_at: number | null;
  verified_json: string | null;
  server_key: string | null;
  file_class: FileClass | null;
  lane: number;
}

/** Columns a transition may set (everything but the identity and the timestamps it keeps itself). */
export type RowPatch = Partial<
  Omit<
    RawRow,
    | 'id'
    | 'target_id'
    | 'kind'
    | 'source_id'
    | 'rel_path'
    | 'size'
    | 'mtime_ms'
    | 'created_at'
    | 'updated_at'
    | 'file_class'
    | 'lane'
  >
>;

interface RowBase {
  id: number;
  targetId: number;
  kind: FileKind;
  /** Its lane (queue/lanes.ts): what goes first. */
  lane: LaneName;
  sourceId: string;
  relPath: string;
  absPath: string;
  size: number;
  mtimeMs: number;
  resumeState: FileState | null;
  bytesSent: number;
  attempts: number;
  nextAttemptAt: number;
  errorKind: string | null;
  errorMessage: string | null;
  createdAt: number;
  updatedAt: number;
  /** The object as last checked in the bucket (at upload, or later), or vouched for by the server. */
  verified: Verification | null;
}

/** Known once the file was read: its content fingerprint and what the requests say about it. */
export interface Identity {
  fingerprint: string;
  tinyFingerprint: string;
  info: FileInfo;
}

interface Upload {
  /** The key the object is (being) written under; null until the first upload attempt. */
  objectKey: string | null;
  /** A multipart upload in progress (its finished parts are in `parts`). */
  multipart: { uploadId: string; partSize: number } | null;
  /** A callback was sent whose answer we did not get: ask before sending it again. */
  callbackUnknown: boolean;
}

export type DiscoveredRow = RowBase & { state: 'discovered' };
export type HashedRow = RowBase & Identity & { state: 'hashed' };
export type CheckedRow = RowBase & Identity & Upload & { state: 'fast-upload-checked' | 'uploading' };
export type UploadedRow = RowBase & Identity & Upload & { state: 'uploaded'; objectKey: string };
export type DoneRow = RowBase &
  Partial<Identity> & {
    state: 'done';
    outcome: Outcome;
    doneAt: number;
    objectKey: string | null;
    /** The object key the server recorded the callback under, when not the one uploaded. */
    serverKey: string | null;
  };
/** Failed or parked: whatever it had reached is kept for when it resumes. */
export type ParkedRow = RowBase & Partial<Identity> & Upload & { state: 'failed' | 'waiting-for-source' };

export type QueueRow = DiscoveredRow | HashedRow | CheckedRow | UploadedRow | DoneRow | ParkedRow;
/** A row the engine can move on. */
export type WorkingRow = DiscoveredRow | HashedRow | CheckedRow | UploadedRow;

function base(r: RawRow, file: string): RowBase {
  return {
    id: r.id,
    targetId: r.target_id,
    kind: r.kind,
    lane: laneAt(r.lane),
    sourceId: r.source_id,
    relPath: r.rel_path,
    absPath: r.abs_path,
    size: r.size,
    mtimeMs: r.mtime_ms,
    resumeState: r.resume_state,
    bytesSent: r.bytes_sent,
    attempts: r.attempts,
    nextAttemptAt: r.next_attempt_at,
    errorKind: r.error_kind,
    errorMessage: r.error_message,
    createdAt: r.created_at,
    updatedAt: r.updated_at,
    verified: verification(r, file),
  };
}

/**
 * File infos already checked, by their JSON text: a card's rows are read
 * several times in one run (the scan, the verdict, the manifest check) and
 * the same text always parses to the same value, so each is checked once
 * (the schema check was a third of reading a 10,000-file card). The values
 * are frozen, as every read shares them. Bounded: emptied when full.
 */
const checkedInfos = new Map<string, Readonly<FileInfo>>();
const CHECKED_INFOS_MAX = 20_000;

/** A row's info_json, checked (and shared with every read of the same text); `file` names the database. */
export function fileInfo(text: string, file: string): FileInfo {
  const known = checkedInfos.get(text);
  if (known) return known;
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch (err) {
    throw new QueueDamagedError(file, err);
  }
  const info = fileInfoSchema().safeParse(json);
  if (!info.success) throw new QueueDamagedError(file, info.error);
  if (checkedInfos.size >= CHECKED_INFOS_MAX) checkedInfos.clear();
  checkedInfos.set(text, deepFreeze(info.data));
  return info.data;
}

function deepFreeze<T>(value: T): T {
  if (value !== null && typeof value === 'object') {
    for (const v of Object.values(value)) deepFreeze(v);
    Object.freeze(value);
  }
  return value;
}

function identity(r: RawRow, file: string): Identity | undefined {
  if (r.fingerprint === null || r.tiny_fingerprint === null || r.info_json === null) return undefined;
  return {
    fingerprint: r.fingerprint,
    tinyFingerprint: r.tiny_fingerprint,
    info: fileInfo(r.info_json, file),
  };
}

function upload(r: RawRow): Upload {
  return {
    objectKey: r.object_key,
    multipart:
      r.upload_id !== null && r.part_size !== null ? { uploadId: r.upload_id, partSize: r.part_size } : null,
    callbackUnknown: r.callback_unknown === 1,
  };
}

function verification(r: Pick<RawRow, 'verified_json'>, file: string): Verification | null {
  if (r.verified_json === null) return null;
  try {
    return JSON.parse(r.verified_json) as Verification;
  } catch (err) {
    throw new QueueDamagedError(file, err);
  }
}

/** Parses one row; `file` names the database in a damage report. */
export function parseRow(r: RawRow, file: string): QueueRow {
  const b = base(r, file);
  const id = identity(r, file);
  const needId = (): Identity => {
    if (!id) throw new QueueDamagedError(file, new Error(`row ${r.id} is ${r.state} without a fingerprint`));
    return id;
  };
  switch (r.state) {
    case 'discovered':
      return { ...b, state: r.state };
    case 'hashed':
      return { ...b, ...needId(), state: r.state };
    case 'fast-upload-checked':
    case 'uploading':
      return { ...b, ...needId(), ...upload(r), state: r.state };
    case 'uploaded': {
      if (r.object_key === null)
        throw new QueueDamagedError(file, new Error(`row ${r.id} is uploaded without a key`));
      return { ...b, ...needId(), ...upload(r), objectKey: r.object_key, state: r.state };
    }
    case 'done':
      return {
        ...b,
        ...id,
        state: r.state,
        outcome: r.outcome ?? 'uploaded',
        doneAt: r.done_at ?? r.updated_at,
        objectKey: r.object_key,
        serverKey: r.server_key,
      };
    case 'failed':
    case 'waiting-for-source':
      return { ...b, ...id, ...upload(r), state: r.state };
    default:
      throw new QueueDamagedError(file, new Error(`row ${r.id} has an unknown state`));
  }
}

/**
 * A file as a card's verdict reads it (queue.factsOf): its state, content
 * and acknowledgement, without its info. `fingerprint` only where the row
 * has its identity (as QueueRow's), `outcome` and `doneAt` only when done.
 */
export interface FactRow {
  id: number;
  kind: FileKind;
  relPath: string;
  size: number;
  mtimeMs: number;
  state: FileState;
  fingerprint: string | null;
  errorKind: string | null;
  errorMessage: string | null;
  outcome: Outcome | null;
  doneAt: number | null;
  updatedAt: number;
  objectKey: string | null;
  serverKey: string | null;
  verified: Verification | null;
  /** The file's lane (a flagged photo held for an unmetered link is in 'flagged'). */
  lane: LaneName;
}

export const FACT_COLUMNS = `id, kind, rel_path, size, mtime_ms, state,
  CASE WHEN tiny_fingerprint IS NOT NULL AND info_json IS NOT NULL THEN fingerprint END AS fingerprint,
  error_kind, error_message, outcome, done_at, updated_at, object_key, server_key, verified_json, lane`;

export type FactColumns = Pick<
  RawRow,
  | 'id'
  | 'kind'
  | 'rel_path'
  | 'size'
  | 'mtime_ms'
  | 'state'
  | 'fingerprint'
  | 'error_kind'
  | 'error_message'
  | 'outcome'
  | 'done_at'
  | 'updated_at'
  | 'object_key'
  | 'server_key'
  | 'verified_json'
  | 'lane'
>;

export function parseFactRow(r: FactColumns, file: string): FactRow {
  const done = r.state === 'done';
  return {
    id: r.id,
    kind: r.kind,
    relPath: r.rel_path,
    size: r.size,
    mtimeMs: r.mtime_ms,
    state: r.state,
    fingerprint: r.fingerprint,
    errorKind: r.error_kind,
    errorMessage: r.error_message,
    outcome: done ? (r.outcome ?? 'uploaded') : null,
    doneAt: done ? (r.done_at ?? r.updated_at) : null,
    updatedAt: r.updated_at,
    objectKey: r.object_key,
    serverKey: done ? r.server_key : null,
    verified: verification(r, file),
    lane: laneAt(r.lane),
  };
}

/**
 * What a look at an object in the bucket says of it: found, its size, and
 * its MD5 where the ETag is one (a single PUT; a multipart ETag
 * `<md5 of md5s>-N` says nothing of the content, so the size alone counts then).
 */
export function checkedObject(
  stat: { size: number; etag: string | null } | null,
  size: number,
  md5: string,
  at: number,
): Verification {
  if (!stat) return { at, by: 'bucket', found: false, size: null, checksum: 'not-given' };
  const etag = stat.etag?.toLowerCase() ?? '';
  const checksum = /^[0-9a-f]{32}$/.test(etag)
    ? etag === md5.toLowerCase()
      ? 'match'
      : 'mismatch'
    : 'not-given';
  return {
    at,
    by: 'bucket',
    found: true,
    size: stat.size,
    checksum: stat.size === size ? checksum : 'mismatch',
  };
}
