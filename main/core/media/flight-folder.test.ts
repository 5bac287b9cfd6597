import { describe, expect, it } from 'vitest';
import { flightFolderOf, uuidV5 } from './flight-folder.js';

const UUID_V5 = /^[0-9a-f]{8}-[0-9a-f]{4}-5[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;

describe('flightFolderOf', () => {
  it('wayline flight folder: path is the folder name, mission name split out', () => {
    // The example of service-facts.md (upload-callback path/name).
    const r = flightFolderOf('DCIM/DJI_202208311455_008_Waypoint1/DJI_20220831151616_0004_W_Waypoint4.JPG');
    expect(r.path).toBe('DJI_202208311455_008_Waypoint1');
    expect(r.missionName).toBe('Waypoint1');
    expect(r.fileGroupId).toMatch(UUID_V5);
  });

  it('keeps non-ASCII and underscored mission names whole', () => {
    const r = flightFolderOf('DCIM/DJI_202306011030_002_Обследование_моста/DJI_20230601103512_0001_Z.JPG');
    expect(r.path).toBe('DJI_202306011030_002_Обследование_моста');
    expect(r.missionName).toBe('Обследование_моста');
  });

  it('NFD names (macOS) give the same path and group as NFC', () => {
    const nfc = 'DCIM/DJI_202306011030_002_Йошкар/a.JPG'.normalize('NFC');
    const nfd = nfc.normalize('NFD');
    expect(nfd).not.toBe(nfc); // Й decomposes, so this really tests something
    expect(flightFolderOf(nfd)).toEqual(flightFolderOf(nfc));
  });

  it('manual flight folder without a mission name: path "" but still its own group', () => {
    const manual = flightFolderOf('DCIM/DJI_202208311455_008/DJI_20220831145600_0001_W.JPG');
    expect(manual.path).toBe('');
    expect(manual.missionName).toBeUndefined();
    expect(manual.fileGroupId).toMatch(UUID_V5);
    expect(manual.fileGroupId).not.toBe(flightFolderOf('DCIM/DJI_202208311455_009/x.JPG').fileGroupId);
    expect(flightFolderOf('DCIM/DJI_202208311455_008_/x.JPG').path).toBe(''); // empty name part
  });

  it('consumer folders (100MEDIA) and loose files: path "", one group per folder', () => {
    const a = flightFolderOf('DCIM/100MEDIA/DJI_0001.JPG');
    const b = flightFolderOf('DCIM/100MEDIA/DJI_0002.JPG');
    const c = flightFolderOf('DCIM/101MEDIA/DJI_0001.JPG');
    expect(a.path).toBe('');
    expect(a.fileGroupId).toBe(b.fileGroupId);
    expect(a.fileGroupId).not.toBe(c.fileGroupId);
    expect(flightFolderOf('DJI_0001.JPG').path).toBe('');
  });

  it('same folder → same id for every file and on every run; Windows separators alike', () => {
    const a = flightFolderOf('DCIM/DJI_202208311455_008_Waypoint1/DJI_20220831151616_0004_W.JPG');
    const b = flightFolderOf('DCIM\\DJI_202208311455_008_Waypoint1\\DJI_20220831151700_0009_T.JPG');
    expect(b).toEqual(a);
    // Pinned: ids already sent to servers must never change. Cross-checked with Python:
    // uuid.uuid5(UUID('3b9f6c1e-8d2a-4f5e-9a7c-0d1b2e3f4a5b'), 'flight-folder:DJI_202208311455_008_Waypoint1')
    expect(a.fileGroupId).toBe('2231db49-28b6-50ad-811a-e01c15076f1d');
    // uuid.uuid5(same namespace, 'card-folder:DCIM/100MEDIA')
    expect(flightFolderOf('DCIM/100MEDIA/DJI_0001.JPG').fileGroupId).toBe(
      '3165dd84-4797-5301-8520-fc82f6a6e560',
    );
  });

  it('a sub-folder inside a flight folder still belongs to the flight', () => {
    const r = flightFolderOf('DCIM/DJI_202208311455_008_Waypoint1/PANORAMA/001/DJI_0001.JPG');
    expect(r.path).toBe('DJI_202208311455_008_Waypoint1');
    expect(r.fileGroupId).toBe(flightFolderOf('DCIM/DJI_202208311455_008_Waypoint1/x.JPG').fileGroupId);
  });

  it('a file named like a flight folder is not a folder', () => {
    expect(flightFolderOf('DJI_202208311455_008_Waypoint1').path).toBe('');
  });
});

describe('uuidV5', () => {
  it('is an RFC 4122 v5 UUID and deterministic', () => {
    expect(uuidV5('x')).toMatch(UUID_V5);
    expect(uuidV5('x')).toBe(uuidV5('x'));
    expect(uuidV5('x')).not.toBe(uuidV5('y'));
  });

  it('an answer changed by its caller does not change the next one for the same folder', () => {
    const first = flightFolderOf('DCIM/DJI_202208311455_008_Waypoint1/a.JPG');
    first.path = 'changed';
    first.fileGroupId = 'changed';
    const next = flightFolderOf('DCIM/DJI_202208311455_008_Waypoint1/b.JPG');
    expect(next.path).toBe('DJI_202208311455_008_Waypoint1');
    expect(next.fileGroupId).toBe('2231db49-28b6-50ad-811a-e01c15076f1d');
  });

  it('many folders (more than are kept at once) each keep their own answer', () => {
    const ids = new Set<string>();
    for (let round = 0; round < 2; round++)
      for (let i = 0; i < 600; i++) {
        const r = flightFolderOf(`DCIM/DJI_202208311455_${String(i % 1000).padStart(3, '0')}_M${i}/x.JPG`);
        expect(r.path).toBe(`DJI_202208311455_${String(i % 1000).padStart(3, '0')}_M${i}`);
        ids.add(r.fileGroupId);
      }
    expect(ids.size).toBe(600);
  });

  it('a trailing separator is not a folder of its own', () => {
    expect(flightFolderOf('DCIM/100MEDIA/DJI_0001.JPG/')).toEqual(
      flightFolderOf('DCIM/100MEDIA/DJI_0001.JPG'),
    );
  });
});
