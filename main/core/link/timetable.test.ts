import { describe, expect, it } from 'vitest';
import { DmsError } from '../errors.js';
import { parseTimetable, rateAt } from './timetable.js';

const KiB = 1024;
const MiB = 1024 * 1024;
/** A local time in the week of Sunday 2026-11-22: day 0 = Sunday. */
const at = (day: number, hhmm: string): Date => {
  const [h, m] = hhmm.split(':').map(Number);
  return new Date(2026, 10, 22 + day, h, m);
};

describe('bandwidth timetable (rclone --bwlimit syntax)', () => {
  it('a single rate: K is the default unit, B/K/M/G binary, decimals, off = no limit', () => {
    expect(rateAt(parseTimetable('512'), at(3, '10:00'))).toBe(512 * KiB);
    expect(rateAt(parseTimetable('10M'), at(3, '10:00'))).toBe(10 * MiB);
    expect(rateAt(parseTimetable('1.5m'), at(3, '10:00'))).toBe(1.5 * MiB);
    expect(rateAt(parseTimetable('100B'), at(3, '10:00'))).toBe(100);
    expect(rateAt(parseTimetable('off'), at(3, '10:00'))).toBe(0);
    // upload:download: the upload side
    expect(rateAt(parseTimetable('1M:off'), at(3, '10:00'))).toBe(MiB);
  });

  it('daily slots: each holds until the next; before the first one, the last one of the day before', () => {
    const t = parseTimetable('08:00,512k 12:00,10M 23:00,off');
    expect(rateAt(t, at(2, '07:59'))).toBe(0); // 23:00 of Monday still holds
    expect(rateAt(t, at(2, '08:00'))).toBe(512 * KiB);
    expect(rateAt(t, at(2, '11:59'))).toBe(512 * KiB);
    expect(rateAt(t, at(2, '12:00'))).toBe(10 * MiB);
    expect(rateAt(t, at(2, '23:30'))).toBe(0);
  });

  it('weekday slots wrap around the week (Sunday 00:00 first)', () => {
    const t = parseTimetable('Mon-08:00,1M Sat-00:00,off Wednesday-12:30,256');
    expect(rateAt(t, at(0, '12:00'))).toBe(0); // Sunday: Saturday's off holds
    expect(rateAt(t, at(1, '07:00'))).toBe(0);
    expect(rateAt(t, at(1, '08:00'))).toBe(MiB);
    expect(rateAt(t, at(3, '12:29'))).toBe(MiB);
    expect(rateAt(t, at(3, '12:30'))).toBe(256 * KiB);
    expect(rateAt(t, at(6, '00:00'))).toBe(0);
  });

  it('refuses what rclone refuses, saying what is wrong and how to write it', () => {
    for (const [bad, why] of [
      ['', 'empty'],
      ['08:00,512k 25:00,1M', 'hour'],
      ['08:61,1M', 'minute'],
      ['8:00,1M', 'not a time'],
      ['Mo-08:00,1M', 'weekday'],
      ['08:00 09:00', 'a time and a rate'],
      ['1M:fast', 'not a rate'],
      ['08:00,fast', 'not a rate'],
      ['Mon-Tue-08:00,1M', 'hh:mm or Day-hh:mm'],
    ] as const) {
      let err: unknown;
      try {
        parseTimetable(bad);
      } catch (e) {
        err = e;
      }
      expect(err, bad).toBeInstanceOf(DmsError);
      expect((err as Error).message).toContain(why);
      expect((err as Error).message).toContain('08:00,512k 12:00,10M 23:00,off');
    }
  });
});
