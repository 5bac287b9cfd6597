import fs from 'node:fs';
import { afterAll, describe, expect, it } from 'vitest';
import { tempDir } from '../../../test/support/harness.js';
import { buildRtkCard, readFlightFromDisk } from '../../../test/support/rtk-card.js';
import { analyseFlight, exposureNumber } from './flight.js';
import { parseMrk, formatMrkLine } from '../media/mrk.js';
import type { FlightInput, FlightMediaInput } from './types.js';

const FOLDER = 'DCIM/DJI_202405061012_003_Quarry';
const dirs: string[] = [];
afterAll(() => {
  for (const d of dirs) fs.rmSync(d, { recursive: true, force: true });
});

const mrkText = (
  indexes: number[],
  status: (i: number) => number = () => 50,
  seconds = (i: number) => i * 2,
) =>
  indexes
    .map((index) =>
      formatMrkLine({
        index,
        gpsSecondsOfWeek: 200_000 + seconds(index),
        gpsWeek: 2310,
        offsetMm: { north: 0, east: 0, down: 0 },
        lat: 50 + index * 1e-4,
        lon: 4,
        ellipsoidHeight: 100,
        stdDev: { north: 0.01, east: 0.01, vertical: 0.02 },
        rtkStatus: status(index),
      }),
    )
    .join('\n');

const photo = (index: number, lens = 'V', extra: Partial<FlightMediaInput> = {}): FlightMediaInput => ({
  relPath: `${FOLDER}/DJI_20240506101512_${String(index).padStart(4, '0')}_${lens}.JPG`,
  capturedAt: `2024-05-06T10:15:${String(10 + index).padStart(2, '0')}+02:00`,
  position: { lat: 50 + index * 1e-4, lng: 4 },
  gimbalYaw: 90,
  ...extra,
});

const rtkFlight = (over: Partial<FlightInput> = {}): FlightInput => ({
  folder: FOLDER,
  media: [],
  rtkFiles: [
    { relPath: `${FOLDER}/DJI_202405061012_003_Rinex.obs`, kind: 'obs' },
    { relPath: `${FOLDER}/DJI_202405061012_003_PPKNAV.nav`, kind: 'nav' },
  ],
  mrk: [],
  ...over,
});

describe('exposureNumber', () => {
  it.each([
    ['DJI_20240506101512_0042_V.JPG', 42],
    ['DJI_20240506101512_0042_W.jpg', 42],
    ['DJI_20240506101512_0042.JPG', 42],
    ['DJI_0007.JPG', 7],
    ['PANO_0001.JPG', undefined],
    ['DJI_2024050610_0042_V.JPG', undefined],
  ])('%s -> %s', (name, n) => {
    expect(exposureNumber(name)).toBe(n);
  });
});

