/**
 * Local destinations as a card sees them: each destination folder holds one
 * folder per card, named so two cards with the same label never mix (the
 * label, then a hash of the card's identity), with the card's files under it
 * as they are on the card, and the card's own ASC MHL history in `ascmhl/`.
 */
import { createHash } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import type { Config } from '../config.js';
import type { CopyFacts, Destination } from '../queue/copies.js';

/** A card's folder name in a destination (and in the state folder's manifests): readable, and unique by a hash of its id. */
export function cardFolderName(label: string, sourceId: string): string {
  const readable =
    label
      .normalize('NFC')
      .replace(/[^A-Za-z0-9._-]+/g, '_')
      .replace(/^[._-]+/, '')
      .slice(0, 48) || 'card';
  const id = createHash('sha256').update(sourceId).digest('hex').slice(0, 10);
  return `${readable}-${id}`;
}

/** The destinations of the settings (and of `--copy-to`), recorded in the store. */
export function destinationsOf(config: Config, copies: CopyFacts): Destination[] {
  const paths = config.destinations.map((d) => path.resolve(d.path));
  const base = (p: string): string => path.basename(p) || p;
  return config.destinations.map((d, i) => {
    const p = paths[i] as string;
    // The same folder name on two drives (DroneCopies on the T7 and on the SSD): each named with its
    // drive's folder too, so "DroneCopies unplugged" never leaves the crew asking which one.
    const twin = paths.some((q, j) => j !== i && base(q) === base(p));
    return copies.destination({
      path: p,
      label: d.label ?? (twin ? `${base(p)} (${base(path.dirname(p))})` : base(p)),
      role: d.role,
      keepDays: d.keepDays ?? null,
    });
  });
}

/** Where a card's copy lives on a destination. */
export function cardRootOn(destination: Destination, card: { label: string; sourceId: string }): string {
  return path.join(destination.path, cardFolderName(card.label, card.sourceId));
}

/** Bytes free for this user on the disk holding `dir` (its nearest existing folder), or null when unknown. */
export function freeBytes(dir: string): number | null {
  let p = path.resolve(dir);
  for (;;) {
    try {
      const st = fs.statfsSync(p);
      return st.bavail * st.bsize;
    } catch (err) {
      const parent = path.dirname(p);
      if ((err as { code?: string }).code !== 'ENOENT' || parent === p) return null;
      p = parent;
    }
  }
}

const GB = 1e9;
/** "41 GB", "1.2 GB", "850 MB": sizes as a crew member reads them on a drive's label. */
export function diskSize(bytes: number): string {
  if (bytes >= 10 * GB) return `${Math.floor(bytes / GB)} GB`;
  if (bytes >= GB) return `${(bytes / GB).toFixed(1)} GB`;
  return `${Math.max(1, Math.round(bytes / 1e6))} MB`;
}

/**
 * Why a destination cannot take what a card still needs, said before any
 * byte is written ("T7_BACKUP: 41 GB free, the card needs 58 GB"), or null.
 * A margin of 1 % (at least 64 MB) stays free: a disk filled to the last
 * byte fails in the middle of a file.
 */
export function spaceProblem(destination: Destination, needed: number): string | null {
  if (needed <= 0) return null;
  const free = freeBytes(destination.path);
  if (free === null) return null;
  const margin = Math.max(64e6, needed * 0.01);
  if (free >= needed + margin) return null;
  // More free than the card needs, yet refused: the margin is why, said (else "17 MB free, needs 5 MB" reads wrong).
  const why =
    free >= needed ? ` ${diskSize(margin)} more must stay free on the drive, so no file is cut short.` : '';
  return `${destination.label}: ${diskSize(free)} free, the card needs ${diskSize(needed)}. Nothing was written there; free space (or choose another destination), then sync again.${why}`;
}

/**
 * Where a destination's folder stands, as the crew would see it:
 * - ready: there, on the drive it was written on (or never written yet);
 * - not-created: not there, never written, its parent folder there (create it);
 * - missing: not there any more, on a drive that is plugged in (moved or
 *   deleted: never "unplugged");
 * - unplugged: its drive is gone (its parent folder gone with it, or a bare
 *   mount point left where the drive it was written on was);
 * - not-a-folder: a file is there (a path mistyped, or a file of that name):
 *   never "unplugged", nothing is written there.
 * `volume`: the st_dev of the folder when it was last written, if ever.
 */
export type DestinationLook = 'ready' | 'not-created' | 'missing' | 'unplugged' | 'not-a-folder';

const devOf = (p: string): string | null => {
  try {
    return String(fs.statSync(p).dev);
  } catch {
    return null;
  }
};

