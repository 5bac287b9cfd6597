/**
 * A card of real DJI photos flown as the test says, grown from the real
 * Mavic 3T photo of the fixtures (M3T/M3T_IR.JPG), and frames made bad on
 * purpose. Like rtk-card.ts, every change overwrites bytes IN PLACE with
 * the same number of bytes (EXIF date strings, drone-dji XMP attributes,
 * EXIF GPS rationals, the EXIF thumbnail), so each copy stays a real DJI
 * JPEG for exifr and for the preview decoder:
 *
 * - time: DateTimeOriginal/CreateDate and XMP CreateDate/ModifyDate are the
 *   camera's wall clock at UTC+02:00 (as the fixture), UTCAtExposure is GPS
 *   time (UTC + 18 s, as the fixture writes it); `clockShiftSeconds` moves
 *   the camera's clock only;
 * - position, height above take-off, gimbal pitch and yaw, RTK flag;
 * - `zeroGps`: XMP and EXIF GPS written as 0, 0 (DJI's "no fix");
 * - `blackPreview`: the EXIF thumbnail replaced by a black JPEG of the same
 *   size (padded after its end marker), the main image untouched.
 */
import { syncLanes } from '../../main/core/sync/peers.js';
import fs from 'node:fs';
import path from 'node:path';
import jpeg from 'jpeg-js';
import { ApiClient } from '../../main/core/api/client.js';
import { parseConfig } from '../../main/core/config.js';
import {
  cardOffload,
  type CardOffload,
  type CardRef,
  type FlightOptions,
} from '../../main/core/offload/card.js';
import { Queue } from '../../main/core/queue/queue.js';
import { folderSource } from '../../main/core/sources/source.js';
import type { RunningService } from '../../main/service/index.js';
import { FIXTURES } from './harness.js';
import { fit, replaceAll } from './rtk-card.js';

export const M3T_PHOTO = path.join(FIXTURES, 'M3T', 'M3T_IR.JPG');

const ORIGINAL = {
  exifTime: '2023:07:07 09:39:34',
  xmpTime: '2023-07-07T09:39:34+02:00',
  utcAtExposure: '2023-07-07T07:39:52.944920',
  lat: '+50.688176398',
  lng: '+4.524341654',
  yaw: '+9.90',
  pitch: '-31.80',
  height: '+10.351',
  rtkFlag: '50',
  /** IFD1 of the fixture: ThumbnailOffset / ThumbnailLength, from the TIFF header. */
  thumbOffset: 1170,
  thumbLength: 24894,
};
export const M3T_START = { lat: 50.688176398, lng: 4.524341654 };

export interface Shot {
  /** The exposure's true time, UTC ms. */
  utcMs: number;
  lat: number;
  lng: number;
  /** Height above take-off, m (default 80). */
  height?: number;
  /** Gimbal pitch, degrees (default -90: a nadir grid). */
  pitch?: number;
  yaw?: number;
  rtkFlag?: number;
  /** The camera's clock runs this many seconds ahead of the truth. */
  clockShiftSeconds?: number;
  zeroGps?: boolean;
  blackPreview?: boolean;
}

export interface FlightCardShot extends Shot {
  relPath: string;
}

const pad = (n: number, w = 2): string => String(n).padStart(w, '0');

/** Where the TIFF header starts (after "Exif\0\0"). */
const tiffStart = (buf: Buffer): number => buf.indexOf(Buffer.from('Exif\0\0', 'latin1')) + 6;

