/**
 * Frames that are probably useless, judged per flight from what each photo
 * carries (media/frame.ts): nothing is deleted or held back, each flagged
 * photo is named with its reason. Pure: plain data in, plain data out.
 *
 * Rules (thresholds chosen so the real fixtures flag nothing; see
 * test/sync/flight-frames.test.ts):
 * - black: preview mean luma < 16 and 90 % of it below 24 (lens cap, a frame
 *   taken on the ground); blown out: mean > 240 and 90 % above 245.
 * - gimbal: the photo's pitch is more than 25° from the flight's median
 *   pitch, in a flight of 3 photos or more of which 80 % lie within 10° of
 *   that median (a grid flown at one pitch; oblique missions that mix
 *   pitches are not judged).
 * - too low: below the height the crew set (above take-off); take-off or
 *   landing: below 30 % of the flight's median height, in a flight flown at
 *   20 m or more.
 * - zero GPS (the file says 0, 0) or no position at all.
 * - RTK: a stretch of exposures whose fix fell to float or single (the MRK's
 *   status, else the photo's RtkFlag in a flight that had fixed ones) is a
 *   hint, shown with where it starts and ends.
 * - sharpness: the preview's Laplacian variance below 20 % of the flight's
 *   median, in a flight of 5 photos or more: a hint only (water, fields and
 *   snow look blurred too).
 */
import { baseName, count, listOf } from './plain.js';
import { exposureNumber } from './flight.js';
import type { Exposure, FlaggedFrame, FlightMediaInput, FrameReason } from './types.js';

export const DARK_MEAN = 16;
export const BRIGHT_MEAN = 240;
export const GIMBAL_DEGREES = 25;
export const LOW_SHARE = 0.3;
export const BLUR_SHARE = 0.2;
const HINTS: ReadonlySet<FrameReason> = new Set(['rtk', 'blurry', 'clock']);

function median(values: readonly number[]): number | null {
  if (values.length === 0) return null;
  const s = [...values].sort((a, b) => a - b);
  const mid = Math.floor(s.length / 2);
  return s.length % 2 === 1 ? s[mid]! : (s[mid - 1]! + s[mid]!) / 2;
}

const deg = (v: number): string => `${Math.round(v)}°`;
const metres = (v: number): string => `${Math.round(v * 10) / 10} m`;

export interface RtkStretch {
  from: number;
  to: number;
  fix: 'float' | 'single';
  photos: string[];
}

/** Runs of consecutive exposures without an RTK fix, from the MRK, else from the photos' RtkFlag. */
export function rtkStretches(
  exposures: readonly Exposure[],
  photos: readonly FlightMediaInput[],
): RtkStretch[] {
  const flagOf = new Map(photos.map((p) => [p.relPath, p.frame?.rtkFlag]));
  const fixOf = (e: Exposure): 'fixed' | 'float' | 'single' | null => {
    if (e.mrk) return e.mrk.rtk === 'fixed' ? 'fixed' : e.mrk.rtk === 'float' ? 'float' : 'single';
    const flag = e.photos.map((p) => flagOf.get(p)).find((f) => f !== undefined);
    if (flag === undefined) return null;
    return flag === 50 ? 'fixed' : flag === 34 ? 'float' : 'single';
  };
  const fixes = exposures.map((e) => ({ e, fix: fixOf(e) }));
  // Only a flight that had RTK fixes can lose them.
  if (!fixes.some((f) => f.fix === 'fixed')) return [];
  const out: RtkStretch[] = [];
  for (const { e, fix } of fixes) {
    if (fix === null || fix === 'fixed') continue;
    const last = out[out.length - 1];
    if (last && last.to === e.index - 1 && last.fix === fix) {
      last.to = e.index;
      last.photos.push(...e.photos);
    } else out.push({ from: e.index, to: e.index, fix, photos: [...e.photos] });
  }
  return out;
}

