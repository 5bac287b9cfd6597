/**
 * The link lab (lab.ts) in use: the reference service in a network
 * namespace behind a veth pair shaped by tc tbf, the built agent outside.
 * Not a speed test: the shaped link caps the agent (it can never beat the
 * rate; how close it comes is the bench's figure, beside rclone), and a
 * change of rate mid-upload neither loses the file nor sends it twice.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
// @ts-expect-error: plain JavaScript, shared with the bench
import { makeCard, MiB } from '../bench/lib/cards.mjs';
import { BIN, runCli } from '../support/cli.js';
import { labMissing, openLab, serveInside, stop, type Lab } from './lab.js';

const missing = labMissing();
if (missing) console.warn(`Skipping the link lab tests: ${missing}.`);

describe.skipIf(missing !== null)('the link lab (netns + tc tbf)', () => {
  let lab: Lab;
  let dir: string;
  let svc: Awaited<ReturnType<typeof serveInside>>;
  beforeAll(async () => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'dms-lab-'));
    lab = openLab({ mbit: 8, id: process.pid + 7 });
    try {
      svc = await serveInside(lab, BIN, path.join(dir, 'service'));
    } catch (err) {
      lab.close();
      throw err;
    }
  }, 90_000);
  afterAll(async () => {
    if (svc) await stop(svc.child);
    lab?.close();
    fs.rmSync(dir, { recursive: true, force: true });
  });

  it('an upload over the shaped link: never faster than the shape; a switch 8 -> 4 Mbit/s mid-file costs no second copy', async () => {
    const card = (makeCard as (root: string, spec: unknown) => { root: string; bytes: number })(
      path.join(dir, 'card'),
      {
        mission: 'Lab',
        seed: 'lab',
        groups: [{ count: 1, size: 6 * (MiB as number), ext: 'MP4' }],
      },
    );
    const before = lab.sentBytes();
    const t0 = Date.now();
    const switchAt = setTimeout(() => lab.shape(4), 2000);
    const r = await runCli(
      ['sync', card.root, '--server', svc.baseUrl, '--workspace', svc.workspaceId, '--json'],
      { home: dir, env: { DMS_TOKEN: svc.token, DMS_STATE_DIR: path.join(dir, 'state') } },
    );
    clearTimeout(switchAt);
    const seconds = (Date.now() - t0) / 1000;
    expect(r.code, r.err).toBe(0);
    const summary = JSON.parse(r.out.trim().split('\n').pop() ?? '{}') as Record<string, unknown>;
    expect(summary).toMatchObject({ type: 'summary' });
    const onLink = lab.sentBytes() - before;
    // Every byte of the file crossed the shaped link once (plus requests and TCP/IP headers, ~5 %).
    expect(onLink).toBeGreaterThanOrEqual(card.bytes);
    expect(onLink).toBeLessThan(card.bytes * 1.15);
    // 6 MiB at 8 Mbit/s for 2 s, then 4 Mbit/s: at least ~11 s; never faster than 8 Mbit/s.
    expect((card.bytes * 8) / 1e6 / seconds).toBeLessThanOrEqual(8);
    lab.shape(8);
  }, 180_000);
});
