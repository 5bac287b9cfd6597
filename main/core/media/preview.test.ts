import fs from 'node:fs';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import jpeg from 'jpeg-js';
import { describe, expect, it, vi } from 'vitest';
import { FIXTURES } from '../../../test/support/harness.js';
import { shotBytes, T0, M3T_START } from '../../../test/support/flight-card.js';
import { readRangeInWorker } from '../hash/workers.js';
import { readMediaInfo } from './metadata.js';
import { previewStats, thumbnailBytes } from './preview.js';

const M3T = path.join(FIXTURES, 'M3T', 'M3T_IR.JPG');

describe('the preview DJI embeds in each JPEG', () => {
  it('is found in the head of the file and decoded; the main image is not', () => {
    const head = fs.readFileSync(M3T).subarray(0, 64 * 1024);
    const thumb = thumbnailBytes(head, 1170, 24894)!;
    expect(thumb.length).toBe(24894);
    expect(previewStats(thumb)).toMatchObject({ width: 160, height: 128, dark: expect.any(Number) });
    // a thumbnail said to lie past the bytes at hand, or in a file with no Exif segment: nothing
    expect(thumbnailBytes(head.subarray(0, 20_000), 1170, 24894)).toBeNull();
    expect(thumbnailBytes(Buffer.alloc(64 * 1024, 7), 1170, 24894)).toBeNull();
    expect(previewStats(Buffer.from('not a jpeg'))).toBeNull();
  });

  it('tells a black preview from the real one, read from memory or from the file alike', async () => {
    const black = shotBytes({ utcMs: T0, ...M3T_START, blackPreview: true });
    const fromMemory = await readMediaInfo('DJI_0001.JPG', { content: black });
    expect(fromMemory.frame?.preview).toMatchObject({ mean: expect.any(Number), dark: 1 });
    expect(fromMemory.frame!.preview!.mean).toBeLessThan(2);
    const real = await readMediaInfo(M3T);
    expect(real.frame?.preview?.mean).toBeGreaterThan(40);
    expect(real.frame?.gnssUtc).toBe('2023-07-07T07:39:34.945Z'); // UTCAtExposure less the 18 leap seconds
  });

  it('is decoded in a running hash worker, to the same figures: its garbage and CPU off this thread', async () => {
    const thumb = thumbnailBytes(fs.readFileSync(M3T), 1170, 24894)!;
    const here = previewStats(thumb);
    // jpeg-js as this thread loaded it (the module preview.ts decodes with here); a worker has its own.
    const decode = vi.spyOn(jpeg, 'decode');
    try {
      // No range worker yet: none is started for a preview alone; decoded here.
      expect((await readMediaInfo(M3T)).frame?.preview).toEqual(here);
      expect(decode).toHaveBeenCalledTimes(1);
      // An upload reads a part (the range workers run): the previews go to them.
      await readRangeInWorker(M3T, 0, 1024 * 1024, fs.statSync(M3T).size);
      for (let i = 0; i < 5; i++) expect((await readMediaInfo(M3T)).frame?.preview).toEqual(here);
      expect(decode).toHaveBeenCalledTimes(1);
    } finally {
      decode.mockRestore();
    }
  });

  it('costs a few milliseconds of CPU per photo (printed; not a speed test)', () => {
    const thumb = thumbnailBytes(fs.readFileSync(M3T), 1170, 24894)!;
    for (let i = 0; i < 20; i++) previewStats(thumb);
    const n = 100;
    const cpu = process.cpuUsage();
    const t = performance.now();
    for (let i = 0; i < n; i++) previewStats(thumb);
    const used = process.cpuUsage(cpu);
    console.log(
      `preview decode + statistics per photo: ${((used.user + used.system) / 1000 / n).toFixed(2)} ms CPU, ${((performance.now() - t) / n).toFixed(2)} ms wall`,
    );
  });
});