/** EXIF GPSLatitude and GPSLongitude (three rationals each) set to 0/1. */
function zeroExifGps(buf: Buffer): void {
  const t = tiffStart(buf);
  const le = buf.toString('latin1', t, t + 2) === 'II';
  const u16 = (o: number) => (le ? buf.readUInt16LE(t + o) : buf.readUInt16BE(t + o));
  const u32 = (o: number) => (le ? buf.readUInt32LE(t + o) : buf.readUInt32BE(t + o));
  const w32 = (o: number, v: number) => (le ? buf.writeUInt32LE(v, t + o) : buf.writeUInt32BE(v, t + o));
  const entries = (ifd: number) =>
    Array.from({ length: u16(ifd) }, (_, i) => ifd + 2 + i * 12).map((e) => ({ tag: u16(e), e }));
  const gpsIfd = entries(u32(4)).find((x) => x.tag === 0x8825);
  if (!gpsIfd) throw new Error('no GPS IFD in the fixture');
  let zeroed = 0;
  for (const { tag, e } of entries(u32(gpsIfd.e + 8))) {
    if (tag !== 2 && tag !== 4) continue;
    const at = u32(e + 8);
    for (let k = 0; k < 3; k++) {
      w32(at + k * 8, 0);
      w32(at + k * 8 + 4, 1);
    }
    zeroed++;
  }
  if (zeroed !== 2) throw new Error('GPSLatitude/GPSLongitude not found');
}

/** A black 160x128 JPEG padded with zeros to `length` bytes. */
function blackThumbnail(length: number): Buffer {
  const w = 160;
  const h = 128;
  const data = Buffer.alloc(w * h * 4);
  for (let i = 3; i < data.length; i += 4) data[i] = 255;
  const img = jpeg.encode({ width: w, height: h, data }, 80).data;
  if (img.length > length) throw new Error('the black thumbnail does not fit');
  return Buffer.concat([img, Buffer.alloc(length - img.length)]);
}

const wallOf = (ms: number) => {
  const d = new Date(ms + 2 * 3600_000); // the fixture's zone, UTC+02:00
  return {
    digits: `${d.getUTCFullYear()}${pad(d.getUTCMonth() + 1)}${pad(d.getUTCDate())}${pad(d.getUTCHours())}${pad(d.getUTCMinutes())}${pad(d.getUTCSeconds())}`,
    exif: `${d.getUTCFullYear()}:${pad(d.getUTCMonth() + 1)}:${pad(d.getUTCDate())} ${pad(d.getUTCHours())}:${pad(d.getUTCMinutes())}:${pad(d.getUTCSeconds())}`,
    xmp: `${d.toISOString().slice(0, 19)}+02:00`,
  };
};

/** One photo's bytes, as the shot says. */
export function shotBytes(s: Shot): Buffer {
  const copy = Buffer.from(fs.readFileSync(M3T_PHOTO));
  const wall = wallOf(s.utcMs + (s.clockShiftSeconds ?? 0) * 1000);
  replaceAll(copy, ORIGINAL.exifTime, wall.exif);
  replaceAll(copy, ORIGINAL.xmpTime, wall.xmp);
  const gps = new Date(s.utcMs + 18_000).toISOString().slice(0, 23);
  replaceAll(copy, `UTCAtExposure="${ORIGINAL.utcAtExposure}"`, `UTCAtExposure="${gps}000"`);
  const lat = s.zeroGps ? 0 : s.lat;
  const lng = s.zeroGps ? 0 : s.lng;
  replaceAll(copy, `GpsLatitude="${ORIGINAL.lat}"`, `GpsLatitude="${fit(lat, ORIGINAL.lat.length)}"`);
  replaceAll(copy, `GpsLongitude="${ORIGINAL.lng}"`, `GpsLongitude="${fit(lng, ORIGINAL.lng.length)}"`);
  if (s.zeroGps) zeroExifGps(copy);
  replaceAll(
    copy,
    `GimbalYawDegree="${ORIGINAL.yaw}"`,
    `GimbalYawDegree="${fit(s.yaw ?? 90, ORIGINAL.yaw.length)}"`,
  );
  replaceAll(
    copy,
    `GimbalPitchDegree="${ORIGINAL.pitch}"`,
    `GimbalPitchDegree="${fit(s.pitch ?? -90, ORIGINAL.pitch.length)}"`,
  );
  replaceAll(
    copy,
    `RelativeAltitude="${ORIGINAL.height}"`,
    `RelativeAltitude="${fit(s.height ?? 80, ORIGINAL.height.length)}"`,
  );
  replaceAll(copy, `RtkFlag="${ORIGINAL.rtkFlag}"`, `RtkFlag="${pad(s.rtkFlag ?? 50)}"`);
  if (s.blackPreview) {
    const at = tiffStart(copy) + ORIGINAL.thumbOffset;
    if (copy[at] !== 0xff || copy[at + 1] !== 0xd8) throw new Error('the fixture thumbnail moved');
    blackThumbnail(ORIGINAL.thumbLength).copy(copy, at);
  }
  return copy;
}

