/**
 * A synthetic RTK survey card for tests, grown from one real DJI photo.
 *
 * The real Mavic 3T photo of the fixtures (M3T/M3T_IR.JPG: DJI XMP with
 * GpsStatus RTK, RtkFlag 50) is copied once per exposure into a Pilot 2
 * flight folder, `DCIM/DJI_<YYYYMMDDHHMM>_<NNN>_<mission>/DJI_<YYYYMMDDHHMMSS>_<NNNN>_<lens>.JPG`,
 * and each copy gets its own capture time, position, gimbal yaw and RTK flag
 * by overwriting those values IN PLACE with text of the same length (the EXIF
 * DateTime strings and the drone-dji XMP attributes the metadata reader
 * uses). No byte moves, so every offset inside the JPEG stays valid and the
 * file is still a real DJI photo for exifr; no image library is needed. The
 * EXIF GPS rationals keep the original position: the reader prefers DJI's
 * XMP, as DJI's own tools do.
 *
 * Beside the photos: the `_Timestamp.MRK` written with formatMrkLine in DJI's
 * documented layout (one line per exposure, including the ones whose photo
 * is left out), and the `_Rinex.obs`, `_PPKNAV.nav` and `_PPKRAW.bin` PPK
 * files (small stand-ins: a RINEX 3 header and seeded bytes).
 *
 * The flight: two east-west legs (yaw +90 then -90), one exposure every
 * `intervalSeconds`, starting at the fixture's own position.
 */
import { createHash } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { readMediaInfo } from '../../main/core/media/metadata.js';
import { formatMrkLine, parseMrk } from '../../main/core/media/mrk.js';
import type { MrkLineInput } from '../../main/core/media/mrk.js';
import { classifyCardFile, rtkKindOf } from '../../main/core/media/rtk-files.js';
import type { RtkKind } from '../../main/core/media/rtk-files.js';
import type { FlightInput } from '../../main/core/offload/types.js';
import { FIXTURES } from './harness.js';

export const RTK_PHOTO = path.join(FIXTURES, 'M3T', 'M3T_IR.JPG');

/** The values of the fixture that each copy overwrites. */
const ORIGINAL = {
  exifTime: '2023:07:07 09:39:34',
  xmpTime: '2023-07-07T09:39:34+02:00',
  lat: '+50.688176398',
  lng: '+4.524341654',
  yaw: '+9.90',
  rtkFlag: '50',
  offsetMinutes: 120,
};
const START_LAT = 50.688176398;
const START_LNG = 4.524341654;
const STEP_LNG = 0.00025; // about 18 m at this latitude
const LEG_SPACING_LAT = 0.0003; // about 33 m

export interface RtkCardOptions {
  /** The card root to create (must not exist or be empty). */
  root: string;
  mission?: string;
  /** Flight folder index (NNN). */
  flightNumber?: number;
  exposures?: number;
  /** Exposures logged in the MRK whose photo is not on the card. */
  missing?: number[];
  /** Exposures with an RTK float fix (Q 34). */
  float?: number[];
  /** Exposures with a single-point fix (Q 16). */
  single?: number[];
  /** Extra seconds after these exposures (a gap in the flight). */
  gapsAfter?: Record<number, number>;
  intervalSeconds?: number;
  /** Wall clock of the first exposure, in the aircraft's zone (+02:00). */
  start?: { year: number; month: number; day: number; hour: number; minute: number; second: number };
  lens?: string;
  /** Which PPK companions to write beside the MRK; default obs, nav, ppkraw. */
  companions?: Array<Exclude<RtkKind, 'mrk'>>;
  /** Write the MRK at all (default true). */
  mrk?: boolean;
}

export interface RtkCardPhoto {
  relPath: string;
  index: number;
  lat: number;
  lng: number;
  gimbalYaw: number;
  rtkStatus: number;
  /** created_time as the metadata reader gives it. */
  capturedAt: string;
}

export interface RtkCard {
  root: string;
  /** relPath of the flight folder. */
  folder: string;
  photos: RtkCardPhoto[];
  /** relPaths of the RTK files written, by kind. */
  rtkFiles: Array<{ relPath: string; kind: RtkKind }>;
  mrkLines: MrkLineInput[];
}

const pad = (n: number, w = 2): string => String(n).padStart(w, '0');

