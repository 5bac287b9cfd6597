/**
 * Flight completeness, read from the card alone: does this flight folder hold
 * every photo the aircraft logged, and the RTK files PPK needs?
 *
 * Decisions (all documented in the flags' words too):
 * - Exposures. A photo's number comes from its name (`DJI_<14 digits>_<NNNN>_<lens>.JPG`
 *   on Pilot 2 aircraft, `DJI_<NNNN>.JPG` on Phantom 4 RTK); the MRK's first
 *   column is the same number. Multi-lens aircraft write one photo per lens
 *   (W, Z, T, V...) with one number, so one MRK line maps to a group of photos.
 * - Missing = numbered in the MRK, no photo on the card. Extra = a photo whose
 *   number has no MRK line (a warning: the photo is there, only its PPK
 *   position is not).
 * - RTK files are expected when the folder has any of them, or the caller
 *   says the aircraft flies RTK. Then the flight is INCOMPLETE when: the MRK
 *   is missing or unreadable (no exposure times: no PPK), or there is no raw
 *   GNSS observation file (`.obs`, `_PPKRAW.bin` or `.RTK`; any one can give
 *   the observations). A missing navigation file (`.nav`) is only a warning:
 *   the broadcast ephemeris can be downloaded for the day afterwards.
 * - Missing photos make a flight INCOMPLETE. Everything else (float or single
 *   fixes, photos without position, time gaps, damaged MRK lines, photos
 *   without a number) is a warning the crew reads before leaving the site.
 * - Usual interval: the median of the intervals between consecutive
 *   exposures in time order (MRK GPS times when there is an MRK, else the
 *   photos' capture times, whole seconds), needing at least 3 intervals. A gap
 *   is an interval over 2.5 times that and over 5 s: the median ignores the
 *   odd turn, 2.5x lets one skipped trigger pass (a missing photo is named
 *   anyway), and the floor keeps 1 s timestamp rounding from flagging a
 *   2 s mission.
 */
import type { RtkClass } from '../media/mrk.js';
import { checkClock, mrkUtcSeconds } from './clock.js';
import { frameFlagMessages, judgeFrames, rtkStretches } from './frames.js';
import { timeOfMedia } from './split.js';
import { flightSummary } from './summary.js';
import { gpsTimeSeconds, rtkClass } from '../media/mrk.js';
import { baseName, count, listOf, ranges } from './plain.js';
import { RTK_KIND_LABELS } from '../media/rtk-files.js';
import type { RtkKind } from '../media/rtk-files.js';
import type {
  Exposure,
  FlightCompleteness,
  FlightFlag,
  FlightInput,
  FlightMediaInput,
  LatLng,
  TimeGap,
} from './types.js';

const PHOTO = /\.(jpe?g|dng|tiff?)$/i;
const VIDEO = /\.(mp4|mov)$/i;
const PILOT2_NUMBER = /^DJI_\d{14}_(\d{3,5})(?:_|\.)/i;
const PHANTOM_NUMBER = /^DJI_(\d{4})\./i;
const MISSION = /^DJI_\d{12}_\d{3}_(.+)$/i;
const MISSION_FOLDER = /^DJI_\d{12}_\d{3}(?:_.*)?$/i;

/** A DJI flight folder (`DJI_<12 digits>_<NNN>[_mission]`): one flight by itself. */
export function isMissionFolder(name: string): boolean {
  return MISSION_FOLDER.test(name);
}

export const GAP_FACTOR = 2.5;
export const GAP_FLOOR_SECONDS = 5;
const MIN_INTERVALS = 3;
/** A usual interval longer than this is not a shooting interval: the photos are of separate flights. */
export const MAX_USUAL_INTERVAL_SECONDS = 600;
/** One flight (a battery or a few) lasts hours at most and stays within tens of kilometres. */
export const ONE_FLIGHT_MAX_HOURS = 12;
export const ONE_FLIGHT_MAX_KM = 50;

/** The exposure number in a DJI photo name, or undefined. */
export function exposureNumber(name: string): number | undefined {
  const m = PILOT2_NUMBER.exec(name) ?? PHANTOM_NUMBER.exec(name);
  return m?.[1] === undefined ? undefined : Number(m[1]);
}

function epochSeconds(capturedAt: string | null | undefined): number | null {
  if (!capturedAt) return null;
  const zoned = /(?:Z|[+-]\d{2}:?\d{2})$/.test(capturedAt) ? capturedAt : `${capturedAt}Z`;
  const ms = Date.parse(zoned);
  return Number.isFinite(ms) ? ms / 1000 : null;
}

