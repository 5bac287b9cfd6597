/**
 * Flights as the crew flew them. A DJI mission folder (`DJI_<12 digits>_<NNN>[_name]`)
 * is one flight, as today. A folder that collects everything (`100MEDIA`,
 * `101MEDIA`, `SURVEY/100_0001`...) is split where a new battery began:
 *
 * - a pause of SPLIT_GAP_MINUTES or more between two photos (a battery
 *   swap, a drive to the next site); or
 * - a pause of SPLIT_MOVED_MINUTES or more after which the aircraft took
 *   photos SPLIT_MOVED_KM or more from the last one: it landed and took off
 *   somewhere else.
 *
 * Time is the GNSS time when the photos carry it, else their capture time
 * (a camera clock jump does not split a flight when GNSS time is there).
 * Videos and photos without a time go with the flight they fall in (or the
 * first). MRK lines go with the flight that holds their exposure numbers.
 * Pure: plain data in, plain data out.
 */
import { baseName } from './plain.js';
import { exposureNumber, isMissionFolder, kmBetween, severalFlights } from './flight.js';
import { gpsTimeSeconds } from '../media/mrk.js';
import { mrkUtcSeconds } from './clock.js';
import type { FlightInput, FlightMediaInput, LatLng } from './types.js';

export const SPLIT_GAP_MINUTES = 15;
export const SPLIT_MOVED_MINUTES = 3;
export const SPLIT_MOVED_KM = 1;

/** Epoch seconds of a file: GNSS time, else capture time (no zone: read as UTC). */
export function timeOfMedia(m: FlightMediaInput): number | null {
  const gnss = m.frame?.gnssUtc ? Date.parse(m.frame.gnssUtc) : NaN;
  if (Number.isFinite(gnss)) return gnss / 1000;
  const c = m.capturedAt;
  if (!c) return null;
  const ms = Date.parse(/(?:Z|[+-]\d{2}:?\d{2})$/.test(c) ? c : `${c}Z`);
  return Number.isFinite(ms) ? ms / 1000 : null;
}

/** The flights of one folder: itself, or its pieces when it holds several. */
export function splitFlights(input: FlightInput): FlightInput[] {
  if (isMissionFolder(baseName(input.folder))) return [input];
  const timed = input.media
    .map((m) => ({ m, t: timeOfMedia(m) }))
    .filter((x): x is { m: FlightMediaInput; t: number } => x.t !== null)
    .sort((a, b) => a.t - b.t);
  // Start times of each piece after the first.
  const starts: number[] = [];
  let last = null as { t: number; at: LatLng | null } | null;
  for (const { m, t } of timed) {
    if (last) {
      const gap = t - last.t;
      const moved = last.at && m.position ? kmBetween(last.at, m.position) : 0;
      if (gap >= SPLIT_GAP_MINUTES * 60 || (gap >= SPLIT_MOVED_MINUTES * 60 && moved >= SPLIT_MOVED_KM))
        starts.push(t);
    }
    const at: LatLng | null = m.position ?? last?.at ?? null;
    last = { t, at };
  }
  if (starts.length === 0) return [input];
  const pieceOf = (t: number | null): number => (t === null ? 0 : starts.filter((s) => t >= s).length);
  const of = starts.length + 1;
  const pieces: FlightInput[] = Array.from({ length: of }, (_, i) => ({
    ...input,
    media: [],
    mrk: [],
    part: { n: i + 1, of },
  }));
  for (const m of input.media) pieces[pieceOf(timeOfMedia(m))]!.media.push(m);
  const numbersOf = pieces.map(
    (p) => new Set(p.media.map((m) => exposureNumber(baseName(m.relPath))).filter((n) => n !== undefined)),
  );
  for (const file of input.mrk) {
    // A line goes with the piece holding its photo, else with the piece its GPS time falls in.
    const home = file.entries.map((e) => {
      const i = numbersOf.findIndex((set) => set.has(e.index));
      return i >= 0 ? i : pieceOf(e.gpsWeek === null ? null : mrkUtcSeconds(gpsTimeSeconds(e)));
    });
    for (let i = 0; i < of; i++) {
      const entries = file.entries.filter((_, k) => home[k] === i);
      if (entries.length > 0)
        pieces[i]!.mrk.push({ ...file, entries, problems: i === 0 ? file.problems : [] });
    }
  }
  // RTK files (observations...) cannot be told apart by time here: each piece keeps them.
  const spread = severalFlights(input.media);
  if (spread) pieces[0]!.folderSpread = spread;
  return pieces.filter((p) => p.media.length > 0);
}