/** `value` written with as many decimals as make it exactly `width` characters, sign included. */
export function fit(value: number, width: number): string {
  for (let d = 12; d >= 0; d--) {
    const s = `${value < 0 ? '-' : '+'}${Math.abs(value).toFixed(d)}`;
    if (s.length === width) return s;
  }
  throw new Error(`${value} cannot be written in ${width} characters`);
}

export function replaceAll(buf: Buffer, from: string, to: string): number {
  if (from.length !== to.length) throw new Error(`"${to}" must be as long as "${from}"`);
  const needle = Buffer.from(from, 'latin1');
  let n = 0;
  for (let at = buf.indexOf(needle); at !== -1; at = buf.indexOf(needle, at + needle.length)) {
    buf.write(to, at, 'latin1');
    n++;
  }
  if (n === 0) throw new Error(`"${from}" not found in the fixture`);
  return n;
}

function gpsWeekAndSeconds(utcMs: number): { week: number; sow: number } {
  const LEAP_SECONDS = 18; // GPS - UTC since 2017
  const gps = (utcMs - Date.UTC(1980, 0, 6)) / 1000 + LEAP_SECONDS;
  const week = Math.floor(gps / 604_800);
  return { week, sow: gps - week * 604_800 };
}

function ppkCompanion(kind: Exclude<RtkKind, 'mrk'>, seed: string): Buffer {
  const header = (type: string): string =>
    [
      `     3.03           ${type.padEnd(20)}M                   RINEX VERSION / TYPE`,
      'DJI                 drone-media-sync test                   PGM / RUN BY / DATE',
      '                                                            END OF HEADER',
      '',
    ].join('\n');
  if (kind === 'obs') return Buffer.from(header('OBSERVATION DATA'));
  if (kind === 'nav') return Buffer.from(header('N: GNSS NAV DATA'));
  const chunks: Buffer[] = [];
  let h = Buffer.from(seed);
  for (let i = 0; i < 512; i++) chunks.push((h = createHash('sha256').update(h).digest()));
  return Buffer.concat(chunks);
}

const COMPANION_SUFFIXES: Record<Exclude<RtkKind, 'mrk'>, string> = {
  obs: '_Rinex.obs',
  nav: '_PPKNAV.nav',
  ppkraw: '_PPKRAW.bin',
  rtcm: '.RTK',
};

