/**
 * Each destination's copy of a card carries its own ASC MHL history, in
 * `ascmhl/` at the copy's root: one generation (process "transfer") each
 * time more of the card was copied and verified there, chained with C4 ids.
 * A file new to the history is listed with action "original" (its MD5 and
 * XXH3-64 from the one read of the card; the copy's read-back matched the
 * XXH3), the others "verified"; every hash's date is
 * when its copy was read back and matched, and how it was read back is
 * recorded (our namespace), so the film tools and the official `ascmhl`
 * tool can check a copy years later (`ascmhl verify <copy>`).
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { createRequire } from 'node:module';
import type * as Fxp from 'fast-xml-parser';
import {
  attrs,
  buildMhlChain,
  byRelPath,
  c4Id,
  isoSeconds,
  MHL_CHAIN_FILE,
  MHL_FOLDER,
  mhlFileName,
  mhlHead,
  xmlText,
  type MhlGeneration,
} from '../ascmhl.js';
import type { ReadBack } from '../queue/copies.js';

export interface CopiedFile {
  relPath: string;
  size: number;
  mtimeMs: number;
  md5: string;
  /** XXH3-64 of the card's bytes, which the copy's read-back matched (null: read back with MD5). */
  xxh3: string | null;
  /** When the copy was read back from the disk and matched the card's bytes. */
  verifiedAt: number;
  readBack: ReadBack;
  /** How the copy was written: around the page cache (O_DIRECT), or through it (also: not recorded). */
  written?: ReadBack;
}

/**
 * The XML parser, loaded when a history is first read (its CommonJS build,
 * one file): a run with no local destination never loads it (issue 33: 25
 * modules, ~40 ms of a re-inserted card's start).
 */
let parser: Fxp.XMLParser | undefined;
const parserOf = (): Fxp.XMLParser =>
  (parser ??= new (createRequire(import.meta.url)('fast-xml-parser') as typeof Fxp).XMLParser({
    ignoreAttributes: false,
    attributeNamePrefix: '@',
    isArray: () => true,
  }));

const arr = (v: unknown): unknown[] => (Array.isArray(v) ? v : v === undefined ? [] : [v]);
const first = (v: unknown): unknown => arr(v)[0];

/** The generations recorded in a history's chain file, oldest first. */
function earlierGenerations(folder: string): MhlGeneration[] {
  let text: string;
  try {
    text = fs.readFileSync(path.join(folder, MHL_CHAIN_FILE), 'utf8');
  } catch {
    return [];
  }
  const doc = parserOf().parse(text) as Record<string, unknown>;
  const dir = first(doc['ascmhldirectory']) as Record<string, unknown> | undefined;
  return arr(dir?.['hashlist']).map((h) => {
    const e = h as Record<string, unknown>;
    return {
      sequence: Number(first(e['@sequencenr'])),
      fileName: String(first(e['path'])),
      c4: String(first(e['c4'])),
    };
  });
}

/** The paths (relative to the copy's root) that earlier generations list. */
function knownPaths(folder: string, generations: readonly MhlGeneration[]): Set<string> {
  const known = new Set<string>();
  for (const g of generations) {
    let text: string;
    try {
      text = fs.readFileSync(path.join(folder, g.fileName), 'utf8');
    } catch {
      continue;
    }
    // Every element parsed as a list (isArray), text beside attributes as '#text'.
    type Node = Record<string, Node[] | string | undefined>;
    const doc = parserOf().parse(text) as Node;
    const hashes = (first(doc['hashlist']) as Node | undefined)?.['hashes'];
    for (const h of arr((first(hashes) as Node | undefined)?.['hash'])) {
      const p = first((h as Node)['path']);
      const name = typeof p === 'object' && p !== null ? (p as Node)['#text'] : p;
      if (typeof name === 'string' || typeof name === 'number') known.add(String(name));
    }
  }
  return known;
}

/**
 * Writes one more generation of the copy's history when files were copied
 * and verified there since the last one; returns the generation's file (in
 * the copy's `ascmhl/`), or null when nothing is new.
 */
