// Deterministic synthetic SD cards with DJI's layout and names. Content is an
// AES-128-CTR keystream keyed by (seed, file): incompressible, different for
// every file (so every fingerprint differs) and the same on every run.
// A group may start each file with a real DJI photo (`head`: its EXIF, XMP
// and embedded preview, which the flight checks decode), the keystream after
// its end marker: what a camera writes is then read, parsed and checked as on
// a real card. Without it the agent falls back to the file's time.
import { createCipheriv, createHash } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { Buffer } from 'node:buffer';

export const MiB = 1024 * 1024;
export const KiB = 1024;

const CHUNK = 4 * MiB;
const ZERO = Buffer.alloc(CHUNK);
/** Every file gets this mtime: DJI cards keep the capture time there too. */
const MTIME = new Date('2024-01-01T12:00:00Z');

function keystream(seed, id) {
  const key = createHash('sha256').update(`${seed}:${id}`).digest().subarray(0, 16);
  return createCipheriv('aes-128-ctr', key, Buffer.alloc(16));
}

function writeFile(file, size, seed, id, head) {
  const c = keystream(seed, id);
  const fd = fs.openSync(file, 'w');
  try {
    let left = size;
    if (head) {
      fs.writeSync(fd, head.subarray(0, Math.min(head.length, size)));
      left -= Math.min(head.length, size);
    }
    for (; left > 0;) {
      const n = Math.min(left, CHUNK);
      fs.writeSync(fd, c.update(ZERO.subarray(0, n)));
      left -= n;
    }
  } finally {
    fs.closeSync(fd);
  }
  fs.utimesSync(file, MTIME, MTIME);
}

const pad = (n, w) => String(n).padStart(w, '0');

const heads = new Map();
/** A real photo's bytes, read once per run. */
function headOf(file) {
  if (!heads.has(file)) heads.set(file, fs.readFileSync(file));
  return heads.get(file);
}

/**
 * A real DJI photo from the shared fixtures (../shared/fixtures beside the
 * repository), or undefined where they are not (then the card is all keystream).
 */
export function fixturePhoto(rel) {
  const file = path.resolve(
    path.dirname(new URL(import.meta.url).pathname),
    '../../../../shared/fixtures/dji',
    rel,
  );
  return fs.existsSync(file) ? file : undefined;
}

/** `DJI_YYYYMMDDhhmmss_NNNN_W.EXT` for file `i` (0-based) of a flight that started at `start`. */
function mediaName(start, i, ext) {
  const t = new Date(start.getTime() + i * 2000);
  const stamp =
    `${t.getUTCFullYear()}${pad(t.getUTCMonth() + 1, 2)}${pad(t.getUTCDate(), 2)}` +
    `${pad(t.getUTCHours(), 2)}${pad(t.getUTCMinutes(), 2)}${pad(t.getUTCSeconds(), 2)}`;
  return `DJI_${stamp}_${pad(i + 1, 4)}_W.${ext}`;
}

/** `DCIM/DJI_YYYYMMDDhhmm_NNN_<Mission>` */
function flightFolder(root, start, n, mission) {
  const t = start;
  const stamp = `${t.getUTCFullYear()}${pad(t.getUTCMonth() + 1, 2)}${pad(t.getUTCDate(), 2)}${pad(t.getUTCHours(), 2)}${pad(t.getUTCMinutes(), 2)}`;
  const dir = path.join(root, 'DCIM', `DJI_${stamp}_${pad(n, 3)}_${mission}`);
  fs.mkdirSync(dir, { recursive: true });
  return dir;
}

/**
 * Builds a card under `root`. `spec.groups`: [{ count, size, ext }], written
 * into flight folders of at most `perFolder` files; a group with `suffix`
 * instead of `ext` is one file named after its flight folder, as DJI names
 * the RTK files (`DJI_202401011200_001` + `_Timestamp.MRK`). Returns the
 * card's files.
 */
