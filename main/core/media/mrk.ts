/**
 * DJI's exposure log, `*_Timestamp.MRK`: one text line per exposure, written
 * by RTK aircraft during the flight. Documented fields, in order (Matrice 4,
 * Mavic 3E, P1 and Phantom 4 RTK manuals; tab-separated, each value but the
 * first three carrying its label after a comma):
 *
 *   1	379241.802760	[2266]	   -7,N	   28,E	  191,V	22.58123456,Lat	113.94123456,Lon	98.123,Ellh	0.012345, 0.012345, 0.023456	50,Q
 *
 * index (the photo's number), GPS time of week (s), [GPS week], antenna-to-
 * sensor offsets in mm (north, east, down-positive "V"), latitude, longitude,
 * ellipsoidal height (m), standard deviations north/east/vertical (m), and
 * the positioning status ("Q"): 50 fixed, 32-49 float (34 typical), 16
 * single point, 0 none.
 *
 * The parser reads what it can and never throws on content: cards get pulled
 * while the aircraft writes (a cut last line), files get damaged (binary
 * garbage), editors add CRLF or blank lines, some firmware separates with
 * spaces. Labelled values are found by their label, not by column, so extra
 * or missing columns do not shift the others. Each line that cannot be used
 * becomes a problem naming the line, never a silent skip.
 */

export interface MrkEntry {
  /** The exposure's number, as in the photo's name (`DJI_..._0042_V.JPG` is 42). */
  index: number;
  /** 1-based line in the file. */
  line: number;
  gpsSecondsOfWeek: number;
  gpsWeek: number | null;
  /** Antenna phase centre to camera sensor, mm; `down` is DJI's "V" (positive downwards). */
  offsetMm: { north: number; east: number; down: number } | null;
  lat: number;
  lon: number;
  ellipsoidHeight: number | null;
  /** Standard deviations in metres. */
  stdDev: { north: number; east: number; vertical: number } | null;
  /** The raw "Q" value: 50 fixed, 32-49 float, 16 single, 0 none. */
  rtkStatus: number;
}

export interface MrkProblem {
  line: number;
  /** The line as read, shortened to 80 characters, control characters shown as '?'. */
  text: string;
  message: string;
}

export interface MrkParseResult {
  entries: MrkEntry[];
  problems: MrkProblem[];
}

export type RtkClass = 'fixed' | 'float' | 'single' | 'none' | 'other';

/** DJI's RtkFlag / MRK "Q" values as documented (Mavic 3E manual: 32~49 are float solutions). */
export function rtkClass(status: number): RtkClass {
  if (status === 50) return 'fixed';
  if (status >= 32 && status <= 49) return 'float';
  if (status === 16) return 'single';
  if (status === 0) return 'none';
  return 'other';
}

const SECONDS_PER_WEEK = 604_800;

/**
 * GPS time minus UTC since 1 January 2017 (no leap second announced since).
 * Here, not with the photo's frame checks: a card's flight clock reads it
 * without loading the JPEG decoder (issue 33, a re-inserted card's start).
 */
export const GPS_UTC_LEAP_SECONDS = 18;

/** Seconds since the GPS epoch when the week is known, else seconds of the week. */
export function gpsTimeSeconds(e: Pick<MrkEntry, 'gpsSecondsOfWeek' | 'gpsWeek'>): number {
  return e.gpsWeek === null ? e.gpsSecondsOfWeek : e.gpsWeek * SECONDS_PER_WEEK + e.gpsSecondsOfWeek;
}

const MAX_PROBLEMS = 50;
const NUM = String.raw`[-+]?\d+(?:\.\d+)?`;
const HEAD = new RegExp(String.raw`^(\d+)\s+(${NUM})(?:\s+\[(\d+)\])?(?=\s)`);
const LABELLED = new RegExp(String.raw`(${NUM})\s*,\s*(Lat|Lon|Ellh|N|E|V|Q)(?![A-Za-z])`, 'g');
const STD_DEV = new RegExp(String.raw`(?:^|\s)(${NUM})\s*,\s*(${NUM})\s*,\s*(${NUM})(?=\s|$)`);

function shown(line: string): string {
  // eslint-disable-next-line no-control-regex
  const clean = line.replace(/[\u0000-\u0008\u000b-\u001f\u007f\ufffd]/g, '?');
  return clean.length > 80 ? `${clean.slice(0, 77)}...` : clean;
}

type LineResult = { entry: Omit<MrkEntry, 'line'> } | { error: string };