/** The photos of one flight that are probably useless or worth a look. */
export function judgeFrames(
  photos: readonly FlightMediaInput[],
  exposures: readonly Exposure[],
  opts: {
    minHeight?: number | null;
    clockFlagged?: readonly string[];
    stretches?: readonly RtkStretch[];
  } = {},
): FlaggedFrame[] {
  const reasons = new Map<string, Array<{ code: FrameReason; message: string }>>();
  const add = (relPath: string, code: FrameReason, message: string): void => {
    reasons.set(relPath, [...(reasons.get(relPath) ?? []), { code, message }]);
  };

  const pitches = photos.map((p) => p.frame?.gimbalPitch).filter((v): v is number => typeof v === 'number');
  const pitch = median(pitches);
  const steady =
    pitch !== null &&
    pitches.length >= 3 &&
    pitches.filter((v) => Math.abs(v - pitch) <= 10).length >= 0.8 * pitches.length;
  const heights = photos.map((p) => p.relativeAltitude).filter((v): v is number => typeof v === 'number');
  const height = median(heights);
  const sharp = photos
    .map((p) => p.frame?.preview?.sharpness)
    .filter((v): v is number => typeof v === 'number');
  const sharpness = sharp.length >= 5 ? median(sharp) : null;

  for (const p of photos) {
    const f = p.frame;
    const v = f?.preview;
    let dim = false;
    if (v && v.mean < DARK_MEAN && v.dark >= 0.9) {
      add(
        p.relPath,
        'black',
        `black frame (mean brightness ${Math.round(v.mean)} of 255): lens cap on, or taken on the ground?`,
      );
      dim = true;
    } else if (v && v.mean > BRIGHT_MEAN && v.bright >= 0.9) {
      add(
        p.relPath,
        'blown-out',
        `blown out (mean brightness ${Math.round(v.mean)} of 255): exposure or sun in the lens?`,
      );
      dim = true;
    }
    if (steady && typeof f?.gimbalPitch === 'number' && Math.abs(f.gimbalPitch - pitch) > GIMBAL_DEGREES) {
      add(
        p.relPath,
        'gimbal',
        `gimbal at ${deg(f.gimbalPitch)} while the flight's photos are at ${deg(pitch)}`,
      );
    }
    const h = p.relativeAltitude;
    if (typeof h === 'number' && typeof opts.minHeight === 'number' && h < opts.minHeight) {
      add(
        p.relPath,
        'too-low',
        `taken at ${metres(h)} above take-off, below the ${metres(opts.minHeight)} set`,
      );
    } else if (typeof h === 'number' && height !== null && height >= 20 && h < LOW_SHARE * height) {
      add(
        p.relPath,
        'take-off-landing',
        `taken at ${metres(h)} in a flight at ${metres(height)}: during take-off or landing?`,
      );
    }
    if (f?.gps === 'zero') add(p.relPath, 'zero-gps', 'GPS position 0, 0 (no fix): it cannot be placed');
    else if (f?.gps === 'missing') add(p.relPath, 'no-gps', 'no GPS position: it cannot be placed');
    if (
      !dim &&
      sharpness !== null &&
      typeof v?.sharpness === 'number' &&
      v.sharpness < BLUR_SHARE * sharpness
    ) {
      add(
        p.relPath,
        'blurry',
        `much less sharp than the flight's other photos (a hint: water, fields and snow look like this too)`,
      );
    }
  }
  for (const s of opts.stretches ?? []) {
    for (const relPath of s.photos)
      add(
        relPath,
        'rtk',
        `RTK ${s.fix === 'float' ? 'float' : 'single point'} from exposure ${s.from} to ${s.to}`,
      );
  }
  for (const relPath of opts.clockFlagged ?? [])
    add(relPath, 'clock', "camera clock off: see the flight's clock note");

  const byPath = new Map(photos.map((p) => [p.relPath, p]));
  return (
    [...reasons.entries()]
      .map(([relPath, list]) => {
        const p = byPath.get(relPath);
        return {
          relPath,
          index: exposureNumber(baseName(relPath)) ?? null,
          capturedAt: p?.capturedAt ?? null,
          position: p?.position ?? null,
          reasons: list,
          unusable: list.some((r) => !HINTS.has(r.code)),
        };
      })
      // In the order they were shot (exposure number; a camera clock may be off), then by name.
      .sort(
        (a, b) =>
          (a.index ?? Infinity) - (b.index ?? Infinity) ||
          (a.relPath < b.relPath ? -1 : a.relPath > b.relPath ? 1 : 0),
      )
  );
}

/** The most common unusable reason of a set of frames, as the crew would guess it. */
export function likelyCause(frames: readonly FlaggedFrame[]): string {
  const tally = new Map<FrameReason, number>();
  for (const f of frames)
    for (const r of f.reasons) if (!HINTS.has(r.code)) tally.set(r.code, (tally.get(r.code) ?? 0) + 1);
  const [top, n] = [...tally.entries()].sort((a, b) => b[1] - a[1])[0] ?? [];
  // A cause is guessed only when it is most of them.
  if (!top || !n || n * 2 < frames.length) return 'several reasons: see the report';
  const words: Partial<Record<FrameReason, string>> = {
    black: 'lens cap?',
    'blown-out': 'overexposed?',
    gimbal: 'gimbal not pointing down?',
    'too-low': 'flown too low?',
    'take-off-landing': 'take-off or landing',
    'zero-gps': 'no GPS',
    'no-gps': 'no GPS',
  };
  return words[top] ?? 'see the report';
}

/** The flight's flag lines about its frames (unusable ones, hints, RTK stretches). */
export function frameFlagMessages(
  frames: readonly FlaggedFrame[],
  stretches: readonly RtkStretch[],
): {
  unusable: string | null;
  hints: string | null;
  rtk: string | null;
} {
  const bad = frames.filter((f) => f.unusable);
  const hinted = frames.filter((f) => !f.unusable && f.reasons.some((r) => r.code === 'blurry'));
  const describe = (f: FlaggedFrame) =>
    `${baseName(f.relPath)}: ${f.reasons
      .filter((r) => !HINTS.has(r.code))
      .map((r) => r.message)
      .join('; ')}`;
  return {
    unusable: bad.length
      ? `${count(bad.length, 'photo')} probably unusable (${likelyCause(bad)}): ${bad.slice(0, 3).map(describe).join(' · ')}${bad.length > 3 ? ` · and ${bad.length - 3} more` : ''}. Look at them before you leave the site; nothing was deleted.`
      : null,
    hints: hinted.length
      ? `${count(hinted.length, 'photo')} much less sharp than the rest of the flight (${listOf(hinted.map((f) => baseName(f.relPath)))}): a hint only, water, fields and snow look like this too.`
      : null,
    rtk: stretches.length
      ? `RTK fix lost: ${stretches.map((s) => `${s.fix === 'float' ? 'float' : 'single point'} at exposure ${s.from === s.to ? s.from : `${s.from}–${s.to}`}`).join('; ')}. Those photos' positions are decimetres to metres off.`
      : null,
  };
}
