/**
 * A bandwidth timetable in rclone's `--bwlimit` syntax, read as rclone reads
 * it (its fs/bwtimetable.go), so a crew that knows rclone writes the same:
 *
 *   "10M"                               always 10 MiB/s
 *   "08:00,512k 12:00,10M 23:00,off"    every day: from 08:00 512 KiB/s, ...
 *   "Mon-08:00,1M Sat-00:00,off"        by weekday (Sun..Sat, 3 letters or full)
 *
 * A rate is a number (decimals allowed) with an optional unit: B (bytes), K
 * (KiB, the default), M, G, T, P (binary); `off` is no limit. An
 * upload:download pair (`1M:off`) is accepted; only the upload side is used.
 * A slot lasts until the next one in the week (Sunday 00:00 first); before
 * the week's first slot, the week's last one still holds (it wraps around).
 */
import { DmsError } from '../errors.js';

export interface TimetableSlot {
  /** 0 = Sunday, as rclone and Date.getDay(). */
  day: number;
  /** Minutes since midnight. */
  minute: number;
  /** Bytes per second; 0 = no limit (`off`). */
  bytesPerSecond: number;
}

/** Slots in week order; one slot at Sunday 00:00 for a single rate. */
export type Timetable = readonly TimetableSlot[];

const DAYS = ['sun', 'mon', 'tue', 'wed', 'thu', 'fri', 'sat'];
const FULL_DAYS = ['sunday', 'monday', 'tuesday', 'wednesday', 'thursday', 'friday', 'saturday'];
const UNIT: Record<string, number> = {
  b: 1,
  k: 1024,
  m: 1024 ** 2,
  g: 1024 ** 3,
  t: 1024 ** 4,
  p: 1024 ** 5,
};

function bad(text: string, why: string): DmsError {
  return new DmsError(
    'invalid-input',
    `The bandwidth timetable "${text}" cannot be read: ${why}. Write it as rclone's --bwlimit, e.g. "08:00,512k 12:00,10M 23:00,off" or "Mon-08:00,1M Sat-00:00,off".`,
    { retryable: false },
  );
}

/** One rate: `off`, or a number with an optional unit (default KiB/s); the upload side of `up:down`. */
function parseRate(text: string, whole: string): number {
  const sides = text.split(':');
  if (sides.length > 2) throw bad(whole, `"${text}" is not a rate (a number with B, K, M or G, or off)`);
  const [up = '', down] = sides;
  if (down !== undefined) parseRate(down, whole); // the download side must be a rate too, as in rclone
  if (up.toLowerCase() === 'off') return 0;
  const m = /^(\d+(?:\.\d+)?|\.\d+)([bkmgtp])?$/i.exec(up);
  if (!m) throw bad(whole, `"${text}" is not a rate (a number with B, K, M or G, or off)`);
  const bytes = Math.round(Number(m[1]) * (UNIT[(m[2] ?? 'k').toLowerCase()] ?? 1024));
  // rclone takes a rate of 0 as no limit too.
  return bytes;
}

function parseTime(text: string, whole: string): number {
  const m = /^(\d\d):(\d\d)$/.exec(text);
  if (!m) throw bad(whole, `"${text}" is not a time (hh:mm, like 08:00)`);
  const h = Number(m[1]);
  const min = Number(m[2]);
  if (h > 23) throw bad(whole, `the hour in "${text}" must be between 00 and 23`);
  if (min > 59) throw bad(whole, `the minute in "${text}" must be between 00 and 59`);
  return h * 60 + min;
}

function parseDay(text: string, whole: string): number {
  const t = text.toLowerCase();
  const i = DAYS.indexOf(t) >= 0 ? DAYS.indexOf(t) : FULL_DAYS.indexOf(t);
  if (i < 0) throw bad(whole, `"${text}" is not a weekday (Mon, Tue, ... or Monday, ...)`);
  return i;
}

export function parseTimetable(input: string): Timetable {
  const text = input.trim();
  if (text === '') throw bad(input, 'it is empty');
  // A single rate, without a time.
  if (!/[\s,]/.test(text)) return [{ day: 0, minute: 0, bytesPerSecond: parseRate(text, input) }];
  const slots: TimetableSlot[] = [];
  for (const token of text.split(/\s+/)) {
    const fields = token.split(',');
    if (fields.length !== 2) throw bad(input, `"${token}" must be a time and a rate, like 08:00,512k`);
    const [when = '', rate = ''] = fields;
    const bytesPerSecond = parseRate(rate, input);
    const dash = when.split('-');
    if (dash.length === 1) {
      const minute = parseTime(when, input);
      for (let day = 0; day < 7; day++) slots.push({ day, minute, bytesPerSecond });
    } else if (dash.length === 2) {
      slots.push({
        day: parseDay(dash[0] ?? '', input),
        minute: parseTime(dash[1] ?? '', input),
        bytesPerSecond,
      });
    } else {
      throw bad(input, `"${when}" must be hh:mm or Day-hh:mm`);
    }
  }
  // rclone keeps the order given; a later slot at the same moment wins there too.
  return slots
    .map((s, i) => ({ s, i }))
    .sort((a, b) => weekMinute(a.s) - weekMinute(b.s) || a.i - b.i)
    .map(({ s }) => s);
}

const weekMinute = (s: { day: number; minute: number }): number => s.day * 1440 + s.minute;

/** The rate in force at `when` (local time), bytes per second; 0 = no limit. */
export function rateAt(table: Timetable, when: Date): number {
  if (table.length === 0) return 0;
  const now = weekMinute({ day: when.getDay(), minute: when.getHours() * 60 + when.getMinutes() });
  let current = table[table.length - 1]; // before the week's first slot: the last one wraps around
  for (const slot of table) if (weekMinute(slot) <= now) current = slot;
  return current?.bytesPerSecond ?? 0;
}

/** The timetable as the crew reads it: "10.0 MB/s", "every day 08:00 512 KB/s, 23:00 no limit". */
export function describeRate(bytesPerSecond: number): string {
  if (bytesPerSecond <= 0) return 'no limit';
  const mbit = (bytesPerSecond * 8) / 1e6;
  return `${mbit >= 10 ? mbit.toFixed(0) : mbit.toFixed(1)} Mbit/s`;
}
