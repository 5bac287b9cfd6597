/**
 * ASC MHL v2.0 parts every hash list of the agent shares (the workspace's
 * manifest, offload/manifest.ts, and each destination's history,
 * copies/mhl.ts): names, escaping, C4 ids, the head of a transfer's hash
 * list and the chain file. See offload/manifest.ts for what is written.
 */
import { createHash } from 'node:crypto';

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

/** Anything xmlText changes: markup characters, and what XML 1.0 cannot hold. */
// eslint-disable-next-line no-control-regex
const CHANGED = /[&<>"']|[^\u0009\u000a\u000d\u0020-\ud7ff\ue000-\ufffd\u{10000}-\u{10ffff}]/u;

/** Text or attribute value, escaped, with what XML cannot carry replaced by U+FFFD. */
export function xmlText(value: string | number): string {
  const text = String(value);
  // Most values (sizes, dates, hashes, plain names) need nothing: one test, not six replaces.
  if (!CHANGED.test(text)) return text;
  return text
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
  return c4OfSha512(createHash('sha512').update(data).digest('hex'));
}

/** The C4 id of bytes whose SHA-512 is `hex` (hashed as they were written). */
export function c4OfSha512(hex: string): string {
  let n = BigInt(`0x${hex}`);
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
