import { stat } from 'node:fs/promises';
import { basename, extname } from 'node:path';
import exifr from 'exifr';
import type { MediaMetadata } from '../api/types.js';
import { toDmsError } from '../errors.js';
import type { CaptureTime } from './capture-time.js';
import {
  captureTimeFromFileName,
  formatCreatedTime,
  machineOffsetMinutes,
  parseExifDateTime,
  parseOffsetMinutes,
  sameWallClock,
  trailingOffsetMinutes,
} from './capture-time.js';
import { resolveDeviceKeys } from './devices.js';
import { VIDEO_EXTENSIONS, normaliseExtension } from './discover.js';
import { isDerived, isPanorama, readPosition, text } from './metadata-rules.js';
import { readVideoSidecars } from './video.js';
import { readFrameFacts, type FrameFacts } from './frame.js';
import { readHead } from './preview.js';
import type { Block } from './metadata-rules.js';

export interface MediaInfo {
  metadata: MediaMetadata;
  /** 0 = normal picture, 1 = panorama. */
  subFileType: 0 | 1;
  droneModelKey?: string;
  payloadModelKey?: string;
  /** The aircraft's serial number (XMP DroneSerialNumber) only; see readMediaInfo. */
  sn?: string;
  /** The camera's own serial (XMP CameraSerialNumber, else EXIF SerialNumber), for logs and support. */
  cameraSerial?: string;
  isOriginal: boolean;
  /** EXIF Model (camera), e.g. "M3T", "ZH20T". */
  cameraModel?: string;
  /** Wall-clock digits of DateTimeOriginal (or the file name as a fallback). */
  captureTime?: CaptureTime;
  /** What the photo says of its own usefulness (preview, gimbal, GNSS time); photos only. */
  frame?: FrameFacts;
  /** Why servers like DJI's sample server will refuse this file, when they will. */
  unsupportedReason?: string;
  warnings: string[];
}

export interface ReadMediaOptions {
  /** The user's default aircraft key (e.g. '0-89-0') for payload cameras. */
  aircraftDefault?: string;
  /** Offset for files that carry none; default: this machine's zone at the capture time. */
  timeZoneOffsetMinutes?: number;
  /** Path relative to the card root, for folder-based hints (PANORAMA). */
  relPath?: string;
  /** The file's bytes when the caller has already read them all (small files): parsed from memory. */
  content?: Buffer;
  /** The card or folder the file was found under: side-cars of a video are read only inside it. */
  root?: string;
}

/**
 * exifr reads the file in chunks (a small first read, then only the segments
 * it needs), so a 12 MB JPG costs a few tens of KB. Only the blocks we use are
 * parsed. reviveValues:false keeps dates as the camera's strings: revived, they
 * become JS Dates in this machine's zone and the wall-clock digits are lost.
 */
/** exifr's d.ts does not export its Options type; take it from parse(). */
type ExifrOptions = Exclude<Parameters<typeof exifr.parse>[1], boolean | unknown[] | undefined>;

const EXIFR_OPTIONS: ExifrOptions = {
  tiff: true,
  ifd0: { pick: ['Make', 'Model', 'Software'] },
  exif: { pick: ['DateTimeOriginal', 'CreateDate', 'OffsetTimeOriginal', 'SerialNumber'] },
  gps: {
    pick: [
      'GPSLatitude',
      'GPSLatitudeRef',
      'GPSLongitude',
      'GPSLongitudeRef',
      'GPSAltitude',
      'GPSAltitudeRef',
      'GPSDateStamp',
      'GPSTimeStamp',
    ],
  },
  xmp: true,
  // The thumbnail's place only (frame.ts decodes it from the bytes at hand).
  ifd1: { pick: ['ThumbnailOffset', 'ThumbnailLength'] },
  interop: false,
  makerNote: false,
  userComment: false,
  icc: false,
  iptc: false,
  jfif: false,
  ihdr: false,
  mergeOutput: false,
  reviveValues: false,
  translateValues: false,
  translateKeys: true,
};

