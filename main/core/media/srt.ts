/**
 * DJI video telemetry: the `.SRT` subtitle file a DJI aircraft writes beside
 * each video (DJI Pilot / DJI Go "video caption" setting). An MP4 carries no
 * metadata exifr can read, so the video's position, altitudes, gimbal heading
 * and start time are taken from the first subtitle cue that has a position.
 *
 * There is no published format; the forms below are the ones seen on real
 * cards (fixtures in shared/fixtures/dji/SRT, and the formats OpenDroneMap's
 * and DJI_SRT_Parser's documentation list):
 *
 *   bracket (Mavic 3E/3T, M30T, Matrice 4, Mini, Air):
 *     2023-01-06 18:56:48,380,821
 *     [latitude: 59.302335] [longitude: 18.203059] [rel_alt: 1.300 abs_alt: 132.860]
 *     [gb_yaw: 12.0 gb_pitch: -60.0 gb_roll: 0.0]
 *     older firmware: [latitude : x] [longtitude : y] [altitude: z] [gimbal_yaw: w]
 *   GPS with units (M300, M210):
 *     2022.06.21 16:06:17
 *     GPS(36.6146,-6.1120,0.0M) BAROMETER:0.3M          latitude first
 *   GPS without units (Phantom 4 RTK, Mavic Mini, Mavic Pro):
 *     GPS (-58.851745, -34.237922, 15) ... H 85.80m ... G.PRY (-24.4°, 0.0°, 110.4°)
 *     RTK (120.083799, 30.213635, 28)                    longitude first
 *
 * The order of the two GPS forms differs (the M300 sample lies in Spain read
 * latitude first, the Phantom 4 RTK sample in Argentina read longitude
 * first); a first value beyond ±90 can only be a longitude and wins over the
 * form. Values the cue does not carry stay undefined: never 0.
 */
import type { CaptureTime } from './capture-time.js';
import { isValidCaptureTime } from './capture-time.js';
import { validPosition } from './metadata-rules.js';

export interface SrtFix {
  lat: number;
  lng: number;
  absoluteAltitude?: number;
  relativeAltitude?: number;
  gimbalYaw?: number;
  /** Wall-clock digits of the cue (the aircraft's clock), when the form carries a date. */
  time?: CaptureTime;
  /** 1-based number of the cue the fix came from. */
  cue: number;
}

/** How much of an SRT is read: the first fix is near the top (one cue per frame: ~250 bytes). */
export const SRT_HEAD_BYTES = 64 * 1024;

const NUM = String.raw`[+-]?(?:\d+\.?\d*|\.\d+)`;

function field(text: string, names: string): number | undefined {
  const m = new RegExp(String.raw`\b(?:${names})\s*:\s*(${NUM})`, 'i').exec(text);
  return m ? Number(m[1]) : undefined;
}

function triple(text: string, label: string): [number, number, number, string] | undefined {
  const m = new RegExp(
    String.raw`${label}\s*\(\s*(${NUM})[°\s]*,\s*(${NUM})[°\s]*,\s*(${NUM})\s*(m|M)?[°\s]*\)`,
  ).exec(text);
  return m ? [Number(m[1]), Number(m[2]), Number(m[3]), m[4] ?? ''] : undefined;
}

const DATE = /\b(\d{4})[-./](\d{2})[-./](\d{2})[ T](\d{2}):(\d{2}):(\d{2})/;

function cueTime(text: string): CaptureTime | undefined {
  const m = DATE.exec(text);
  if (!m) return undefined;
  const [year, month, day, hour, minute, second] = m.slice(1).map(Number) as [
    number,
    number,
    number,
    number,
    number,
    number,
  ];
  const t = { year, month, day, hour, minute, second };
  return isValidCaptureTime(t) ? t : undefined;
}

/** One cue's text (without its number and timing line) read into a fix, or undefined. */
export function fixOfCue(text: string, cue: number): SrtFix | undefined {
  const body = text.replace(/<[^>]*>/g, ' ');
  let lat = field(body, 'latitude');
  let lng = field(body, 'longitude|longtitude');
  let absoluteAltitude = field(body, 'abs_alt') ?? field(body, 'altitude');
  let relativeAltitude = field(body, 'rel_alt');
  if (lat === undefined || lng === undefined) {
    const gps = triple(body, 'GPS') ?? triple(body, 'RTK');
    if (!gps) return undefined;
    const [a, b, alt, unit] = gps;
    // With a unit on the altitude (M300) latitude comes first; without, longitude.
    const latFirst = Math.abs(a) > 90 ? false : Math.abs(b) > 90 ? true : unit !== '';
    [lat, lng] = latFirst ? [a, b] : [b, a];
    // "0.0M" is what the M300 writes when it has no GPS altitude.
    if (absoluteAltitude === undefined && !(unit !== '' && alt === 0)) absoluteAltitude = alt;
  }
  if (!validPosition(lat, lng)) return undefined;
  relativeAltitude ??=
    field(body, 'BAROMETER') ??
    (() => {
      const h = new RegExp(String.raw`(?:^|[\s,])H\s+(${NUM})\s*m\b`).exec(body);
      return h ? Number(h[1]) : undefined;
    })();
  const gimbal = triple(body, String.raw`G\.PRY`);
  const gimbalYaw = field(body, 'gb_yaw|gimbal_yaw') ?? gimbal?.[2];
  const fix: SrtFix = { lat, lng, cue };
  if (absoluteAltitude !== undefined && Number.isFinite(absoluteAltitude))
    fix.absoluteAltitude = absoluteAltitude;
  if (relativeAltitude !== undefined && Number.isFinite(relativeAltitude))
    fix.relativeAltitude = relativeAltitude;
  if (gimbalYaw !== undefined && Number.isFinite(gimbalYaw)) fix.gimbalYaw = gimbalYaw;
  const time = cueTime(body);
  if (time) fix.time = time;
  return fix;
}

const TIMING = /^\s*\d{1,2}:\d{2}:\d{2}[,.]\d+\s*-->\s*\d{1,2}:\d{2}:\d{2}[,.]\d+/;

/**
 * The first cue with a valid position. `whole` false means `text` is the head
 * of a larger file, cut anywhere: its last cue is ignored. A date seen in an
 * earlier cue without a position is kept for the fix (the clock is set before
 * the GPS has a fix).
 */
export function firstFix(text: string, whole = true): SrtFix | undefined {
  const blocks = text.replace(/^\uFEFF/, '').split(/\r?\n[ \t]*\r?\n/);
  let n = 0;
  let lastTime: CaptureTime | undefined;
  for (const block of whole ? blocks : blocks.slice(0, -1)) {
    const lines = block.split(/\r?\n/).filter((l) => l.trim() !== '');
    const timing = lines.findIndex((l) => TIMING.test(l));
    if (timing < 0) continue;
    n += 1;
    const cue = Number(lines[timing - 1]?.trim()) || n;
    const text = lines.slice(timing + 1).join('\n');
    const fix = fixOfCue(text, cue);
    if (fix) {
      if (!fix.time && lastTime) fix.time = lastTime;
      return fix;
    }
    lastTime = cueTime(text) ?? lastTime;
  }
  return undefined;
}
