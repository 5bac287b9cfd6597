/**
 * The copy record's transition table: one record per (file version,
 * destination), pure. The store (`queue.copies.apply`) is its one door; no
 * copy state lives anywhere else, so a restart, `status`, `report`, the
 * window and a run's summary all read the same facts.
 *
 *   (none) ──want──▶ wanted ──writing──▶ writing ──verified──▶ verified
 *                     │  ▲                  │ ├──differs──▶ failed (bytes other than the card's)
 *                     │  │                  │ └──stopped──▶ stopped (full, unplugged, read-only…)
 *                     │  └──────want────────┴── (a write cut short: wanted again)
 *                     └──stopped──▶ stopped (said before a byte was written: too small…)
 *   verified, failed, stopped, forgotten ──want──▶ wanted (copy it anew / the card synced again)
 *   any but writing ──forget──▶ forgotten (the destination forgotten, or its staging copy deleted)
 */
export const COPY_STATES = ['wanted', 'writing', 'verified', 'failed', 'stopped', 'forgotten'] as const;
export type CopyState = (typeof COPY_STATES)[number];

/** A copy as written and read back: where, its MD5, the size and time it was given, how it was read back. */
export interface WrittenCopy {
  md5: string;
  /**
   * The XXH3-64 its read-back matched (ASC MHL's `xxh3`, 16 hex digits), or
   * null when the read-back was checked with MD5 (no XXH3 module, hash-worker.ts).
   */
  xxh3: string | null;
  copySize: number;
  copyMtimeMs: number;
  readBack: 'direct' | 'cache';
  /** How it was written: around the page cache (O_DIRECT), or through it (the file system refuses that). */
  written?: 'direct' | 'cache';
}

export type CopyChange =
  /** The destination counts for the card and lacks this file as written (new, failed, stopped, changed, gone). */
  | { type: 'want'; path: string }
  /** Its bytes are being written now (one read of the card feeds every destination). */
  | { type: 'writing' }
  /** Written, flushed and read back from the disk with the card's MD5. */
  | { type: 'verified'; copy: WrittenCopy }
  /** Read back with other bytes than the card's: "did not read back as written" (only this). */
  | { type: 'differs'; reason: string }
  /** The destination stopped for this card (full, unplugged, read-only, too small): why. */
  | { type: 'stopped'; reason: string }
  /** The crew forgot the destination, or its staging copy was deleted. */
  | { type: 'forget' };

export class IllegalCopyTransition extends Error {
  constructor(
    readonly from: CopyState | null,
    readonly change: CopyChange['type'],
  ) {
    super(`A copy cannot go from ${from ?? '(none)'} by '${change}'.`);
  }
}

/** The next state of a copy record (null: none yet), or IllegalCopyTransition. */
export function nextCopyState(from: CopyState | null, change: CopyChange): CopyState {
  const to = TABLE[change.type](from);
  if (to === null) throw new IllegalCopyTransition(from, change.type);
  return to;
}

const TABLE: { [K in CopyChange['type']]: (from: CopyState | null) => CopyState | null } = {
  // Anything at rest may be wanted again; a write cut short (crash, cancel) too.
  want: () => 'wanted',
  writing: (from) => (from === 'wanted' ? 'writing' : null),
  verified: (from) => (from === 'writing' ? 'verified' : null),
  differs: (from) => (from === 'writing' ? 'failed' : null),
  stopped: (from) => (from === 'wanted' || from === 'writing' ? 'stopped' : null),
  forget: (from) => (from === null || from === 'writing' ? null : 'forgotten'),
};

/** Records still to be written: the copy lane's work ("copy again" is only this). */
export const DUE_STATES: readonly CopyState[] = ['wanted'];
