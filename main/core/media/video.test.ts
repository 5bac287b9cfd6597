import { execFileSync } from 'node:child_process';
import { copyFile, mkdir, mkdtemp, rm, symlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { readMediaInfo } from './metadata.js';

/*
 * Real files on disk: real DJI photos and SRTs from the fixtures, laid out as
 * on a card. The MP4 bytes are not read (nothing in them is), so a few bytes
 * stand in for the video itself.
 */
const DJI = fileURLToPath(new URL('../../../test/fixtures/dji/', import.meta.url));

let tmp: string;
beforeAll(async () => {
  tmp = await mkdtemp(join(tmpdir(), 'dms-video-'));
});
afterAll(async () => {
  await rm(tmp, { recursive: true, force: true });
});

async function flight(name: string, files: Record<string, string | null>): Promise<string> {
  const dir = join(tmp, name, 'DCIM', 'DJI_202404241446_001');
  await mkdir(dir, { recursive: true });
  for (const [file, from] of Object.entries(files)) {
    if (from === null) await writeFile(join(dir, file), Buffer.from('\0\0\0\x18ftypisom fake video'));
    else await copyFile(join(DJI, from), join(dir, file));
  }
  return dir;
}

describe('a video is described from beside it', () => {
  it('position, altitudes and gimbal from its .SRT; aircraft, camera and serial from a photo of the folder', async () => {
    const dir = await flight('m30t', {
      'DJI_20240424144612_0001_T.JPG': 'M30T/M30T_IR.JPG',
      'DJI_20240424144700_0002_W.MP4': null,
      'DJI_20240424144700_0002_W.SRT': 'SRT/p4_rtk.SRT',
    });
    const info = await readMediaInfo(join(dir, 'DJI_20240424144700_0002_W.MP4'), {
      timeZoneOffsetMinutes: 120,
      root: join(tmp, 'm30t'),
    });
    // p4_rtk.SRT cue 1: GPS (-58.851745, -34.237922, 15), H 85.80m, G.PRY (-24.4°, 0.0°, 110.4°); no date,
    // so the time is the name's.
    expect(info.metadata).toEqual({
      shoot_position: { lat: -34.237922, lng: -58.851745 },
      absolute_altitude: 15,
      relative_altitude: 85.8,
      gimbal_yaw_degree: 110.4,
      created_time: '2024-04-24T14:47:00+02:00',
    });
    // M30T_IR.JPG: xmp DroneModel="M30T", DroneSerialNumber="1581F62HD232T00CPV1Q" (metadata.test.ts)
    expect(info.droneModelKey).toBe('0-67-1');
    expect(info.payloadModelKey).toBe('1-53-0');
    expect(info.sn).toBe('1581F62HD232T00CPV1Q');
    expect(info.unsupportedReason).toBeUndefined();
    expect(info.isOriginal).toBe(true);
    expect(info.subFileType).toBe(0);
    expect(info.warnings).toEqual([
      'Video: position from DJI_20240424144700_0002_W.SRT (cue 1).',
      'Capture time taken from the file name (no date in a .SRT beside it).',
      'Aircraft and camera taken from DJI_20240424144612_0001_T.JPG in the same folder.',
    ]);
  });

  it("an SRT's own date wins over the name, the extension's case does not matter, what it lacks is named", async () => {
    const dir = await flight('m300', {
      'DJI_0012.JPG': 'ZH20T/DJI_H20T.jpg',
      'DJI_0013.MOV': null,
      'DJI_0013.srt': 'SRT/matrice_300.srt',
    });
    const info = await readMediaInfo(join(dir, 'DJI_0013.MOV'), { timeZoneOffsetMinutes: 120 });
    // matrice_300.srt cue 1: 2022.06.21 16:06:17 / GPS(36.6146,-6.1120,0.0M) BAROMETER:0.3M
    expect(info.metadata).toEqual({
      shoot_position: { lat: 36.6146, lng: -6.112 },
      relative_altitude: 0.3,
      created_time: '2022-06-21T16:06:17+02:00',
    });
    expect(info.warnings[0]).toBe(
      'Video: position from DJI_0013.srt (cue 1); it has no absolute altitude, gimbal heading.',
    );
    // The H20T photo beside it: payload 1-43-0 on the documented M300 assumption, no aircraft serial.
    expect([info.droneModelKey, info.payloadModelKey, info.sn]).toEqual(['0-60-0', '1-43-0', undefined]);
  });

  it('the photo with the same lens letter is preferred; a camera outside the cloud list is skipped', async () => {
    const dir = await flight('lens', {
      'DJI_20240424144600_0001_A.JPG': 'M2EA/M2EA_IR.JPG',
      'DJI_20240424144601_0002_T.JPG': 'M3T/M3T_IR.JPG',
      'DJI_20240424144602_0003_W.JPG': 'M30T/M30T_IR.JPG',
      'DJI_20240424144700_0004_W.MP4': null,
    });
    const w = await readMediaInfo(join(dir, 'DJI_20240424144700_0004_W.MP4'));
    expect(w.droneModelKey).toBe('0-67-1'); // the _W photo: M30T
    const t = await readMediaInfo(
      join(dir, 'DJI_20240424144700_0004_W.MP4').replace('_W.MP4', '_T.MP4'),
    ).catch((e: Error) => e);
    expect(t).toBeInstanceOf(Error); // no such file: source-missing, as for any file
    await writeFile(join(dir, 'DJI_20240424144700_0005_T.MP4'), 'x');
    expect((await readMediaInfo(join(dir, 'DJI_20240424144700_0005_T.MP4'))).droneModelKey).toBe('0-77-1'); // M3T
    await writeFile(join(dir, 'DJI_20240424144700_0006_Z.MP4'), 'x');
    // No _Z photo: the first by name, the M2EA, is outside the cloud list and skipped for the M3T.
    expect((await readMediaInfo(join(dir, 'DJI_20240424144700_0006_Z.MP4'))).droneModelKey).toBe('0-77-1');
  });

  it('side-cars that are links out of the card are not read: no position, no keys, the reason named', async () => {
    const outside = join(tmp, 'laptop');
    await mkdir(outside, { recursive: true });
    await copyFile(join(DJI, 'SRT/p4_rtk.SRT'), join(outside, 'track.SRT'));
    await copyFile(join(DJI, 'M30T/M30T_IR.JPG'), join(outside, 'photo.JPG'));
    const dir = await flight('links', { 'DJI_0001.MP4': null });
    await symlink(join(outside, 'track.SRT'), join(dir, 'DJI_0001.SRT'));
    await symlink(join(outside, 'photo.JPG'), join(dir, 'DJI_0000.JPG'));
    const root = join(tmp, 'links');
    const info = await readMediaInfo(join(dir, 'DJI_0001.MP4'), { root });
    expect(info.metadata.shoot_position).toBeUndefined();
    expect(info.droneModelKey).toBeUndefined();
    expect(info.unsupportedReason).toMatch(/no photo of a known DJI camera is beside it/);
    expect(info.warnings).toContain(
      'DJI_0001.SRT is not a file on the card (a link out of it, or a pipe): not read.',
    );
    // Without the root (a caller that does not know it), the same links are followed: the check is the root's.
    expect((await readMediaInfo(join(dir, 'DJI_0001.MP4'))).droneModelKey).toBe('0-67-1');
  });

  it.skipIf(process.platform === 'win32')(
    'side-cars that are pipes are never opened (opening one would wait for a writer forever)',
    async () => {
      const dir = await flight('pipes', { 'DJI_0002.MP4': null });
      execFileSync('mkfifo', [join(dir, 'DJI_0002.SRT'), join(dir, 'DJI_0001.JPG')]);
      const info = await readMediaInfo(join(dir, 'DJI_0002.MP4'), { root: join(tmp, 'pipes') });
      expect(info.warnings).toContain(
        'DJI_0002.SRT is not a file on the card (a link out of it, or a pipe): not read.',
      );
      expect(info.droneModelKey).toBeUndefined();
    },
    5000,
  );

  it('an SRT with no fix in its first 64 KiB, and a video with nothing beside it', async () => {
    const dir = await flight('nofix', { 'DJI_0001.MP4': null });
    const cue = (n: number) =>
      `${n}\n00:00:00,000 --> 00:00:00,033\n[latitude: 0.000000] [longitude: 0.000000] [rel_alt: 0.000 abs_alt: 0.000]\n\n`;
    let text = '';
    for (let n = 1; text.length < 70 * 1024; n++) text += cue(n);
    text += `9999\n00:01:00,000 --> 00:01:00,033\n[latitude: 50.1] [longitude: 4.2]\n\n`;
    await writeFile(join(dir, 'DJI_0001.SRT'), text);
    const info = await readMediaInfo(join(dir, 'DJI_0001.MP4'));
    expect(info.metadata.shoot_position).toBeUndefined();
    expect(info.warnings[0]).toBe('Video: DJI_0001.SRT has no GPS position in its first cues.');
  });
});
