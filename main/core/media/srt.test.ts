import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { firstFix } from './srt.js';

const SRT = fileURLToPath(new URL('../../../test/fixtures/dji/SRT/', import.meta.url));
const read = (name: string): string => readFileSync(SRT + name, 'utf8');

/*
 * Expected values are copied from the files' first cue (`head -4 FILE`), never
 * from our code. Where the two GPS forms put latitude is fixed by where the
 * samples were flown: the M300 file read latitude first lies on the coast of
 * Cádiz (Spain), read the other way in Tanzania's interior; the Phantom 4 RTK
 * file read longitude first lies near Buenos Aires, whose HOME point agrees.
 */
describe('firstFix on real DJI SRT files', () => {
  it('matrice_300.srt: GPS(lat,lng,altM) BAROMETER, a dotted date, no absolute altitude or gimbal', () => {
    // 2022.06.21 16:06:17 / GPS(36.6146,-6.1120,0.0M) BAROMETER:0.3M
    expect(firstFix(read('matrice_300.srt'))).toEqual({
      cue: 1,
      lat: 36.6146,
      lng: -6.112,
      relativeAltitude: 0.3,
      time: { year: 2022, month: 6, day: 21, hour: 16, minute: 6, second: 17 },
    });
  });

  it('p4_rtk.SRT: GPS (lng, lat, alt), H, G.PRY yaw; no date in the file', () => {
    // GPS (-58.851745, -34.237922, 15), ... H 85.80m, ... G.PRY (-24.4°, 0.0°, 110.4°)
    expect(firstFix(read('p4_rtk.SRT'))).toEqual({
      cue: 1,
      lat: -34.237922,
      lng: -58.851745,
      absoluteAltitude: 15,
      relativeAltitude: 85.8,
      gimbalYaw: 110.4,
    });
  });

  it('the head of a file cut mid-cue: the cut cue is not read', () => {
    const text = read('p4_rtk.SRT');
    const second = text.indexOf('\n2\n');
    // Cut inside cue 1's telemetry line: no complete cue, no fix.
    expect(firstFix(text.slice(0, text.indexOf('D 698')), false)).toBeUndefined();
    expect(firstFix(text.slice(0, second + 60), false)?.cue).toBe(1);
  });
});

describe('firstFix on the bracket forms (written to the layouts DJI_SRT_Parser and OpenDroneMap document)', () => {
  const cue = (n: number, body: string): string =>
    `${n}\r\n00:00:0${n - 1},000 --> 00:00:0${n - 1},033\r\n<font size="28">FrameCnt: ${n}, DiffTime: 33ms\r\n${body}</font>\r\n\r\n`;

  it('Mavic 3E / M30T style: rel_alt, abs_alt, gb_yaw; cues before the GPS fix are skipped', () => {
    const text =
      cue(
        1,
        '2024-04-24 14:46:10.100\r\n[iso: 100] [latitude: 0.000000] [longitude: 0.000000] [rel_alt: 0.000 abs_alt: 0.000]',
      ) +
      cue(
        2,
        '2024-04-24 14:46:11.133\r\n[iso: 100] [shutter: 1/1000.0] [fnum: 2.8] [focal_len: 24.00] [latitude: 50.850354] [longitude: 4.362636] [rel_alt: 29.046 abs_alt: 126.078] [gb_yaw: -170.4 gb_pitch: -90.0 gb_roll: 0.0] [ct: 5500] ',
      );
    expect(firstFix(text)).toEqual({
      cue: 2,
      lat: 50.850354,
      lng: 4.362636,
      absoluteAltitude: 126.078,
      relativeAltitude: 29.046,
      gimbalYaw: -170.4,
      time: { year: 2024, month: 4, day: 24, hour: 14, minute: 46, second: 11 },
    });
  });

  it('Mavic 2 style: "latitude :", the misspelled "longtitude", altitude; no gimbal', () => {
    const text = cue(
      1,
      '2019-09-25 01:22:35,085,332\r\n[iso : 110] [focal_len : 240] [latitude: 0.608553] [longtitude: -1.963763] [altitude: 1429.697998] ',
    );
    expect(firstFix(text)).toEqual({
      cue: 1,
      lat: 0.608553,
      lng: -1.963763,
      absoluteAltitude: 1429.697998,
      time: { year: 2019, month: 9, day: 25, hour: 1, minute: 22, second: 35 },
    });
  });

  it('nothing usable: empty, no position anywhere, impossible coordinates', () => {
    expect(firstFix('')).toBeUndefined();
    expect(firstFix(cue(1, '[iso: 100] [shutter: 1/50]'))).toBeUndefined();
    expect(firstFix(cue(1, '[latitude: 123.5] [longitude: 4.3]'))).toBeUndefined();
    expect(firstFix('not a subtitle file at all\n\nGPS(1,2,3)')).toBeUndefined();
  });
});