export function writeCopyHistory(o: {
  root: string;
  card: { label: string };
  destinationLabel: string;
  files: readonly CopiedFile[];
  tool: { name: string; version: string };
  now?: Date;
}): string | null {
  const folder = path.join(o.root, MHL_FOLDER);
  const generations = earlierGenerations(folder);
  const known = knownPaths(folder, generations);
  const files = byRelPath(o.files);
  if (files.length === 0 || files.every((f) => known.has(f.relPath))) return null;
  const created = (o.now ?? new Date()).toISOString();
  const direct = files.every((f) => f.readBack === 'direct');
  const written = files.every((f) => f.written === 'direct')
    ? 'written around the operating system cache (O_DIRECT)'
    : 'written through the operating system cache (this file system does not allow writing around it)';
  const by = files.every((f) => f.xxh3 !== null) ? 'XXH3' : 'MD5';
  const how = direct
    ? `then read back from the disk itself (O_DIRECT, around the operating system cache) and its ${by} compared with the card’s`
    : `then read back through the operating system cache (this system or file system does not allow reading around it) and its ${by} compared with the card’s`;
  const out = [
    ...mhlHead({
      created,
      hostname: os.hostname(),
      tool: o.tool,
      comment: `Card ${o.card.label} copied to ${o.destinationLabel}: each file ${written} from one read of the card, flushed to disk, ${how}.`,
    }),
    '  <hashes>',
  ];
  for (const f of files) {
    const hash = `action="${known.has(f.relPath) ? 'verified' : 'original'}" hashdate="${isoSeconds(f.verifiedAt)}"`;
    out.push(
      '    <hash>',
      `      <path${attrs({ size: f.size, lastmodificationdate: isoSeconds(f.mtimeMs) })}>${xmlText(f.relPath)}</path>`,
      // The schema's order: md5 before xxh3.
      `      <md5 ${hash}>${f.md5.toLowerCase()}</md5>`,
      ...(f.xxh3 === null ? [] : [`      <xxh3 ${hash}>${f.xxh3.toLowerCase()}</xxh3>`]),
      '      <metadata>',
      `        <dms:copy${attrs({ written: f.written ?? 'cache', readBack: f.readBack, verifiedAt: isoSeconds(f.verifiedAt) })}/>`,
      '      </metadata>',
      '    </hash>',
    );
  }
  out.push('  </hashes>', '</hashlist>', '');
  const content = out.join('\n');
  const sequence = generations.reduce((n, g) => Math.max(n, g.sequence), 0) + 1;
  const fileName = mhlFileName(sequence, o.card.label, created);
  fs.mkdirSync(folder, { recursive: true });
  writeAtomic(path.join(folder, fileName), content);
  writeAtomic(
    path.join(folder, MHL_CHAIN_FILE),
    buildMhlChain([...generations, { sequence, fileName, c4: c4Id(content) }]),
  );
  return path.join(folder, fileName);
}

function writeAtomic(file: string, content: string): void {
  const tmp = `${file}.dms-partial`;
  const fd = fs.openSync(tmp, 'w');
  try {
    fs.writeSync(fd, content);
    fs.fsyncSync(fd);
  } finally {
    fs.closeSync(fd);
  }
  fs.renameSync(tmp, file);
}

/**
 * After a card's copies came to rest: one more generation of each
 * destination's history for the files verified there and still intact.
 * Returns the generations written.
 */
export function writeDestinationHistories(o: {
  copies: ReadonlyArray<{
    destinationId: number;
    relPath: string;
    size: number;
    mtimeMs: number;
    md5: string | null;
    xxh3: string | null;
    state: string;
    at: number;
    readBack: ReadBack | null;
    written?: ReadBack | null;
  }>;
  destinations: ReadonlyArray<{ id: number; label: string; root: string }>;
  card: { label: string };
  tool: { name: string; version: string };
  intact: (c: { destinationId: number; relPath: string }) => boolean;
}): string[] {
  const written: string[] = [];
  for (const d of o.destinations) {
    const files = o.copies
      .filter((c) => c.destinationId === d.id && c.state === 'verified' && c.md5 !== null && o.intact(c))
      .map((c) => ({
        relPath: c.relPath,
        size: c.size,
        mtimeMs: c.mtimeMs,
        md5: c.md5 as string,
        xxh3: c.xxh3,
        verifiedAt: c.at,
        readBack: c.readBack ?? 'cache',
        written: c.written ?? 'cache',
      }));
    const file = writeCopyHistory({
      root: d.root,
      card: o.card,
      destinationLabel: d.label,
      files,
      tool: o.tool,
    });
    if (file) written.push(file);
  }
  return written;
}