function splitExifr(raw: unknown): Record<string, Block> {
  return raw && typeof raw === 'object' ? (raw as Record<string, Block>) : {};
}

/**
 * The blocks of a JPEG from its head (PREVIEW_HEAD_BYTES: the EXIF and XMP
 * segments of every DJI photo seen end within 50 KB). When the head does not
 * give them (an Exif file whose XMP lies past it, or a damaged one exifr
 * reads better from the file), the file itself is parsed, as before.
 */
async function parseHead(head: Buffer | null, filePath: string): Promise<Record<string, Block>> {
  if (!head) return {};
  let blocks: Record<string, Block> = {};
  let failure: Error | null = null;
  try {
    blocks = splitExifr(await exifr.parse(head, EXIFR_OPTIONS));
  } catch (err) {
    failure = err instanceof Error ? err : new Error(String(err));
  }
  // An Exif file whose head did not give its XMP (cut past the head, or a damaged file exifr
  // reads better from the file itself): parsed from the file, as before.
  const exifFile = head.subarray(0, 4096).includes('Exif\0\0', 0, 'latin1');
  if (exifFile && (failure !== null || (!blocks.xmp && !blocks['drone-dji'])))
    return splitExifr(await exifr.parse(filePath, EXIFR_OPTIONS));
  if (failure !== null) throw failure;
  return blocks;
}

/**
 * Camera time zone: EXIF OffsetTimeOriginal when present; else the offset of
 * XMP xmp:CreateDate when its digits are the same wall clock (M3T and M30T
 * firmware write "2023-07-07T09:39:34+02:00" there but no EXIF offset); else
 * the option; else this machine's zone at that date.
 */
function offsetFor(t: CaptureTime, exif: Block, xmp: Block, opts: ReadMediaOptions): number {
  const exifOffset = parseOffsetMinutes(exif.OffsetTimeOriginal);
  if (exifOffset !== undefined) return exifOffset;
  const xmpTime = parseExifDateTime(xmp.CreateDate);
  const xmpOffset = trailingOffsetMinutes(xmp.CreateDate);
  if (xmpTime && xmpOffset !== undefined && sameWallClock(xmpTime, t)) return xmpOffset;
  return opts.timeZoneOffsetMinutes ?? machineOffsetMinutes(t);
}

/**
 * Everything we send about one file, read from its header only.
 *
 * sn rule: `sn` is the aircraft's serial (XMP drone-dji:DroneSerialNumber),
 * the one DJI's cloud API means by `sn`. When the file has none it stays
 * undefined: EXIF SerialNumber is the *camera's* serial on payload cameras
 * (H20T: "1W9DH9R001H494") and truncated on some M30T firmware, so it would
 * be a wrong aircraft serial. It is kept in `cameraSerial` instead.
 *
 * Never throws except DmsError `source-missing` (file or card gone, file
 * unreadable): a damaged or unknown file gives empty metadata and a warning.
 */
