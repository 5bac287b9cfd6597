/**
 * `link` as the crew runs it (the built CLI), on this machine's network
 * (its default route) with NetworkManager's word from a real dbus-daemon
 * (a private bus given as the system bus) and a stand-in NetworkManager.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runCli } from '../support/cli.js';
import { dbusDaemonMissing, startNetworkManager, startPrivateBus, type PrivateBus } from './dbus-bus.js';

const missing = dbusDaemonMissing();
if (missing) console.warn(`Skipping the link CLI tests: ${missing}.`);

describe.skipIf(missing !== null)('link (CLI)', () => {
  let bus: PrivateBus;
  let home: string;
  beforeAll(async () => {
    bus = await startPrivateBus();
    home = fs.mkdtempSync(path.join(os.tmpdir(), 'dms-link-cli-'));
  }, 20_000);
  afterAll(async () => {
    await bus?.stop();
    fs.rmSync(home, { recursive: true, force: true });
  });
  const cli = (...args: string[]) =>
    runCli(['link', ...args, '--network', 'wlan0 192.168.43.1 02:11:22:33:44:55'], {
      home,
      env: { DBUS_SYSTEM_BUS_ADDRESS: bus.address, DMS_STATE_DIR: path.join(home, 'state') },
    });
  const status = async (): Promise<Record<string, unknown>> => {
    const r = await cli('status', '--json');
    expect(r.err).toBe('');
    return JSON.parse(r.out) as Record<string, unknown>;
  };

  it('metered by NetworkManager: the first lane only, until the crew answers yes (kept)', async () => {
    const nm = await startNetworkManager(bus.address, 3); // GUESS_YES: a phone's hotspot
    try {
      expect(await status()).toMatchObject({
        detected: { cost: 'metered', source: 'NetworkManager' },
        pin: null,
        state: 'first-lane',
        answer: null,
      });
      const plain = await cli('status');
      expect(plain.out).toContain('The system says: metered (NetworkManager)');
      expect(plain.out).toContain(
        'Uploads: only the first lane (RTK files and logs) goes; photos, videos and previews wait',
      );
      expect(plain.out).toContain('To upload everything over this network: drone-media-sync link answer yes');
      expect((await cli('answer', 'yes')).code).toBe(0);
      expect(await status()).toMatchObject({ state: 'open', answer: 'yes' });
      // The office router says nothing of cost: NetworkManager says not metered.
      nm.setMetered(4);
      expect(await status()).toMatchObject({ detected: { cost: 'unmetered' }, state: 'open' });
    } finally {
      nm.stop();
    }
  });

  it('a pin wins over what the system says, and a new pin asks again; a budget shows what is left', async () => {
    const nm = await startNetworkManager(bus.address, 2); // NO: Starlink looks like any Wi-Fi
    try {
      const pinned = await cli('pin', 'metered', '--label', 'Starlink van');
      expect(pinned.out).toBe('Starlink van: pinned as metered. A running agent follows within 10 s.\n');
      expect(await status()).toMatchObject({
        network: { label: 'Starlink van' },
        detected: { cost: 'unmetered' },
        pin: 'metered',
        state: 'first-lane',
        answer: null,
      });
      expect((await cli('budget', '2G', '--per', 'day')).code).toBe(0);
      expect(await status()).toMatchObject({
        budget: { bytes: 2 * 1024 ** 3, per: 'day', used: 0, left: 2 * 1024 ** 3 },
      });
      expect((await cli('status')).out).toContain('Budget: 0 bytes of 2.0 GB used today, 2.0 GB left');
      expect((await cli('pin', 'none')).code).toBe(0);
      expect(await status()).toMatchObject({ pin: null, state: 'open' });
    } finally {
      nm.stop();
    }
  });

  it('limit: an rclone timetable is kept; a wrong one is refused, saying why, and nothing changes', async () => {
    const ok = await cli('limit', '00:00,1M');
    expect(ok.code).toBe(0);
    expect(ok.out).toContain('Bandwidth timetable "00:00,1M": 8.4 Mbit/s now.');
    const bad = await cli('limit', '08:00,512k 25:00,off');
    expect(bad.code).toBe(2);
    expect(bad.err).toContain('the hour in "25:00" must be between 00 and 23');
    expect(await status()).toMatchObject({ limit: { timetable: '00:00,1M', bytesPerSecond: 1024 * 1024 } });
    const wrongPin = await cli('pin', 'sideways');
    expect(wrongPin.code).toBe(2);
    expect(wrongPin.err).toContain('"sideways" is not a pin: use metered, unmetered, ask or none.');
  });
});