export function buildRtkCard(o: RtkCardOptions): RtkCard {
  const n = o.exposures ?? 12;
  const missing = new Set(o.missing ?? [7]);
  const float = new Set(o.float ?? [3, 4]);
  const single = new Set(o.single ?? []);
  const interval = o.intervalSeconds ?? 2;
  const s = o.start ?? { year: 2024, month: 5, day: 6, hour: 10, minute: 15, second: 12 };
  const lens = o.lens ?? 'V';
  const stamp = `${s.year}${pad(s.month)}${pad(s.day)}${pad(s.hour)}${pad(s.minute)}`;
  const base = `DJI_${stamp}_${pad(o.flightNumber ?? 1, 3)}`;
  const folderName =
    o.mission === undefined ? `${base}_Quarry-North` : o.mission ? `${base}_${o.mission}` : base;
  const folder = `DCIM/${folderName}`;
  const dir = path.join(o.root, ...folder.split('/'));
  fs.mkdirSync(dir, { recursive: true });

  const original = fs.readFileSync(RTK_PHOTO);
  const startUtc =
    Date.UTC(s.year, s.month - 1, s.day, s.hour, s.minute, s.second) - ORIGINAL.offsetMinutes * 60_000;
  const perLeg = Math.ceil(n / 2);
  const photos: RtkCardPhoto[] = [];
  const mrkLines: MrkLineInput[] = [];
  let extra = 0;
  for (let index = 1; index <= n; index++) {
    const i = index - 1;
    const leg = i < perLeg ? 0 : 1;
    const along = leg === 0 ? i : perLeg - 1 - (i - perLeg);
    const lat = START_LAT + leg * LEG_SPACING_LAT;
    const lng = START_LNG + along * STEP_LNG;
    const yaw = leg === 0 ? 90 : -90;
    const rtkStatus = float.has(index) ? 34 : single.has(index) ? 16 : 50;
    const utc = startUtc + (i * interval + extra) * 1000;
    extra += o.gapsAfter?.[index] ?? 0;
    const local = new Date(utc + ORIGINAL.offsetMinutes * 60_000);
    const wall = `${local.getUTCFullYear()}${pad(local.getUTCMonth() + 1)}${pad(local.getUTCDate())}${pad(local.getUTCHours())}${pad(local.getUTCMinutes())}${pad(local.getUTCSeconds())}`;
    const exifTime = `${wall.slice(0, 4)}:${wall.slice(4, 6)}:${wall.slice(6, 8)} ${wall.slice(8, 10)}:${wall.slice(10, 12)}:${wall.slice(12, 14)}`;
    const capturedAt = `${exifTime.slice(0, 10).replace(/:/g, '-')}T${exifTime.slice(11)}+02:00`;
    const { week, sow } = gpsWeekAndSeconds(utc);
    mrkLines.push({
      index,
      gpsSecondsOfWeek: sow,
      gpsWeek: week,
      offsetMm: { north: -7, east: 28, down: 191 },
      lat,
      lon: lng,
      ellipsoidHeight: 174.767,
      stdDev:
        rtkStatus === 50
          ? { north: 0.0118, east: 0.0176, vertical: 0.0302 }
          : { north: 0.31, east: 0.28, vertical: 0.62 },
      rtkStatus,
    });
    if (missing.has(index)) continue;

    const copy = Buffer.from(original);
    replaceAll(copy, ORIGINAL.exifTime, exifTime);
    replaceAll(copy, ORIGINAL.xmpTime, capturedAt);
    replaceAll(copy, `GpsLatitude="${ORIGINAL.lat}"`, `GpsLatitude="${fit(lat, ORIGINAL.lat.length)}"`);
    replaceAll(copy, `GpsLongitude="${ORIGINAL.lng}"`, `GpsLongitude="${fit(lng, ORIGINAL.lng.length)}"`);
    replaceAll(
      copy,
      `GimbalYawDegree="${ORIGINAL.yaw}"`,
      `GimbalYawDegree="${fit(yaw, ORIGINAL.yaw.length)}"`,
    );
    replaceAll(copy, `RtkFlag="${ORIGINAL.rtkFlag}"`, `RtkFlag="${rtkStatus}"`);
    const name = `DJI_${wall}_${pad(index, 4)}_${lens}.JPG`;
    fs.writeFileSync(path.join(dir, name), copy);
    photos.push({ relPath: `${folder}/${name}`, index, lat, lng, gimbalYaw: yaw, rtkStatus, capturedAt });
  }

  const rtkFiles: RtkCard['rtkFiles'] = [];
  if (o.mrk !== false) {
    const name = `${base}_Timestamp.MRK`;
    fs.writeFileSync(path.join(dir, name), mrkLines.map((l) => `${formatMrkLine(l)}\r\n`).join(''));
    rtkFiles.push({ relPath: `${folder}/${name}`, kind: 'mrk' });
  }
  for (const kind of o.companions ?? ['obs', 'nav', 'ppkraw']) {
    const name = `${base}${COMPANION_SUFFIXES[kind]}`;
    fs.writeFileSync(path.join(dir, name), ppkCompanion(kind, name));
    rtkFiles.push({ relPath: `${folder}/${name}`, kind });
  }
  return { root: o.root, folder, photos, rtkFiles, mrkLines };
}

/**
 * Reads one flight folder of a card the way the agent will: every file
 * classified, each MRK parsed, each photo's metadata read by the real reader.
 */
export async function readFlightFromDisk(root: string, folder: string): Promise<FlightInput> {
  const dir = path.join(root, ...folder.split('/'));
  const input: FlightInput = { folder, media: [], rtkFiles: [], mrk: [] };
  for (const name of fs.readdirSync(dir).sort()) {
    const relPath = `${folder}/${name}`;
    const cls = classifyCardFile(relPath);
    if (cls === 'media') {
      const info = await readMediaInfo(path.join(dir, name), { relPath });
      const { lat, lng } = info.metadata.shoot_position ?? {};
      input.media.push({
        relPath,
        capturedAt: info.metadata.created_time ?? null,
        position: lat !== undefined && lng !== undefined ? { lat, lng } : null,
        gimbalYaw: info.metadata.gimbal_yaw_degree ?? null,
      });
    } else if (cls === 'rtk') {
      const kind = rtkKindOf(name)!;
      input.rtkFiles.push({ relPath, kind });
      if (kind === 'mrk')
        input.mrk.push({ relPath, ...parseMrk(fs.readFileSync(path.join(dir, name), 'utf8')) });
    }
  }
  return input;
}