/**
 * Writes the shots into `folder` of a card at `root`: `DJI_<NNNN>.JPG` in a
 * `100MEDIA`-style folder, `DJI_<camera time>_<NNNN>_V.JPG` in a mission folder.
 */
export function writeFlightCard(
  root: string,
  folder: string,
  shots: readonly Shot[],
  first = 1,
): FlightCardShot[] {
  const dir = path.join(root, ...folder.split('/'));
  fs.mkdirSync(dir, { recursive: true });
  const mission = /^DJI_\d{12}_\d{3}/.test(path.posix.basename(folder));
  return shots.map((s, i) => {
    const n = first + i;
    const wall = wallOf(s.utcMs + (s.clockShiftSeconds ?? 0) * 1000);
    const name = mission ? `DJI_${wall.digits}_${pad(n, 4)}_V.JPG` : `DJI_${pad(n, 4)}.JPG`;
    fs.writeFileSync(path.join(dir, name), shotBytes(s));
    return { ...s, relPath: `${folder}/${name}` };
  });
}

/** A nadir grid: `n` shots every `interval` s from `start`, 20 m apart eastwards in rows of 5. */
export function grid(n: number, startUtcMs: number, at = M3T_START, interval = 2): Shot[] {
  return Array.from({ length: n }, (_, i) => ({
    utcMs: startUtcMs + i * interval * 1000,
    lat: at.lat + Math.floor(i / 5) * 0.0003,
    lng: at.lng + (i % 5) * 0.00028,
  }));
}

/**
 * A card written by `build` under `dir/name`, run through the real engine
 * (scan, hash and metadata, upload to `service`, a real SQLite queue), then
 * read as the report and the window read it; `read` sees the open queue.
 */
export async function offloadCard<T = CardOffload>(
  o: {
    dir: string;
    name: string;
    service: RunningService;
    build: (root: string) => void;
    flights?: FlightOptions;
  },
  read?: (queue: Queue, card: CardRef) => T,
): Promise<T> {
  const root = path.join(o.dir, o.name);
  o.build(root);
  const queue = new Queue(path.join(o.dir, `state-${o.name}`, 'queue.db'));
  const engine = syncLanes({
    queue,
    api: new ApiClient({
      baseUrl: o.service.baseUrl,
      workspaceId: o.service.workspaceId,
      token: o.service.token,
    }),
    config: parseConfig({ callbackSettleSeconds: 1 }),
  }).engine;
  try {
    const source = folderSource(root);
    await engine.scan(source);
    await engine.run({ mode: 'until-idle' });
    const card = { sourceId: source.sourceId, label: o.name };
    return read ? read(queue, card) : (cardOffload(queue, card, [], o.flights ?? {}) as T);
  } finally {
    engine.close();
    queue.close();
  }
}

/** Flight 1: a nadir grid at 80 m, with bad frames when `changed`; flight 2 (40 min later, 2 km away) at 30 m when `changed`. */
export const T0 = Date.UTC(2024, 4, 6, 8, 15, 12); // 10:15:12 at UTC+02:00
export const FAR = { lat: M3T_START.lat + 0.018, lng: M3T_START.lng }; // 2.0 km north

export function badCard(changed: boolean): Shot[] {
  const one = grid(12, T0);
  const two = grid(6, T0 + 40 * 60_000, FAR).map((s) => ({ ...s, height: changed ? 30 : 80 }));
  if (changed) {
    one[2] = { ...one[2]!, blackPreview: true }; // DJI_0003
    one[4] = { ...one[4]!, pitch: -10 }; // DJI_0005
    one[6] = { ...one[6]!, clockShiftSeconds: 3603 }; // DJI_0007
    one[8] = { ...one[8]!, zeroGps: true }; // DJI_0009
    one[11] = { ...one[11]!, height: 3 }; // DJI_0012
  }
  return [...one, ...two];
}