describe('analyseFlight on plain inputs', () => {
  it('groups the photos of several lenses into one exposure and matches the MRK', () => {
    const media = [1, 2, 3].flatMap((i) => [photo(i, 'W'), photo(i, 'Z'), photo(i, 'T')]);
    const r = analyseFlight(
      rtkFlight({ media, mrk: [{ relPath: `${FOLDER}/x_Timestamp.MRK`, ...parseMrk(mrkText([1, 2, 3])) }] }),
    );
    expect(r.photos).toBe(9);
    expect(r.exposuresInMrk).toBe(3);
    expect(r.exposuresFound).toBe(3);
    expect(r.exposures[0]!.photos).toHaveLength(3);
    expect(r.missingIndexes).toEqual([]);
    expect(r.extraIndexes).toEqual([]);
    expect(r.rtkCounts).toEqual({ fixed: 3, float: 0, single: 0, none: 0, other: 0 });
    expect(r.flags).toEqual([]);
    expect(r.incomplete).toBe(false);
    expect(r.missionName).toBe('Quarry');
  });

  it('names missing and extra exposures; missing photos make the flight incomplete', () => {
    const media = [1, 2, 4, 5, 9].map((i) => photo(i));
    const mrk = [{ relPath: `${FOLDER}/x_Timestamp.MRK`, ...parseMrk(mrkText([1, 2, 3, 4, 5, 6, 7])) }];
    const r = analyseFlight(rtkFlight({ media, mrk }));
    expect(r.missingIndexes).toEqual([3, 6, 7]);
    expect(r.extraIndexes).toEqual([9]);
    expect(r.incomplete).toBe(true);
    const codes = r.flags.map((f) => [f.code, f.severity]);
    expect(codes).toContainEqual(['photos-missing', 'incomplete']);
    expect(codes).toContainEqual(['photos-not-in-mrk', 'warning']);
    expect(r.flags.find((f) => f.code === 'photos-missing')!.message).toMatch(
      /^3 photos missing: .*exposure 3, 6 and 7 /,
    );
  });

  it('counts fixed, float and single fixes', () => {
    const idx = [1, 2, 3, 4, 5, 6];
    const mrk = [
      {
        relPath: `${FOLDER}/x_Timestamp.MRK`,
        ...parseMrk(mrkText(idx, (i) => (i === 2 ? 34 : i === 3 ? 40 : i === 5 ? 16 : 50))),
      },
    ];
    const r = analyseFlight(rtkFlight({ media: idx.map((i) => photo(i)), mrk }));
    expect(r.rtkCounts).toEqual({ fixed: 3, float: 2, single: 1, none: 0, other: 0 });
    expect(r.flags.map((f) => f.code)).toEqual(['rtk-float', 'rtk-single', 'rtk-stretch']);
    expect(r.incomplete).toBe(false);
  });

  it('finds a gap over 2.5x the usual interval, not the odd slow one', () => {
    const idx = [1, 2, 3, 4, 5, 6, 7, 8];
    // every 2 s, 4 s after 3 (under 2.5x), 30 s after 6.
    const seconds = (i: number) => i * 2 + (i > 3 ? 2 : 0) + (i > 6 ? 30 : 0);
    const mrk = [{ relPath: `${FOLDER}/x_Timestamp.MRK`, ...parseMrk(mrkText(idx, () => 50, seconds)) }];
    const r = analyseFlight(rtkFlight({ media: idx.map((i) => photo(i)), mrk }));
    expect(r.usualIntervalSeconds).toBe(2);
    expect(r.gaps).toEqual([{ afterIndex: 6, beforeIndex: 7, seconds: 32 }]);
    expect(r.flags.find((f) => f.code === 'time-gap')!.message).toMatch(
      /32 s between exposure 6 and 7, usually 2 s/,
    );
  });

  it('uses the photos’ capture times without an MRK, and needs 3 intervals for a usual one', () => {
    const r = analyseFlight({ folder: FOLDER, media: [1, 2, 3].map((i) => photo(i)), rtkFiles: [], mrk: [] });
    expect(r.usualIntervalSeconds).toBeNull();
    const r2 = analyseFlight({
      folder: FOLDER,
      media: [1, 2, 3, 4, 5].map((i) =>
        photo(i, 'V', { capturedAt: `2024-05-06T10:1${i === 5 ? 6 : 5}:${10 + i}+02:00` }),
      ),
      rtkFiles: [],
      mrk: [],
    });
    expect(r2.usualIntervalSeconds).toBe(1);
    expect(r2.gaps).toEqual([{ afterIndex: 4, beforeIndex: 5, seconds: 61 }]);
  });

  it('a folder of photos years and continents apart is not one flight: flagged, no interval, no gaps', () => {
    const at = (i: number, capturedAt: string, lat: number, lng: number) =>
      photo(i, 'T', { capturedAt, position: { lat, lng } });
    const media = [
      at(1, '2021-05-28T10:33:46Z', 40.56, -79.76), // Pennsylvania
      at(2, '2022-09-02T15:17:42Z', -35.3, -71.53), // Chile
      at(3, '2023-07-07T09:39:34Z', 50.69, 4.52), // Belgium
      at(4, '2024-04-24T14:46:12Z', 50.85, 4.36),
      at(5, '2024-04-24T14:46:20Z', 50.85, 4.36),
    ];
    const r = analyseFlight({ folder: FOLDER, media, rtkFiles: [], mrk: [] });
    expect(r.usualIntervalSeconds).toBeNull();
    expect(r.gaps).toEqual([]);
    expect(r.flags.map((f) => [f.code, f.severity])).toEqual([['several-flights', 'warning']]);
    expect(r.flags[0]!.message).toMatch(
      /^These files were taken over 3 years \(2021-05-28 to 2024-04-24\) and up to 1[\d,]+ km apart: this folder holds more than one flight/,
    );
  });

  it('photos an hour apart in one place: no "usual interval" of an hour, and no gaps', () => {
    const media = [0, 1, 2, 3, 4].map((h) =>
      photo(h + 1, 'V', { capturedAt: `2024-05-06T0${h + 1}:00:00Z` }),
    );
    const r = analyseFlight({ folder: FOLDER, media, rtkFiles: [], mrk: [] });
    expect(r.usualIntervalSeconds).toBeNull();
    expect(r.flags).toEqual([]);
  });

  it('a plain flight without any RTK file expects none and is complete', () => {
    const r = analyseFlight({ folder: FOLDER, media: [photo(1), photo(2)], rtkFiles: [], mrk: [] });
    expect(r.rtkExpected).toBe(false);
    expect(r.exposuresInMrk).toBeNull();
    expect(r.rtkCounts).toBeNull();
    expect(r.incomplete).toBe(false);
  });

  it('an RTK flight without its MRK, or without observations, is incomplete', () => {
    const noMrk = analyseFlight(rtkFlight({ media: [photo(1)] }));
    expect(noMrk.flags.map((f) => f.code)).toEqual(['mrk-missing']);
    expect(noMrk.incomplete).toBe(true);

    const mrk = [{ relPath: `${FOLDER}/x_Timestamp.MRK`, ...parseMrk(mrkText([1])) }];
    const noObs = analyseFlight({ folder: FOLDER, media: [photo(1)], rtkFiles: [], mrk });
    expect(noObs.flags.map((f) => [f.code, f.severity])).toEqual([
      ['rtk-observations-missing', 'incomplete'],
      ['rtk-navigation-missing', 'warning'],
    ]);
    const expected = analyseFlight({
      folder: FOLDER,
      media: [photo(1)],
      rtkFiles: [],
      mrk: [],
      expectRtk: true,
    });
    expect(expected.flags.map((f) => f.code)).toEqual([
      'mrk-missing',
      'rtk-observations-missing',
      'rtk-navigation-missing',
    ]);
  });

  it('an MRK with no readable line is incomplete; damaged lines only warn', () => {
    const garbage = analyseFlight(
      rtkFlight({
        media: [photo(1)],
        mrk: [{ relPath: `${FOLDER}/x_Timestamp.MRK`, ...parseMrk('\u0000\u0001garbage\n') }],
      }),
    );
    expect(garbage.flags.map((f) => f.code)).toEqual(['mrk-unreadable', 'mrk-damaged-lines']);
    expect(garbage.incomplete).toBe(true);

    const cut = analyseFlight(
      rtkFlight({
        media: [photo(1), photo(2)],
        mrk: [{ relPath: `${FOLDER}/x_Timestamp.MRK`, ...parseMrk(`${mrkText([1, 2])}\n3\t2000`) }],
      }),
    );
    expect(cut.flags.map((f) => f.code)).toEqual(['mrk-damaged-lines']);
    expect(cut.flags[0]!.message).toMatch(
      /1 line of the exposure log could not be read \(x_Timestamp.MRK: The last line is cut short/,
    );
    expect(cut.incomplete).toBe(false);
  });

  it('lists photos without a position and falls back to the MRK position for the map', () => {
    const mrk = [{ relPath: `${FOLDER}/x_Timestamp.MRK`, ...parseMrk(mrkText([1, 2])) }];
    const r = analyseFlight(rtkFlight({ media: [photo(1), photo(2, 'V', { position: null })], mrk }));
    expect(r.photosWithoutPosition).toEqual([`${FOLDER}/DJI_20240506101512_0002_V.JPG`]);
    expect(r.exposures[1]!.position).toEqual({ lat: 50.0002, lng: 4 });
    expect(r.flags.map((f) => f.code)).toEqual(['no-position']);
  });
});

describe('analyseFlight on a synthetic RTK card read from disk (real M3T photos, real metadata reader)', () => {
  it('reports the missing exposure, the float fixes and the gap', async () => {
    const root = tempDir('dms-rtk-');
    dirs.push(root);
    const card = buildRtkCard({ root, exposures: 12, missing: [7], float: [3, 4], gapsAfter: { 9: 20 } });
    const input = await readFlightFromDisk(root, card.folder);
    expect(input.media).toHaveLength(11);
    // the metadata reader sees each copy's own position, yaw and time
    expect(input.media[0]).toEqual({
      relPath: card.photos[0]!.relPath,
      capturedAt: '2024-05-06T10:15:12+02:00',
      position: { lat: card.photos[0]!.lat, lng: card.photos[0]!.lng },
      gimbalYaw: 90,
    });
    expect(input.media[10]!.gimbalYaw).toBe(-90);

    const r = analyseFlight(input);
    expect(r.folder).toBe(card.folder);
    expect(r.exposuresInMrk).toBe(12);
    expect(r.exposuresFound).toBe(11);
    expect(r.missingIndexes).toEqual([7]);
    expect(r.extraIndexes).toEqual([]);
    expect(r.rtkCounts).toEqual({ fixed: 10, float: 2, single: 0, none: 0, other: 0 });
    expect(r.rtkFiles.obs).toHaveLength(1);
    expect(r.rtkFiles.nav).toHaveLength(1);
    expect(r.rtkFiles.ppkraw).toHaveLength(1);
    expect(r.usualIntervalSeconds).toBe(2);
    expect(r.gaps).toEqual([{ afterIndex: 9, beforeIndex: 10, seconds: 22 }]);
    expect(r.incomplete).toBe(true);
    expect(r.flags.map((f) => f.code)).toEqual(['photos-missing', 'rtk-float', 'rtk-stretch', 'time-gap']);
    expect(r.flags.find((f) => f.code === 'rtk-stretch')!.message).toMatch(
      /^RTK fix lost: float at exposure 3–4./,
    );
  });

  it('a complete RTK flight has no flag', async () => {
    const root = tempDir('dms-rtk-');
    dirs.push(root);
    const card = buildRtkCard({ root, exposures: 6, missing: [], float: [] });
    const r = analyseFlight(await readFlightFromDisk(root, card.folder));
    expect(r.flags).toEqual([]);
    expect(r.incomplete).toBe(false);
    expect(r.exposures.every((e) => e.photos.length === 1 && e.mrk?.rtk === 'fixed')).toBe(true);
  });
});
