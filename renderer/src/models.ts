/** DJI device keys ("domain-type-subtype") the crews fly, with the names printed on the aircraft. */

export interface Named {
  key: string;
  name: string;
}

export const DRONE_MODELS: readonly Named[] = [
  { key: '0-60-0', name: 'M300 RTK' },
  { key: '0-89-0', name: 'M350 RTK' },
  { key: '0-103-0', name: 'M400' },
  { key: '0-67-0', name: 'M30' },
  { key: '0-67-1', name: 'M30T' },
  { key: '0-77-0', name: 'Mavic 3E' },
  { key: '0-77-1', name: 'Mavic 3T' },
  { key: '0-77-2', name: 'Mavic 3M' },
  { key: '0-77-3', name: 'Mavic 3TA' },
  { key: '0-91-0', name: 'M3D' },
  { key: '0-91-1', name: 'M3TD' },
  { key: '0-99-0', name: 'Matrice 4E' },
  { key: '0-99-1', name: 'Matrice 4T' },
  { key: '0-100-0', name: 'M4D' },
  { key: '0-100-1', name: 'M4TD' },
];

export const PAYLOAD_MODELS: readonly Named[] = [
  { key: '1-42-0', name: 'H20' },
  { key: '1-43-0', name: 'H20T' },
  { key: '1-61-0', name: 'H20N' },
  { key: '1-82-0', name: 'H30' },
  { key: '1-83-0', name: 'H30T' },
  { key: '1-52-0', name: 'M30 camera' },
  { key: '1-53-0', name: 'M30T camera' },
  { key: '1-66-0', name: 'M3E camera' },
  { key: '1-67-0', name: 'M3T camera' },
  { key: '1-68-0', name: 'M3M camera' },
  { key: '1-129-0', name: 'M3TA camera' },
  { key: '1-80-0', name: 'M3D camera' },
  { key: '1-81-0', name: 'M3TD camera' },
  { key: '1-88-0', name: 'M4E camera' },
  { key: '1-89-0', name: 'M4T camera' },
  { key: '1-98-0', name: 'M4D camera' },
  { key: '1-99-0', name: 'M4TD camera' },
  { key: '1-50-65535', name: 'P1' },
];

export const TEMPLATE_TYPES: ReadonlyArray<{ value: number; name: string }> = [
  { value: 0, name: 'Waypoint' },
  { value: 1, name: 'Mapping 2D' },
  { value: 2, name: 'Mapping 3D' },
  { value: 3, name: 'Mapping strip' },
];

/** actionType of a wayline made for AI spot-check. */
export const AI_SPOT_CHECK_ACTION = 1;

const droneNames = new Map(DRONE_MODELS.map((m) => [m.key, m.name]));
const payloadNames = new Map(PAYLOAD_MODELS.map((m) => [m.key, m.name]));
const templateNames = new Map(TEMPLATE_TYPES.map((t) => [t.value, t.name]));

export function droneName(key: string | null): string {
  if (key === null || key === '') return 'Not set';
  return droneNames.get(key) ?? `Other aircraft (${key})`;
}

export function payloadName(key: string): string {
  return payloadNames.get(key) ?? `Other payload (${key})`;
}

export function templateName(value: number): string {
  return templateNames.get(value) ?? `Other type (${value})`;
}

/** File types the engine can upload, as offered in Settings. */
export const FILE_TYPES: readonly string[] = ['JPG', 'JPEG', 'DNG', 'TIF', 'TIFF', 'MP4', 'MOV'];
