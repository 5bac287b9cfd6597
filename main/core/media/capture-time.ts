/**
 * Capture time as the camera wrote it: the wall-clock digits of the place and
 * clock of the aircraft, with no zone attached. We keep the digits themselves
 * instead of a JS Date because a Date would silently re-interpret them in the
 * zone of the machine that reads the card, which is not where the photo was
 * taken; both created_time and the tiny fingerprint need the digits as written.
 */
export interface CaptureTime {
  year: number;
  month: number; // 1-12
  day: number;
  hour: number;
  minute: number;
  second: number;
}

/**
 * EXIF DateTime forms seen on DJI cards: "2022:09:02 15:17:42" (standard) and
 * "2022-09-02 15:17:42" (older H20T firmware). A trailing fraction or offset
 * is tolerated and ignored here (offsets are read from their own tags).
 */
const DATE_TIME = /^\s*(\d{4})[:-](\d{2})[:-](\d{2})[ T](\d{2}):(\d{2}):(\d{2})/;

/** Pilot-2 style names: DJI_20220831151616_0004_W.JPG, DJI_20230707093934_0001_T.MP4 */
const NAME_TIME = /^DJI_(\d{4})(\d{2})(\d{2})(\d{2})(\d{2})(\d{2})_/i;

function build(parts: (string | undefined)[]): CaptureTime | undefined {
  const [year, month, day, hour, minute, second] = parts.map((p) => Number(p));
  if (
    year === undefined ||
    month === undefined ||
    day === undefined ||
    hour === undefined ||
    minute === undefined ||
    second === undefined
  ) {
    return undefined;
  }
  const t = { year, month, day, hour, minute, second };
  return isValidCaptureTime(t) ? t : undefined;
}

/**
 * Rejects the placeholders cameras write without a clock ("0000:00:00 00:00:00")
 * and impossible dates, so they never reach the server as a real time.
 */
export function isValidCaptureTime(t: CaptureTime): boolean {
  const values = [t.year, t.month, t.day, t.hour, t.minute, t.second];
  if (!values.every((v) => Number.isInteger(v))) return false;
  // Years before 1990 are unset clocks (1970/1980 epochs), not drone photos.
  if (t.year < 1990 || t.year > 9999 || t.month < 1 || t.month > 12) return false;
  // Date.UTC(y, m, 0) is the last day of month m: catches 31 April, 29 Feb.
  const daysInMonth = new Date(Date.UTC(t.year, t.month, 0)).getUTCDate();
  if (t.day < 1 || t.day > daysInMonth) return false;
  // 60 is a leap second; EXIF allows it.
  return t.hour <= 23 && t.minute <= 59 && t.second <= 60;
}

export function parseExifDateTime(value: unknown): CaptureTime | undefined {
  if (typeof value !== 'string') return undefined;
  const m = DATE_TIME.exec(value);
  return m ? build(m.slice(1)) : undefined;
}

export function captureTimeFromFileName(fileName: string): CaptureTime | undefined {
  const m = NAME_TIME.exec(fileName);
  return m ? build(m.slice(1)) : undefined;
}

/**
 * "+02:00", "-0400", "Z" → minutes east of UTC. EXIF OffsetTime* tags use
 * "±hh:mm"; XMP dates end with the same or "Z".
 */
export function parseOffsetMinutes(value: unknown): number | undefined {
  if (typeof value !== 'string') return undefined;
  const v = value.trim();
  if (/^z$/i.test(v)) return 0;
  const m = /^([+-])(\d{2}):?(\d{2})$/.exec(v);
  if (!m) return undefined;
  const minutes = Number(m[2]) * 60 + Number(m[3]);
  if (minutes > 14 * 60) return undefined; // no real zone is further than ±14 h
  return m[1] === '-' ? -minutes : minutes;
}

/** The offset at the end of an ISO-like date-time string, if it has one. */
export function trailingOffsetMinutes(value: unknown): number | undefined {
  if (typeof value !== 'string') return undefined;
  const m = /(?:\d{2}:\d{2}:\d{2}(?:\.\d+)?)(Z|[+-]\d{2}:?\d{2})\s*$/i.exec(value);
  return m ? parseOffsetMinutes(m[1]) : undefined;
}

export function sameWallClock(a: CaptureTime, b: CaptureTime): boolean {
  return (
    a.year === b.year &&
    a.month === b.month &&
    a.day === b.day &&
    a.hour === b.hour &&
    a.minute === b.minute &&
    a.second === b.second
  );
}

/**
 * The machine's UTC offset at that wall-clock time (not "now"): a card from
 * July read in December must still get the summer offset.
 */
export function machineOffsetMinutes(t: CaptureTime): number {
  const local = new Date(t.year, t.month - 1, t.day, t.hour, t.minute, t.second);
  // getTimezoneOffset() is minutes *behind* UTC, hence the sign flip; `|| 0` turns -0 into 0.
  return -local.getTimezoneOffset() || 0;
}

const pad = (n: number, width = 2): string => String(Math.abs(n)).padStart(width, '0');

/**
 * `YYYY-MM-DDTHH:mm:ss±hh:mm`: the only shape the sample server accepts for
 * created_time (no fractional seconds, offset required). Zero offset is written
 * "+00:00", which it accepts like "Z".
 */
export function formatCreatedTime(t: CaptureTime, offsetMinutes: number): string {
  const sign = offsetMinutes < 0 ? '-' : '+';
  const abs = Math.abs(offsetMinutes);
  return (
    `${pad(t.year, 4)}-${pad(t.month)}-${pad(t.day)}T${pad(t.hour)}:${pad(t.minute)}:${pad(t.second)}` +
    `${sign}${pad(Math.floor(abs / 60))}:${pad(abs % 60)}`
  );
}