export async function readMediaInfo(filePath: string, opts: ReadMediaOptions = {}): Promise<MediaInfo> {
  const name = basename(filePath);
  const warnings: string[] = [];
  if (opts.content === undefined) {
    try {
      await stat(filePath);
    } catch (err) {
      throw toDmsError(err, 'source-missing');
    }
  }

  if (VIDEO_EXTENSIONS.includes(normaliseExtension(extname(name)))) return readVideoInfo(filePath, opts);
  const jpegFile = /\.jpe?g$/i.test(name);
  // A JPEG not in memory: its head read once, for exifr and the embedded preview alike (exifr
  // would otherwise read it itself, and the preview would be a second read of the card).
  const head = opts.content === undefined && jpegFile ? await readHead(filePath).catch(() => null) : null;
  let blocks: Record<string, Block> = {};
  try {
    blocks = await parseHead(head, filePath);
    if (opts.content !== undefined || !head)
      blocks = splitExifr(await exifr.parse(opts.content ?? filePath, EXIFR_OPTIONS));
  } catch (err) {
    const e = toDmsError(err, 'invalid-input');
    if (e.kind === 'source-missing') throw e;
    warnings.push(`Cannot read the file's metadata: ${(err as Error).message ?? String(err)}`);
  }
  const ifd0 = blocks.ifd0 ?? {};
  const exif = blocks.exif ?? {};
  const gps = blocks.gps ?? {};
  const dji = blocks['drone-dji'] ?? {};
  const xmp = blocks.xmp ?? {};
  const xmpTiff = blocks.tiff ?? {}; // XMP's tiff: namespace (Make, Model), distinct from EXIF ifd0

  const metadata: MediaMetadata = {};
  const pos = readPosition(dji, gps, warnings);
  if (pos.lat !== undefined && pos.lng !== undefined)
    metadata.shoot_position = { lat: pos.lat, lng: pos.lng };
  if (pos.absoluteAltitude !== undefined) metadata.absolute_altitude = pos.absoluteAltitude;
  if (pos.relativeAltitude !== undefined) metadata.relative_altitude = pos.relativeAltitude;
  if (pos.gimbalYaw !== undefined) metadata.gimbal_yaw_degree = pos.gimbalYaw;

  let captureTime = parseExifDateTime(exif.DateTimeOriginal) ?? parseExifDateTime(exif.CreateDate);
  let offset: number | undefined;
  if (captureTime) {
    offset = offsetFor(captureTime, exif, xmp, opts);
  } else {
    captureTime = captureTimeFromFileName(name);
    if (captureTime) {
      warnings.push('Capture time taken from the file name (no DateTimeOriginal in the file).');
      offset = opts.timeZoneOffsetMinutes ?? machineOffsetMinutes(captureTime);
    } else {
      warnings.push('No capture time: the file has no DateTimeOriginal and its name carries no date.');
    }
  }
  if (captureTime && offset !== undefined) metadata.created_time = formatCreatedTime(captureTime, offset);

  const cameraModel = text(ifd0.Model) ?? text(xmpTiff.Model);
  const make = text(ifd0.Make) ?? text(xmpTiff.Make);
  const droneModel = text(dji.DroneModel);
  const info: MediaInfo = {
    metadata,
    subFileType: isPanorama(name, opts.relPath, blocks) ? 1 : 0,
    isOriginal: !isDerived(name, ifd0, blocks),
    warnings,
  };
  if (captureTime) info.captureTime = captureTime;
  if (cameraModel) info.cameraModel = cameraModel;
  if (jpegFile) {
    // The preview is in the head of the file: the bytes in memory, else the head read above.
    const ifd1 = blocks.ifd1 ?? {};
    const bytes = opts.content ?? head;
    const zoneInFile =
      parseOffsetMinutes(exif.OffsetTimeOriginal) !== undefined ||
      (trailingOffsetMinutes(xmp.CreateDate) !== undefined &&
        !!captureTime &&
        !!parseExifDateTime(xmp.CreateDate) &&
        sameWallClock(parseExifDateTime(xmp.CreateDate)!, captureTime));
    info.frame = await readFrameFacts(
      { dji, gps, ifd1 },
      bytes,
      zoneInFile,
      metadata.shoot_position !== undefined,
    );
  }

  const sn = text(dji.DroneSerialNumber);
  if (sn) info.sn = sn;
  const cameraSerial = text(dji.CameraSerialNumber) ?? text(exif.SerialNumber);
  if (cameraSerial) info.cameraSerial = cameraSerial;

  const keys = resolveDeviceKeys(
    { model: cameraModel, droneModel, make },
    opts.aircraftDefault === undefined ? {} : { aircraftDefault: opts.aircraftDefault },
  );
  if (keys.drone_model_key) info.droneModelKey = keys.drone_model_key;
  if (keys.payload_model_key) info.payloadModelKey = keys.payload_model_key;
  if (keys.unsupportedReason) info.unsupportedReason = keys.unsupportedReason;
  if (keys.note) warnings.push(keys.note);
  return info;
}

