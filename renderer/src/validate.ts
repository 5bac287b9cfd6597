/**
 * Checks the Settings form before anything is sent, with the reason in plain
 * words for each field. Mirrors SettingsSchema in main/shared/ipc.ts (which
 * main applies again), plus the rules main adds (http/https URL, workspace).
 */
import type { DestinationView, FieldErrors, SettingsView } from '../../main/shared/ipc.js';
import { FILE_TYPES } from './models.js';

export interface SettingsForm {
  serverUrl: string;
  workspaceId: string;
  useLocalService: boolean;
  autoSyncCards: boolean;
  ejectAfterSync: boolean;
  watchedFolders: string[];
  include: string[];
  filesConcurrency: string;
  partsConcurrency: string;
  bandwidthLimitKiBps: string;
  aircraftDefault: string;
  aircraftSerial: string;
  startAtLogin: boolean;
  destinations: DestinationForm[];

  // --- flight checks (issue 32) ---
  /** Metres as typed; '' = no minimum height. */
  flightMinHeightM: string;
  /** Leave photos flagged as unusable out of a metered upload. */
  holdFlaggedOnMetered: boolean;
}

/** A local destination as its row of the form holds it (keep days as typed). */
export interface DestinationForm {
  path: string;
  label: string;
  role: DestinationView['role'];
  keepDays: string;
}

/** Staging copies are kept this long once in the workspace, unless the crew says otherwise. */
export const DEFAULT_KEEP_DAYS = '7';

export function toForm(s: SettingsView): SettingsForm {
  return {
    serverUrl: s.serverUrl,
    workspaceId: s.workspaceId,
    useLocalService: s.useLocalService,
    autoSyncCards: s.autoSyncCards,
    ejectAfterSync: s.ejectAfterSync,
    watchedFolders: [...s.watchedFolders],
    include: [...s.include],
    filesConcurrency: String(s.filesConcurrency),
    partsConcurrency: String(s.partsConcurrency),
    bandwidthLimitKiBps: String(s.bandwidthLimitKiBps),
    aircraftDefault: s.aircraftDefault,
    aircraftSerial: s.aircraftSerial,
    startAtLogin: s.startAtLogin,
    destinations: s.destinations.map((d) => ({
      path: d.path,
      label: d.label,
      role: d.role,
      keepDays: d.keepDays === null ? (d.role === 'staging' ? '' : DEFAULT_KEEP_DAYS) : String(d.keepDays),
    })),

    // --- flight checks (issue 32) ---
    flightMinHeightM: s.flightMinHeightM == null ? '' : String(s.flightMinHeightM),
    holdFlaggedOnMetered: s.holdFlaggedOnMetered ?? false,
  };
}

/** The minimum flight height: metres from 0 to 1000 (decimals allowed), '' = none. */
export function minHeight(text: string): { value: number | null } | { error: string } {
  const t = text.trim().replace(',', '.');
  if (t === '') return { value: null };
  if (!/^\d+(\.\d+)?$/.test(t))
    return { error: 'Enter a height in metres, like 30, or leave it empty for no minimum.' };
  const n = Number(t);
  if (n > 1000) return { error: 'Must be from 0 to 1,000 m (or empty for no minimum).' };
  return { value: n };
}

/**
 * The destinations to send, or the first problem, naming the destination.
 * Whether a folder is there and writable only main can tell (it says so).
 */
function checkDestinations(
  list: readonly DestinationForm[],
): { value: DestinationView[] } | { error: string } {
  if (list.length > 8) return { error: 'At most 8 copy destinations.' };
  const value: DestinationView[] = [];
  for (const d of list) {
    const name = d.label.trim() || d.path;
    if (d.label.trim().length > 64) return { error: `${name}: the label is at most 64 characters.` };
    let keepDays: number | null = null;
    if (d.role === 'staging') {
      const n = wholeNumber(d.keepDays, 0, 3650, 'the days its copies are kept once in the workspace');
      if ('error' in n) return { error: `${name} (staging): ${n.error}` };
      keepDays = n.value;
    }
    value.push({ path: d.path, label: d.label.trim(), role: d.role, keepDays });
  }
  return { value };
}

