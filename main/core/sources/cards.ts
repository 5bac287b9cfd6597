import crypto from 'node:crypto';
import { EventEmitter } from 'node:events';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { cardSource, folderSource, type Source } from './source.js';

export interface Card {
  /** Stable identity: volume UUID where the OS gives it, else label + DCIM fingerprint. */
  id: string;
  label: string;
  root: string;
  /** Block device, where the OS tells (Linux mountinfo). */
  device?: string;
}

const FLIGHT_DIR = /^DJI_\d{12}_\d{3}(_.+)?$/;
const MEDIA_DIR = /^\d{3}MEDIA$/i;
const REMOVABLE_FS = new Set(['vfat', 'exfat', 'msdos', 'fat', 'fat32', 'ntfs', 'ntfs3', 'fuseblk']);

/** The places removable volumes appear on this OS (mount roots). */
export function defaultMountRoots(platform = process.platform, user = os.userInfo().username): string[] {
  if (platform === 'darwin') return ['/Volumes'];
  if (platform === 'win32') return []; // drive letters, see listVolumes
  return [`/media/${user}`, `/run/media/${user}`, '/media'];
}

/** A DJI card: DCIM holding DJI flight folders, ###MEDIA folders or PANORAMA. */
export function isDjiCard(root: string): boolean {
  let names: string[];
  try {
    names = fs.readdirSync(path.join(root, 'DCIM'));
  } catch {
    return false;
  }
  return names.some((n) => FLIGHT_DIR.test(n) || MEDIA_DIR.test(n) || n.toUpperCase() === 'PANORAMA');
}

/**
 * The DJI card a folder is inside of (`/media/CARD` for `/media/CARD/DCIM/DJI_…_001`), the
 * nearest one up to the file system's root; undefined when none holds it.
 */
export function cardAbove(folder: string): string | undefined {
  for (let dir = path.dirname(folder); ; dir = path.dirname(dir)) {
    if (isDjiCard(dir)) return dir;
    if (path.dirname(dir) === dir) return undefined;
  }
}

/** Mount point -> device, from /proc/self/mountinfo (Linux), for removable filesystems. */
export function removableMounts(mountinfo = '/proc/self/mountinfo'): Map<string, string> {
  const out = new Map<string, string>();
  let text: string;
  try {
    text = fs.readFileSync(mountinfo, 'utf8');
  } catch {
    return out;
  }
  for (const line of text.split('\n')) {
    const [left, right] = line.split(' - ');
    if (!left || !right) continue;
    const mountPoint = left.split(' ')[4];
    const [fstype, device] = right.split(' ');
    if (mountPoint && fstype && device && REMOVABLE_FS.has(fstype)) {
      out.set(mountPoint.replace(/\\040/g, ' '), device);
    }
  }
  return out;
}

/** Volume UUID of a block device via /dev/disk/by-uuid (Linux), if any. */
function uuidOfDevice(device: string): string | undefined {
  const dir = '/dev/disk/by-uuid';
  try {
    const target = fs.realpathSync(device);
    for (const uuid of fs.readdirSync(dir)) {
      if (fs.realpathSync(path.join(dir, uuid)) === target) return uuid;
    }
  } catch {
    // no udev here: fall back to the DCIM fingerprint
  }
  return undefined;
}

/** Files of the oldest DCIM folder that make a card's fingerprint. */
const FINGERPRINT_FILES = 8;

/**
 * A fingerprint of what the card carries: its oldest DCIM folder's name and
 * its first files (names, sizes, times). Stable while new flights are added
 * (they sort after), different for another card even in the same folder.
 */
export function dcimFingerprint(root: string): string {
  const dcim = path.join(root, 'DCIM');
  const h = crypto.createHash('sha256');
  try {
    const dirs = fs.readdirSync(dcim).sort();
    const first = dirs[0];
    h.update(first ?? '');
    if (first) {
      const files = fs.readdirSync(path.join(dcim, first)).sort().slice(0, FINGERPRINT_FILES);
      for (const f of files) {
        const st = fs.statSync(path.join(dcim, first, f));
        h.update(`/${f}/${st.size}/${Math.trunc(st.mtimeMs / 2000)}`);
      }
    }
  } catch {
    // an unreadable DCIM still gets an id (from the label)
  }
  return h.digest('hex').slice(0, 16);
}

