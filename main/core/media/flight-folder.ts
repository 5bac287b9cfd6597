import { createHash } from 'node:crypto';

export interface FlightFolder {
  /**
   * The wayline flight folder name (`DJI_<YYYYMMDDHHMM>_<NNN>_<mission name>`)
   * when the file sits in one, else ''. This is the callback's `path`.
   */
  path: string;
  /** The mission (wayline) name part of that folder, as written (may be non-ASCII). */
  missionName?: string;
  /** The callback's `ext.file_group_id`: stable for all files of one folder, on every run. */
  fileGroupId: string;
}

/**
 * Pilot 2 / enterprise flight folders: DJI_<YYYYMMDDHHMM>_<NNN>[_<mission name>].
 * The mission name may itself contain "_" and any script (Cyrillic seen on real
 * cards), so everything after the index belongs to it.
 */
const FLIGHT_FOLDER = /^DJI_(\d{12})_(\d{3})(?:_(.*))?$/i;

/**
 * Fixed namespace for our UUIDv5 ids (generated once for this project; never
 * change it, or every group id would change on the next run).
 */
const NAMESPACE = Buffer.from('3b9f6c1e8d2a4f5e9a7c0d1b2e3f4a5b', 'hex');

/** RFC 4122 version 5 (SHA-1, name-based) UUID: deterministic and UUID-shaped. */
export function uuidV5(name: string): string {
  const digest = createHash('sha1').update(NAMESPACE).update(name, 'utf8').digest();
  const b = digest.subarray(0, 16);
  b[6] = ((b[6] ?? 0) & 0x0f) | 0x50; // version 5
  b[8] = ((b[8] ?? 0) & 0x3f) | 0x80; // RFC 4122 variant
  const h = b.toString('hex');
  return `${h.slice(0, 8)}-${h.slice(8, 12)}-${h.slice(12, 16)}-${h.slice(16, 20)}-${h.slice(20)}`;
}

/**
 * Where a card file belongs, from its path relative to the card root
 * ("/" or "\" separators both work).
 *
 * path rule: the sample server treats `path` as the card folder of a WAYLINE
 * flight and leaves it empty for photos not taken on a wayline. Pilot 2 names
 * the folder of a wayline flight after the mission; a folder without a name
 * part (`DJI_202208311455_008`) is a manual flight, so its path is ''. The
 * nearest enclosing DJI_ folder counts (a PANORAMA sub-folder inside a flight
 * folder still belongs to that flight).
 *
 * fileGroupId rule: a UUIDv5 of the flight folder name when there is one
 * (with or without mission name: its minute timestamp and index make it one
 * flight of one aircraft), else of the file's parent folder path, so all of
 * `DCIM/100MEDIA` is one group (the same folder name on two cards gives the
 * same id: good enough, there is no flight to tell them apart). Names are
 * NFC-normalised first because macOS may hand us decomposed (NFD) Cyrillic or
 * accented names that look identical but would hash differently.
 */
export function flightFolderOf(relPath: string): FlightFolder {
  // Every file of a folder has the same answer: worked out once per folder
  // (a UUIDv5 and an NFC pass per file showed in profiles of small files).
  const file = /[\\/]$/.test(relPath) ? relPath.replace(/[\\/]+$/, '') : relPath;
  const cut = Math.max(file.lastIndexOf('/'), file.lastIndexOf('\\'));
  const dir = cut < 0 ? '' : file.slice(0, cut);
  let known = byFolder.get(dir);
  if (known === undefined) {
    if (byFolder.size >= FOLDERS_KEPT) byFolder.clear();
    known = folderOf(dir);
    byFolder.set(dir, known);
  }
  return { ...known };
}

/** flightFolderOf's answers by the file's folder (as written): a card has tens of folders, not thousands. */
const byFolder = new Map<string, FlightFolder>();
const FOLDERS_KEPT = 256;

function folderOf(dir: string): FlightFolder {
  const dirs = dir
    .normalize('NFC')
    .split(/[\\/]+/)
    .filter((p) => p !== '' && p !== '.');

  for (let i = dirs.length - 1; i >= 0; i--) {
    const folder = dirs[i] ?? '';
    const m = FLIGHT_FOLDER.exec(folder);
    if (!m) continue;
    const fileGroupId = uuidV5(`flight-folder:${folder}`);
    const name = m[3]?.trim();
    return name ? { path: folder, missionName: name, fileGroupId } : { path: '', fileGroupId };
  }
  return { path: '', fileGroupId: uuidV5(`card-folder:${dirs.join('/')}`) };
}
