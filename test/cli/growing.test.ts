/**
 * Issue 30: a one-shot `sync` always ends by itself. The real CLI (dist/)
 * with the built-in local service, on a card whose video is still being
 * written (appended to every 100 ms while the run lasts) and which holds a
 * FIFO: the growing file is named and left for the next run, the FIFO is
 * named with its reason, the card is not called safe, and the run ends.
 * (An unreadable file is not tried here: the tests run as root, who reads
 * any file whatever its mode.)
 */
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BIN, runCli } from '../support/cli.js';
import { makeCard, tempDir } from '../support/harness.js';

let dir: string;
beforeAll(() => {
  expect(fs.existsSync(BIN), 'run npm run build first').toBe(true);
  dir = tempDir('dms-growing-');
});
afterAll(() => fs.rmSync(dir, { recursive: true, force: true }));

describe('a card still being written', () => {
  it('the growing file is named and left for the next run, the FIFO is named, the run ends, the card is not safe', async () => {
    const home = path.join(dir, 'home');
    fs.mkdirSync(home);
    const card = makeCard(path.join(dir, 'GROWING'));
    const folder = path.join(card, 'DCIM', 'DJI_202209021517_001_Waypoint1');
    const video = path.join(folder, 'DJI_20220902151800_0003_W.MP4');
    fs.writeFileSync(video, Buffer.alloc(2_000_000, 7));
    execFileSync('mkfifo', [path.join(folder, 'DJI_0099.JPG')]);
    // The camera still writing: 64 KiB every 100 ms, for at most 3 minutes.
    let appended = 0;
    const writer = setInterval(() => {
      if (appended++ < 1800) fs.appendFileSync(video, Buffer.alloc(65_536, appended % 256));
    }, 100);
    const started = Date.now();
    let r: Awaited<ReturnType<typeof runCli>>;
    try {
      r = await runCli(['sync', card], { home });
    } finally {
      clearInterval(writer);
    }
    const ms = Date.now() - started;
    const all = `${ms} ms\n${r.out}${r.err}`;
    expect(ms, all).toBeLessThan(60_000);
    expect(r.code, all).toBe(1);
    expect(all).toMatch(
      /DJI_20220902151800_0003_W\.MP4 is still being written: it is left for the next run; sync again once the card is done\./,
    );
    expect(all).toMatch(/DJI_0099\.JPG is not a regular file \(a pipe, device or socket\)/);
    expect(r.out).toMatch(/GROWING: not safe to format yet/);
    // The photos themselves were synced.
    expect(all).toMatch(/Done with .*: [1-9]\d* uploaded/);
  }, 120_000);
});
