/** The window's words for DJI device keys and wayline types (the tables are main/shared/domain.ts). */
import { AIRCRAFT, CAMERAS, MEDIA_FILE_TYPES, TEMPLATE_TYPES } from '../../main/shared/domain.js';

export { AI_SPOT_CHECK_ACTION, TEMPLATE_TYPES } from '../../main/shared/domain.js';

/** A device as a list shows it: its key and its short label. */
export interface Named {
  key: string;
  name: string;
}

const named = (devices: Record<string, { key: string; label: string }>): readonly Named[] =>
  Object.values(devices).map((d) => ({ key: d.key, name: d.label }));

export const DRONE_MODELS = named(AIRCRAFT);
export const PAYLOAD_MODELS = named(CAMERAS);

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
export const FILE_TYPES: readonly string[] = MEDIA_FILE_TYPES;
