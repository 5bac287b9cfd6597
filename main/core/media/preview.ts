/**
 * What the small preview a DJI camera embeds in each JPEG says about the
 * frame: how dark or blown out it is, and how sharp (a hint). Only the EXIF
 * thumbnail (IFD1, 160x120 to 160x128 on the cards seen, 2-25 KB, inside the
 * APP1 segment at the start of the file) is decoded, never the 20-48 MP
 * image: it lies within the bytes the agent already holds (the whole file
 * when it was read into memory) or reads with the metadata (the head of the
 * file, from the verified copy when there is one).
 *
 * Decoder: jpeg-js (pure JavaScript, no native build for Electron, limits on
 * resolution and memory so a hostile thumbnail cannot blow up the agent).
 */
import { open } from 'node:fs/promises';
import jpeg from 'jpeg-js';

/** Luma statistics of the preview. */
export interface PreviewStats {
  width: number;
  height: number;
  /** Mean luma, 0-255. */
  mean: number;
  /** Share of pixels with luma below 24 (0-1). */
  dark: number;
  /** Share of pixels with luma above 245 (0-1). */
  bright: number;
  /** Variance of the 4-neighbour Laplacian of the luma: higher is sharper. */
  sharpness: number;
}

/** The APP1 Exif segment and its IFD1 thumbnail lie within this many bytes of the start on every card seen. */
export const PREVIEW_HEAD_BYTES = 128 * 1024;
const EXIF_HEADER = Buffer.from('Exif\0\0', 'latin1');

/**
 * The bytes of the EXIF thumbnail: `offset` and `length` are IFD1's
 * ThumbnailOffset/ThumbnailLength (from the TIFF header's start). null when
 * the head holds no Exif segment or the thumbnail is not inside it.
 */
export function thumbnailBytes(head: Buffer, offset: number, length: number): Buffer | null {
  // The Exif header sits in the first APP1 segment, right after SOI (and perhaps a JFIF APP0).
  const at = head.subarray(0, Math.min(head.length, 4096)).indexOf(EXIF_HEADER);
  if (at < 0 || !(offset > 0) || !(length > 0)) return null;
  const start = at + EXIF_HEADER.length + offset;
  const end = start + length;
  if (end > head.length) return null;
  const bytes = head.subarray(start, end);
  return bytes[0] === 0xff && bytes[1] === 0xd8 ? bytes : null;
}

/**
 * The first `bytes` (at most PREVIEW_HEAD_BYTES) of a file in one read, for a
 * file not already in memory: the caller asks up to the thumbnail's end.
 */
export async function readHead(filePath: string, bytes = PREVIEW_HEAD_BYTES): Promise<Buffer> {
  const fh = await open(filePath, 'r');
  try {
    const buf = Buffer.allocUnsafe(Math.min(bytes, PREVIEW_HEAD_BYTES));
    const { bytesRead } = await fh.read(buf, 0, buf.length, 0);
    return buf.subarray(0, bytesRead);
  } finally {
    await fh.close().catch(() => undefined);
  }
}

/** Luma statistics of a small JPEG; null when it cannot be decoded (a damaged preview says nothing). */
export function previewStats(thumb: Uint8Array): PreviewStats | null {
  let img: { width: number; height: number; data: Uint8Array };
  try {
    img = jpeg.decode(thumb, {
      useTArray: true,
      formatAsRGBA: true,
      maxResolutionInMP: 1,
      maxMemoryUsageInMB: 16,
    });
  } catch {
    return null;
  }
  const { width: w, height: h, data } = img;
  if (w < 3 || h < 3) return null;
  const luma = new Float32Array(w * h);
  let sum = 0;
  let dark = 0;
  let bright = 0;
  for (let i = 0; i < w * h; i++) {
    const y = 0.299 * data[i * 4]! + 0.587 * data[i * 4 + 1]! + 0.114 * data[i * 4 + 2]!;
    luma[i] = y;
    sum += y;
    if (y < 24) dark++;
    else if (y > 245) bright++;
  }
  let lapSum = 0;
  let lapSq = 0;
  let n = 0;
  for (let y = 1; y < h - 1; y++) {
    for (let x = 1; x < w - 1; x++) {
      const i = y * w + x;
      const l = luma[i - 1]! + luma[i + 1]! + luma[i - w]! + luma[i + w]! - 4 * luma[i]!;
      lapSum += l;
      lapSq += l * l;
      n++;
    }
  }
  const lapMean = lapSum / n;
  const round = (v: number, d: number) => Math.round(v * 10 ** d) / 10 ** d;
  return {
    width: w,
    height: h,
    mean: round(sum / (w * h), 1),
    dark: round(dark / (w * h), 3),
    bright: round(bright / (w * h), 3),
    sharpness: round(lapSq / n - lapMean * lapMean, 1),
  };
}
