/**
 * The link lab (lab.ts) in use: the reference service in a network
 * namespace behind a veth pair shaped by tc tbf, the built agent outside.
 * Not a speed test: the shaped link caps the agent (it can never beat the
 * rate; how close it comes is the bench's figure, beside rclone), and a
 * change of rate, a long round trip or a new address mid-upload neither
 * loses the file nor sends it twice. Nothing is mocked: the service's own
 * request log counts the callbacks, its bucket's files the objects.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
// @ts-expect-error: plain JavaScript, shared with the bench
import { makeCard, MiB } from '../bench/lib/cards.mjs';
import { BIN, runCli } from '../support/cli.js';
import { delayProxy, labMissing, objectSizes, openLab, serveInside, stop, type Lab } from './lab.js';

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
      svc = await serveInside(lab, BIN, path.join(dir, 'service'), { anyAddress: true, log: true });
    } catch (err) {
      lab.close();
      throw err;
    }
  }, 90_000);
  const sync = (root: string, server: string, state: string, config?: object) => {
    const stateDir = path.join(dir, state);
    fs.mkdirSync(stateDir, { recursive: true });
    if (config) fs.writeFileSync(path.join(stateDir, 'config.json'), JSON.stringify(config));
    return runCli(['sync', root, '--server', server, '--workspace', svc.workspaceId, '--json'], {
      home: dir,
      env: { DMS_TOKEN: svc.token, DMS_STATE_DIR: stateDir },
    });
  };
  const video = (name: string, mib: number) =>
    (makeCard as (root: string, spec: unknown) => { root: string; bytes: number })(path.join(dir, name), {
      mission: 'Lab',
      seed: `${name}-${process.pid}`,
      groups: [{ count: 1, size: mib * (MiB as number), ext: 'MP4' }],
    });
  const callbacks = /^POST \/media\/api\/v1\/workspaces\/[^/]+\/upload-callback$/;
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
    const r = await sync(card.root, svc.baseUrl, 'state');
    clearTimeout(switchAt);
    const seconds = (Date.now() - t0) / 1000;
    expect(r.code, r.err).toBe(0);
    const summary = JSON.parse(r.out.trim().split('\n').pop() ?? '{}') as Record<string, unknown>;
    expect(summary).toMatchObject({ type: 'summary' });
    const onLink = lab.sentBytes() - before;
    console.log(
      `address switch mid-upload: ${(onLink / card.bytes).toFixed(3)} x the file's bytes on the link (${((onLink - card.bytes * 1.046) / (8 * (MiB as number))).toFixed(2)} parts beyond a clean run's 1.046)`,
    );
    // Every byte of the file crossed the shaped link once (plus requests and TCP/IP headers, ~5 %).
    expect(onLink).toBeGreaterThanOrEqual(card.bytes);
    expect(onLink).toBeLessThan(card.bytes * 1.15);
    // 6 MiB at 8 Mbit/s for 2 s, then 4 Mbit/s: at least ~11 s; never faster than 8 Mbit/s.
    expect((card.bytes * 8) / 1e6 / seconds).toBeLessThanOrEqual(8);
    lab.shape(8);
  }, 180_000);

  it('a round trip of 600 ms (300 ms each way, a userland proxy: no netem here): the file arrives once, one callback', async () => {
    const proxy = await delayProxy(lab, svc.ports, 300);
    try {
      const server = `http://${proxy.host}:${svc.ports[0]}`;
      // The proxy does hold each way: one request's answer takes at least the round trip.
      const t0 = Date.now();
      await fetch(`${server}/healthz`, { signal: AbortSignal.timeout(30_000) }).catch(() => undefined);
      expect(Date.now() - t0).toBeGreaterThanOrEqual(600);
      const card = video('card-far', 12);
      const callbacksBefore = svc.answered(callbacks);
      const r = await sync(card.root, server, 'state-far');
      expect(r.code, r.err).toBe(0);
      // Through the proxy (the bucket's endpoint too: it follows the address the agent used).
      expect(proxy.count(/^PUT /)).toBeGreaterThanOrEqual(2);
      expect(proxy.count(callbacks)).toBe(1);
      expect(svc.answered(callbacks) - callbacksBefore).toBe(1);
      expect(
        objectSizes(path.join(dir, 'service'), svc.workspaceId).filter((n) => n === card.bytes),
      ).toHaveLength(1);
    } finally {
      await proxy.close();
    }
  }, 240_000);

  it("the agent's address changes mid-upload: the parts in flight are sent again, nothing more; one object, one callback", async () => {
    lab.shape(8);
    // 24 MiB at 8 Mbit/s (3 parts of 8 MiB, at most 2 in flight: the one that fills the link and the next
    // one, started as the first ends); the address changes 5 s in, with the first part on its way.
    const card = video('card-switch', 24);
    const callbacksBefore = svc.answered(callbacks);
    const before = lab.sentBytes();
    let switched = false;
    const switchAt = setTimeout(() => {
      void lab.switchAddress().then(() => (switched = true));
    }, 5000);
    // A dead connection is dropped after 3 s without 1 KiB/s (30 s by default).
    const r = await sync(card.root, svc.baseUrl, 'state-switch', { stallSeconds: 3 });
    clearTimeout(switchAt);
    expect(switched).toBe(true);
    expect(r.code, r.err).toBe(0);
    const objects = objectSizes(path.join(dir, 'service'), svc.workspaceId);
    expect(objects.filter((n) => n === card.bytes)).toHaveLength(1);
    expect(svc.answered(callbacks) - callbacksBefore).toBe(1);
    // Bytes on the link: the file (plus TCP/IP headers and requests, ~5 %) and at most the 2 parts in flight again.
    const onLink = lab.sentBytes() - before;
    console.log(
      `address switch mid-upload: ${(onLink / card.bytes).toFixed(3)} x the file's bytes on the link (${((onLink - card.bytes * 1.046) / (8 * (MiB as number))).toFixed(2)} parts beyond a clean run's 1.046)`,
    );
    expect(onLink).toBeLessThan(card.bytes * 1.08 + 2 * 8 * (MiB as number));
  }, 240_000);
});
