/**
 * The manifest of a card, written where the crew finds it and uploaded next
 * to the card's files: an ASC MHL hash list (one more generation each time
 * the card's state changed, chained), the printable HTML report and the same
 * data as JSON. In the state folder: `manifests/<card>-<id>/` (one per card
 * and target); in the bucket: `<prefix>/manifests/<card>-<id>/`.
 */
import { createHash } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import type { CardOffload } from './card.js';
import { digestOf, reportInput } from './card.js';
import { buildMhlChain, c4OfSha512, MHL_CHAIN_FILE } from '../ascmhl.js';
import { MHL_FOLDER, mhlPieces, nextMhlName, type MhlGeneration } from './manifest.js';
import { reportHtmlPieces, reportJson, reportJsonPieces } from './report.js';

export interface Published {
  /** The folder in the state folder. */
  dir: string;
  /** Files of this generation, relative to `dir`. */
  files: string[];
  /** Whether a new generation was written (false: nothing changed since the last one). */
  changed: boolean;
  /**
   * Files of the folder the bucket does not have as they are now (a new
   * generation, or one written by `report` or a run that could not upload
   * it): to upload, then `markUploaded`. Empty when the bucket is up to date.
   */
  toUpload: string[];
  /** What the folder vouches for now (given back to markUploaded). */
  digest: string;
  /** The newest ASC MHL hash list, relative to `dir` (what the report's `hashList` names), or null. */
  hashList: string | null;
}

interface Ledger {
  generations: MhlGeneration[];
  /** What the last generation said, to write a new one only when the card's state changed. */
  digest: string;
  /** The digest whose files last reached the bucket (absent: none yet). */
  uploaded?: string;
}

/**
 * A folder name for a source and target: readable, and unique by a hash of
 * both, so that a run against another server (a mistyped address) writes its
 * own report beside this one and never over it.
 */
export function manifestFolder(o: Pick<CardOffload, 'card' | 'target'>): string {
  const readable =
    o.card.label
      .normalize('NFC')
      .replace(/[^A-Za-z0-9._-]+/g, '_')
      .replace(/^[._-]+/, '')
      .slice(0, 48) || 'card';
  const id = createHash('sha256').update(`${o.card.sourceId}\n${o.target.id}`).digest('hex').slice(0, 10);
  return `${readable}-${id}`;
}

function readLedger(file: string): Ledger | null {
  try {
    return JSON.parse(fs.readFileSync(file, 'utf8')) as Ledger;
  } catch {
    return null;
  }
}

function writeAtomic(file: string, content: string): void {
  writeAtomicPieces(file, [content]);
}

/** Text gathered into blocks of about this many characters before each write. */
const BLOCK = 64 * 1024;

/**
 * The bytes of each block are encoded into this one buffer, reused: a new
 * buffer per block (Buffer.from) made a 10,000-file card's 20 MB of manifest
 * as many ArrayBuffers, held outside the heap until the collector freed them,
 * at the end of the sync, when the agent's memory peaks (issue 33).
 * A block is at most BLOCK characters plus one piece, 3 bytes a character;
 * a larger one (a long piece) gets a buffer of its own.
 */
const scratch = Buffer.allocUnsafe(4 * BLOCK * 3);

/**
 * Writes text made in pieces to `file`, through a temporary file renamed in
 * place: the pieces are gathered into blocks of about 64 KiB and each block
 * written as it fills, so the whole text is never one string. `written` sees
 * each block (to hash the file as it is written), only during the call: the
 * block's memory is reused for the next one.
 */
