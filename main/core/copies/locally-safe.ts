/**
 * "Locally safe", per card: every file of the card is on every destination
 * that counts for it (the settings' and those named in its last run, not
 * forgotten), each copy verified by reading it back from the disk, and still
 * there as it was written. A pure decision over one read of the card's facts
 * (gatherLocal below reads the store once and looks at the disks) handed
 * forward as a value. The card is safe to format
 * when it is locally safe or in the workspace (safe-to-format.ts), whichever
 * comes first; the agent never formats or deletes a card.
 */
import fs from 'node:fs';
import { baseName, count, listOf } from '../plain.js';
import { saidAsIs } from '../media/discover.js';
import { lookAt, lookMessage, type DestinationLook } from './destinations.js';
import type { CopyRecord, Destination, FileVersion } from '../queue/copies.js';
import type { FactRow, Queue } from '../queue/queue.js';

export interface LocalFileFact extends FileVersion {
  kind: string;
  /** The file was read from the card (not waiting for it, not failed before it was read). */
  read: boolean;
}

export interface LocalCopyFact {
  record: CopyRecord;
  /** At the verdict: the copy is there, with the size and time it was written with. */
  intact: boolean;
}

export interface LocalVerdictInput {
  card: { id: string; label: string };
  destinations: readonly Destination[];
  scanComplete: boolean;
  files: readonly LocalFileFact[];
  /** Copies by file (relPath|size|mtime) and destination id. */
  copies: ReadonlyMap<string, ReadonlyMap<number, LocalCopyFact>>;
  /** Destinations that stopped for this card, with their reason. */
  stops: ReadonlyMap<number, string>;
  /** Each destination's folder as it is now (absent: ready). */
  looks?: ReadonlyMap<number, DestinationLook>;
  /**
   * Destinations that count for the card (its last run named them) but that
   * nothing copies to now (a sync naming none, `report`): what they lack is
   * copied only by a sync that names them again.
   */
  notServed?: ReadonlySet<number>;
  /** Found on the card and kept nowhere (blocking) or named (not). */
  skipped: ReadonlyArray<{ relPath: string; kind?: string; message: string; blocking: boolean }>;
}

export interface LocalVerdict {
  safe: boolean;
  /**
   * Every copy asked for is made and verified: `safe`, or all but the card's folders
   * that were not read (one folder of a card synced): what the run was asked for is done.
   */
  made: boolean;
  reasons: string[];
  counts: {
    files: number;
    /** Files verified on every destination. */
    everywhere: number;
    perDestination: Array<{
      id: number;
      label: string;
      verified: number;
      missing: number;
      bad: number;
      /** ready, or why not: its drive unplugged, its folder gone, stopped (full, read-only, too small). */
      state: 'ready' | 'unplugged' | 'missing' | 'stopped';
    }>;
  };
  /** "M3E_CARD: 1,214 files copied and verified on SSD and T7_BACKUP — safe to format", or why not. */
  message: string;
  /** How the copies were read back: from the disk itself, or (some) through the OS's cache. */
  readBack: 'direct' | 'cache' | 'none';
}

export const fileKey = (f: FileVersion): string => `${f.relPath}|${f.size}|${f.mtimeMs}`;

const names = (files: ReadonlyArray<{ relPath: string }>): string =>
  listOf(files.map((f) => baseName(f.relPath)));

