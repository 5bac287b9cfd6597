import { describe, expect, it } from 'vitest';
import { AIRCRAFT, CAMERAS, MEDIA_FILE_TYPES, SIDECAR_FILE_TYPES, VIDEO_FILE_TYPES } from './domain.js';

const unique = (xs: readonly string[]): boolean => new Set(xs).size === xs.length;

describe('the device table', () => {
  const aircraft = Object.values(AIRCRAFT);
  const cameras = Object.values(CAMERAS);

  it('gives each device one key, one name and one label, aircraft in domain 0 and payloads in domain 1', () => {
    const all = [...aircraft, ...cameras];
    expect(unique(all.map((d) => d.key))).toBe(true);
    expect(unique(all.map((d) => d.name))).toBe(true);
    expect(unique(all.map((d) => d.label))).toBe(true);
    expect(aircraft.every((a) => /^0-\d+-\d+$/.test(a.key))).toBe(true);
    expect(cameras.every((c) => /^1-\d+-\d+$/.test(c.key))).toBe(true);
  });

  it('names DJI devices as DJI does: Matrice and Mavic in full, Zenmuse payloads', () => {
    expect(AIRCRAFT.M350.name).toBe('Matrice 350 RTK');
    expect(AIRCRAFT.M3E.name).toBe('Mavic 3 Enterprise');
    expect(CAMERAS.M30T.name).toBe('Matrice 30T camera');
    expect(CAMERAS.H20T.name).toBe('Zenmuse H20T');
  });

  it('ties every camera to aircraft of the table: its own, or those that carry it with the assumed one among them', () => {
    for (const c of cameras) {
      if ('aircraft' in c) expect(AIRCRAFT[c.aircraft]).toBeDefined();
      else expect(c.fits).toContain(c.assumed);
    }
  });
});

describe('the file types', () => {
  it('count videos among the media, and never a side-car file', () => {
    expect(VIDEO_FILE_TYPES.every((t) => (MEDIA_FILE_TYPES as readonly string[]).includes(t))).toBe(true);
    expect(SIDECAR_FILE_TYPES.some((t) => (MEDIA_FILE_TYPES as readonly string[]).includes(t))).toBe(false);
  });
});