/** The block device mounted exactly at `root` (Linux mountinfo), whatever its filesystem. */
export function deviceAt(root: string, mountinfo = '/proc/self/mountinfo'): string | undefined {
  let real: string;
  let text: string;
  try {
    real = fs.realpathSync(root);
    text = fs.readFileSync(mountinfo, 'utf8');
  } catch {
    return undefined;
  }
  let found: string | undefined;
  for (const line of text.split('\n')) {
    const [left, right] = line.split(' - ');
    if (!left || !right) continue;
    const mountPoint = left.split(' ')[4]?.replace(/\\040/g, ' ');
    const device = right.split(' ')[1];
    // The last mount at a point is the one seen there.
    if (mountPoint === real && device?.startsWith('/dev/')) found = device;
  }
  return found;
}

/**
 * The source a folder given to `sync` is: a DJI card is known by the card
 * (its volume's UUID where it is a mounted volume, else what it carries),
 * so two cards read one after the other from the same slot or folder are
 * two cards, and the same card is recognised wherever it is mounted; any
 * other folder by its path.
 */
export function sourceAt(root: string): Source {
  if (!isDjiCard(root)) return folderSource(root);
  return cardSource(cardIdentity(root, deviceAt(root)));
}

export function cardIdentity(root: string, device?: string): Card {
  const label = path.basename(root) || root;
  const uuid = device ? uuidOfDevice(device) : undefined;
  return {
    // What the card carries, not where it is mounted nor what its folder is called.
    id: uuid ? `uuid:${uuid}` : `dcim:${dcimFingerprint(root)}`,
    label,
    root,
    ...(device ? { device } : {}),
  };
}

export interface CardMonitorEvents {
  inserted: [Card];
  removed: [Card];
}

/**
 * Notices cards as they are mounted: lists the mount roots (and, on Linux,
 * the removable mounts in mountinfo) once a second. That reads a handful of
 * directory entries, never the disks themselves.
 */
export class CardMonitor extends EventEmitter<CardMonitorEvents> {
  private readonly known = new Map<string, Card>(); // by root
  private timer: NodeJS.Timeout | null = null;

  constructor(
    private readonly opts: { mountRoots?: string[]; intervalMs?: number; useMountinfo?: boolean } = {},
  ) {
    super();
  }

  start(): void {
    this.poll();
    this.timer = setInterval(() => this.poll(), this.opts.intervalMs ?? 1000);
    this.timer.unref();
  }

  stop(): void {
    if (this.timer) clearInterval(this.timer);
    this.timer = null;
  }

  cards(): Card[] {
    return [...this.known.values()];
  }

  /** Candidate volume roots right now, with their device when known. */
  listVolumes(): Map<string, string | undefined> {
    const out = new Map<string, string | undefined>();
    const roots = this.opts.mountRoots ?? defaultMountRoots();
    for (const r of roots) {
      let entries: fs.Dirent[];
      try {
        entries = fs.readdirSync(r, { withFileTypes: true });
      } catch {
        continue;
      }
      for (const e of entries)
        if (e.isDirectory() && !e.name.startsWith('.')) out.set(path.join(r, e.name), undefined);
    }
    if (process.platform === 'win32' && !this.opts.mountRoots) {
      for (let c = 68; c <= 90; c++) {
        const drive = `${String.fromCharCode(c)}:\\`;
        if (fs.existsSync(drive)) out.set(drive, undefined);
      }
    }
    if (this.opts.useMountinfo ?? (!this.opts.mountRoots && process.platform === 'linux')) {
      for (const [mp, dev] of removableMounts()) out.set(mp, dev);
    }
    return out;
  }

  poll(): void {
    const volumes = this.listVolumes();
    for (const [root, card] of this.known) {
      if (!volumes.has(root) || !fs.existsSync(path.join(root, 'DCIM'))) {
        this.known.delete(root);
        this.emit('removed', card);
      }
    }
    for (const [root, device] of volumes) {
      if (this.known.has(root) || !isDjiCard(root)) continue;
      const card = cardIdentity(root, device);
      this.known.set(root, card);
      this.emit('inserted', card);
    }
  }
}
