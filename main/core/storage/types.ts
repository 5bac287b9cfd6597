import type { StorageProvider } from '../api/types.js';
import type { Throttle } from './parts.js';

/** Temporary bucket credentials, in memory only (never persisted, never logged). */
export interface BucketCredentials {
  accessKeyId: string;
  secretAccessKey: string;
  sessionToken: string;
  /** Epoch milliseconds after which the credentials must not be used. */
  expiresAt: number;
}

/** Where and how to write: derived from one STS answer. */
export interface BucketTarget {
  provider: StorageProvider;
  bucket: string;
  endpoint: string;
  region: string;
  objectKeyPrefix: string;
  credentials: BucketCredentials;
}

/**
 * Supplies the current target. The engine caches STS answers and refreshes
 * them before they expire; `forceRefresh` is passed after the bucket said the
 * token expired, so a new STS answer is fetched even if ours looks valid.
 */
export type TargetProvider = (opts: {
  forceRefresh?: boolean;
  signal?: AbortSignal;
}) => Promise<BucketTarget>;

export interface FinishedPart {
  partNumber: number;
  etag: string;
  size: number;
}

/** What the queue keeps of a multipart upload so that a restart sends only missing parts. */
export interface MultipartState {
  uploadId: string;
  partSize: number;
  parts: FinishedPart[];
}

export interface UploadRequest {
  filePath: string;
  size: number;
  /** Full object key (already starts with the prefix, already made safe). */
  key: string;
  /** Lowercase hex MD5 of the whole file, when known. */
  md5Hex?: string;
  /**
   * The whole file as it was read for its fingerprint (small files only; the
   * engine keeps it between the two steps): sent as is, with md5Hex as its
   * Content-MD5, instead of being read a second time.
   */
  content?: Buffer;
  contentType?: string;
  /**
   * Sent from `filePath` as it is read, in one PUT whatever its size, with
   * `md5Hex` (required) as its Content-MD5: for a file the agent wrote
   * itself (a card's manifest), never whole in memory. Never a card file
   * (its content is checked against its fingerprint before it leaves).
   */
  streamed?: boolean;
  /**
   * Replace what is at the key (no If-None-Match): only for the living files
   * of a card's manifest (its report and ASC MHL chain), which each new
   * generation rewrites. Card files and hash lists are never replaced.
   */
  replace?: boolean;
  /** A multipart upload started by an earlier run (from the queue), if any. */
  resume?: MultipartState | null;
  /** Called (and awaited) once a multipart upload id exists, before any part is sent. */
  onMultipartStarted?: (state: { uploadId: string; partSize: number }) => void | Promise<void>;
  /** Called (and awaited) after each part is acknowledged by the bucket. */
  onPartDone?: (part: FinishedPart) => void | Promise<void>;
  /** Called when a stored multipart upload turned out unusable and was dropped. */
  onMultipartReset?: () => void | Promise<void>;
  /**
   * Waits for this part's turn on the link (sync/part-slots.ts: lane by lane,
   * as many in flight as fill the link), before it is read; the ticket is
   * given back when the bucket answered. Default: no wait.
   */
  slot?: (bytes: number, signal?: AbortSignal) => Promise<SlotTicket>;
  /** Bytes acknowledged (or sent) since the last call; for progress bars. */
  onProgress?: (bytes: number) => void;
  signal?: AbortSignal;
}

/** A part's turn on the link: `done` with the bytes that crossed it, or `release` when it failed. */
export interface SlotTicket {
  done(bytes: number): void;
  release(): void;
}

export interface UploadResult {
  key: string;
  etag?: string;
  /**
   * Bytes that crossed the link in this call: parts and bodies the bucket
   * took (excludes parts reused from `resume`); for a body refused because
   * the object was already there, what went before the refusal.
   */
  bytesSent: number;
  multipart: boolean;
}

export interface UploaderOptions {
  target: TargetProvider;
  /** Files at or above this size go multipart. */
  multipartThreshold?: number;
  /** Preferred part size; raised automatically to stay within 10,000 parts. */
  partSize?: number;
  /** Parts of one file in flight at once. */
  partConcurrency?: number;
  /**
   * Bandwidth limit hook: awaited before each slice (≤ 256 KiB) of a body is
   * handed to the socket, and resolving with the size of that slice; the
   * first one before the request is made (parts.ts, pacedBody). Rejecting
   * (e.g. on abort) fails that request.
   */
  throttle?: Throttle;
  /**
   * A request is given up after this long without progress: no more of its
   * body taken by the connection, or no answer once the body is sent. Never a
   * limit on a whole request: a part may take hours on a slow uplink. Default
   * 120 s (S3 only).
   */
  stallTimeoutMs?: number;
  /** Keep-alive sockets per uploader; should cover partConcurrency × files in flight (S3: 32 at most). */
  maxSockets?: number;
  /**
   * Certificate authorities to trust for the bucket, in place of Node's list
   * (self-hosted MinIO with a private CA: the system CAs plus the configured one).
   */
  ca?: string[];
}

export interface Uploader {
  upload(req: UploadRequest): Promise<UploadResult>;
  /** Whether the object exists (used to reconcile after a crash). */
  exists(key: string, signal?: AbortSignal): Promise<boolean>;
  /** The object's size and ETag (as the store gives it, quotes removed), or null when there is none. */
  stat(key: string, signal?: AbortSignal): Promise<{ size: number; etag: string | null } | null>;
  /**
   * The objects under `folder` (a key prefix ending in "/", its sub-folders
   * included) with their sizes and ETags, a listing page (1,000 keys) per
   * request: one request where `stat` would make one per object. null when
   * the folder holds more than `maxKeys`. Optional: a store without it is
   * looked at object by object.
   */
  list?(
    folder: string,
    maxKeys: number,
    signal?: AbortSignal,
  ): Promise<Map<string, NonNullable<ObjectStat>> | null>;
  /**
   * Gets ready for an upload soon (loads the provider's SDK) without sending
   * anything: done while a card is still being hashed. Optional.
   */
  warm?(): void;
  close(): void;
}

/** An object as the bucket has it: its size and ETag (quotes removed), or null when there is none. */
export type ObjectStat = { size: number; etag: string | null } | null;

/**
 * The narrow port to the current target's bucket for what is not a card
 * file's upload: looking an object up, and writing a small object (a card's
 * manifest) under `<prefix>/<folder>/`. What offload needs of the bucket,
 * nothing more (it never sees the engine).
 */
export interface BucketPort {
  /** The current target's object key prefix (the workspace's folder in the bucket). */
  prefix(signal?: AbortSignal): Promise<string>;
  stat(key: string, signal?: AbortSignal): Promise<ObjectStat>;
  /** The objects under a folder (Uploader.list); undefined when the target's store cannot list. */
  list?(
    folder: string,
    maxKeys: number,
    signal?: AbortSignal,
  ): Promise<Map<string, NonNullable<ObjectStat>> | null | undefined>;
  /**
   * Writes `content` (with its Content-MD5) as `<prefix>/<folder>/<rel>`;
   * returns the key. An object already there is kept unless `replace`.
   * `{ file }`: a file the agent wrote, sent as it is read (never whole in
   * memory: a 10,000-file card's report is 16 MB).
   */
  put(
    folder: string,
    rel: string,
    content: Buffer | { file: string },
    contentType: string,
    signal?: AbortSignal,
    replace?: boolean,
  ): Promise<string>;
}