function parseLine(line: string): LineResult {
  const head = HEAD.exec(line);
  if (!head) return { error: 'not an MRK line (it should start with the exposure number and the GPS time)' };
  const index = Number(head[1]);
  const sow = Number(head[2]);
  const week = head[3] === undefined ? null : Number(head[3]);
  if (!Number.isSafeInteger(index) || index < 1) return { error: `exposure number ${head[1]} is not valid` };
  if (!(sow >= 0 && sow < SECONDS_PER_WEEK)) return { error: `GPS time ${head[2]} is outside a week` };

  const rest = line.slice(head[0].length);
  const values = new Map<string, number>();
  for (const m of rest.matchAll(LABELLED)) {
    const label = m[2] ?? '';
    if (values.has(label)) return { error: `the value "${label}" appears twice` };
    values.set(label, Number(m[1]));
  }
  const lat = values.get('Lat');
  const lon = values.get('Lon');
  const q = values.get('Q');
  if (lat === undefined || lon === undefined) return { error: 'no latitude/longitude (cut short?)' };
  if (q === undefined) return { error: 'no positioning status "Q" (cut short?)' };
  if (Math.abs(lat) > 90 || Math.abs(lon) > 180) return { error: `position ${lat}, ${lon} is not on Earth` };
  if (!Number.isInteger(q) || q < 0 || q > 255) return { error: `positioning status ${q} is not valid` };

  const n = values.get('N');
  const e = values.get('E');
  const v = values.get('V');
  const std = STD_DEV.exec(rest.replace(LABELLED, ' '));
  return {
    entry: {
      index,
      gpsSecondsOfWeek: sow,
      gpsWeek: week,
      offsetMm: n !== undefined && e !== undefined && v !== undefined ? { north: n, east: e, down: v } : null,
      lat,
      lon,
      ellipsoidHeight: values.get('Ellh') ?? null,
      stdDev: std ? { north: Number(std[1]), east: Number(std[2]), vertical: Number(std[3]) } : null,
      rtkStatus: q,
    },
  };
}

/** Parses the text of one MRK file. Never throws on content. */
export function parseMrk(text: string): MrkParseResult {
  const entries: MrkEntry[] = [];
  const problems: MrkProblem[] = [];
  let dropped = 0;
  const lines = text.replace(/^\ufeff/, '').split(/\r\n|\r|\n/);
  const endsWithNewline = /[\r\n]$/.test(text);
  const seen = new Map<number, number>();

  const problem = (line: number, raw: string, message: string): void => {
    if (problems.length < MAX_PROBLEMS) problems.push({ line, text: shown(raw), message });
    else dropped++;
  };

  lines.forEach((raw, i) => {
    const lineNo = i + 1;
    if (raw.trim() === '') return;
    const isLast = i === lines.length - 1 && !endsWithNewline;
    const r = parseLine(raw.trim());
    if ('error' in r) {
      problem(
        lineNo,
        raw,
        isLast
          ? `The last line is cut short: ${r.error}. Was the card pulled while the aircraft was writing?`
          : `Line ${lineNo}: ${r.error}.`,
      );
      return;
    }
    const first = seen.get(r.entry.index);
    if (first !== undefined) {
      problem(lineNo, raw, `Line ${lineNo}: exposure ${r.entry.index} was already on line ${first}.`);
      return;
    }
    seen.set(r.entry.index, lineNo);
    entries.push({ ...r.entry, line: lineNo });
  });
  if (dropped > 0) {
    problems.push({ line: 0, text: '', message: `${dropped} more lines could not be read.` });
  }
  return { entries, problems };
}

export interface MrkLineInput {
  index: number;
  gpsSecondsOfWeek: number;
  gpsWeek: number;
  offsetMm: { north: number; east: number; down: number };
  lat: number;
  lon: number;
  ellipsoidHeight: number;
  stdDev: { north: number; east: number; vertical: number };
  rtkStatus: number;
}

const mm = (v: number): string => String(Math.round(v)).padStart(6);

/** One line exactly in DJI's documented layout (no line ending), for building test cards. */
export function formatMrkLine(e: MrkLineInput): string {
  return [
    String(e.index),
    e.gpsSecondsOfWeek.toFixed(6),
    `[${e.gpsWeek}]`,
    `${mm(e.offsetMm.north)},N`,
    `${mm(e.offsetMm.east)},E`,
    `${mm(e.offsetMm.down)},V`,
    `${e.lat.toFixed(8)},Lat`,
    `${e.lon.toFixed(8)},Lon`,
    `${e.ellipsoidHeight.toFixed(3)},Ellh`,
    `${e.stdDev.north.toFixed(6)}, ${e.stdDev.east.toFixed(6)}, ${e.stdDev.vertical.toFixed(6)}`,
    `${e.rtkStatus},Q`,
  ].join('\t');
}
