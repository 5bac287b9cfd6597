/**
 * Settings as the window edits them <-> config.json (shared with the CLI).
 * Saving merges into the file's current content, so fields the window does
 * not show (mount roots, part size, CA file...) keep what the CLI or a
 * person wrote there. Every rejection names the field, in plain words.
 */
import fs from 'node:fs';
import path from 'node:path';
import type { z } from 'zod';
import { configSchema, type Config } from '../core/config.js';
import { tidyServerUrl } from '../core/session/target.js';
import type { DestinationView, FieldErrors, SettingsView } from '../shared/ipc.js';

type Field = keyof SettingsView | 'form';

/** Plain reasons per field, used for schema-level rejections (the window's own form shows them). */
const FIELD_RULES: Record<keyof SettingsView, string> = {
  serverUrl: 'The server address must start with http:// or https://, for example https://media.example.com.',
  workspaceId: 'The workspace id is at most 128 characters.',
  useLocalService: 'Choose on or off.',
  autoSyncCards: 'Choose on or off.',
  ejectAfterSync: 'Choose on or off.',
  watchedFolders: 'Folders must be full paths (at most 50 folders).',
  include: 'File types are extensions of letters and digits, like JPG or MP4 (1 to 30 of them).',
  filesConcurrency: 'Files at once must be a whole number from 1 to 16.',
  partsConcurrency: 'Parts per file at once must be a whole number from 1 to 16.',
  bandwidthLimitKiBps: 'The bandwidth limit is a whole number of KiB/s (0 means no limit).',
  aircraftDefault: 'The default aircraft is a DJI key like 0-89-0 (M350), or empty.',
  aircraftSerial:
    'The aircraft serial is the serial number printed on the aircraft (letters and digits), or empty.',
  startAtLogin: 'Choose on or off.',
  destinations:
    'Each copy destination is a full folder path with a label of at most 64 characters (at most 8 destinations).',

  // --- flight checks (issue 32) ---
  flightMinHeightM: 'The minimum flight height is a number of metres from 0 to 1000, or empty (no minimum).',
  holdFlaggedOnMetered: 'Choose on or off.',
};

/** Config paths (as zod reports them) -> the window's field names. */
function fieldOfConfigPath(p: readonly PropertyKey[]): Field {
  const [a, b] = p;
  if (a === 'server') return b === 'workspaceId' ? 'workspaceId' : 'serverUrl';
  if (a === 'concurrency') return b === 'parts' ? 'partsConcurrency' : 'filesConcurrency';
  if (typeof a === 'string' && a in FIELD_RULES) return a as keyof SettingsView;
  return 'form';
}

/** Rejections of the request schema itself (SettingsSchema), per field. */
export function fieldErrorsFromIssues(issues: z.ZodError['issues']): FieldErrors {
  const out: FieldErrors = {};
  for (const i of issues) {
    const f = fieldOfConfigPath(i.path);
    out[f] ??= f === 'form' ? 'These settings are not valid.' : FIELD_RULES[f];
  }
  return out;
}

export function toSettingsView(config: Config): SettingsView {
  return {
    serverUrl: config.server?.url ?? '',
    workspaceId: config.server?.workspaceId ?? '',
    useLocalService: config.useLocalService,
    autoSyncCards: config.autoSyncCards,
    ejectAfterSync: config.ejectAfterSync,
    watchedFolders: [...config.watchedFolders],
    include: [...config.include],
    filesConcurrency: config.concurrency.files,
    partsConcurrency: config.concurrency.parts,
    bandwidthLimitKiBps: config.bandwidthLimitKiBps,
    aircraftDefault: config.aircraftDefault ?? '',
    aircraftSerial: config.aircraftSerial ?? '',
    startAtLogin: config.startAtLogin,
    destinations: config.destinations.map((d) => ({
      path: d.path,
      label: d.label ?? '',
      role: d.role,
      keepDays: d.keepDays ?? null,
    })),

    // --- flight checks (issue 32) ---
    flightMinHeightM: config.flightMinHeightM ?? null,
    holdFlaggedOnMetered: config.holdFlaggedOnMetered,
  };
}

/** null when the address is usable, else the plain reason. */
export function serverUrlProblem(url: string): string | null {
  try {
    const u = new URL(url);
    if ((u.protocol === 'http:' || u.protocol === 'https:') && u.hostname !== '') return null;
  } catch {
    // fall through
  }
  return FIELD_RULES.serverUrl;
}

function isDirectory(p: string): boolean {
  try {
    return fs.statSync(p).isDirectory();
  } catch {
    return false;
  }
}

/** The folder can be written to by this user (access(2) also says no on a read-only disk). */
function isWritable(p: string): boolean {
  try {
    fs.accessSync(p, fs.constants.W_OK);
    return true;
  } catch {
    return false;
  }
}

/** What the disk says about a folder: there (as a folder), and writable. */
export interface FolderProbe {
  exists(p: string): boolean;
  writable(p: string): boolean;
}

const DISK: FolderProbe = { exists: isDirectory, writable: isWritable };

/**
 * The first problem of the destinations, in plain words naming the one it
 * is about, or null. A destination already in the settings may be
 * unplugged right now (a drive taken away) and is kept as it is; a new one
 * must be there and writable. A staging destination needs its keep days.
 */