export function localVerdict(input: LocalVerdictInput): LocalVerdict {
  const { card, destinations, files } = input;
  const reasons: string[] = [];
  // A file still being written is named with the skipped ones; else an unfinished read (a pulled card) is said here.
  if (!input.scanComplete && !input.skipped.some((x) => x.kind === 'growing'))
    reasons.push(
      'The card was not read to the end: insert it again and let Drone Media Sync read all of it.',
    );
  else if (input.scanComplete && files.length === 0)
    reasons.push('No files were found on this card: there is nothing to copy.');
  const per: LocalVerdict['counts']['perDestination'] = [];
  let direct = 0;
  let cached = 0;
  const everywhere = new Set(files.map(fileKey));
  const phrases: string[] = [];
  for (const d of destinations) {
    const missing: LocalFileFact[] = [];
    const bad: LocalFileFact[] = [];
    const changed: LocalFileFact[] = [];
    let verified = 0;
    let verifiedOnce = 0;
    for (const f of files) {
      const c = input.copies.get(fileKey(f))?.get(d.id);
      if (c?.record.state === 'verified') verifiedOnce++;
      if (c?.record.state === 'verified' && c.intact) {
        verified++;
        if (c.record.readBack === 'direct') direct++;
        else cached++;
        continue;
      }
      everywhere.delete(fileKey(f));
      // Only bytes that differ "did not read back as written"; a copy stopped (full, unplugged) is not there.
      if (c?.record.state === 'failed') bad.push(f);
      else if (c?.record.state === 'verified') changed.push(f);
      else missing.push(f);
    }
    const look = input.looks?.get(d.id) ?? 'ready';
    const stop = input.stops.get(d.id);
    const of = `${verified.toLocaleString('en-US')} of ${files.length.toLocaleString('en-US')}`;
    let state: LocalVerdict['counts']['perDestination'][number]['state'] = 'ready';
    if (look === 'unplugged' || look === 'missing' || look === 'not-a-folder') {
      // The drive gone, its folder gone, or a file in its place: one reason, never "changed" or
      // "did not read back" per file (a file in its place may have no records at all).
      const before = `${verifiedOnce.toLocaleString('en-US')} of ${files.length.toLocaleString('en-US')}`;
      if (look === 'not-a-folder') {
        phrases.push(`${d.label} is a file, not a folder`);
        reasons.push(lookMessage(d, look));
      } else {
        phrases.push(`${d.label} ${look === 'unplugged' ? 'unplugged' : 'folder gone'} after ${before}`);
        reasons.push(
          `${lookMessage(d, look).replace(/: its copy of this card stopped\./, ':')} ${before} files were verified there before.`,
        );
      }
      per.push({
        id: d.id,
        label: d.label,
        verified,
        missing: files.length - verified,
        bad: 0,
        state: look === 'not-a-folder' ? 'stopped' : look,
      });
      continue;
    }
    if (stop) {
      state = 'stopped';
      reasons.push(stop);
    }
    phrases.push(stop ? `${d.label} stopped after ${of}` : `${d.label} ${of} verified`);
    const idle = input.notServed?.has(d.id) === true;
    const nameIt = `sync the card with ${d.label} named (--copy-to, or in the settings) to copy`;
    if (missing.length > 0 && !stop)
      reasons.push(
        idle
          ? `${d.label}: ${count(missing.length, 'file')} not copied there (${names(missing)}): ${nameIt} ${missing.length === 1 ? 'it' : 'them'}.`
          : `${d.label}: ${count(missing.length, 'file')} not copied yet (${names(missing)}): wait until they are copied and verified.`,
      );
    // Stopped with none there ("stopped after 0 of 2"): its reason says it all, no list of every file.
    else if (missing.length > 0 && verified > 0)
      reasons.push(
        `${d.label}: ${count(missing.length, 'file')} of this card ${missing.length === 1 ? 'is' : 'are'} not there (${names(missing)}).`,
      );
    if (bad.length > 0)
      reasons.push(
        `${d.label}: ${count(bad.length, 'copy', 'copies')} did not read back as written (${names(bad)}): do not trust ${bad.length === 1 ? 'it' : 'them'}; sync the card again to copy ${bad.length === 1 ? 'it' : 'them'} anew.`,
      );
    if (changed.length > 0)
      reasons.push(
        `${d.label}: ${count(changed.length, 'copy', 'copies')} changed or removed since ${changed.length === 1 ? 'it was' : 'they were'} verified (${names(changed)}): ${idle ? nameIt : 'sync the card again to copy'} ${changed.length === 1 ? 'it' : 'them'} anew.`,
      );
    per.push({
      id: d.id,
      label: d.label,
      verified,
      missing: missing.length,
      bad: bad.length + changed.length,
      state,
    });
  }
  if (input.skipped.some((x) => x.blocking && x.kind === 'rest-of-card'))
    phrases.unshift('the rest of the card not read');
  for (const s of input.skipped.filter((x) => x.blocking))
    reasons.push(saidAsIs(s.kind) ? s.message : `Not kept anywhere: ${s.message}`);
  const safe = reasons.length === 0 && destinations.length > 0;
  // The copies did all that was asked of them; only the card's other folders, never read, stand in the way.
  const restOfCard = input.skipped.filter((x) => x.blocking && x.kind === 'rest-of-card').length;
  const made = safe || (destinations.length > 0 && reasons.length === restOfCard && restOfCard > 0);
  const where = listOf(
    destinations.map((d) => d.label),
    8,
  );
  const message = safe
    ? `${card.label}: ${count(files.length, 'file')} copied and verified on ${where} — safe to format`
    : `${card.label}: not safe to format from the copies yet — ${phrases.join('; ')}`;
  return {
    safe,
    made,
    reasons,
    counts: { files: files.length, everywhere: everywhere.size, perDestination: per },
    message,
    readBack: direct + cached === 0 ? 'none' : cached > 0 ? 'cache' : 'direct',
  };
}

