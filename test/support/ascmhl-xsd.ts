/**
 * Validation against the official ASC MHL v2.0 XSDs (MIT, in
 * ../shared/schemas/ascmhl/ beside the repo, or ASCMHL_XSD_DIR), with
 * libxml2 compiled to WebAssembly (xmllint-wasm): no native tool needed.
 */
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { validateXML } from 'xmllint-wasm';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..');
export const XSD_DIR = process.env.ASCMHL_XSD_DIR ?? path.resolve(ROOT, '..', 'shared', 'schemas', 'ascmhl');
export const HAVE_XSD = fs.existsSync(path.join(XSD_DIR, 'ASCMHL.xsd'));

/** A hash list (ASCMHL.xsd) or a chain file (ASCMHLDirectory.xsd) against its schema. */
export async function validateMhl(xml: string, xsd: 'ASCMHL.xsd' | 'ASCMHLDirectory.xsd') {
  const main = fs.readFileSync(path.join(XSD_DIR, 'ASCMHL.xsd'), 'utf8');
  // The directory schema imports the main one by URL; point it at the local copy.
  const dir = fs
    .readFileSync(path.join(XSD_DIR, 'ASCMHLDirectory.xsd'), 'utf8')
    .replace(/schemaLocation="[^"]*ASCMHL\.xsd"/, 'schemaLocation="ASCMHL.xsd"');
  return validateXML({
    xml: [{ fileName: 'manifest.xml', contents: xml }],
    schema: [{ fileName: xsd, contents: xsd === 'ASCMHL.xsd' ? main : dir }],
    preload: xsd === 'ASCMHL.xsd' ? [] : [{ fileName: 'ASCMHL.xsd', contents: main }],
  });
}
