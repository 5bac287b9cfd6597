/**
 * The card's manifest as written to the state folder: the hash list, the
 * report page and its JSON are the texts the pure builders make, byte for
 * byte, written in blocks as they are made (a 10,000-file card's files are
 * 4 to 10 MB each: never one string, nor one write).
 */
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { tempDir } from '../../../test/support/harness.js';
import { offloadFixture } from '../../../test/support/offload-fixture.js';
import type { CardOffload } from './card.js';
import { buildMhl, buildMhlChain, c4Id, MHL_CHAIN_FILE, MHL_FOLDER } from './manifest.js';
import { writeAtomicPieces, writeManifest } from './publish.js';
import { renderReportHtml, reportJson } from './report.js';
import type { OffloadReportInput } from './types.js';

const dirs: string[] = [];
let big: CardOffload;
let input: OffloadReportInput;
const NOW = new Date('2024-05-06T09:05:00Z');
const TOOL = { name: 'drone-media-sync', version: '0.1.0' };

/** The fixture's card grown to `n` files (the same photos under other names), as cardOffload gives it. */
function grown(base: OffloadReportInput, n: number): CardOffload {
  const files = Array.from({ length: n }, (_, i) => {
    const f = base.files[i % base.files.length]!;
    const dir = path.posix.dirname(f.relPath);
    return { ...f, relPath: `${dir}/${String(i).padStart(5, '0')}_${path.posix.basename(f.relPath)}` };
  });
  return {
    card: { sourceId: base.card.id, label: base.card.label },
    facts: files,
    files,
    flights: base.flights,
    verdict: base.verdict,
    local: null,
    safe: base.verdict.safe,
    message: base.verdict.message,
    target: base.target,
  };
}

beforeAll(async () => {
  const root = tempDir('dms-publish-');
  dirs.push(root);
  input = await offloadFixture(root, { hostile: true, missing: [7], float: [3] });
  big = grown(input, 6000);
});
afterEach(() => vi.restoreAllMocks());
afterAll(() => {
  for (const d of dirs) fs.rmSync(d, { recursive: true, force: true });
});

describe('writeManifest', () => {
  it('writes the texts the builders make, in blocks, never a whole file at once', () => {
    const out = tempDir('dms-publish-out-');
    dirs.push(out);
    // Every write of file content, by size: one call with a whole 4 MB text is what this prevents.
    const sizes: number[] = [];
    const size = (data: unknown): number =>
      typeof data === 'string' ? Buffer.byteLength(data) : (data as Uint8Array).byteLength;
    const writeSync = fs.writeSync.bind(fs);
    vi.spyOn(fs, 'writeSync').mockImplementation(((fd: number, data: Uint8Array, ...rest: number[]) => {
      const n = writeSync(fd, data, ...rest);
      sizes.push(n);
      return n;
    }) as typeof fs.writeSync);
    const writeFileSync = fs.writeFileSync.bind(fs);
    vi.spyOn(fs, 'writeFileSync').mockImplementation((file, data, ...rest) => {
      sizes.push(size(data));
      writeFileSync(file, data, ...rest);
    });

    const m = writeManifest(out, big, TOOL, NOW);

    expect(m.changed).toBe(true);
    const read = (f: string): string => fs.readFileSync(path.join(m.dir, f), 'utf8');
    const same = {
      ...input,
      files: big.files,
      local: null,
      safe: big.safe,
      message: big.message,
      hostname: JSON.parse(read('report.json')).hostname as string,
      createdAt: NOW.toISOString(),
      tool: TOOL,
    };
    const report = reportJson(same, m.hashList);
    expect(read('report.json')).toBe(`${JSON.stringify(report, null, 2)}\n`);
    expect(read('report.html')).toBe(renderReportHtml(report));
    const mhl = read(m.hashList!);
    expect(mhl).toBe(buildMhl(same));
    const fileName = m.hashList!.slice(MHL_FOLDER.length + 1);
    expect(read(`${MHL_FOLDER}/${MHL_CHAIN_FILE}`)).toBe(
      buildMhlChain([{ sequence: 1, fileName, c4: c4Id(fs.readFileSync(path.join(m.dir, m.hashList!))) }]),
    );
    // 6,000 files: the report's JSON is some 8 MB, the page and the hash list 3 to 5 MB each.
    expect(Buffer.byteLength(read('report.json'))).toBeGreaterThan(4 * 1024 * 1024);
    expect(Buffer.byteLength(mhl)).toBeGreaterThan(2 * 1024 * 1024);
    expect(Math.max(...sizes)).toBeLessThan(512 * 1024);
  });

  it('encodes its blocks into one reused buffer, not a new buffer per block', () => {
    // A new Buffer per 64 KiB block made a 10,000-file card's 20 MB of manifest as many
    // ArrayBuffers outside the heap, freed only by the collector: at the end of the first
    // sync, when the agent's memory peaks (issue 33). Counted: buffers made from a block's text.
    const out = tempDir('dms-publish-out-');
    dirs.push(out);
    const from = vi.spyOn(Buffer, 'from');
    const m = writeManifest(out, big, TOOL, NOW);
    const blocks = from.mock.calls.filter(([text]) => typeof text === 'string' && text.length >= 16 * 1024);
    expect(m.changed).toBe(true);
    expect(fs.statSync(path.join(m.dir, 'report.json')).size).toBeGreaterThan(4 * 1024 * 1024);
    expect(blocks.length).toBeLessThan(4);
  });

  it('writes nothing new when the card did not change, and a second generation when it did', () => {
    const out = tempDir('dms-publish-out-');
    dirs.push(out);
    const first = writeManifest(out, big, TOOL, NOW);
    expect(writeManifest(out, big, TOOL, new Date('2024-05-06T10:00:00Z')).changed).toBe(false);
    const changed = grown(input, 5999);
    const second = writeManifest(out, changed, TOOL, new Date('2024-05-06T10:00:00Z'));
    expect(second.changed).toBe(true);
    expect(second.digest).not.toBe(first.digest);
    expect(second.hashList).toMatch(/^ascmhl\/0002_/);
  });
});

describe('writeAtomicPieces', () => {
  it('leaves no file, and no temporary file, when making the text fails half-way', () => {
    const out = tempDir('dms-publish-out-');
    dirs.push(out);
    const file = path.join(out, 'report.html');
    function* pieces(): Generator<string> {
      for (let i = 0; i < 100; i++) yield 'x'.repeat(10_000);
      throw new Error('Not an MD5 for a.JPG: zz');
    }
    expect(() => writeAtomicPieces(file, pieces())).toThrow(/Not an MD5/);
    expect(fs.readdirSync(out)).toEqual([]);
  });
});
