/**
 * What a DJI video says about itself lives beside it, not in it: its
 * telemetry in `<name>.SRT` (srt.ts) and its aircraft and camera in the
 * photos of the same folder (a DJI flight folder, or 100MEDIA, holds one
 * aircraft's files). Both are read only when they are regular files whose
 * real path is inside the card or folder the video came from: a link out of
 * it is not followed, a pipe is not opened.
 */
import { constants } from 'node:fs';
import { open, readdir, realpath, stat } from 'node:fs/promises';
import { basename, dirname, extname, join } from 'node:path';
import { DEFAULT_MEDIA_EXTENSIONS, VIDEO_EXTENSIONS, isInside } from './discover.js';
import { firstFix, SRT_HEAD_BYTES, type SrtFix } from './srt.js';

export interface VideoSidecars {
  /** The SRT's file name, when there is one beside the video. */
  srtName?: string;
  /** Its first cue with a position. */
  fix?: SrtFix;
  /** Photos of the same folder, the one with the video's lens suffix first. */
  photos: string[];
  /** Why a side-car was not used (a link out of the card, unreadable). */
  problems: string[];
}

const PHOTO = new Set(DEFAULT_MEDIA_EXTENSIONS.filter((e) => !VIDEO_EXTENSIONS.includes(e)));
/** How many photos of the folder are tried for the aircraft and camera. */
const PHOTOS_TRIED = 3;

const stemOf = (name: string): string => name.slice(0, name.length - extname(name).length);
/** The lens letter of a Pilot-2 name: DJI_20230707093934_0001_W.MP4 -> W. */
const lensOf = (name: string): string | undefined =>
  /_([A-Z])(?:_[^.]*)?\.[^.]+$/i.exec(name)?.[1]?.toUpperCase();

/** A regular file (not a pipe or device a hostile card could hold) whose real path is inside the root. */
async function usable(path: string, root: string | undefined): Promise<boolean> {
  try {
    if (!(await stat(path)).isFile()) return false;
    if (root === undefined) return true;
    const [real, realRoot] = await Promise.all([realpath(path), realpath(root)]);
    return isInside(real, realRoot);
  } catch {
    return false;
  }
}

async function readHead(path: string): Promise<{ text: string; whole: boolean }> {
  // Non-blocking open: a pipe swapped in since the check must not hang the read.
  const handle = await open(path, constants.O_RDONLY | constants.O_NONBLOCK);
  try {
    if (!(await handle.stat()).isFile()) throw new Error('not a regular file');
    const buf = Buffer.allocUnsafe(SRT_HEAD_BYTES + 1);
    let got = 0;
    while (got < buf.length) {
      const { bytesRead } = await handle.read(buf, got, buf.length - got, got);
      if (bytesRead === 0) break;
      got += bytesRead;
    }
    const whole = got <= SRT_HEAD_BYTES;
    return { text: buf.subarray(0, Math.min(got, SRT_HEAD_BYTES)).toString('utf8'), whole };
  } finally {
    await handle.close();
  }
}

/** A video's side-cars among its folder's names: its SRT, and the photos tried for its aircraft, best first. */
function sidecarsIn(names: string[], video: string): { srt: string | undefined; photos: string[] } {
  const stem = stemOf(video).toLowerCase();
  const srt = names.find((n) => extname(n).toLowerCase() === '.srt' && stemOf(n).toLowerCase() === stem);
  const lens = lensOf(video);
  const photos = names
    .filter((n) => PHOTO.has(extname(n).slice(1).toLowerCase()))
    .sort((a, b) => Number(lensOf(b) === lens) - Number(lensOf(a) === lens) || a.localeCompare(b));
  return { srt, photos };
}

/**
 * The names of the side-cars readVideoSidecars would read beside a video (its SRT, the first
 * photos it tries), none opened: whether a copy's folder holds them all, so that the video is
 * described from the copy and the card's files are not read a second time. None when the
 * folder cannot be listed (a card pulled).
 */
export async function sidecarNames(videoPath: string): Promise<string[]> {
  let names: string[];
  try {
    names = await readdir(dirname(videoPath));
  } catch {
    return [];
  }
  const { srt, photos } = sidecarsIn(names, basename(videoPath));
  return [...(srt ? [srt] : []), ...photos.slice(0, PHOTOS_TRIED)];
}

/** `root`: the card or folder the video was found under (absolute); checks are skipped without it. */
export async function readVideoSidecars(videoPath: string, root?: string): Promise<VideoSidecars> {
  const out: VideoSidecars = { photos: [], problems: [] };
  const dir = dirname(videoPath);
  let names: string[];
  try {
    names = await readdir(dir);
  } catch {
    return out;
  }
  const { srt, photos } = sidecarsIn(names, basename(videoPath));
  if (srt) {
    const path = join(dir, srt);
    if (!(await usable(path, root))) {
      out.problems.push(`${srt} is not a file on the card (a link out of it, or a pipe): not read.`);
    } else {
      try {
        const { text, whole } = await readHead(path);
        out.srtName = srt;
        const fix = firstFix(text, whole);
        if (fix) out.fix = fix;
      } catch (err) {
        out.problems.push(`${srt} could not be read: ${(err as Error).message}`);
      }
    }
  }
  for (const p of photos) {
    if (out.photos.length >= PHOTOS_TRIED) break;
    const path = join(dir, p);
    if (await usable(path, root)) out.photos.push(path);
  }
  return out;
}
