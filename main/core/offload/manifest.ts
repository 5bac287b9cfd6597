/**
 * The card's hash list in ASC MHL v2.0 (the American Society of
 * Cinematographers' Media Hash List: the chain-of-custody format Hedge,
 * ShotPut and Silverstack write, so a post house's tools read it as is).
 *
 * What we write, per the v2.0 XSD (namespace urn:ASC:MHL:v2.0):
 * - one `<hashlist version="2.0">` per manifest generation, named as the
 *   spec's folder layout wants: `ascmhl/<NNNN>_<card label>_<YYYY-MM-DD>_<HHMMSS>Z.mhl`;
 * - `<creatorinfo>` (creation date, host, tool, a comment naming the card and
 *   the workspace) and `<processinfo>` with process "transfer" (the files
 *   were copied off the card to the bucket the manifest travels with) and the
 *   `<ignore>` patterns of what the agent never offloads;
 * - `<hashes>`: one `<hash>` per file: `<path size lastmodificationdate>`
 *   relative to the card root, `<md5 action="original" hashdate>` (MD5: the
 *   hash the upload already computes and the stores check);
 * - the drone facts of each file in the `<metadata>` element the XSD allows
 *   in every `<hash>` (type anyType), in our own namespace
 *   (urn:drone-media-sync:offload:1): capture time, position, aircraft,
 *   camera and serials, object key, acknowledgement, bucket check;
 * - the chain file `ascmhl/ascmhl_chain.xml` (urn:ASC:MHL:DIRECTORY:v2.0)
 *   listing every generation with its C4 id (SMPTE ST 2114: SHA-512 in
 *   base58, as the reference implementation computes it).
 * Not written: directory hashes and the root hash (optional in the XSD; they
 * need xxHash/C4 over folder structures and say nothing a per-file list
 * does not), `<references>` (no nested hash lists on a card).
 *
 * Every string from the card is escaped, and characters XML 1.0 cannot hold
 * (control characters in a hostile file name) become U+FFFD.
 */
import { createHash } from 'node:crypto';
import type { ManifestFile, OffloadReportInput } from './types.js';

export const ASC_MHL_NS = 'urn:ASC:MHL:v2.0';
export const ASC_MHL_DIRECTORY_NS = 'urn:ASC:MHL:DIRECTORY:v2.0';
export const DMS_NS = 'urn:drone-media-sync:offload:1';
export const MHL_FOLDER = 'ascmhl';
export const MHL_CHAIN_FILE = 'ascmhl_chain.xml';

/**
 * Patterns of what a hash list does not cover: a computer's own files on a
 * card (discover.ts), the history folder itself, and a copy still being
 * written. Everything else of a card is kept and listed.
 */
export const IGNORED = [
  '._*',
  '.DS_Store',
  '.Spotlight-V100',
  '.Trashes',
  '.fseventsd',
  'System Volume Information',
  '*.dms-partial',
  MHL_FOLDER,
];

// eslint-disable-next-line no-control-regex
const NOT_XML = /[^\u0009\u000a\u000d\u0020-\ud7ff\ue000-\ufffd\u{10000}-\u{10ffff}]/gu;