function median(values: number[]): number {
  const s = [...values].sort((a, b) => a - b);
  const mid = Math.floor(s.length / 2);
  return s.length % 2 === 1 ? (s[mid] ?? 0) : ((s[mid - 1] ?? 0) + (s[mid] ?? 0)) / 2;
}

function buildExposures(input: FlightInput, photos: FlightMediaInput[]): Exposure[] {
  const byIndex = new Map<number, Exposure>();
  const get = (index: number): Exposure => {
    let e = byIndex.get(index);
    if (!e) {
      e = { index, photos: [], mrk: null, position: null, gimbalYaw: null, time: null };
      byIndex.set(index, e);
    }
    return e;
  };
  const useMrkTime = input.mrk.some((m) => m.entries.length > 0);
  for (const m of input.mrk) {
    for (const entry of m.entries) {
      const e = get(entry.index);
      if (e.mrk) continue; // the same number in two MRK files: the first wins, parseMrk reports within a file
      e.mrk = {
        lat: entry.lat,
        lng: entry.lon,
        ellipsoidHeight: entry.ellipsoidHeight,
        rtk: rtkClass(entry.rtkStatus),
        status: entry.rtkStatus,
      };
      e.time = gpsTimeSeconds(entry);
    }
  }
  for (const p of [...photos].sort((a, b) => (a.relPath < b.relPath ? -1 : 1))) {
    const n = exposureNumber(baseName(p.relPath));
    if (n === undefined) continue;
    const e = get(n);
    e.photos.push(p.relPath);
    if (!e.position && p.position) e.position = { lat: p.position.lat, lng: p.position.lng };
    if (e.gimbalYaw === null && typeof p.gimbalYaw === 'number') e.gimbalYaw = p.gimbalYaw;
    if (!useMrkTime) {
      // GNSS time when the photo carries it: a camera clock jump is not a coverage gap.
      const t = timeOfMedia(p);
      if (t !== null && (e.time === null || t < e.time)) e.time = t;
    }
  }
  for (const e of byIndex.values()) {
    if (!e.position && e.mrk) e.position = { lat: e.mrk.lat, lng: e.mrk.lng };
  }
  return [...byIndex.values()].sort((a, b) => a.index - b.index);
}

function findGaps(exposures: Exposure[]): { usual: number | null; gaps: TimeGap[] } {
  const timed = exposures
    .filter((e): e is Exposure & { time: number } => e.time !== null)
    .sort((a, b) => a.time - b.time);
  const steps = timed.slice(1).map((e, i) => ({ from: timed[i]!, to: e, seconds: e.time - timed[i]!.time }));
  const positive = steps.map((s) => s.seconds).filter((s) => s > 0);
  if (positive.length < MIN_INTERVALS) return { usual: null, gaps: [] };
  const usual = median(positive);
  if (usual > MAX_USUAL_INTERVAL_SECONDS) return { usual: null, gaps: [] };
  const limit = Math.max(GAP_FACTOR * usual, GAP_FLOOR_SECONDS);
  const gaps = steps
    .filter((s) => s.seconds > limit)
    .map((s) => ({
      afterIndex: s.from.index,
      beforeIndex: s.to.index,
      seconds: Math.round(s.seconds * 10) / 10,
    }));
  return { usual: Math.round(usual * 1000) / 1000, gaps };
}

function rtkFilesByKind(input: FlightInput): Record<RtkKind, string[]> {
  const files: Record<RtkKind, string[]> = { mrk: [], obs: [], nav: [], ppkraw: [], rtcm: [] };
  for (const f of input.rtkFiles) files[f.kind].push(f.relPath);
  for (const m of input.mrk) if (!files.mrk.includes(m.relPath)) files.mrk.push(m.relPath);
  for (const list of Object.values(files)) list.sort();
  return files;
}

/** Great-circle distance in km (haversine). */
export function kmBetween(a: LatLng, b: LatLng): number {
  const rad = Math.PI / 180;
  const dLat = (b.lat - a.lat) * rad;
  const dLng = (b.lng - a.lng) * rad;
  const h = Math.sin(dLat / 2) ** 2 + Math.cos(a.lat * rad) * Math.cos(b.lat * rad) * Math.sin(dLng / 2) ** 2;
  return 2 * 6371 * Math.asin(Math.min(1, Math.sqrt(h)));
}

/** "5 hours", "3 days", "7 months", "4 years". */
function duration(seconds: number): string {
  const hours = seconds / 3600;
  if (hours < 48) return count(Math.round(hours), 'hour');
  const days = hours / 24;
  if (days < 60) return count(Math.round(days), 'day');
  if (days < 730) return count(Math.round(days / 30.4), 'month');
  return count(Math.round(days / 365.25), 'year');
}