/**
 * A video (MP4/MOV): exifr reads nothing in it, so what the server needs comes
 * from beside it (video.ts). Position, altitudes, gimbal heading and start
 * time from the first fix of its `.SRT`; capture time else from its name;
 * aircraft, camera and aircraft serial from a photo of the same folder. What
 * neither gives stays out (never 0): a server that requires it refuses the
 * file, with the reason in the warnings.
 */
async function readVideoInfo(filePath: string, opts: ReadMediaOptions): Promise<MediaInfo> {
  const name = basename(filePath);
  const warnings: string[] = [];
  const side = await readVideoSidecars(filePath, opts.root);
  warnings.push(...side.problems);
  const metadata: MediaMetadata = {};
  const fix = side.fix;
  if (fix) {
    metadata.shoot_position = { lat: fix.lat, lng: fix.lng };
    if (fix.absoluteAltitude !== undefined) metadata.absolute_altitude = fix.absoluteAltitude;
    if (fix.relativeAltitude !== undefined) metadata.relative_altitude = fix.relativeAltitude;
    if (fix.gimbalYaw !== undefined) metadata.gimbal_yaw_degree = fix.gimbalYaw;
    const missing = [
      fix.absoluteAltitude === undefined ? 'absolute altitude' : '',
      fix.relativeAltitude === undefined ? 'relative altitude' : '',
      fix.gimbalYaw === undefined ? 'gimbal heading' : '',
    ].filter(Boolean);
    warnings.push(
      `Video: position from ${side.srtName} (cue ${fix.cue})` +
        (missing.length ? `; it has no ${missing.join(', ')}.` : '.'),
    );
  } else if (side.srtName) {
    warnings.push(`Video: ${side.srtName} has no GPS position in its first cues.`);
  } else {
    warnings.push(
      'Video: no .SRT beside it, so no position. Turn on video captions (subtitles) in DJI Pilot to record one.',
    );
  }

  let captureTime = fix?.time;
  if (!captureTime) {
    captureTime = captureTimeFromFileName(name);
    warnings.push(
      captureTime
        ? 'Capture time taken from the file name (no date in a .SRT beside it).'
        : 'No capture time: neither a .SRT beside it nor the file name carries a date.',
    );
  }
  if (captureTime) {
    metadata.created_time = formatCreatedTime(
      captureTime,
      opts.timeZoneOffsetMinutes ?? machineOffsetMinutes(captureTime),
    );
  }
  const info: MediaInfo = {
    metadata,
    subFileType: 0,
    isOriginal: !isDerived(name, {}, {}),
    warnings,
  };
  if (captureTime) info.captureTime = captureTime;

  for (const photo of side.photos) {
    let other: MediaInfo;
    try {
      other = await readMediaInfo(photo, {
        ...(opts.aircraftDefault ? { aircraftDefault: opts.aircraftDefault } : {}),
      });
    } catch {
      continue; // gone meanwhile: try the next
    }
    if (!other.droneModelKey || !other.payloadModelKey || other.unsupportedReason) continue;
    info.droneModelKey = other.droneModelKey;
    info.payloadModelKey = other.payloadModelKey;
    if (other.cameraModel) info.cameraModel = other.cameraModel;
    if (other.sn) info.sn = other.sn;
    warnings.push(`Aircraft and camera taken from ${basename(photo)} in the same folder.`);
    return info;
  }
  info.unsupportedReason =
    "The video does not say which aircraft and camera recorded it, and no photo of a known DJI camera is beside it; servers like DJI's sample server will refuse it";
  return info;
}