/**
 * Whether a destination lies on a drive that is mounted in one of `roots` (the
 * folders where drives appear as they are plugged in: /media/pilot, /Volumes)
 * and that drive is not mounted now: the drive's folder (`/media/pilot/T7_BACKUP`
 * for `/media/pilot/T7_BACKUP/DroneCopies`) is missing, or is a bare folder of
 * the laptop's disk left where it was mounted. Writing there would put the
 * copies on the laptop's own disk, under the drive's name.
 */
export function driveNotMounted(destination: string, roots: readonly string[]): boolean {
  const dir = path.resolve(destination);
  // The nearest root that holds it (/media/pilot before /media).
  const root = roots
    .map((r) => path.resolve(r))
    .filter((r) => {
      const rel = path.relative(r, dir);
      return rel !== '' && !rel.startsWith('..') && !path.isAbsolute(rel);
    })
    .sort((a, b) => b.length - a.length)[0];
  if (root === undefined) return false;
  const rootDev = devOf(root);
  if (rootDev === null) return false;
  const drive = path.join(root, path.relative(root, dir).split(path.sep)[0] as string);
  const driveDev = devOf(drive);
  return driveDev === null || driveDev === rootDev;
}

export function lookAt(destination: Pick<Destination, 'path'>, volume: string | null): DestinationLook {
  const dir = path.resolve(destination.path);
  const parent = path.dirname(dir);
  let st: fs.Stats;
  try {
    st = fs.statSync(dir);
  } catch (err) {
    if ((err as { code?: string }).code !== 'ENOENT') return 'ready'; // not ours to say: the write says why
    const parentDev = devOf(parent);
    if (parentDev === null) return 'unplugged';
    if (volume === null) return 'not-created';
    return parentDev === volume ? 'missing' : 'unplugged';
  }
  // Written on another volume, and now only a folder of its parent's disk: the drive's bare mount point.
  if (volume !== null && String(st.dev) !== volume && devOf(parent) === String(st.dev)) return 'unplugged';
  return st.isDirectory() ? 'ready' : 'not-a-folder';
}

/** What a destination's look says to the crew, for a look that is not ready. */
export function lookMessage(destination: Destination, look: Exclude<DestinationLook, 'ready'>): string {
  const label = destination.label;
  switch (look) {
    case 'not-created':
      return `${label}: the folder ${destination.path} did not exist yet; it was created.`;
    case 'missing':
      return `${label}: the folder ${destination.path} is not there any more on its drive (moved or deleted?): its copy of this card stopped. Sync again to make it anew there; the other copies go on.`;
    case 'unplugged':
      return `${label}: its drive is not plugged in (${destination.path} is not there): its copy of this card stopped. Plug it in, then sync again; the other copies go on.`;
    case 'not-a-folder':
      return `${label}: ${destination.path} is a file, not a folder: its copy of this card stopped, nothing was written there. Choose a folder for the copies (or move that file away), then sync again; the other copies go on.`;
  }
}

const readOnly = (label: string): string =>
  `${label} cannot be written (read-only, or no permission): its copy of this card stopped. The other copies go on.`;

/** False only when the folder is there and refuses writes (a folder that is gone is another story). */
function writable(dir: string): boolean {
  try {
    fs.accessSync(dir, fs.constants.W_OK);
    return true;
  } catch (err) {
    const code = (err as { code?: string }).code;
    return code !== 'EROFS' && code !== 'EACCES' && code !== 'EPERM';
  }
}

/** What a failed write to a destination means for the crew: full, unplugged, gone, or not writable. */
export function destinationProblem(
  destination: Destination,
  err: unknown,
  volume: string | null = null,
): string {
  const code = (err as { code?: string } | null)?.code;
  const label = destination.label;
  if (code === 'ENOSPC' || code === 'EDQUOT')
    return `${label} is full: its copy of this card stopped. Free space on it, then sync again; the other copies go on.`;
  if (code === 'ENODEV' || code === 'EIO' || code === 'ENXIO') return lookMessage(destination, 'unplugged');
  if (code === 'ENOENT' || code === 'ENOTDIR') {
    const look = lookAt(destination, volume);
    if (look === 'unplugged' || look === 'missing' || look === 'not-a-folder')
      return lookMessage(destination, look);
    // Node's recursive mkdir answers ENOENT, not EROFS, on a read-only drive: asked plainly here.
    if (!writable(destination.path)) return readOnly(label);
    return `${label}: a folder of this card's copy went away while it was written (moved or deleted?): its copy of this card stopped. Sync again to make it anew; the other copies go on.`;
  }
  if (code === 'EROFS' || code === 'EACCES' || code === 'EPERM') return readOnly(label);
  const message = err instanceof Error ? err.message : String(err);
  return `${label}: the copy of this card stopped (${message}). The other copies go on.`;
}
