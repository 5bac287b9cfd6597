import { describe, expect, it } from 'vitest';
import { formatMrkLine, gpsTimeSeconds, parseMrk, rtkClass } from './mrk.js';
import type { MrkLineInput } from './mrk.js';

/** A real-shaped line as printed in DJI's documentation and seen on P4RTK / M3E cards. */
const DOC_LINE =
  '1\t379241.802760\t[2266]\t   -7,N\t   28,E\t  191,V\t22.58123456,Lat\t113.94123456,Lon\t98.123,Ellh\t0.012345, 0.012345, 0.023456\t50,Q';

const line = (index: number, over: Partial<MrkLineInput> = {}): string =>
  formatMrkLine({
    index,
    gpsSecondsOfWeek: 379241.8 + index * 2,
    gpsWeek: 2266,
    offsetMm: { north: -7, east: 28, down: 191 },
    lat: 22.58 + index * 1e-5,
    lon: 113.94,
    ellipsoidHeight: 98.1,
    stdDev: { north: 0.012, east: 0.013, vertical: 0.024 },
    rtkStatus: 50,
    ...over,
  });

describe('parseMrk', () => {
  it('reads every field of the documented line', () => {
    const r = parseMrk(`${DOC_LINE}\n`);
    expect(r.problems).toEqual([]);
    expect(r.entries).toEqual([
      {
        index: 1,
        line: 1,
        gpsSecondsOfWeek: 379241.80276,
        gpsWeek: 2266,
        offsetMm: { north: -7, east: 28, down: 191 },
        lat: 22.58123456,
        lon: 113.94123456,
        ellipsoidHeight: 98.123,
        stdDev: { north: 0.012345, east: 0.012345, vertical: 0.023456 },
        rtkStatus: 50,
      },
    ]);
    expect(gpsTimeSeconds(r.entries[0]!)).toBeCloseTo(2266 * 604800 + 379241.80276, 5);
  });

  it('writes what it reads: formatMrkLine round-trips and matches the documented layout', () => {
    const written = formatMrkLine({
      index: 1,
      gpsSecondsOfWeek: 379241.80276,
      gpsWeek: 2266,
      offsetMm: { north: -7, east: 28, down: 191 },
      lat: 22.58123456,
      lon: 113.94123456,
      ellipsoidHeight: 98.123,
      stdDev: { north: 0.012345, east: 0.012345, vertical: 0.023456 },
      rtkStatus: 50,
    });
    expect(written.split('\t')).toHaveLength(DOC_LINE.split('\t').length);
    expect(parseMrk(written).entries).toEqual(parseMrk(DOC_LINE).entries);
  });

  it('takes CRLF, blank lines, a BOM, spaces instead of tabs and no final newline', () => {
    const spaced = line(2).replace(/\t/g, '   ');
    const text = `\ufeff${line(1)}\r\n\r\n   \r\n${spaced}\r\n${line(3, { rtkStatus: 34 })}`;
    const r = parseMrk(text);
    expect(r.problems).toEqual([]);
    expect(r.entries.map((e) => [e.index, e.line, e.rtkStatus])).toEqual([
      [1, 1, 50],
      [2, 4, 50],
      [3, 5, 34],
    ]);
    expect(r.entries[1]!.stdDev).toEqual({ north: 0.012, east: 0.013, vertical: 0.024 });
  });

  it('reports a last line cut short by a pulled card and keeps the lines before it', () => {
    const cut = line(3).slice(0, 40);
    const r = parseMrk(`${line(1)}\n${line(2)}\n${cut}`);
    expect(r.entries.map((e) => e.index)).toEqual([1, 2]);
    expect(r.problems).toHaveLength(1);
    expect(r.problems[0]!.line).toBe(3);
    expect(r.problems[0]!.message).toMatch(/last line is cut short.*card pulled/);
  });

  it('names each garbage line and never throws', () => {
    const binary = '\u0000\u0001PK\u0003\u0004\ufffd\ufffd';
    const r = parseMrk(
      [
        line(1),
        binary,
        'hello world',
        line(2, { lat: 95 }),
        line(3).replace('[2266]', '[2266]\t  0x'),
        line(1),
      ].join('\n') + '\n',
    );
    expect(r.entries.map((e) => e.index)).toEqual([1, 3]);
    expect(r.problems.map((p) => p.line)).toEqual([2, 3, 4, 6]);
    expect(r.problems[0]!.text).toBe('??PK????');
    expect(r.problems[2]!.message).toMatch(/not on Earth/);
    expect(r.problems[3]!.message).toMatch(/exposure 1 was already on line 1/);
  });

  it('caps the problems of a wholly damaged file', () => {
    const r = parseMrk(Array.from({ length: 500 }, () => 'garbage').join('\n'));
    expect(r.entries).toEqual([]);
    expect(r.problems).toHaveLength(51);
    expect(r.problems.at(-1)!.message).toBe('450 more lines could not be read.');
  });

  it('reads lines without the week and without offsets or deviations', () => {
    const r = parseMrk('7\t12.5\t22.5,Lat\t113.9,Lon\t16,Q\n');
    expect(r.problems).toEqual([]);
    expect(r.entries[0]).toMatchObject({
      index: 7,
      gpsWeek: null,
      offsetMm: null,
      stdDev: null,
      rtkStatus: 16,
    });
  });

  it('refuses lines without a position or a status', () => {
    const r = parseMrk('1\t12.5\t[2266]\t22.5,Lat\t16,Q\n2\t13.5\t[2266]\t22.5,Lat\t113.9,Lon\n');
    expect(r.entries).toEqual([]);
    expect(r.problems.map((p) => p.message)).toEqual([
      'Line 1: no latitude/longitude (cut short?).',
      'Line 2: no positioning status "Q" (cut short?).',
    ]);
  });
});

describe('rtkClass', () => {
  it.each([
    [50, 'fixed'],
    [34, 'float'],
    [32, 'float'],
    [49, 'float'],
    [16, 'single'],
    [0, 'none'],
    [1, 'other'],
    [51, 'other'],
  ])('%i is %s', (q, c) => {
    expect(rtkClass(q)).toBe(c);
  });
});