/**
 * Why the media of a folder cannot be one flight, in words, or null: taken
 * further apart in time or place than one flight goes (a folder a person
 * filled by hand, several cards copied into one).
 */
export function severalFlights(media: FlightMediaInput[]): string | null {
  const times = media.map((m) => epochSeconds(m.capturedAt)).filter((t): t is number => t !== null);
  const places = media.map((m) => m.position).filter((p): p is LatLng => !!p);
  const first = Math.min(...times);
  const last = Math.max(...times);
  const longTime = times.length > 1 && last - first > ONE_FLIGHT_MAX_HOURS * 3600;
  let far = 0;
  if (places.length > 1) {
    const lats = places.map((p) => p.lat);
    const lngs = places.map((p) => p.lng);
    far = kmBetween(
      { lat: Math.min(...lats), lng: Math.min(...lngs) },
      { lat: Math.max(...lats), lng: Math.max(...lngs) },
    );
  }
  const farApart = far > ONE_FLIGHT_MAX_KM;
  if (!longTime && !farApart) return null;
  const day = (t: number) => new Date(t * 1000).toISOString().slice(0, 10);
  const parts = [
    longTime && `over ${duration(last - first)} (${day(first)} to ${day(last)})`,
    farApart && `up to ${Math.round(far).toLocaleString('en-US')} km apart`,
  ].filter(Boolean);
  return parts.join(' and ');
}