export function makeCard(root, spec) {
  const { mission, seed, groups, perFolder = 999 } = spec;
  const start = new Date(spec.start ?? '2024-01-01T12:00:00Z');
  const files = [];
  let index = 0;
  let folder = null;
  let folderNo = 0;
  let folderStart = start;
  for (const g of groups) {
    for (let k = 0; k < g.count; k++, index++) {
      if (index % perFolder === 0) {
        folderNo++;
        folderStart = new Date(start.getTime() + (folderNo - 1) * 3_600_000);
        folder = flightFolder(root, folderStart, folderNo, mission);
      }
      const name = g.suffix
        ? `${path.basename(folder).slice(0, -(mission.length + 1))}${g.suffix}`
        : mediaName(folderStart, index % perFolder, g.ext);
      const file = path.join(folder, name);
      writeFile(file, g.size, seed, index, g.head ? headOf(g.head) : undefined);
      files.push({ path: file, size: g.size });
    }
  }
  fs.mkdirSync(path.join(root, 'MISC'), { recursive: true });
  return { root, files, bytes: files.reduce((n, f) => n + f.size, 0) };
}

/** The cards of the issue; `quick` gives a smaller smoke-test set. */
export function cardSpecs(quick) {
  return quick
    ? {
        survey: {
          mission: 'Survey',
          seed: 'survey',
          groups: [
            { count: 20, size: 5 * MiB, ext: 'JPG' },
            { count: 2, size: 40 * MiB, ext: 'MP4' },
          ],
        },
        small: {
          mission: 'Small',
          seed: 'small',
          start: '2024-01-02T10:00:00Z',
          groups: [{ count: 500, size: 64 * KiB, ext: 'JPG' }],
        },
        big: {
          mission: 'Big',
          seed: 'big',
          start: '2024-01-03T10:00:00Z',
          groups: [{ count: 1, size: 256 * MiB, ext: 'MP4' }],
        },
        reinsert: {
          mission: 'Reinsert',
          seed: 'reinsert',
          start: '2024-01-04T10:00:00Z',
          groups: [{ count: 1000, size: 4 * KiB, ext: 'JPG' }],
        },
        offload: {
          mission: 'Survey',
          seed: 'offload',
          start: '2024-01-05T10:00:00Z',
          groups: [
            { count: 40, size: 5 * MiB, ext: 'JPG', head: fixturePhoto('M3T/M3T_IR.JPG') },
            { count: 1, size: 40 * MiB, ext: 'MP4' },
            // The flight's RTK/PPK files, named after its folder (main/core/media/rtk-files.ts).
            { count: 1, size: 24 * KiB, suffix: '_Timestamp.MRK' },
            { count: 1, size: 2 * MiB, suffix: '_Rinex.obs' },
            { count: 1, size: 48 * KiB, suffix: '_PPKNAV.nav' },
            { count: 1, size: 1 * MiB, suffix: '_PPKRAW.bin' },
          ],
        },
      }
    : {
        survey: {
          mission: 'Survey',
          seed: 'survey',
          groups: [
            { count: 200, size: 5 * MiB, ext: 'JPG' },
            { count: 2, size: 300 * MiB, ext: 'MP4' },
          ],
        },
        small: {
          mission: 'Small',
          seed: 'small',
          start: '2024-01-02T10:00:00Z',
          groups: [{ count: 5000, size: 64 * KiB, ext: 'JPG' }],
        },
        big: {
          mission: 'Big',
          seed: 'big',
          start: '2024-01-03T10:00:00Z',
          groups: [{ count: 1, size: 2048 * MiB, ext: 'MP4' }],
        },
        reinsert: {
          mission: 'Reinsert',
          seed: 'reinsert',
          start: '2024-01-04T10:00:00Z',
          groups: [{ count: 10000, size: 4 * KiB, ext: 'JPG' }],
        },
        // Issue 20: a 2 GiB survey card in one flight folder (229 photos, 3 videos, the RTK files).
        offload: {
          mission: 'Survey',
          seed: 'offload',
          start: '2024-01-05T10:00:00Z',
          groups: [
            // Real M3T photos (EXIF, XMP, preview) padded to 5 MiB: the flight checks run as in the field.
            { count: 229, size: 5 * MiB, ext: 'JPG', head: fixturePhoto('M3T/M3T_IR.JPG') },
            { count: 3, size: 300 * MiB, ext: 'MP4' },
            // The flight's RTK/PPK files, named after its folder (main/core/media/rtk-files.ts).
            { count: 1, size: 24 * KiB, suffix: '_Timestamp.MRK' },
            { count: 1, size: 2 * MiB, suffix: '_Rinex.obs' },
            { count: 1, size: 48 * KiB, suffix: '_PPKNAV.nav' },
            { count: 1, size: 1 * MiB, suffix: '_PPKRAW.bin' },
          ],
        },
      };
}
