import { describe, expect, it } from 'vitest';
import { classifyCardFile, rtkKindOf } from './rtk-files.js';

describe('rtkKindOf', () => {
  it.each([
    ['DJI_202405061012_003_Timestamp.MRK', 'mrk'],
    ['100_0001_Timestamp.mrk', 'mrk'],
    ['DJI_202405061012_003_Rinex.obs', 'obs'],
    ['DJI_202405061012_003_RINEX.OBS', 'obs'],
    ['base0123.23O', 'obs'],
    ['ESBC00DNK_R_20231250000_01D_30S_MO.rnx', 'obs'],
    ['DJI_202405061012_003_PPKNAV.nav', 'nav'],
    ['base0123.23N', 'nav'],
    ['base0123.23g', 'nav'],
    ['DJI_202405061012_003_PPKRAW.bin', 'ppkraw'],
    ['100_0001_ppkraw.BIN', 'ppkraw'],
    ['DJI_20250101120000_0001.RTK', 'rtcm'],
    ['DJI_20250101120000_0001.rtb', 'rtcm'],
    ['DJI_20250101120000_0001.RTL', 'rtcm'],
  ])('%s is %s', (name, kind) => {
    expect(rtkKindOf(name)).toBe(kind);
  });

  it.each(['firmware.bin', 'DJI_0001.JPG', 'notes.txt', 'obs', 'x.2O', 'x.123O', 'MRK', 'x.nav.txt'])(
    '%s is no RTK file',
    (name) => {
      expect(rtkKindOf(name)).toBeUndefined();
    },
  );
});

describe('classifyCardFile', () => {
  const flight = 'DCIM/DJI_202405061012_003_Quarry';
  it.each([
    [`${flight}/DJI_20240506101512_0001_V.JPG`, 'media'],
    [`${flight}/DJI_20240506101512_0001_V.mp4`, 'media'],
    [`${flight}/DJI_202405061012_003_Timestamp.MRK`, 'rtk'],
    [`${flight}\\DJI_202405061012_003_Rinex.obs`, 'rtk'],
    [`${flight}/DJI_202405061012_003_PPKRAW.bin`, 'rtk'],
    [`${flight}/DJI_20240506101512_0001_V.LRF`, 'ignore'],
    [`${flight}/DJI_20240506101512_0001_V.SRT`, 'ignore'],
    [`${flight}/._DJI_202405061012_003_Timestamp.MRK`, 'ignore'],
    [`.Trashes/501/${flight}/x_Timestamp.MRK`, 'ignore'],
    ['MISC/IDX/DJI_202405061012_003_Timestamp.MRK', 'ignore'],
    ['misc/DJI_0001.JPG', 'ignore'],
    [`${flight}/readme.txt`, 'ignore'],
    ['', 'ignore'],
  ])('%s is %s', (path, expected) => {
    expect(classifyCardFile(path)).toBe(expected);
  });

  it('follows the include list for media, never for RTK files', () => {
    expect(classifyCardFile('DCIM/DJI_0001.DNG', { include: ['jpg'] })).toBe('ignore');
    expect(classifyCardFile('DCIM/DJI_0001.JPG', { include: ['*.JPG'] })).toBe('media');
    expect(classifyCardFile('DCIM/x_Timestamp.MRK', { include: ['jpg'] })).toBe('rtk');
    expect(classifyCardFile('DCIM/DJI_0001.LRF', { include: ['lrf'] })).toBe('ignore');
  });
});