/** Completeness of one flight folder. Pure: plain data in, plain data out. */
export function analyseFlight(input: FlightInput): FlightCompleteness {
  const photos = input.media.filter((m) => PHOTO.test(m.relPath));
  const videos = input.media.filter((m) => VIDEO.test(m.relPath)).length;
  const exposures = buildExposures(input, photos);
  const rtkFiles = rtkFilesByKind(input);
  const mrkEntries = input.mrk.reduce((n, m) => n + m.entries.length, 0);
  const hasMrk = rtkFiles.mrk.length > 0;
  const usableMrk = mrkEntries > 0;

  const missingIndexes = usableMrk
    ? exposures.filter((e) => e.mrk && e.photos.length === 0).map((e) => e.index)
    : [];
  const extraIndexes = usableMrk
    ? exposures.filter((e) => !e.mrk && e.photos.length > 0).map((e) => e.index)
    : [];
  const unnumberedPhotos = photos
    .filter((p) => exposureNumber(baseName(p.relPath)) === undefined)
    .map((p) => p.relPath);
  const photosWithoutPosition = photos.filter((p) => !p.position).map((p) => p.relPath);
  let rtkCounts: Record<RtkClass, number> | null = null;
  if (usableMrk) {
    rtkCounts = { fixed: 0, float: 0, single: 0, none: 0, other: 0 };
    for (const e of exposures) if (e.mrk) rtkCounts[e.mrk.rtk]++;
  }
  const mixed = severalFlights(input.media);
  // Intervals and gaps between separate flights say nothing about coverage.
  const { usual, gaps } = mixed ? { usual: null, gaps: [] } : findGaps(exposures);
  const rtkExpected = input.expectRtk === true || Object.values(rtkFiles).some((list) => list.length > 0);
  const mrkProblems = input.mrk.flatMap((m) => m.problems.map((p) => ({ ...p, file: m.relPath })));

  const flags: FlightFlag[] = [];
  const flag = (code: FlightFlag['code'], severity: FlightFlag['severity'], message: string): void => {
    flags.push({ code, severity, message });
  };
  if (!mixed && input.folderSpread) {
    flag(
      'several-flights',
      'warning',
      `The files of this folder were taken ${input.folderSpread}: this folder holds more than one flight, shown one by one (${input.part?.of ?? 1} flights). Check that each flight's files are all here.`,
    );
  }
  if (mixed) {
    flag(
      'several-flights',
      'warning',
      `These files were taken ${mixed}: this folder holds more than one flight, so exposure intervals and gaps are not checked. Check that each flight's files are all here.`,
    );
  }
  if (missingIndexes.length > 0) {
    flag(
      'photos-missing',
      'incomplete',
      `${count(missingIndexes.length, 'photo')} missing: the aircraft logged exposure ${ranges(missingIndexes)} but the card has no photo for it. Look for it on another card or in the aircraft's storage before formatting.`,
    );
  }
  if (rtkExpected && !hasMrk) {
    flag(
      'mrk-missing',
      'incomplete',
      'No exposure log (…_Timestamp.MRK) in this RTK flight: PPK processing needs it. Check that the card holds the whole flight folder.',
    );
  } else if (hasMrk && !usableMrk && photos.length > 0) {
    flag(
      'mrk-unreadable',
      'incomplete',
      `The exposure log ${listOf(rtkFiles.mrk.map(baseName))} has no readable line: PPK processing needs it. Copy it again from the aircraft if you can.`,
    );
  }
  if (rtkExpected) {
    const observations: RtkKind[] = ['obs', 'ppkraw', 'rtcm'];
    if (observations.every((k) => rtkFiles[k].length === 0)) {
      flag(
        'rtk-observations-missing',
        'incomplete',
        `No ${RTK_KIND_LABELS.obs} or ${RTK_KIND_LABELS.ppkraw} in this RTK flight: PPK processing needs the aircraft's observations. Check that the card holds the whole flight folder.`,
      );
    }
    if (rtkFiles.nav.length === 0) {
      flag(
        'rtk-navigation-missing',
        'warning',
        `No ${RTK_KIND_LABELS.nav} file: PPK software can use the day's broadcast ephemeris instead.`,
      );
    }
  }
  if (mrkProblems.length > 0) {
    const first = mrkProblems[0]!;
    flag(
      'mrk-damaged-lines',
      'warning',
      `${count(mrkProblems.length, 'line')} of the exposure log could not be read (${baseName(first.file)}: ${first.message})`,
    );
  }
  if (extraIndexes.length > 0) {
    flag(
      'photos-not-in-mrk',
      'warning',
      `Exposure ${ranges(extraIndexes)} has photos but no line in the exposure log: no PPK position for ${extraIndexes.length === 1 ? 'it' : 'them'}.`,
    );
  }
  if (usableMrk && unnumberedPhotos.length > 0) {
    flag(
      'photos-unnumbered',
      'warning',
      `${count(unnumberedPhotos.length, 'photo')} without an exposure number in the name (${listOf(unnumberedPhotos.map(baseName))}): not matched with the exposure log.`,
    );
  }
  if (rtkCounts && rtkCounts.float > 0) {
    flag(
      'rtk-float',
      'warning',
      `${count(rtkCounts.float, 'exposure')} with an RTK float fix (decimetre accuracy).`,
    );
  }
  if (rtkCounts && rtkCounts.single + rtkCounts.none > 0) {
    flag(
      'rtk-single',
      'warning',
      `${count(rtkCounts.single + rtkCounts.none, 'exposure')} without RTK (single point or no fix: metre accuracy).`,
    );
  }
  if (photosWithoutPosition.length > 0) {
    flag(
      'no-position',
      'warning',
      `${count(photosWithoutPosition.length, 'photo')} without a position (${listOf(photosWithoutPosition.map(baseName))}).`,
    );
  }
  const stretches = rtkStretches(exposures, photos);
  const mrkTimeOf = new Map(
    exposures
      .filter((x) => x.mrk && x.time !== null)
      .flatMap((x) => x.photos.map((p) => [p, x.time!] as const)),
  );
  const clock = checkClock(
    photos.map((p) => {
      const gps = mrkTimeOf.get(p.relPath);
      return { ...p, mrkUtc: gps === undefined || gps < 1e8 ? null : mrkUtcSeconds(gps) };
    }),
  );
  const frames = judgeFrames(photos, exposures, {
    minHeight: input.minHeight ?? null,
    clockFlagged: Object.keys(clock.corrected),
    stretches,
  });
  const said = frameFlagMessages(frames, stretches);
  if (said.unusable) flag('frames-unusable', 'warning', said.unusable);
  for (const c of clock.findings) flag('camera-clock', 'warning', c.message);
  if (said.rtk) flag('rtk-stretch', 'warning', said.rtk);
  if (said.hints) flag('frames-hint', 'warning', said.hints);
  for (const g of gaps) {
    flag(
      'time-gap',
      'warning',
      `${g.seconds} s between exposure ${g.afterIndex} and ${g.beforeIndex}, usually ${usual} s: check the area between them was covered.`,
    );
  }

  const folderName = baseName(input.folder);
  const part = input.part ?? null;
  return {
    folder: input.folder,
    name: part ? `${folderName}, flight ${part.n} of ${part.of}` : folderName,
    part,
    summary: flightSummary(input, exposures),
    frames,
    clock,
    missionName: MISSION.exec(folderName)?.[1]?.trim() || null,
    photos: photos.length,
    videos,
    exposuresInMrk: usableMrk || hasMrk ? mrkEntries : null,
    exposuresFound: exposures.filter((e) => e.photos.length > 0).length,
    missingIndexes,
    extraIndexes,
    unnumberedPhotos,
    rtkCounts,
    photosWithoutPosition,
    usualIntervalSeconds: usual,
    gaps,
    rtkExpected,
    rtkFiles,
    mrkProblems,
    wayline: input.wayline ?? null,
    exposures,
    flags,
    incomplete: flags.some((f) => f.severity === 'incomplete'),
  };
}