export function writeAtomicPieces(
  file: string,
  pieces: Iterable<string>,
  written?: (block: Buffer) => void,
): void {
  fs.mkdirSync(path.dirname(file), { recursive: true });
  const tmp = `${file}.${process.pid}.tmp`;
  const fd = fs.openSync(tmp, 'w');
  try {
    let text = '';
    const flush = (): void => {
      const block =
        text.length * 3 <= scratch.length
          ? scratch.subarray(0, scratch.write(text, 'utf8'))
          : Buffer.from(text, 'utf8');
      text = '';
      written?.(block);
      for (let at = 0; at < block.length;) at += fs.writeSync(fd, block, at, block.length - at);
    };
    for (const piece of pieces) {
      text += piece;
      if (text.length >= BLOCK) flush();
    }
    if (text) flush();
  } catch (err) {
    fs.closeSync(fd);
    fs.rmSync(tmp, { force: true });
    throw err;
  }
  fs.closeSync(fd);
  fs.renameSync(tmp, file);
}

/**
 * Writes the card's manifest into `<manifestsDir>/<card>/` when its state
 * changed since the last one. Only hashed files go into the hash list (a file
 * not read yet has no hash to vouch for); the report lists every file.
 */
export function writeManifest(
  manifestsDir: string,
  o: CardOffload,
  tool: { name: string; version: string },
  now = new Date(),
): Published {
  const dir = path.join(manifestsDir, manifestFolder(o));
  const ledgerFile = path.join(dir, 'ledger.json');
  const ledger = readLedger(ledgerFile);
  const digest = o.digest ?? digestOf(o);
  const last = ledger?.generations.at(-1);
  if (ledger && ledger.digest === digest)
    return {
      dir,
      files: [],
      changed: false,
      toUpload: ledger.uploaded === digest ? [] : filesOf(dir, ledger),
      digest,
      hashList: last ? `${MHL_FOLDER}/${last.fileName}` : null,
    };
  const input = reportInput(o, now, tool);
  const hashed = { ...input, files: input.files.filter((f) => /^[0-9a-f]{32}$/i.test(f.md5)) };
  // Each file written in pieces as it is made, none held whole (a 10,000-file card's
  // hash list, report page and JSON are 4 to 10 MB each).
  const written: string[] = [];
  const write = (file: string, pieces: Iterable<string>, seen?: (block: Buffer) => void): void => {
    writeAtomicPieces(path.join(dir, file), pieces, seen);
    written.push(file);
  };
  // The hash list, hashed as it is written for its C4 id in the chain.
  const earlier = ledger?.generations ?? [];
  const { sequence, fileName } = nextMhlName(input, earlier);
  const mhl = `${MHL_FOLDER}/${fileName}`;
  const sha512 = createHash('sha512');
  write(mhl, mhlPieces(hashed), (block) => sha512.update(block));
  const generations = [...earlier, { sequence, fileName, c4: c4OfSha512(sha512.digest('hex')) }];
  write(`${MHL_FOLDER}/${MHL_CHAIN_FILE}`, [buildMhlChain(generations)]);
  const report = reportJson(input, mhl);
  write('report.html', reportHtmlPieces(report));
  write('report.json', reportJsonPieces(report));
  const kept: Ledger = { generations, digest };
  writeAtomic(ledgerFile, JSON.stringify(kept));
  // A generation before this one that never reached the bucket goes with it.
  const behind = ledger !== null && ledger.uploaded !== ledger.digest;
  return {
    dir,
    files: written,
    changed: true,
    toUpload: behind ? filesOf(dir, kept) : written,
    digest,
    hashList: mhl,
  };
}

/** Every file of a manifest folder (its hash lists, the chain, the reports): what the bucket should hold. */
function filesOf(dir: string, ledger: Ledger): string[] {
  return [
    ...ledger.generations.map((g) => `${MHL_FOLDER}/${g.fileName}`),
    `${MHL_FOLDER}/${MHL_CHAIN_FILE}`,
    'report.html',
    'report.json',
  ].filter((f) => fs.existsSync(path.join(dir, f)));
}

/** The folder's files as of `digest` reached the bucket: not uploaded again until it changes. */
export function markUploaded(dir: string, digest: string): void {
  const file = path.join(dir, 'ledger.json');
  const ledger = readLedger(file);
  if (ledger && ledger.digest === digest) writeAtomic(file, JSON.stringify({ ...ledger, uploaded: digest }));
}
