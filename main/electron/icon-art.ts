/**
 * The tray icons: a coloured disc with a white glyph, one per tray state.
 * They are drawn here (and encoded as PNG with zlib) rather than read from
 * disk so that the packaged app needs no extra files; the same pixels are
 * committed as main/electron/icons/*.png for review and for installers, and a
 * test keeps the two identical.
 */
import zlib from 'node:zlib';

export const ICON_NAMES = ['idle', 'syncing', 'paused', 'offline', 'attention'] as const;
export type IconName = (typeof ICON_NAMES)[number];
export const ICON_SIZES = [16, 32] as const;

type Rgb = readonly [number, number, number];

/** Colours that read on light and dark task bars, and differ for colour-blind users by glyph too. */
const COLOURS: Record<IconName, Rgb> = {
  idle: [46, 158, 79], // green: all synced
  syncing: [31, 111, 209], // blue: uploading
  paused: [122, 127, 135], // grey: paused by the user
  offline: [224, 123, 0], // orange: server unreachable, retrying
  attention: [211, 47, 47], // red: the user must act
};

/** Glyph shapes in unit coordinates (0..1), as distance tests. */
type Shape = (x: number, y: number) => boolean;

function segment(ax: number, ay: number, bx: number, by: number, width: number): Shape {
  return (x, y) => {
    const dx = bx - ax;
    const dy = by - ay;
    const t = Math.max(0, Math.min(1, ((x - ax) * dx + (y - ay) * dy) / (dx * dx + dy * dy)));
    const px = ax + t * dx - x;
    const py = ay + t * dy - y;
    return px * px + py * py <= (width / 2) ** 2;
  };
}

function dot(cx: number, cy: number, r: number): Shape {
  return (x, y) => (x - cx) ** 2 + (y - cy) ** 2 <= r * r;
}

function rect(x0: number, y0: number, x1: number, y1: number): Shape {
  return (x, y) => x >= x0 && x <= x1 && y >= y0 && y <= y1;
}

const W = 0.13;
const GLYPHS: Record<IconName, Shape[]> = {
  idle: [segment(0.28, 0.52, 0.44, 0.68, W), segment(0.44, 0.68, 0.73, 0.35, W)], // check mark
  syncing: [
    segment(0.5, 0.74, 0.5, 0.3, W),
    segment(0.5, 0.27, 0.31, 0.46, W),
    segment(0.5, 0.27, 0.69, 0.46, W),
  ], // up arrow
  paused: [rect(0.33, 0.29, 0.44, 0.71), rect(0.56, 0.29, 0.67, 0.71)], // pause bars
  offline: [dot(0.29, 0.5, 0.08), dot(0.5, 0.5, 0.08), dot(0.71, 0.5, 0.08)], // "waiting" dots
  attention: [segment(0.5, 0.25, 0.5, 0.56, 0.14), dot(0.5, 0.73, 0.08)], // exclamation mark
};

const SAMPLES = 4; // 4x4 supersampling: smooth edges at 16 px

/** RGBA pixels of an icon, row by row. */
export function iconPixels(name: IconName, size: number): Buffer {
  const out = Buffer.alloc(size * size * 4);
  const [r, g, b] = COLOURS[name];
  const glyph = GLYPHS[name];
  for (let py = 0; py < size; py++) {
    for (let px = 0; px < size; px++) {
      let disc = 0;
      let white = 0;
      for (let sy = 0; sy < SAMPLES; sy++) {
        for (let sx = 0; sx < SAMPLES; sx++) {
          const x = (px + (sx + 0.5) / SAMPLES) / size;
          const y = (py + (sy + 0.5) / SAMPLES) / size;
          if ((x - 0.5) ** 2 + (y - 0.5) ** 2 > 0.25) continue;
          disc++;
          if (glyph.some((s) => s(x, y))) white++;
        }
      }
      const n = SAMPLES * SAMPLES;
      const i = (py * size + px) * 4;
      const w = disc ? white / disc : 0;
      out[i] = Math.round(r + (255 - r) * w);
      out[i + 1] = Math.round(g + (255 - g) * w);
      out[i + 2] = Math.round(b + (255 - b) * w);
      out[i + 3] = Math.round((255 * disc) / n);
    }
  }
  return out;
}

const CRC_TABLE = Array.from({ length: 256 }, (_, n) => {
  let c = n;
  for (let k = 0; k < 8; k++) c = c & 1 ? 0xedb88320 ^ (c >>> 1) : c >>> 1;
  return c >>> 0;
});

function crc32(data: Buffer): number {
  let c = 0xffffffff;
  for (const byte of data) c = (CRC_TABLE[(c ^ byte) & 0xff] ?? 0) ^ (c >>> 8);
  return (c ^ 0xffffffff) >>> 0;
}

function chunk(type: string, data: Buffer): Buffer {
  const len = Buffer.alloc(4);
  len.writeUInt32BE(data.length);
  const body = Buffer.concat([Buffer.from(type, 'ascii'), data]);
  const crc = Buffer.alloc(4);
  crc.writeUInt32BE(crc32(body));
  return Buffer.concat([len, body, crc]);
}

/** A minimal RGBA PNG (8 bits per channel, no filtering). */
export function encodePng(rgba: Buffer, width: number, height: number): Buffer {
  const ihdr = Buffer.alloc(13);
  ihdr.writeUInt32BE(width, 0);
  ihdr.writeUInt32BE(height, 4);
  ihdr[8] = 8; // bit depth
  ihdr[9] = 6; // colour type RGBA
  const raw = Buffer.alloc((width * 4 + 1) * height);
  for (let y = 0; y < height; y++)
    rgba.copy(raw, y * (width * 4 + 1) + 1, y * width * 4, (y + 1) * width * 4);
  return Buffer.concat([
    Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]),
    chunk('IHDR', ihdr),
    chunk('IDAT', zlib.deflateSync(raw, { level: 9 })),
    chunk('IEND', Buffer.alloc(0)),
  ]);
}

export function iconPng(name: IconName, size: number): Buffer {
  return encodePng(iconPixels(name, size), size, size);
}

/** File name of a committed icon, e.g. `syncing-32.png`. */
export function iconFileName(name: IconName, size: number): string {
  return `${name}-${size}.png`;
}
