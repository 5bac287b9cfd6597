import { describe, expect, it } from 'vitest';
import {
  captureTimeFromFileName,
  formatCreatedTime,
  parseExifDateTime,
  parseOffsetMinutes,
  trailingOffsetMinutes,
} from './capture-time.js';

describe('capture time parsing', () => {
  it('reads both EXIF spellings and ignores fractions', () => {
    const t = { year: 2022, month: 9, day: 2, hour: 15, minute: 17, second: 42 };
    expect(parseExifDateTime('2022:09:02 15:17:42')).toEqual(t);
    expect(parseExifDateTime('2022-09-02 15:17:42')).toEqual(t); // older H20T firmware
    expect(parseExifDateTime('2022-09-02T15:17:42.123+02:00')).toEqual(t);
  });

  it('rejects placeholders and impossible dates', () => {
    expect(parseExifDateTime('0000:00:00 00:00:00')).toBeUndefined();
    expect(parseExifDateTime('2023:02:29 10:00:00')).toBeUndefined(); // 2023 is not a leap year
    expect(parseExifDateTime('2024:02:29 10:00:00')).toBeDefined();
    expect(parseExifDateTime('2023:04:31 10:00:00')).toBeUndefined();
    expect(parseExifDateTime('2023:01:01 24:00:00')).toBeUndefined();
    expect(parseExifDateTime('    ')).toBeUndefined();
    expect(parseExifDateTime(42)).toBeUndefined();
  });

  it('reads Pilot-2 style file names only', () => {
    expect(captureTimeFromFileName('DJI_20220831151616_0004_W.MP4')).toEqual({
      year: 2022,
      month: 8,
      day: 31,
      hour: 15,
      minute: 16,
      second: 16,
    });
    expect(captureTimeFromFileName('DJI_0001.MP4')).toBeUndefined();
    expect(captureTimeFromFileName('DJI_20221331151616_0004_W.MP4')).toBeUndefined(); // month 13
  });

  it('parses offsets, including half and quarter hours', () => {
    expect(parseOffsetMinutes('+02:00')).toBe(120);
    expect(parseOffsetMinutes('-0400')).toBe(-240);
    expect(parseOffsetMinutes('+05:45')).toBe(345);
    expect(parseOffsetMinutes('Z')).toBe(0);
    expect(parseOffsetMinutes('+25:00')).toBeUndefined();
    expect(parseOffsetMinutes('   ')).toBeUndefined();
    expect(trailingOffsetMinutes('2023-07-07T09:39:34+02:00')).toBe(120);
    expect(trailingOffsetMinutes('2023-02-15')).toBeUndefined(); // M2EA's xmp:CreateDate
    expect(trailingOffsetMinutes('2022-09-02 15:17:42')).toBeUndefined();
  });
});

describe('formatCreatedTime', () => {
  const t = { year: 2023, month: 1, day: 5, hour: 7, minute: 3, second: 9 };
  it('writes YYYY-MM-DDTHH:mm:ss±hh:mm, zero-padded, no fraction', () => {
    expect(formatCreatedTime(t, 120)).toBe('2023-01-05T07:03:09+02:00');
    expect(formatCreatedTime(t, -210)).toBe('2023-01-05T07:03:09-03:30');
    expect(formatCreatedTime(t, 0)).toBe('2023-01-05T07:03:09+00:00');
    expect(formatCreatedTime(t, 345)).toBe('2023-01-05T07:03:09+05:45');
  });
});
