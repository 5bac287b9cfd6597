/**
 * Settings as the window edits them <-> config.json (shared with the CLI).
 * Saving merges into the file's current content, so fields the window does
 * not show (mount roots, part size, CA file...) keep what the CLI or a
 * person wrote there. Every rejection names the field, in plain words.
 */
import fs from 'node:fs';
import path from 'node:path';
import type { z } from 'zod';
import { ConfigSchema, type Config } from '../core/config.js';
import { tidyServerUrl } from '../core/session/target.js';
import type { FieldErrors, SettingsView } from '../shared/ipc.js';

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

export type SettingsOutcome = { ok: true; config: Config } | { ok: false; fields: FieldErrors };

/**
 * Applies the window's settings onto the current config. Folders already
 * watched may be missing right now (an unplugged drive) and are kept; a newly
 * added folder must exist.
 */
export function applySettings(
  current: Config,
  view: SettingsView,
  exists: (p: string) => boolean = isDirectory,
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
    else if (!current.watchedFolders.includes(f) && !exists(f))
      fields.watchedFolders ??= `The folder ${f} does not exist (or is not a folder).`;
  }
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
  };
  const parsed = ConfigSchema.safeParse(candidate);
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
    prev.watchedFolders.some((f) => !next.watchedFolders.includes(f))
  );
}
