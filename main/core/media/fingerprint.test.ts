import { execFileSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtemp, open, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { md5File, tinyFingerprint } from './fingerprint.js';
import { readMediaInfo } from './metadata.js';

const DJI = fileURLToPath(new URL('../../../test/fixtures/dji/', import.meta.url));
const M3T = join(DJI, 'M3T/M3T_IR.JPG');

/** The reference: coreutils md5sum, an implementation independent of ours. */
const md5sum = (path: string): string =>
  execFileSync('md5sum', [path], { encoding: 'utf8' }).split(' ')[0] ?? '';

let tmp: string;
let big: string;
// 20 MiB plus an odd tail, so the last read is a partial buffer.
const BIG_SIZE = 20 * 1024 * 1024 + 12345;

beforeAll(async () => {
  tmp = await mkdtemp(join(tmpdir(), 'dms-md5-'));
  big = join(tmp, 'big.bin');
  const fh = await open(big, 'w');
  let left = BIG_SIZE;
  while (left > 0) {
    const n = Math.min(left, 1024 * 1024);
    await fh.write(randomBytes(n));
    left -= n;
  }
  await fh.close();
});
afterAll(async () => {
  await rm(tmp, { recursive: true, force: true });
});

describe('md5File', () => {
  it('equals md5sum on a real fixture', async () => {
    const expected = md5sum(M3T);
    expect(expected).toMatch(/^[0-9a-f]{32}$/);
    expect(await md5File(M3T)).toBe(expected);
  });

  it('equals md5sum on a 20 MiB file, with the default and with odd read sizes', async () => {
    const expected = md5sum(big);
    let total = 0;
    let calls = 0;
    const got = await md5File(big, {
      onBytes: (n) => {
        total += n;
        calls++;
      },
    });
    expect(got).toBe(expected);
    expect(total).toBe(BIG_SIZE);
    expect(calls).toBe(Math.ceil(BIG_SIZE / (4 * 1024 * 1024))); // 4 MiB reads by default
    expect(await md5File(big, { highWaterMark: 1024 * 1024 + 7 })).toBe(expected);
  });

  it('stops with DmsError cancelled when aborted mid-file', async () => {
    const ac = new AbortController();
    let seen = 0;
    const run = md5File(big, {
      highWaterMark: 1024 * 1024,
      onBytes: (n) => {
        seen += n;
        if (seen >= 2 * 1024 * 1024) ac.abort();
      },
      signal: ac.signal,
    });
    await expect(run).rejects.toMatchObject({ name: 'DmsError', kind: 'cancelled' });
    expect(seen).toBeLessThan(BIG_SIZE); // it did not read on to the end
  });

  it('rejects at once when the signal is already aborted', async () => {
    const ac = new AbortController();
    ac.abort();
    await expect(md5File(M3T, { signal: ac.signal })).rejects.toMatchObject({ kind: 'cancelled' });
  });

  it('classifies a missing file as source-missing and a folder as invalid-input', async () => {
    await expect(md5File(join(tmp, 'nope.JPG'))).rejects.toMatchObject({ kind: 'source-missing' });
    await expect(md5File(tmp)).rejects.toMatchObject({ kind: 'invalid-input' });
  });
});

describe('tinyFingerprint', () => {
  it('matches the published example shape exactly', () => {
    // service-facts.md: 297f490b0252690d3f93841818567cc6_2022_8_31_15_16_16
    const t = { year: 2022, month: 8, day: 31, hour: 15, minute: 16, second: 16 };
    expect(tinyFingerprint('297f490b0252690d3f93841818567cc6', t)).toBe(
      '297f490b0252690d3f93841818567cc6_2022_8_31_15_16_16',
    );
    expect(tinyFingerprint('297F490B0252690D3F93841818567CC6', t)).toBe(
      '297f490b0252690d3f93841818567cc6_2022_8_31_15_16_16',
    );
  });

  it('takes the wall-clock digits of a string, whatever its offset', () => {
    expect(tinyFingerprint('0'.repeat(32), '2022-08-31T05:06:07+09:00')).toBe(
      `${'0'.repeat(32)}_2022_8_31_5_6_7`,
    );
    expect(tinyFingerprint('0'.repeat(32), '2022:09:02 15:17:42')).toBe(
      `${'0'.repeat(32)}_2022_9_2_15_17_42`,
    );
  });

  it('uses the local wall clock of a Date', () => {
    const d = new Date(2023, 6, 7, 9, 39, 34); // built from local parts
    expect(tinyFingerprint('a'.repeat(32), d)).toBe(`${'a'.repeat(32)}_2023_7_7_9_39_34`);
  });

  it('refuses a non-MD5 or an invalid time', () => {
    const t = { year: 2022, month: 8, day: 31, hour: 15, minute: 16, second: 16 };
    expect(() => tinyFingerprint('xyz', t)).toThrow(expect.objectContaining({ kind: 'invalid-input' }));
    expect(() => tinyFingerprint('0'.repeat(32), { ...t, month: 13 })).toThrow(
      expect.objectContaining({ kind: 'invalid-input' }),
    );
    expect(() => tinyFingerprint('0'.repeat(32), 'not a date')).toThrow(
      expect.objectContaining({ kind: 'invalid-input' }),
    );
  });

  it('for a real file: md5sum + DateTimeOriginal digits, not zero-padded', async () => {
    const info = await readMediaInfo(M3T);
    // EXIF DateTimeOriginal of M3T_IR.JPG is "2023:07:07 09:39:34" (strings on the file).
    expect(tinyFingerprint(await md5File(M3T), info.captureTime!)).toBe(`${md5sum(M3T)}_2023_7_7_9_39_34`);
  });
});
