/**
 * Bytes the hash step read and keeps for the same row's upload, so that a
 * photo is read and hashed once instead of twice (fingerprint, then the
 * Content-MD5 of its PUT). The engine drops a row's bytes when the row leaves
 * the pipeline.
 *
 * Keeping has a price: each photo's bytes come back from a hash worker as a
 * buffer of their own, and on a card the server already holds (fast-upload
 * "known") they are never sent, only collected. Measured on the benchmark's
 * survey card (2 cores): keeping every photo gave survey 1.12 / known
 * content 1.12 (agent / peer), keeping none 1.23 / 0.99. So photos are kept
 * while the server's recent answers say they will be sent, and hashed
 * streamed (nothing kept) once it has answered "known" for a run of files in
 * a row; the next "not known" turns keeping on again.
 */
import { giveBody } from '../storage/body-pool.js';

/** Bytes kept for rows in flight stay under this. */
export const KEEP_BUDGET_BYTES = 48 * 1024 * 1024;

/** This many fast-upload "known" answers in a row, and photos are no longer kept. */
export const KNOWN_STREAK = 8;

/** Of every KeptBytes: photos kept, their bytes, and the bytes of the memory holding them (a pool buffer may be longer). */
const held = { photos: 0, bytes: 0, bufferBytes: 0 };
export function keptStats(): { photos: number; bytes: number; bufferBytes: number } {
  return { ...held };
}

function count(b: Buffer, sign: 1 | -1): void {
  held.photos += sign;
  held.bytes += sign * b.length;
  held.bufferBytes += sign * b.buffer.byteLength;
}

export class KeptBytes {
  private readonly bytes = new Map<number, Buffer>();
  private knownInARow = 0;

  get(id: number): Buffer | undefined {
    return this.bytes.get(id);
  }

  set(id: number, content: Buffer): void {
    const before = this.bytes.get(id);
    if (before) count(before, -1);
    this.bytes.set(id, content);
    count(content, 1);
  }

  /** The row left the pipeline: its bytes, read by nothing any more, serve the next body (body-pool.ts). */
  delete(id: number): void {
    const b = this.bytes.get(id);
    this.bytes.delete(id);
    if (!b) return;
    count(b, -1);
    giveBody(b);
  }

  /** Whether a photo of `size` bytes is worth reading whole and keeping for its upload. */
  worthKeeping(size: number): boolean {
    if (this.knownInARow >= KNOWN_STREAK) return false;
    let held = 0;
    for (const b of this.bytes.values()) held += b.length;
    return held + size <= KEEP_BUDGET_BYTES;
  }

  /** The server's fast-upload answer for a file. */
  answered(verdict: 'known' | 'unknown'): void {
    this.knownInARow = verdict === 'known' ? this.knownInARow + 1 : 0;
  }
}
