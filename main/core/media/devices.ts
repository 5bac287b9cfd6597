/**
 * DJI cloud device keys (`domain-type-subtype`; domain 0 aircraft, 1 payload)
 * from docs/service-facts.md, and the mapping from what a file says about its
 * camera (EXIF Model, XMP drone-dji:DroneModel) to the keys servers require.
 * Servers like DJI's sample server refuse a file whose keys are missing or not
 * in their list, so a camera we cannot place is reported, never guessed.
 */

export interface AircraftInfo {
  key: string;
  name: string;
}

/** Aircraft by a short code (the form DroneModel values normalise to). */
export const AIRCRAFT = {
  M300: { key: '0-60-0', name: 'Matrice 300 RTK' },
  M350: { key: '0-89-0', name: 'Matrice 350 RTK' },
  M400: { key: '0-103-0', name: 'Matrice 400' },
  M30: { key: '0-67-0', name: 'Matrice 30' },
  M30T: { key: '0-67-1', name: 'Matrice 30T' },
  M3E: { key: '0-77-0', name: 'Mavic 3 Enterprise' },
  M3T: { key: '0-77-1', name: 'Mavic 3 Thermal' },
  M3M: { key: '0-77-2', name: 'Mavic 3 Multispectral' },
  M3TA: { key: '0-77-3', name: 'Mavic 3 Thermal Advanced' },
  M3D: { key: '0-91-0', name: 'Matrice 3D' },
  M3TD: { key: '0-91-1', name: 'Matrice 3TD' },
  M4E: { key: '0-99-0', name: 'Matrice 4E' },
  M4T: { key: '0-99-1', name: 'Matrice 4T' },
  M4D: { key: '0-100-0', name: 'Matrice 4D' },
  M4TD: { key: '0-100-1', name: 'Matrice 4TD' },
} as const satisfies Record<string, AircraftInfo>;

export type AircraftCode = keyof typeof AIRCRAFT;

interface CameraBase {
  name: string;
  payloadKey: string;
}
/** A camera built into one aircraft: the camera alone tells both keys. */
interface IntegratedCamera extends CameraBase {
  aircraft: AircraftCode;
}
/** A gimbal payload that fits several aircraft: the aircraft must come from elsewhere. */
interface PayloadCamera extends CameraBase {
  fits: readonly AircraftCode[];
  /** Used when neither the file nor the user names the aircraft. */
  assumed: AircraftCode;
}
type Camera = IntegratedCamera | PayloadCamera;

const integrated = (aircraft: AircraftCode, payloadKey: string): IntegratedCamera => ({
  name: `${AIRCRAFT[aircraft].name} camera`,
  payloadKey,
  aircraft,
});

/*
 * Most-likely aircraft per payload, used only when the file has no
 * DroneModel and the user set no default aircraft (the user can change it):
 * - H20 / H20T / H20N → M300 RTK: the H20 series launched with the M300 and
 *   most H20 cards in the field come from M300s (the M350 also carries them).
 * - H30 / H30T → M350 RTK: launched when the M350 was DJI's current airframe.
 * - P1 → M350 RTK: DJI's current airframe for the P1 (also fits M300, M400).
 */
const H20_FITS = ['M300', 'M350'] as const;
const H30_FITS = ['M300', 'M350', 'M400'] as const;
const P1_FITS = ['M300', 'M350', 'M400'] as const;

/** Cameras by normalised EXIF Model (see normaliseCamera). */
const CAMERAS: Record<string, Camera> = {
  M30: integrated('M30', '1-52-0'),
  M30T: integrated('M30T', '1-53-0'),
  M3E: integrated('M3E', '1-66-0'),
  M3T: integrated('M3T', '1-67-0'),
  M3M: integrated('M3M', '1-68-0'),
  M3TA: integrated('M3TA', '1-129-0'),
  M3D: integrated('M3D', '1-80-0'),
  M3TD: integrated('M3TD', '1-81-0'),
  M4E: integrated('M4E', '1-88-0'),
  M4T: integrated('M4T', '1-89-0'),
  M4D: integrated('M4D', '1-98-0'),
  M4TD: integrated('M4TD', '1-99-0'),
  H20: { name: 'Zenmuse H20', payloadKey: '1-42-0', fits: H20_FITS, assumed: 'M300' },
  H20T: { name: 'Zenmuse H20T', payloadKey: '1-43-0', fits: H20_FITS, assumed: 'M300' },
  H20N: { name: 'Zenmuse H20N', payloadKey: '1-61-0', fits: H20_FITS, assumed: 'M300' },
  H30: { name: 'Zenmuse H30', payloadKey: '1-82-0', fits: H30_FITS, assumed: 'M350' },
  H30T: { name: 'Zenmuse H30T', payloadKey: '1-83-0', fits: H30_FITS, assumed: 'M350' },
  P1: { name: 'Zenmuse P1', payloadKey: '1-50-65535', fits: P1_FITS, assumed: 'M350' },
};

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
  const camera = input.model ? CAMERAS[normaliseCamera(input.model)] : undefined;
  const xmpCode = input.droneModel ? normaliseAircraft(input.droneModel) : undefined;
  const xmpAircraft = xmpCode && xmpCode in AIRCRAFT ? (xmpCode as AircraftCode) : undefined;

  if (!camera) {
    // No known camera: an aircraft with a built-in camera has only one payload key.
    const own = xmpAircraft ? CAMERAS[xmpAircraft] : undefined;
    if (xmpAircraft && own && 'aircraft' in own) {
      return {
        drone_model_key: AIRCRAFT[xmpAircraft].key,
        payload_model_key: own.payloadKey,
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

  const result: DeviceKeys = { payload_model_key: camera.payloadKey };
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
