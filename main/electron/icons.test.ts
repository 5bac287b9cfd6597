import fs from 'node:fs';
import path from 'node:path';
import zlib from 'node:zlib';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { ICON_NAMES, ICON_SIZES, iconFileName, iconPixels, iconPng } from './icon-art.js';

// The tray draws its icons in code (nothing to copy into the package); the
// committed PNGs under main/electron/icons are the same pixels, for review and
// installers. Regenerate them with: UPDATE_ICONS=1 npx vitest run main/electron/icons.test.ts
const ICON_DIR = path.resolve(path.dirname(fileURLToPath(import.meta.url)), 'icons');

/** Decodes our own PNGs (RGBA, 8 bit, filter 0 on every row). */
function decode(png: Buffer): { width: number; height: number; rgba: Buffer } {
  expect(png.subarray(0, 8).toString('hex')).toBe('89504e470d0a1a0a');
  let off = 8;
  let width = 0;
  let height = 0;
  const idat: Buffer[] = [];
  while (off < png.length) {
    const len = png.readUInt32BE(off);
    const type = png.toString('ascii', off + 4, off + 8);
    const data = png.subarray(off + 8, off + 8 + len);
    if (type === 'IHDR') {
      width = data.readUInt32BE(0);
      height = data.readUInt32BE(4);
      expect([data[8], data[9]]).toEqual([8, 6]);
    } else if (type === 'IDAT') idat.push(data);
    off += 12 + len;
  }
  const raw = zlib.inflateSync(Buffer.concat(idat));
  const rgba = Buffer.alloc(width * height * 4);
  for (let y = 0; y < height; y++) {
    expect(raw[y * (width * 4 + 1)]).toBe(0);
    raw.copy(rgba, y * width * 4, y * (width * 4 + 1) + 1, (y + 1) * (width * 4 + 1));
  }
  return { width, height, rgba };
}

describe('tray icons', () => {
  if (process.env.UPDATE_ICONS) {
    fs.mkdirSync(ICON_DIR, { recursive: true });
    for (const n of ICON_NAMES)
      for (const s of ICON_SIZES) fs.writeFileSync(path.join(ICON_DIR, iconFileName(n, s)), iconPng(n, s));
  }

  for (const name of ICON_NAMES) {
    for (const size of ICON_SIZES) {
      it(`${iconFileName(name, size)} is committed and matches what the tray draws`, () => {
        const file = path.join(ICON_DIR, iconFileName(name, size));
        const decoded = decode(fs.readFileSync(file));
        expect(decoded.width).toBe(size);
        expect(decoded.height).toBe(size);
        expect(decoded.rgba.equals(iconPixels(name, size))).toBe(true);
        // The encoder's own output decodes to the same pixels too.
        expect(decode(iconPng(name, size)).rgba.equals(iconPixels(name, size))).toBe(true);
      });
    }
  }

  it('every state looks different: another disc colour and another glyph', () => {
    const px = (name: (typeof ICON_NAMES)[number], x: number, y: number) => {
      const p = iconPixels(name, 32);
      const i = (y * 32 + x) * 4;
      return [p[i], p[i + 1], p[i + 2], p[i + 3]];
    };
    // A point on the disc that no glyph covers: the state colour.
    const colours = ICON_NAMES.map((n) => px(n, 16, 3).join(','));
    expect(new Set(colours).size).toBe(ICON_NAMES.length);
    // Corners are transparent (a disc, not a square).
    for (const n of ICON_NAMES) expect(px(n, 0, 0)[3]).toBe(0);
    // The glyphs differ pixel-wise even ignoring colour (white coverage masks).
    const masks = ICON_NAMES.map((n) => {
      const p = iconPixels(n, 32);
      let m = '';
      for (let i = 0; i < p.length; i += 4)
        m += p[i]! > 240 && p[i + 1]! > 240 && p[i + 2]! > 240 ? '1' : '0';
      return m;
    });
    expect(new Set(masks).size).toBe(ICON_NAMES.length);
  });
});
