/**
 * The ASC MHL manifest. Schema validation runs libxml2 (xmllint-wasm, in
 * process) against the official ASC MHL v2.0 XSDs. Those XSDs are not in any
 * package registry this project reaches, and their only copy here is the
 * reference repository, which may not be committed; the suite reads them from
 * ASCMHL_XSD_DIR, else ../shared/schemas/ascmhl/ beside the repo, and skips
 * the validation (saying so) when neither has them.
 */
import fs from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { validateXML } from 'xmllint-wasm';
import { HAVE_XSD, validateMhl, XSD_DIR } from '../../../test/support/ascmhl-xsd.js';
import { tempDir } from '../../../test/support/harness.js';
import { HOSTILE_NAMES, offloadFixture } from '../../../test/support/offload-fixture.js';
import { buildMhl, buildMhlChain, c4Id, mhlFileName, nextMhlGeneration, xmlText } from './manifest.js';
import type { OffloadReportInput } from './types.js';

if (!HAVE_XSD) console.warn(`[manifest] ASC MHL XSDs not found in ${XSD_DIR}: schema validation skipped.`);

const dirs: string[] = [];
let input: OffloadReportInput;
beforeAll(async () => {
  const root = tempDir('dms-mhl-');
  dirs.push(root);
  input = await offloadFixture(root, { hostile: true });
});
afterAll(() => {
  for (const d of dirs) fs.rmSync(d, { recursive: true, force: true });
});

const unescape = (s: string): string =>
  s
    .replace(/&lt;/g, '<')
    .replace(/&gt;/g, '>')
    .replace(/&quot;/g, '"')
    .replace(/&apos;/g, "'")
    .replace(/&amp;/g, '&');

/** The `<path>` texts of the hash list, unescaped. */
const listedPaths = (xml: string): string[] =>
  [...xml.matchAll(/<path[^>]*>([^<]*)<\/path>/g)].map((m) => unescape(m[1]!));

const validate = validateMhl;

describe('c4Id', () => {
  it('matches the published C4 id of empty input', () => {
    expect(c4Id('')).toBe(
      'c459dsjfscH38cYeXXYogktxf4Cd9ibshE3BHUo6a58hBXmRQdZrAkZzsWcbWtDg5oQstpDuni4Hirj75GEmTc1sFT',
    );
    expect(c4Id('x')).toHaveLength(90);
  });
});

describe('buildMhl', () => {
  it('lists every file of the card once, with size, MD5 and its drone facts', () => {
    const xml = buildMhl(input);
    const paths = listedPaths(xml);
    expect(paths).toHaveLength(input.files.length);
    expect(new Set(paths)).toEqual(
      new Set(
        input.files.map((f) => f.relPath.replaceAll('\u0001', '\ufffd').replaceAll('\u001b', '\ufffd')),
      ),
    );
    const photo = input.files.find((f) => f.relPath.endsWith('_0001_V.JPG'))!;
    const mrk = input.files.find((f) => f.relPath.endsWith('_Timestamp.MRK'))!;
    expect(xml).toContain(`<md5 action="original" hashdate="2024-05-06T09:05:00Z">${photo.md5}</md5>`);
    expect(xml).toContain(`size="${photo.size}"`);
    expect(xml).toContain(`objectKey="${photo.objectKey}"`);
    expect(xml).toContain(`<dms:capture time="2024-05-06T10:15:12+02:00"/>`);
    expect(xml).toContain('<dms:aircraft modelKey="0-77-1" serial="1581F5BKD23"/>');
    expect(xml).toContain(
      `<dms:acknowledged how="callback" at="2024-05-06T09:02:03Z" target="http://127.0.0.1:7000|ws-survey"/>`,
    );
    expect(xml).toContain(`<dms:file kind="rtk" state="done" objectKey="${xmlText(mrk.objectKey!)}">`);
    expect(xml).toContain('<process>transfer</process>');
  });

  it('escapes hostile names: nothing of them is markup', () => {
    const xml = buildMhl(input);
    expect(xml).not.toContain('<img');
    expect(xml).not.toContain(']]> <!--');
    expect(xml.includes('\u0001') || xml.includes('\u001b')).toBe(false);
    expect(listedPaths(xml)).toContain(`${input.flights[0]!.folder}/${HOSTILE_NAMES[0]}`);
  });

  it('refuses a malformed MD5 (a caller bug, never card content)', () => {
    expect(() => buildMhl({ ...input, files: [{ ...input.files[0]!, md5: 'zz' }] })).toThrow(/Not an MD5/);
  });

  it('is well-formed XML (libxml2)', async () => {
    const r = await validateXML({
      xml: [{ fileName: 'm.xml', contents: buildMhl(input) }],
      normalization: 'format',
    });
    expect(r.errors).toEqual([]);
  });

  it.skipIf(!HAVE_XSD)(
    'validates against the ASC MHL v2.0 schema, and the schema check can fail',
    async () => {
      const good = await validate(buildMhl(input), 'ASCMHL.xsd');
      expect(good.errors).toEqual([]);
      expect(good.valid).toBe(true);
      const bad = await validate(
        buildMhl(input).replace('action="original"', 'action="copied"'),
        'ASCMHL.xsd',
      );
      expect(bad.valid).toBe(false);
    },
  );
});

describe('generations and the chain file', () => {
  it('numbers generations, names them as the ASC MHL folder layout does, and chains them by C4', async () => {
    const first = nextMhlGeneration(input);
    expect(first.files.map((f) => f.path)).toEqual([
      'ascmhl/0001_M3T_CARD_2024-05-06_090500Z.mhl',
      'ascmhl/ascmhl_chain.xml',
    ]);
    const second = nextMhlGeneration({ ...input, createdAt: '2024-05-06T10:00:00Z' }, first.generations);
    expect(second.generations.map((g) => g.sequence)).toEqual([1, 2]);
    expect(second.generations[1]!.c4).toBe(c4Id(second.files[0]!.content));
    const chain = second.files[1]!.content;
    expect(chain).toContain('<hashlist sequencenr="1">');
    expect(chain).toContain('<path>0002_M3T_CARD_2024-05-06_100000Z.mhl</path>');
    if (HAVE_XSD) expect((await validate(chain, 'ASCMHLDirectory.xsd')).errors).toEqual([]);
  });

  it('makes a safe file name of any card label', () => {
    expect(mhlFileName(3, '../..\\NO NAME<>', '2024-01-02T03:04:05+02:00')).toBe(
      '0003_NO_NAME__2024-01-02_010405Z.mhl',
    );
    expect(mhlFileName(1, '...', '2024-01-02T03:04:05Z')).toBe('0001_card_2024-01-02_030405Z.mhl');
    expect(buildMhlChain([])).toContain('<ascmhldirectory xmlns="urn:ASC:MHL:DIRECTORY:v2.0">');
  });
});