/** A reason when `url` is not an http(s) address, else null. */
export function urlProblem(url: string): string | null {
  const v = url.trim();
  if (!/^https?:\/\//i.test(v)) return 'The address must start with http:// or https://';
  if (v.length > 2048) return 'The address is too long (2048 characters at most).';
  try {
    const u = new URL(v);
    if (u.hostname === '') return 'The address has no server name after http(s)://';
  } catch {
    return 'This is not a valid web address. Example: https://fh.example.com';
  }
  if (/\s/.test(v)) return 'The address must not contain spaces.';
  return null;
}

function wholeNumber(
  text: string,
  min: number,
  max: number,
  what: string,
): { value: number } | { error: string } {
  const t = text.trim();
  if (t === '') return { error: `Enter ${what}.` };
  if (!/^\d+$/.test(t)) return { error: `Enter a whole number from ${min} to ${max.toLocaleString('en')}.` };
  const n = Number(t);
  if (n < min || n > max) return { error: `Must be from ${min} to ${max.toLocaleString('en')}.` };
  return { value: n };
}

export function isKnownType(t: string): boolean {
  return FILE_TYPES.includes(t.toUpperCase());
}

/** Either the settings to send, or the reasons to show next to the fields. */
export function validateSettings(
  f: SettingsForm,
): { ok: true; value: SettingsView } | { ok: false; errors: FieldErrors } {
  const errors: FieldErrors = {};
  const serverUrl = f.serverUrl.trim();
  const workspaceId = f.workspaceId.trim();

  if (serverUrl !== '') {
    const p = urlProblem(serverUrl);
    if (p) errors.serverUrl = p;
  } else if (!f.useLocalService) {
    errors.serverUrl = 'Enter the server address, or turn on the built-in local service.';
  }
  if (!f.useLocalService && serverUrl !== '' && workspaceId === '') {
    errors.workspaceId = 'Enter the workspace ID: a server needs one.';
  } else if (workspaceId.length > 128) {
    errors.workspaceId = 'The workspace ID is too long (128 characters at most).';
  }

  if (f.watchedFolders.length > 50) errors.watchedFolders = 'At most 50 folders can be watched.';
  if (f.include.length === 0) errors.include = 'Choose at least one file type.';
  else if (f.include.some((t) => !/^[A-Za-z0-9]{1,10}$/.test(t)))
    errors.include = 'File types are letters and digits only.';

  const files = wholeNumber(f.filesConcurrency, 1, 16, 'how many files to upload at once');
  if ('error' in files) errors.filesConcurrency = files.error;
  const parts = wholeNumber(f.partsConcurrency, 1, 16, 'how many parts per file');
  if ('error' in parts) errors.partsConcurrency = parts.error;
  const bw = wholeNumber(f.bandwidthLimitKiBps, 0, 10_000_000, 'a limit (0 means no limit)');
  if ('error' in bw) errors.bandwidthLimitKiBps = bw.error;

  if (!/^(0-\d+-\d+)?$/.test(f.aircraftDefault)) errors.aircraftDefault = 'Choose an aircraft from the list.';
  const serial = f.aircraftSerial.trim();
  if (serial !== '' && !/^[A-Za-z0-9-]{4,64}$/.test(serial))
    errors.aircraftSerial =
      'Enter the serial number printed on the aircraft (letters and digits), or leave it empty.';

  const destinations = checkDestinations(f.destinations);
  if ('error' in destinations) errors.destinations = destinations.error;

  // --- flight checks (issue 32) ---
  const height = minHeight(f.flightMinHeightM);
  if ('error' in height) errors.flightMinHeightM = height.error;

  if (
    Object.keys(errors).length > 0 ||
    'error' in files ||
    'error' in parts ||
    'error' in bw ||
    'error' in destinations ||
    'error' in height
  )
    return { ok: false, errors };
  return {
    ok: true,
    value: {
      serverUrl,
      workspaceId,
      useLocalService: f.useLocalService,
      autoSyncCards: f.autoSyncCards,
      ejectAfterSync: f.ejectAfterSync,
      watchedFolders: [...f.watchedFolders],
      include: [...f.include],
      filesConcurrency: files.value,
      partsConcurrency: parts.value,
      bandwidthLimitKiBps: bw.value,
      aircraftDefault: f.aircraftDefault,
      aircraftSerial: serial,
      startAtLogin: f.startAtLogin,
      destinations: destinations.value,
      flightMinHeightM: height.value,
      holdFlaggedOnMetered: f.holdFlaggedOnMetered,
    },
  };
}
