/**
 * The domain's tables, once for the engine (main/core), the reference
 * service, the shell and the window: DJI device keys with their names, the
 * file types, the wayline template types, the window's views of the queue.
 * Plain data only: no Node, no DOM.
 */

// ---------- DJI devices ----------

/**
 * A DJI cloud device: its key (`domain-type-subtype`; domain 0 aircraft,
 * 1 payload, from docs/service-facts.md), DJI's name for it, and the short
 * label the window shows in its lists.
 */
export interface DeviceInfo {
  key: string;
  name: string;
  label: string;
}

/** Aircraft by a short code (the form XMP DroneModel values normalise to). */
export const AIRCRAFT = {
  M300: { key: '0-60-0', name: 'Matrice 300 RTK', label: 'M300 RTK' },
  M350: { key: '0-89-0', name: 'Matrice 350 RTK', label: 'M350 RTK' },
  M400: { key: '0-103-0', name: 'Matrice 400', label: 'M400' },
  M30: { key: '0-67-0', name: 'Matrice 30', label: 'M30' },
  M30T: { key: '0-67-1', name: 'Matrice 30T', label: 'M30T' },
  M3E: { key: '0-77-0', name: 'Mavic 3 Enterprise', label: 'Mavic 3E' },
  M3T: { key: '0-77-1', name: 'Mavic 3 Thermal', label: 'Mavic 3T' },
  M3M: { key: '0-77-2', name: 'Mavic 3 Multispectral', label: 'Mavic 3M' },
  M3TA: { key: '0-77-3', name: 'Mavic 3 Thermal Advanced', label: 'Mavic 3TA' },
  M3D: { key: '0-91-0', name: 'Matrice 3D', label: 'M3D' },
  M3TD: { key: '0-91-1', name: 'Matrice 3TD', label: 'M3TD' },
  M4E: { key: '0-99-0', name: 'Matrice 4E', label: 'Matrice 4E' },
  M4T: { key: '0-99-1', name: 'Matrice 4T', label: 'Matrice 4T' },
  M4D: { key: '0-100-0', name: 'Matrice 4D', label: 'M4D' },
  M4TD: { key: '0-100-1', name: 'Matrice 4TD', label: 'M4TD' },
} as const satisfies Record<string, DeviceInfo>;

export type AircraftCode = keyof typeof AIRCRAFT;

/** A camera built into one aircraft: the camera alone tells both keys. */
export interface BuiltInCamera extends DeviceInfo {
  aircraft: AircraftCode;
}

/** A gimbal payload that fits several aircraft: the aircraft must come from elsewhere. */
export interface GimbalCamera extends DeviceInfo {
  fits: readonly AircraftCode[];
  /** Used when neither the file nor the user names the aircraft. */
  assumed: AircraftCode;
}

export type Camera = BuiltInCamera | GimbalCamera;

const builtIn = (aircraft: AircraftCode, key: string): BuiltInCamera => ({
  key,
  name: `${AIRCRAFT[aircraft].name} camera`,
  label: `${aircraft} camera`,
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

/** Payload cameras by the code their EXIF Model normalises to, in the order the window lists them. */
export const CAMERAS = {
  H20: { key: '1-42-0', name: 'Zenmuse H20', label: 'H20', fits: H20_FITS, assumed: 'M300' },
  H20T: { key: '1-43-0', name: 'Zenmuse H20T', label: 'H20T', fits: H20_FITS, assumed: 'M300' },
  H20N: { key: '1-61-0', name: 'Zenmuse H20N', label: 'H20N', fits: H20_FITS, assumed: 'M300' },
  H30: { key: '1-82-0', name: 'Zenmuse H30', label: 'H30', fits: H30_FITS, assumed: 'M350' },
  H30T: { key: '1-83-0', name: 'Zenmuse H30T', label: 'H30T', fits: H30_FITS, assumed: 'M350' },
  M30: builtIn('M30', '1-52-0'),
  M30T: builtIn('M30T', '1-53-0'),
  M3E: builtIn('M3E', '1-66-0'),
  M3T: builtIn('M3T', '1-67-0'),
  M3M: builtIn('M3M', '1-68-0'),
  M3TA: builtIn('M3TA', '1-129-0'),
  M3D: builtIn('M3D', '1-80-0'),
  M3TD: builtIn('M3TD', '1-81-0'),
  M4E: builtIn('M4E', '1-88-0'),
  M4T: builtIn('M4T', '1-89-0'),
  M4D: builtIn('M4D', '1-98-0'),
  M4TD: builtIn('M4TD', '1-99-0'),
  P1: { key: '1-50-65535', name: 'Zenmuse P1', label: 'P1', fits: P1_FITS, assumed: 'M350' },
} as const satisfies Record<string, Camera>;

export type CameraCode = keyof typeof CAMERAS;

const byKey = new Map<string, DeviceInfo>(
  [...Object.values(AIRCRAFT), ...Object.values(CAMERAS)].map((d) => [d.key, d]),
);

/** The device a key names (aircraft or payload), or undefined for a key this table does not know. */
export function deviceOf(key: string | null | undefined): DeviceInfo | undefined {
  return key ? byKey.get(key) : undefined;
}

/** DJI's name for a device key, or the key itself when the table does not know it. */
export function deviceName(key: string): string {
  return deviceOf(key)?.name ?? key;
}

const squeeze = (t: string): string => t.toLowerCase().replace(/[\s_-]+/g, '');

/**
 * The key a person means in one of the tables: a key as it is (`0-67-0`), or
 * a code, label or name in any case and spacing (`M30`, `Mavic 3T`,
 * `matrice 350 rtk`). Undefined when nothing matches.
 */
export function deviceKeyOf(text: string, table: Readonly<Record<string, DeviceInfo>>): string | undefined {
  const devices = Object.entries(table);
  const exact = devices.find(([, d]) => d.key === text.trim());
  if (exact) return exact[1].key;
  const want = squeeze(text);
  return devices.find(([code, d]) => [code, d.label, d.name].some((n) => squeeze(n) === want))?.[1].key;
}

// ---------- files ----------

/** Camera originals uploaded by default, as Settings offers them (extensions, upper case, no dot). */
export const MEDIA_FILE_TYPES = ['JPG', 'JPEG', 'DNG', 'TIF', 'TIFF', 'MP4', 'MOV'] as const;

/** The videos among them: their metadata is not EXIF. */
export const VIDEO_FILE_TYPES = ['MP4', 'MOV'] as const;

/**
 * Side-car files DJI writes next to the media: low-res video proxies (LRF),
 * thumbnails (THM, SCR) and telemetry subtitles (SRT). Never uploaded as
 * media, even when a user lists them.
 */
export const SIDECAR_FILE_TYPES = ['LRF', 'THM', 'SCR', 'SRT'] as const;

// ---------- waylines ----------

/** Wayline template types (`template_type`) with their names. */
export const TEMPLATE_TYPES: ReadonlyArray<{ value: number; name: string }> = [
  { value: 0, name: 'Waypoint' },
  { value: 1, name: 'Mapping 2D' },
  { value: 2, name: 'Mapping 3D' },
  { value: 3, name: 'Mapping strip' },
];

/** actionType of a wayline made for AI spot-check. */
export const AI_SPOT_CHECK_ACTION = 1;

// ---------- the window's views ----------

/** The window's views of the queue: all, what is still to upload, what needs the user, what is done. */
export const QUEUE_FILTERS = ['all', 'active', 'failed', 'done'] as const;

export type QueueFilter = (typeof QUEUE_FILTERS)[number];
