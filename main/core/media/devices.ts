/**
 * From what a file says about its camera (EXIF Model, XMP drone-dji:DroneModel)
 * to the DJI cloud device keys servers require (the device table is
 * main/shared/domain.ts). Servers like DJI's sample server refuse a file whose
 * keys are missing or not in their list, so a camera we cannot place is
 * reported, never guessed.
 */
import { AIRCRAFT, CAMERAS, type AircraftCode, type Camera } from '../../shared/domain.js';

/** Friendly names of DJI cameras known to be outside the cloud list, for the per-file report. */
const KNOWN_UNSUPPORTED: Record<string, string> = {
  MAVIC2ENTERPRISEADVANCED: 'Mavic 2 Enterprise Advanced',
  MAVIC2ENTERPRISE: 'Mavic 2 Enterprise',
  MAVIC2ENTERPRISEDUAL: 'Mavic 2 Enterprise Dual',
  ZXT2: 'Zenmuse XT2',
  XT2: 'Zenmuse XT2',
  XTS: 'Zenmuse XT S',
  Z30: 'Zenmuse Z30',
  FC6310: 'Phantom 4 Pro',
  FC6310S: 'Phantom 4 Pro V2.0',
  FC6310R: 'Phantom 4 RTK',
  FC6360: 'Phantom 4 Multispectral',
  FC220: 'Mavic Pro',
  FC3170: 'Mavic Air 2',
  FC3411: 'Air 2S',
  L1D20C: 'Mavic 2 Pro',
  L2D20C: 'Mavic 3 (Hasselblad camera)',
};

const alnumUpper = (s: string): string => s.toUpperCase().replace(/[^A-Z0-9]/g, '');

/** "ZH20T", "Zenmuse H20T", "ZenmuseP1" → "H20T", "H20T", "P1". */
export function normaliseCamera(model: string): string {
  const s = alnumUpper(model).replace(/^ZENMUSE/, '');
  // Zenmuse gimbal cameras report a "Z" prefix in EXIF Model (ZH20T, ZH30).
  return /^ZH\d/.test(s) ? s.slice(1) : s;
}

/** "Matrice 300 RTK", "M350 RTK", "Matrice 30T", "Mavic 3T" → "M300", "M350", "M30T", "M3T". */
export function normaliseAircraft(droneModel: string): string {
  return alnumUpper(droneModel)
    .replace(/^DJI/, '')
    .replace(/^MATRICE/, 'M')
    .replace(/^MAVIC3/, 'M3')
    .replace(/RTK$/, '');
}

export function aircraftByKey(key: string): AircraftCode | undefined {
  return (Object.keys(AIRCRAFT) as AircraftCode[]).find((c) => AIRCRAFT[c].key === key);
}

function cameraByCode(code: string): Camera | undefined {
  return Object.hasOwn(CAMERAS, code) ? CAMERAS[code as keyof typeof CAMERAS] : undefined;
}

export interface DeviceInput {
  /** EXIF Model (camera), e.g. "M3T", "ZH20T", "FC6310". */
  model?: string;
  /** XMP drone-dji:DroneModel (aircraft), e.g. "M30T". */
  droneModel?: string;
  /** EXIF Make, e.g. "DJI". */
  make?: string;
}

export interface DeviceOptions {
  /** The user's default aircraft key (e.g. '0-89-0') for payload cameras. */
  aircraftDefault?: string;
}

export interface DeviceKeys {
  drone_model_key?: string;
  payload_model_key?: string;
  /** Where the aircraft came from: the camera itself, the XMP, the user's default, or our assumption. */
  aircraftSource?: 'camera' | 'xmp' | 'user-default' | 'assumed';
  /** Set when either key is unknown: servers like the sample one will refuse the file. */
  unsupportedReason?: string;
  /** Something worth a log line that does not stop the upload. */
  note?: string;
}

function unsupported(input: DeviceInput): string {
  const raw = input.model?.trim() || input.droneModel?.trim();
  const tail = "is not in DJI's cloud device list; servers like DJI's sample server will refuse it";
  if (!raw)
    return `The file does not say which camera took it; servers like DJI's sample server will refuse it`;
  if (input.make && !/^(DJI|HASSELBLAD)\b/i.test(input.make.trim())) {
    return `${input.make.trim()} ${raw} is not a DJI camera; servers like DJI's sample server will refuse it`;
  }
  const known = KNOWN_UNSUPPORTED[alnumUpper(raw)];
  return known ? `${known} ${tail}` : `Camera "${raw}" ${tail}`;
}

/**
 * Keys for one file. The XMP DroneModel, when present and known, wins for the
 * aircraft (it is the aircraft that wrote the file); the EXIF Model gives the
 * payload. A payload camera without DroneModel uses the user's default aircraft
 * when it can carry that payload, else the documented most-likely aircraft.
 */
export function resolveDeviceKeys(input: DeviceInput, opts: DeviceOptions = {}): DeviceKeys {
  const camera = input.model ? cameraByCode(normaliseCamera(input.model)) : undefined;
  const xmpCode = input.droneModel ? normaliseAircraft(input.droneModel) : undefined;
  const xmpAircraft = xmpCode && xmpCode in AIRCRAFT ? (xmpCode as AircraftCode) : undefined;

  if (!camera) {
    // No known camera: an aircraft with a built-in camera has only one payload key.
    const own = xmpAircraft ? cameraByCode(xmpAircraft) : undefined;
    if (xmpAircraft && own && 'aircraft' in own) {
      return {
        drone_model_key: AIRCRAFT[xmpAircraft].key,
        payload_model_key: own.key,
        aircraftSource: 'xmp',
      };
    }
    const result: DeviceKeys = { unsupportedReason: unsupported(input) };
    if (xmpAircraft) {
      result.drone_model_key = AIRCRAFT[xmpAircraft].key;
      result.aircraftSource = 'xmp';
    }
    return result;
  }

  const result: DeviceKeys = { payload_model_key: camera.key };
  if (xmpAircraft) {
    result.drone_model_key = AIRCRAFT[xmpAircraft].key;
    result.aircraftSource = 'xmp';
    if ('aircraft' in camera && camera.aircraft !== xmpAircraft) {
      result.note = `${camera.name} reported on a ${AIRCRAFT[xmpAircraft].name} (XMP DroneModel); using the XMP aircraft.`;
    }
    return result;
  }
  if ('aircraft' in camera) {
    result.drone_model_key = AIRCRAFT[camera.aircraft].key;
    result.aircraftSource = 'camera';
    return result;
  }
  const userCode = opts.aircraftDefault ? aircraftByKey(opts.aircraftDefault) : undefined;
  if (userCode && camera.fits.includes(userCode)) {
    result.drone_model_key = AIRCRAFT[userCode].key;
    result.aircraftSource = 'user-default';
    return result;
  }
  result.drone_model_key = AIRCRAFT[camera.assumed].key;
  result.aircraftSource = 'assumed';
  if (opts.aircraftDefault) {
    // A default that cannot carry this payload (or is not a key at all) is a
    // settings mistake; uploading under an impossible pairing would be worse.
    result.note =
      `Default aircraft ${opts.aircraftDefault} cannot carry the ${camera.name}; ` +
      `assumed ${AIRCRAFT[camera.assumed].name} (${AIRCRAFT[camera.assumed].key}).`;
  }
  return result;
}