/** Text or attribute value, escaped, with what XML cannot carry replaced by U+FFFD. */
export function xmlText(value: string | number): string {
  return String(value)
    .replace(NOT_XML, '\ufffd')
    .replace(/&/g, '&amp;')
    .replace(/</g, '&lt;')
    .replace(/>/g, '&gt;')
    .replace(/"/g, '&quot;')
    .replace(/'/g, '&apos;');
}

const C4_ALPHABET = '123456789ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz';

/** The C4 id of some bytes: "c4" and the SHA-512 in base58, left-padded with "1" to 90 characters. */
export function c4Id(data: string | Uint8Array): string {
  let n = BigInt(`0x${createHash('sha512').update(data).digest('hex')}`);
  let s = '';
  while (n > 0n) {
    s = C4_ALPHABET[Number(n % 58n)] + s;
    n /= 58n;
  }
  return `c4${s.padStart(88, '1')}`;
}

/** "2024-05-06T11:02:03Z" from any ISO date-time; throws on an invalid one (a caller's bug, not card content). */
export function isoSeconds(value: string | number): string {
  const d = new Date(value);
  if (Number.isNaN(d.getTime())) throw new Error(`Not a date: ${String(value)}`);
  return d.toISOString().replace(/\.\d{3}Z$/, 'Z');
}

/** The generation's file name: `0001_<label>_2024-05-06_110203Z.mhl` (label reduced to safe characters). */
export function mhlFileName(sequence: number, cardLabel: string, createdAt: string): string {
  const label =
    cardLabel
      .normalize('NFC')
      .replace(/[^A-Za-z0-9._-]+/g, '_')
      .replace(/^[._-]+/, '')
      .slice(0, 64) || 'card';
  const t = isoSeconds(createdAt);
  return `${String(sequence).padStart(4, '0')}_${label}_${t.slice(0, 10)}_${t.slice(11, 19).replace(/:/g, '')}Z.mhl`;
}

export const attrs = (values: Record<string, string | number | boolean | null | undefined>): string =>
  Object.entries(values)
    .filter(([, v]) => v !== null && v !== undefined && v !== '')
    .map(([k, v]) => ` ${k}="${xmlText(String(v))}"`)
    .join('');

function fileMetadata(f: ManifestFile, indent: string): string[] {
  const lines = [`${indent}<dms:file${attrs({ kind: f.kind, state: f.state, objectKey: f.objectKey })}>`];
  const el = (name: string, values: Record<string, string | number | boolean | null | undefined>): void => {
    const a = attrs(values);
    if (a) lines.push(`${indent}  <dms:${name}${a}/>`);
  };
  el('capture', { time: f.capturedAt });
  if (f.position) {
    el('position', {
      lat: f.position.lat,
      lng: f.position.lng,
      absoluteAltitude: f.position.absoluteAltitude,
      relativeAltitude: f.position.relativeAltitude,
      gimbalYaw: f.gimbalYaw,
    });
  }
  el('aircraft', { modelKey: f.aircraft?.modelKey, serial: f.aircraft?.serial });
  el('camera', { model: f.camera?.model, payloadKey: f.camera?.payloadKey, serial: f.camera?.serial });
  if (f.acknowledged)
    el('acknowledged', {
      how: f.acknowledged.how,
      at: isoSeconds(f.acknowledged.at),
      target: f.acknowledged.targetId,
    });
  if (f.verified) {
    const v = f.verified;
    el('verified', {
      at: isoSeconds(v.at),
      target: v.targetId,
      found: v.found,
      sizeMatches: v.sizeMatches,
      checksum: v.checksum,
    });
  }
  lines.push(`${indent}</dms:file>`);
  return lines;
}

/** Files in the order of their paths (code units, as the hash lists list them). */
export function byRelPath<T extends { relPath: string }>(files: readonly T[]): T[] {
  return [...files].sort((a, b) => (a.relPath < b.relPath ? -1 : a.relPath > b.relPath ? 1 : 0));
}

/** The opening of an ASC MHL v2.0 hash list of a transfer, up to its hashes: who made it, when, why. */
export function mhlHead(o: {
  created: string | number;
  hostname: string;
  tool: { name: string; version: string };
  comment: string;
}): string[] {
  return [
    '<?xml version="1.0" encoding="UTF-8"?>',
    `<hashlist version="2.0" xmlns="${ASC_MHL_NS}" xmlns:dms="${DMS_NS}">`,
    '  <creatorinfo>',
    `    <creationdate>${isoSeconds(o.created)}</creationdate>`,
    `    <hostname>${xmlText(o.hostname)}</hostname>`,
    `    <tool version="${xmlText(o.tool.version)}">${xmlText(o.tool.name)}</tool>`,
    `    <comment>${xmlText(o.comment)}</comment>`,
    '  </creatorinfo>',
    '  <processinfo>',
    '    <process>transfer</process>',
    '    <ignore>',
    ...IGNORED.map((p) => `      <pattern>${xmlText(p)}</pattern>`),
    '    </ignore>',
    '  </processinfo>',
  ];
}

/** One ASC MHL v2.0 hash list for the card (pure; the caller writes it to `ascmhl/<mhlFileName>`). */
export function buildMhl(input: OffloadReportInput): string {
  const files = byRelPath(input.files);
  const out = mhlHead({
    created: input.createdAt,
    hostname: input.hostname,
    tool: input.tool,
    comment: `Card ${input.card.label} offloaded to ${input.target.workspaceLabel} (${input.target.serverLabel}). ${input.verdict.message}`,
  });
  if (files.length > 0) {
    out.push('  <hashes>');
    for (const f of files) {
      if (!/^[0-9a-f]{32}$/i.test(f.md5)) throw new Error(`Not an MD5 for ${f.relPath}: ${f.md5}`);
      out.push(
        '    <hash>',
        `      <path${attrs({ size: f.size, lastmodificationdate: isoSeconds(f.mtimeMs) })}>${xmlText(f.relPath)}</path>`,
        `      <md5 action="original" hashdate="${isoSeconds(f.hashedAt ?? input.createdAt)}">${f.md5.toLowerCase()}</md5>`,
        '      <metadata>',
        ...fileMetadata(f, '        '),
        '      </metadata>',
        '    </hash>',
      );
    }
    out.push('  </hashes>');
  }
  out.push('</hashlist>', '');
  return out.join('\n');
}

export interface MhlGeneration {
  sequence: number;
  /** The .mhl file name inside the ascmhl folder. */
  fileName: string;
  c4: string;
}

/** The chain file listing every generation of the card's hash list, oldest first. */
export function buildMhlChain(generations: readonly MhlGeneration[]): string {
  return [
    '<?xml version="1.0" encoding="UTF-8"?>',
    `<ascmhldirectory xmlns="${ASC_MHL_DIRECTORY_NS}">`,
    ...[...generations]
      .sort((a, b) => a.sequence - b.sequence)
      .flatMap((g) => [
        `  <hashlist sequencenr="${g.sequence}">`,
        `    <path>${xmlText(g.fileName)}</path>`,
        `    <c4>${xmlText(g.c4)}</c4>`,
        '  </hashlist>',
      ]),
    '</ascmhldirectory>',
    '',
  ].join('\n');
}

/**
 * The files of the card's `ascmhl` folder after one more generation: the new
 * hash list and the chain with every earlier generation plus this one.
 * Paths are relative to the card root (upload them under the card's prefix).
 */
export function nextMhlGeneration(
  input: OffloadReportInput,
  earlier: readonly MhlGeneration[] = [],
): { files: Array<{ path: string; content: string }>; generations: MhlGeneration[] } {
  const sequence = earlier.reduce((n, g) => Math.max(n, g.sequence), 0) + 1;
  const fileName = mhlFileName(sequence, input.card.label, input.createdAt);
  const content = buildMhl(input);
  const generations = [...earlier, { sequence, fileName, c4: c4Id(content) }];
  return {
    files: [
      { path: `${MHL_FOLDER}/${fileName}`, content },
      { path: `${MHL_FOLDER}/${MHL_CHAIN_FILE}`, content: buildMhlChain(generations) },
    ],
    generations,
  };
}
