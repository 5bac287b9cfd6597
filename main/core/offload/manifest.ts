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
import type { ManifestFile, OffloadReportInput } from './types.js';

// The shared ASC MHL parts, for the importers of this module.
export * from '../ascmhl.js';

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

/**
 * One ASC MHL v2.0 hash list for the card, in pieces (a few lines each, one
 * `<hash>` per file): a 10,000-file card's list is some 6 MB, written to its
 * file as it is made, never held whole (pure; the caller writes it to
 * `ascmhl/<mhlFileName>`).
 */
export function* mhlPieces(input: OffloadReportInput): Generator<string> {
  const files = byRelPath(input.files);
  yield `${mhlHead({
    created: input.createdAt,
    hostname: input.hostname,
    tool: input.tool,
    comment: `Card ${input.card.label} offloaded to ${input.target.workspaceLabel} (${input.target.serverLabel}). ${input.verdict.message}`,
  }).join('\n')}\n`;
  if (files.length > 0) {
    yield '  <hashes>\n';
    const hashdate = isoSeconds(input.createdAt);
    for (const f of files) {
      if (!/^[0-9a-f]{32}$/i.test(f.md5)) throw new Error(`Not an MD5 for ${f.relPath}: ${f.md5}`);
      yield `${[
        '    <hash>',
        `      <path${attrs({ size: f.size, lastmodificationdate: isoSeconds(f.mtimeMs) })}>${xmlText(f.relPath)}</path>`,
        `      <md5 action="original" hashdate="${f.hashedAt == null ? hashdate : isoSeconds(f.hashedAt)}">${f.md5.toLowerCase()}</md5>`,
        '      <metadata>',
        ...fileMetadata(f, '        '),
        '      </metadata>',
        '    </hash>',
      ].join('\n')}\n`;
    }
    yield '  </hashes>\n';
  }
  yield '</hashlist>\n';
}

/** One ASC MHL v2.0 hash list for the card, as one string (see mhlPieces). */
export function buildMhl(input: OffloadReportInput): string {
  return [...mhlPieces(input)].join('');
}

/** The sequence number and file name of the next generation of the card's hash list. */
export function nextMhlName(
  input: Pick<OffloadReportInput, 'card' | 'createdAt'>,
  earlier: readonly MhlGeneration[],
): { sequence: number; fileName: string } {
  const sequence = earlier.reduce((n, g) => Math.max(n, g.sequence), 0) + 1;
  return { sequence, fileName: mhlFileName(sequence, input.card.label, input.createdAt) };
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
  const { sequence, fileName } = nextMhlName(input, earlier);
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
