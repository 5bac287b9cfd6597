/**
 * The camera's clock against the GNSS time the aircraft recorded for the
 * same exposure. Pure: plain data in, findings out.
 *
 * - GNSS time (UTC) of a photo: its own (frame.gnssUtc: XMP UTCAtExposure,
 *   which is GPS time and has its 18 leap seconds taken off in frame.ts, or
 *   EXIF GPS date/time), else the MRK's GPS time of its exposure, leap
 *   seconds taken off too.
 * - Camera time: the wall-clock digits of created_time (DateTimeOriginal),
 *   whole seconds. The offset is camera minus the GNSS second it fell in
 *   (the camera truncates to the second, so the GNSS time is too).
 * - Flagged, with its size: an offset that is not a whole time-zone step
 *   (15 min) within CLOCK_TOLERANCE_SECONDS; an offset that differs within
 *   the card by that much or more; a time zone written in the file that is
 *   not the one the clock ran at. The real fixtures are 0 s off after the
 *   step; one 1 h 00 min 03 s off gives 3 s, the smallest error flagged.
 * - Only photos read by this version (they carry frame facts) are compared.
 * - A photo without time zone is said, not guessed: created_time keeps what
 *   the file says (with this computer's zone), the report shows the GNSS
 *   time beside it.
 */
import { baseName, count, listOf } from './plain.js';
import { GPS_UTC_LEAP_SECONDS } from '../media/mrk.js';
import type { ClockCheck, ClockFinding, FlightMediaInput } from './types.js';

export const CLOCK_TOLERANCE_SECONDS = 3;
const ZONE_STEP_SECONDS = 15 * 60;
/** Seconds from the Unix epoch to the GPS epoch (6 January 1980). */
const GPS_EPOCH_UNIX = 315_964_800;

/** GPS seconds (since the GPS epoch) of an MRK line -> UTC epoch seconds. */
export function mrkUtcSeconds(gpsSeconds: number): number {
  return gpsSeconds + GPS_EPOCH_UNIX - GPS_UTC_LEAP_SECONDS;
}

/** The camera's wall clock of "2023-07-07T09:39:34+02:00" read as if it were UTC, epoch seconds. */
function wallSeconds(capturedAt: string | null | undefined): number | null {
  const m = /^(\d{4})-(\d{2})-(\d{2})T(\d{2}):(\d{2}):(\d{2})/.exec(capturedAt ?? '');
  if (!m) return null;
  return Date.UTC(+m[1]!, +m[2]! - 1, +m[3]!, +m[4]!, +m[5]!, +m[6]!) / 1000;
}

/** The offset written in created_time, seconds, or null. */
function statedZone(capturedAt: string | null | undefined): number | null {
  const m = /([+-])(\d{2}):?(\d{2})$/.exec(capturedAt ?? '');
  if (!m) return /Z$/.test(capturedAt ?? '') ? 0 : null;
  return (m[1] === '-' ? -1 : 1) * (+m[2]! * 3600 + +m[3]! * 60);
}

/** "1 h 00 min 03 s", "3 s", "2 h". */
export function clockSize(seconds: number): string {
  const s = Math.abs(Math.round(seconds));
  const h = Math.floor(s / 3600);
  const m = Math.floor((s % 3600) / 60);
  const r = s % 60;
  if (h === 0 && m === 0) return `${r} s`;
  const parts = [h > 0 ? `${h} h` : '', `${String(m).padStart(h > 0 ? 2 : 1, '0')} min`];
  if (r > 0) parts.push(`${String(r).padStart(2, '0')} s`);
  if (h > 0 && m === 0 && r === 0) return `${h} h`;
  return parts.filter(Boolean).join(' ');
}

/** "UTC+02:00". */
export function zoneName(seconds: number): string {
  const sign = seconds < 0 ? '-' : '+';
  const a = Math.abs(seconds);
  return `UTC${sign}${String(Math.floor(a / 3600)).padStart(2, '0')}:${String(Math.floor((a % 3600) / 60)).padStart(2, '0')}`;
}

const aheadOrBehind = (s: number): string => (s >= 0 ? 'ahead of' : 'behind');

export interface ClockPhoto extends FlightMediaInput {
  /** UTC epoch seconds of its exposure by the MRK, when the flight has one. */
  mrkUtc?: number | null;
}