export function destinationsProblem(
  current: Config['destinations'],
  list: readonly DestinationView[],
  disk: FolderProbe = DISK,
): string | null {
  const seen = new Set<string>();
  for (const d of list) {
    const name = d.label || d.path;
    if (!path.isAbsolute(d.path))
      return `"${d.path}" is not a full path; choose the folder with Add destination.`;
    if (seen.has(path.resolve(d.path))) return `${d.path} is in the list twice.`;
    seen.add(path.resolve(d.path));
    if (d.role === 'staging' && d.keepDays === null)
      return `${name}: a staging destination needs the days its copies are kept once they are in the workspace (0 or more).`;
    if (current.some((c) => path.resolve(c.path) === path.resolve(d.path))) continue;
    if (!disk.exists(d.path))
      return `The folder ${d.path} does not exist (or is not a folder): plug in the drive, or choose another folder.`;
    if (!disk.writable(d.path))
      return `The folder ${d.path} cannot be written to: choose a folder on a drive you can write to.`;
  }
  return null;
}

export type SettingsOutcome = { ok: true; config: Config } | { ok: false; fields: FieldErrors };

/**
 * Applies the window's settings onto the current config. Folders already
 * watched may be missing right now (an unplugged drive) and are kept; a newly
 * added folder must exist.
 */
export function applySettings(
  current: Config,
  view: SettingsView,
  disk: FolderProbe = DISK,
): SettingsOutcome {
  const fields: FieldErrors = {};
  const serverUrl = tidyServerUrl(view.serverUrl);
  const workspaceId = view.workspaceId.trim();
  if (serverUrl !== '') {
    const problem = serverUrlProblem(serverUrl);
    if (problem) fields.serverUrl = problem;
    if (workspaceId === '')
      fields.workspaceId = 'The workspace is required when a server is set (signing in fills it in).';
  }
  const folders = [...new Set(view.watchedFolders.map((f) => f.trim()))];
  for (const f of folders) {
    if (!path.isAbsolute(f))
      fields.watchedFolders ??= `"${f}" is not a full path; choose the folder with the Add folder button.`;
    else if (!current.watchedFolders.includes(f) && !disk.exists(f))
      fields.watchedFolders ??= `The folder ${f} does not exist (or is not a folder).`;
  }
  const destinations = view.destinations.map((d) => ({ ...d, path: d.path.trim(), label: d.label.trim() }));
  const destinationProblem = destinationsProblem(current.destinations, destinations, disk);
  if (destinationProblem) fields.destinations = destinationProblem;
  if (Object.keys(fields).length) return { ok: false, fields };

  const candidate = {
    ...current,
    server: serverUrl === '' ? undefined : { url: serverUrl, workspaceId },
    useLocalService: view.useLocalService,
    autoSyncCards: view.autoSyncCards,
    ejectAfterSync: view.ejectAfterSync,
    watchedFolders: folders,
    include: [...new Set(view.include.map((e) => e.toUpperCase()))],
    concurrency: { files: view.filesConcurrency, parts: view.partsConcurrency },
    bandwidthLimitKiBps: view.bandwidthLimitKiBps,
    aircraftDefault: view.aircraftDefault === '' ? undefined : view.aircraftDefault,
    aircraftSerial: view.aircraftSerial.trim() === '' ? undefined : view.aircraftSerial.trim(),
    startAtLogin: view.startAtLogin,
    destinations: destinations.map((d) => ({
      path: d.path,
      ...(d.label ? { label: d.label } : {}),
      role: d.role,
      // Archive copies are kept: keep days mean nothing there.
      ...(d.role === 'staging' && d.keepDays !== null ? { keepDays: d.keepDays } : {}),
    })),

    // --- flight checks (issue 32) ---
    flightMinHeightM:
      view.flightMinHeightM === undefined ? current.flightMinHeightM : (view.flightMinHeightM ?? undefined),
    holdFlaggedOnMetered: view.holdFlaggedOnMetered ?? current.holdFlaggedOnMetered,
  };
  const parsed = configSchema().safeParse(candidate);
  if (!parsed.success) {
    for (const i of parsed.error.issues) {
      const f = fieldOfConfigPath(i.path);
      fields[f] ??= f === 'form' ? `The settings are not valid: ${i.message}.` : FIELD_RULES[f];
    }
    return { ok: false, fields };
  }
  return { ok: true, config: parsed.data };
}

const same = (a: unknown, b: unknown) => JSON.stringify(a) === JSON.stringify(b);

/**
 * Whether the running agent must be rebuilt: another server or sign-in, card
 * watching switched, a folder no longer watched (the agent cannot drop one).
 * Everything else is applied live.
 */
export function needsRestart(prev: Config, next: Config): boolean {
  return (
    !same(prev.server, next.server) ||
    prev.useLocalService !== next.useLocalService ||
    prev.autoSyncCards !== next.autoSyncCards ||
    !same(prev.mountRoots, next.mountRoots) ||
    prev.caFile !== next.caFile ||
    !same(prev.destinations, next.destinations) ||
    prev.watchedFolders.some((f) => !next.watchedFolders.includes(f))
  );
}