/**
 * The facts of a card's local verdict from the store, each copy looked at on
 * its disk (there, same size, same time) — a copy changed or deleted after it
 * was verified no longer counts. Null when the card has no destination (none
 * set, none used).
 */
export function gatherLocal(
  queue: Queue,
  card: { sourceId: string; label: string },
  configured: readonly Destination[],
  /** The card's files as the verdict read them (queue.factsOf), when read already. */
  rows?: readonly FactRow[],
): LocalVerdictInput | null {
  const copies = queue.copies.ofSource(card.sourceId);
  // Those that count for the card: the settings' and its last run's (a past one not named again does not).
  const counting = queue.copies.countingFor(card.sourceId);
  const ids = new Set(counting.length > 0 ? counting : configured.map((d) => d.id));
  const destinations = queue.copies.destinations().filter((d) => ids.has(d.id));
  if (destinations.length === 0) return null;
  const byFile = new Map<string, Map<number, LocalCopyFact>>();
  const stops = new Map<number, string>();
  for (const c of copies) {
    if (!ids.has(c.destinationId)) continue;
    const m = byFile.get(fileKey(c)) ?? new Map<number, LocalCopyFact>();
    m.set(c.destinationId, { record: c, intact: c.state === 'verified' && stillThere(c) });
    byFile.set(fileKey(c), m);
    if (c.state === 'stopped' && c.error && !stops.has(c.destinationId)) stops.set(c.destinationId, c.error);
  }
  const looks = new Map(destinations.map((d) => [d.id, lookAt(d, queue.copies.volumeOf(d.id))]));
  const files = rows ?? queue.factsOf(card.sourceId);
  return {
    card: { id: card.sourceId, label: card.label },
    destinations,
    scanComplete: queue.sources.lastScan(card.sourceId)?.complete ?? false,
    files: files.map((r) => ({
      sourceId: card.sourceId,
      relPath: r.relPath,
      size: r.size,
      mtimeMs: r.mtimeMs,
      kind: r.kind,
      read: r.state !== 'discovered',
    })),
    copies: byFile,
    stops,
    looks,
    notServed: new Set([...ids].filter((id) => !configured.some((d) => d.id === id))),
    skipped: queue.sources.skipped(card.sourceId),
  };
}

export function stillThere(c: CopyRecord): boolean {
  try {
    const st = fs.statSync(c.path);
    return st.size === c.copySize && Math.trunc(st.mtimeMs) === c.copyMtimeMs;
  } catch {
    return false;
  }
}