/** The clock check of the photos of a card or a flight. */
export function checkClock(photos: readonly ClockPhoto[]): ClockCheck {
  const timed: Array<{ p: ClockPhoto; offset: number; utc: number; stated: number | null }> = [];
  for (const p of photos) {
    // Only photos the reader looked at (frame facts): rows hashed by an older version carry a
    // created_time whose zone may be this computer's guess, and would invent findings.
    if (!p.frame) continue;
    const wall = wallSeconds(p.capturedAt);
    const own = p.frame?.gnssUtc ? Date.parse(p.frame.gnssUtc) / 1000 : NaN;
    const utc = Number.isFinite(own) ? own : (p.mrkUtc ?? NaN);
    if (wall === null || !Number.isFinite(utc)) continue;
    timed.push({
      p,
      offset: wall - Math.floor(utc),
      utc,
      stated: p.frame?.zoneInFile ? statedZone(p.capturedAt) : null,
    });
  }
  const notes: string[] = [];
  const noZone = photos.filter((p) => p.frame && p.frame.zoneInFile === false);
  const findings: ClockFinding[] = [];
  const corrected: Record<string, string> = {};
  if (timed.length > 0) {
    // The card's usual offset: the one most photos share (the median of the sorted offsets).
    const sorted = timed.map((t) => t.offset).sort((a, b) => a - b);
    const usual = sorted[Math.floor(sorted.length / 2)]!;
    const groups = new Map<number, typeof timed>();
    for (const t of timed) groups.set(t.offset, [...(groups.get(t.offset) ?? []), t]);
    for (const [offset, list] of [...groups.entries()].sort((a, b) => a[0] - b[0])) {
      const zone = Math.round(offset / ZONE_STEP_SECONDS) * ZONE_STEP_SECONDS;
      const rest = offset - zone;
      const off = Math.abs(rest) >= CLOCK_TOLERANCE_SECONDS;
      const moved = Math.abs(offset - usual) >= CLOCK_TOLERANCE_SECONDS;
      const stated = list.map((t) => t.stated).find((z) => z !== null) ?? null;
      const wrongZone = stated !== null && stated !== zone;
      if (!off && !moved && !wrongZone) continue;
      const names = list.map((t) => t.p.relPath);
      const usualZone = Math.round(usual / ZONE_STEP_SECONDS) * ZONE_STEP_SECONDS;
      // Said against the zone the photos state, else the zone the card's clock ran at.
      const base = stated ?? usualZone;
      const why = [
        off && `the photos' times are wrong by ${clockSize(rest)} after the time zone`,
        moved &&
          `the clock changed within the card (${clockSize(offset - usual)} ${aheadOrBehind(offset - usual)} the other photos)`,
        wrongZone && !off && `the photos say ${zoneName(stated)}, the clock ran at ${zoneName(zone)}`,
      ].filter(Boolean);
      findings.push({
        offsetSeconds: offset,
        relPaths: names,
        message: `Camera clock is ${clockSize(offset - base)} ${aheadOrBehind(offset - base)} GPS time (${zoneName(base)}) on ${count(list.length, 'photo')} (${listOf(names.map(baseName))}): ${why.join('; ')}. The report shows the GPS time beside the camera's; the photos keep the time they carry.`,
      });
      for (const t of list) corrected[t.p.relPath] = new Date(t.utc * 1000).toISOString();
    }
    const zones = new Set(timed.map((t) => Math.round(t.offset / ZONE_STEP_SECONDS) * ZONE_STEP_SECONDS));
    const unzoned = noZone.filter((p) => timed.some((t) => t.p === p));
    if (unzoned.length > 0 && zones.size === 1) {
      notes.push(
        `${count(unzoned.length, 'photo')} ${unzoned.length === 1 ? 'carries' : 'carry'} no time zone; by GPS the camera's clock ran at ${zoneName([...zones][0]!)}. Their time is sent as the file says.`,
      );
    }
  }
  const unknown = noZone.filter((p) => !timed.some((t) => t.p === p));
  if (unknown.length > 0) {
    notes.push(
      `${count(unknown.length, 'photo')} ${unknown.length === 1 ? 'carries' : 'carry'} no time zone and no GNSS time: their zone is not known (sent with this computer's zone).`,
    );
  }
  return { findings, notes, corrected };
}
