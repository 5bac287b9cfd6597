/**
 * What a photo carries about its own usefulness, read with its metadata (no
 * second read): gimbal pitch, RTK flag, whether its GPS is zero or missing,
 * the GNSS time of the exposure, whether the camera wrote a time zone, and
 * the statistics of its embedded preview (preview.ts). The offload's frame
 * and clock checks (offload/frames.ts, offload/clock.ts) judge them per
 * flight; here nothing is judged.
 *
 * GNSS time: DJI's XMP `UTCAtExposure` is, despite its name, GPS time: on the
 * real M3T fixture it is 2 h 00 min 18.9 s after DateTimeOriginal (UTC+02:00),
 * i.e. 18 s (the GPS-UTC leap seconds since 2017) ahead of UTC. It is turned
 * into UTC by taking those 18 s off. EXIF GPSDateStamp/GPSTimeStamp are UTC
 * by the EXIF standard and used as they are, when written.
 */
import { previewInWorker, useHashWorkers } from '../hash/workers.js';
import type { Block } from './metadata-rules.js';
import { previewStats, thumbnailBytes, type PreviewStats } from './preview.js';
import { GPS_UTC_LEAP_SECONDS } from './mrk.js';

export interface FrameFacts {
  gimbalPitch?: number;
  /** XMP RtkFlag: 50 fixed, 34 float, 16 single, 0 none (DJI's values). */
  rtkFlag?: number;
  /** 'zero': the file says 0, 0 (no fix written as zeros); 'missing': no position at all. Absent: a position. */
  gps?: 'zero' | 'missing';
  /** The exposure's time by the aircraft's GNSS, UTC, ISO with milliseconds, and which field gave it. */
  gnssUtc?: string;
  gnssFrom?: 'UTCAtExposure' | 'GPSDateTime';
  /** The file states its time zone (EXIF OffsetTimeOriginal or a zoned XMP CreateDate). */
  zoneInFile?: boolean;
  preview?: PreviewStats;
}

const num = (v: unknown): number | undefined => {
  const n = typeof v === 'number' ? v : typeof v === 'string' ? Number(v.trim()) : NaN;
  return Number.isFinite(n) ? n : undefined;
};

/** "2023-07-07T07:39:52.944920" (GPS time) -> UTC ISO. */
function fromUtcAtExposure(v: unknown): string | undefined {
  if (typeof v !== 'string') return undefined;
  const m = /^(\d{4})[-:](\d{2})[-:](\d{2})[T ](\d{2}):(\d{2}):(\d{2})(\.\d+)?/.exec(v.trim());
  if (!m) return undefined;
  const ms =
    Date.UTC(+m[1]!, +m[2]! - 1, +m[3]!, +m[4]!, +m[5]!, +m[6]!) + Math.round(Number(m[7] ?? 0) * 1000);
  if (!Number.isFinite(ms) || m[1] === '0000') return undefined;
  return new Date(ms - GPS_UTC_LEAP_SECONDS * 1000).toISOString();
}

/** EXIF GPSDateStamp "2023:07:07" + GPSTimeStamp [7, 39, 34.5] -> UTC ISO. */
function fromExifGps(gps: Block): string | undefined {
  const d = typeof gps.GPSDateStamp === 'string' ? /^(\d{4}):(\d{2}):(\d{2})/.exec(gps.GPSDateStamp) : null;
  const t = gps.GPSTimeStamp;
  if (!d || !Array.isArray(t) || t.length < 3) return undefined;
  const [h, mi, s] = (t as unknown[]).map(num);
  if (h === undefined || mi === undefined || s === undefined || d[1] === '0000') return undefined;
  const ms = Date.UTC(+d[1]!, +d[2]! - 1, +d[3]!, h, mi, 0) + Math.round(s * 1000);
  return Number.isFinite(ms) ? new Date(ms).toISOString() : undefined;
}

/**
 * The preview's statistics, decoded in a running hash worker (the decode's
 * garbage and CPU off this thread: hash/workers.ts previewInWorker); on this
 * thread when none runs, or the workers are off. The same previewStats either way:
 * the same figures.
 */
export async function decodePreview(thumb: Buffer): Promise<PreviewStats | null> {
  if (!useHashWorkers()) return previewStats(thumb);
  // No worker running, or one that could not load the decoder (a package left out): decoded here.
  return previewInWorker(thumb).catch(() => previewStats(thumb));
}

/** The frame facts of a photo, from its parsed blocks and the bytes at hand (the whole file or its head). */
export async function readFrameFacts(
  blocks: { dji: Block; gps: Block; ifd1: Block },
  bytes: Buffer | null,
  zoneInFile: boolean,
  /** readPosition found a usable position (it refuses 0, 0). */
  hasPosition: boolean,
): Promise<FrameFacts> {
  const { dji, gps, ifd1 } = blocks;
  const out: FrameFacts = { zoneInFile };
  const pitch = num(dji.GimbalPitchDegree);
  if (pitch !== undefined) out.gimbalPitch = pitch;
  const rtk = num(dji.RtkFlag);
  if (rtk !== undefined) out.rtkFlag = rtk;
  if (!hasPosition) {
    const zeros = (v: unknown) => Array.isArray(v) && v.length > 0 && v.every((x) => num(x) === 0);
    const xmpZero = num(dji.GpsLatitude) === 0 && (num(dji.GpsLongitude) ?? num(dji.GpsLongtitude)) === 0;
    out.gps = xmpZero || (zeros(gps.GPSLatitude) && zeros(gps.GPSLongitude)) ? 'zero' : 'missing';
  }
  const fromXmp = fromUtcAtExposure(dji.UTCAtExposure);
  const fromExif = fromXmp ? undefined : fromExifGps(gps);
  if (fromXmp) {
    out.gnssUtc = fromXmp;
    out.gnssFrom = 'UTCAtExposure';
  } else if (fromExif) {
    out.gnssUtc = fromExif;
    out.gnssFrom = 'GPSDateTime';
  }
  if (bytes) {
    const thumb = thumbnailBytes(bytes, num(ifd1.ThumbnailOffset) ?? 0, num(ifd1.ThumbnailLength) ?? 0);
    const stats = thumb ? await decodePreview(thumb) : null;
    if (stats) out.preview = stats;
  }
  return out;
}
