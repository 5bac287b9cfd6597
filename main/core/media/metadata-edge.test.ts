import { mkdtemp, mkdir, open, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { readMediaInfo } from './metadata.js';

const DJI = fileURLToPath(new URL('../../../test/fixtures/dji/', import.meta.url));
const H20T_RTK = join(DJI, 'ZH20T/DJI_20220902151742_0028_T.JPG');
const M3T = join(DJI, 'M3T/M3T_IR.JPG');
const dms = (d: number, m: number, s: number, neg = false): number =>
  (neg ? -1 : 1) * (d + m / 60 + s / 3600);

let tmp: string;
beforeAll(async () => {
  tmp = await mkdtemp(join(tmpdir(), 'dms-meta-'));
});
afterAll(async () => {
  await rm(tmp, { recursive: true, force: true });
});

/**
 * A copy of a real file with same-length byte replacements, so every JPEG
 * segment length stays right and only the XMP text changes.
 */
async function mutated(src: string, name: string, edits: [string, string][]): Promise<string> {
  let bytes = await readFile(src);
  for (const [from, to] of edits) {
    expect(to.length).toBe(from.length);
    const at = bytes.indexOf(from, 0, 'latin1');
    expect(at).toBeGreaterThan(0);
    bytes = Buffer.concat([
      bytes.subarray(0, at),
      Buffer.from(to, 'latin1'),
      bytes.subarray(at + from.length),
    ]);
  }
  const out = join(tmp, name);
  await mkdir(dirname(out), { recursive: true });
  await writeFile(out, bytes);
  return out;
}

describe('readMediaInfo fallbacks', () => {
  it('falls back to EXIF GPS when the XMP has no position / altitude', async () => {
    const f = await mutated(H20T_RTK, 'no-xmp-gps.JPG', [
      ['drone-dji:GpsLatitude=', 'drone-dji:GpsLatitudX='],
      ['drone-dji:AbsoluteAltitude=', 'drone-dji:AbsoluteAltitudX='],
    ]);
    const info = await readMediaInfo(f, { timeZoneOffsetMinutes: 0 });
    // Values from the exiftool dump's GPS group: 35 deg 18' 1.92" S, 71 deg 31' 41.14" W, 205.57 m
    expect(info.metadata.shoot_position?.lat).toBeCloseTo(dms(35, 18, 1.92, true), 5);
    expect(info.metadata.shoot_position?.lng).toBeCloseTo(dms(71, 31, 41.14, true), 5);
    expect(info.metadata.absolute_altitude).toBe(205.57);
    // Still from the XMP (EXIF has no such fields): dump Relative Altitude +39.436
    expect(info.metadata.relative_altitude).toBe(39.436);
  });

  it('reads the misspelled GpsLongtitude of some firmware', async () => {
    const f = await mutated(M3T, 'longtitude.JPG', [
      ['GpsLongitude="+4.524341654"', 'GpsLongtitude="+4.52434165"'],
    ]);
    const info = await readMediaInfo(f);
    expect(info.metadata.shoot_position).toEqual({ lat: 50.688176398, lng: 4.52434165 });
  });

  it('treats a DJI 0/0 (no fix) XMP position as unknown and uses EXIF GPS instead', async () => {
    const f = await mutated(M3T, 'nofix.JPG', [
      ['GpsLatitude="+50.688176398"', 'GpsLatitude="+00.000000000"'],
      ['GpsLongitude="+4.524341654"', 'GpsLongitude="+0.000000000"'],
    ]);
    const info = await readMediaInfo(f);
    // EXIF GPS of this file (exifr/strings): 50 deg 41' 17.435" N, 4 deg 31' 27.6299" E
    expect(info.metadata.shoot_position?.lat).toBeCloseTo(dms(50, 41, 17.435), 5);
    expect(info.metadata.shoot_position?.lng).toBeCloseTo(dms(4, 31, 27.6299), 5);
  });

  it('marks panoramas from the card folder, the file name and keeps normal photos at 0', async () => {
    const src = await readFile(M3T);
    const pano = join(tmp, 'card/DCIM/PANORAMA/001_0001/DJI_0001.JPG');
    await mkdir(dirname(pano), { recursive: true });
    await writeFile(pano, src);
    expect((await readMediaInfo(pano, { relPath: 'DCIM/PANORAMA/001_0001/DJI_0001.JPG' })).subFileType).toBe(
      1,
    );
    // Without relPath the folder is not trusted (it could be a user folder above the card).
    expect((await readMediaInfo(pano)).subFileType).toBe(0);
    const named = join(tmp, 'DJI_20230707093934_0001_PANO.JPG');
    await writeFile(named, src);
    expect((await readMediaInfo(named)).subFileType).toBe(1);
  });

  it('isOriginal is false for edited names and Camera Raw edits, true for camera files', async () => {
    const src = await readFile(M3T);
    const edited = join(tmp, 'DJI_0001_edited.JPG');
    await writeFile(edited, src);
    expect((await readMediaInfo(edited)).isOriginal).toBe(false);
    expect((await readMediaInfo(M3T)).isOriginal).toBe(true);
    // DJI writes crs:HasSettings="False"; Lightroom/Camera Raw sets it when it edits.
    const lr = await mutated(M3T, 'lightroom.JPG', [['crs:HasSettings="False"', 'crs:HasSettings="True" ']]);
    expect((await readMediaInfo(lr)).isOriginal).toBe(false);
  });
});

describe('readMediaInfo on files it cannot read', () => {
  it('video: no exifr, capture time from the DJI file name, a warning, no throw', async () => {
    // Alone in its folder: no .SRT and no photo beside it (video.test.ts covers those).
    await mkdir(join(tmp, 'lone-video'));
    const f = join(tmp, 'lone-video', 'DJI_20220831151616_0005_W.MP4');
    await writeFile(f, Buffer.alloc(4096, 1));
    const info = await readMediaInfo(f, { timeZoneOffsetMinutes: 120 });
    expect(info.captureTime).toEqual({ year: 2022, month: 8, day: 31, hour: 15, minute: 16, second: 16 });
    expect(info.metadata).toEqual({ created_time: '2022-08-31T15:16:16+02:00' });
    expect(info.warnings.some((w) => /video/i.test(w))).toBe(true);
    expect(info.warnings.some((w) => /file name/i.test(w))).toBe(true);
    expect(info.droneModelKey).toBeUndefined();
    expect(info.unsupportedReason).toBeDefined();
  });

  it('video with an old-style name: no capture time, warnings, no throw', async () => {
    await mkdir(join(tmp, 'lone-mov'));
    const f = join(tmp, 'lone-mov', 'DJI_0003.MOV');
    await writeFile(f, Buffer.alloc(100, 2));
    const info = await readMediaInfo(f);
    expect(info.metadata).toEqual({});
    expect(info.captureTime).toBeUndefined();
    expect(info.warnings.length).toBeGreaterThanOrEqual(2);
  });

  it('garbage and truncated JPGs never throw: empty or partial metadata', async () => {
    const garbage = join(tmp, 'garbage.JPG');
    await writeFile(garbage, Buffer.from('this is not a jpeg at all, just text'.repeat(50)));
    const g = await readMediaInfo(garbage);
    expect(g.metadata).toEqual({});
    expect(g.warnings.length).toBeGreaterThan(0);

    // Cut inside the first (EXIF) segment: nothing readable, no throw.
    const cut = join(tmp, 'cut.JPG');
    await writeFile(cut, (await readFile(M3T)).subarray(0, 100));
    const c = await readMediaInfo(cut);
    expect(c.metadata).toEqual({});
    expect(c.warnings.length).toBeGreaterThan(0);

    // Cut after the GPS IFD but before the XMP (at byte 26080 of this file): what survived is used.
    const truncated = join(tmp, 'truncated.JPG');
    await writeFile(truncated, (await readFile(M3T)).subarray(0, 3000));
    const t = await readMediaInfo(truncated);
    expect(t.metadata.shoot_position?.lat).toBeCloseTo(dms(50, 41, 17.435), 5);
    expect(t.metadata.relative_altitude).toBeUndefined(); // only the XMP has it
    expect(t.sn).toBeUndefined(); // XMP DroneSerialNumber lost with the XMP
  });

  it('a missing file throws DmsError source-missing', async () => {
    await expect(readMediaInfo(join(tmp, 'gone.JPG'))).rejects.toMatchObject({
      name: 'DmsError',
      kind: 'source-missing',
    });
  });
});

describe('readMediaInfo time zone fallback', () => {
  const saved = process.env.TZ;
  afterEach(() => {
    if (saved === undefined) delete process.env.TZ;
    else process.env.TZ = saved;
  });

  it("uses the machine's zone at the capture date when the file has no offset", async () => {
    // Node re-reads TZ when it is assigned. The M2EA file is from Belgium (50.44 N, 4.98 E),
    // February: CET, +01:00 — whatever the zone's offset is today.
    process.env.TZ = 'Europe/Brussels';
    const winter = await readMediaInfo(join(DJI, 'M2EA/M2EA_IR.JPG'));
    expect(winter.metadata.created_time).toBe('2023-02-15T07:39:33+01:00');
    // Chile moved to summer time on 11 Sept 2022: 2 Sept is still -04:00.
    process.env.TZ = 'America/Santiago';
    const chile = await readMediaInfo(H20T_RTK);
    expect(chile.metadata.created_time).toBe('2022-09-02T15:17:42-04:00');
    // A file's own offset beats the machine zone.
    const m3t = await readMediaInfo(M3T);
    expect(m3t.metadata.created_time).toBe('2023-07-07T09:39:34+02:00');
  });
});

describe('readMediaInfo reads only the header', () => {
  it('reads well under 1 MB of a 31 MB file', async () => {
    const big = join(tmp, 'big.JPG');
    await writeFile(big, Buffer.concat([await readFile(M3T), Buffer.alloc(30 * 1024 * 1024, 7)]));
    // exifr reads through FileHandle.read; count what it asks for.
    const probe = await open(big, 'r');
    const proto = Object.getPrototypeOf(probe) as {
      read: (...a: unknown[]) => Promise<{ bytesRead: number }>;
    };
    await probe.close();
    const original = proto.read;
    let bytes = 0;
    const spy = vi.spyOn(proto, 'read').mockImplementation(async function (
      this: unknown,
      ...args: unknown[]
    ) {
      const r = await original.apply(this, args);
      bytes += r.bytesRead;
      return r;
    });
    try {
      const info = await readMediaInfo(big);
      expect(info.metadata.gimbal_yaw_degree).toBe(9.9);
    } finally {
      spy.mockRestore();
    }
    expect(bytes).toBeGreaterThan(0);
    expect(bytes).toBeLessThan(1024 * 1024);
  });
});
