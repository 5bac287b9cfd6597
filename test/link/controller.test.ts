/**
 * The link as an agent runs it: NetworkManager's word on a real dbus-daemon
 * (a stand-in NetworkManager on a private bus), the settings file on disk,
 * link.db a real SQLite file. The ordinary events: the network goes metered,
 * comes back, the crew pins it and changes the limit from another terminal.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { defaultConfig, saveConfig, type Config } from '../../main/core/config.js';
import { LinkController, startLink } from '../../main/core/link/controller.js';
import { NetworkManagerWatcher } from '../../main/core/link/nm-dbus.js';
import { dbusDaemonMissing, startNetworkManager, startPrivateBus, type PrivateBus } from './dbus-bus.js';

const missing = dbusDaemonMissing();
if (missing) console.warn(`Skipping the link controller tests: ${missing}.`);

/** Waits (at most `ms`) for `ok`, looking every 50 ms; the time it took. */
async function within(ms: number, ok: () => boolean): Promise<number> {
  const t0 = Date.now();
  while (!ok() && Date.now() - t0 < ms) await new Promise((r) => setTimeout(r, 50));
  if (!ok()) throw new Error(`not within ${ms} ms`);
  return Date.now() - t0;
}

describe.skipIf(missing !== null)('the link controller (real dbus-daemon, settings file, link.db)', () => {
  let bus: PrivateBus;
  let dir: string;
  beforeAll(async () => {
    bus = await startPrivateBus();
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'dms-link-ctl-'));
  }, 20_000);
  afterAll(async () => {
    await bus?.stop();
    fs.rmSync(dir, { recursive: true, force: true });
  });

  it('metered: waiting lanes stop at the next part (< 5 s); back to unmetered: they go (< 10 s); a pin and a limit from another process are followed', async () => {
    const nm = await startNetworkManager(bus.address, 4);
    const configFile = path.join(dir, 'config.json');
    saveConfig(configFile, defaultConfig());
    const seenSettings: Config[] = [];
    const ctl = new LinkController({
      stateDir: dir,
      configFile,
      config: defaultConfig(),
      watcher: new NetworkManagerWatcher(bus.address),
      network: () => ({ key: 'wlan0 10.0.0.1 aa:bb:cc:dd:ee:ff', label: 'wlan0 via 10.0.0.1' }),
      pollMs: 500,
      onSettings: (c) => seenSettings.push(c),
    });
    const questions: string[] = [];
    ctl.gate.on('question', (q) => questions.push(q.text));
    let wakes = 0;
    ctl.gate.subscribe(() => wakes++);
    await ctl.start();
    try {
      expect(ctl.gate.mayStart('videos', 8 << 20)).toBe(true);
      nm.setMetered(1);
      const tMetered = await within(5000, () => !ctl.gate.mayStart('videos', 8 << 20));
      expect(tMetered).toBeLessThan(5000);
      expect(ctl.gate.mayStart('first', 1 << 20)).toBe(true);
      expect(questions).toEqual(['Upload the videos waiting over this metered network?']);
      const wakesBefore = wakes;
      nm.setMetered(2);
      await within(10_000, () => wakes > wakesBefore);
      expect(ctl.gate.mayStart('videos', 8 << 20)).toBe(true);

      // Another terminal: `link pin ask` and `link limit 512k` write the settings file.
      const pinned = defaultConfig();
      pinned.link = {
        timetable: '512k',
        networks: { 'wlan0 10.0.0.1 aa:bb:cc:dd:ee:ff': { pin: 'ask', label: 'the van' } },
      };
      saveConfig(configFile, pinned);
      await within(10_000, () => seenSettings.length > 0);
      expect(seenSettings[0]?.link.timetable).toBe('512k');
      await within(10_000, () => ctl.gate.state.name === 'held');
      expect(ctl.gate.mayStart('first', 1 << 20)).toBe(false);
      expect(questions[1]).toBe('Upload the RTK files and logs waiting over this network?');
    } finally {
      await ctl.stop();
      nm.stop();
    }
  }, 60_000);

  it("startLink: this computer's watcher (NetworkManager on the system bus) and its default route", async () => {
    const nm = await startNetworkManager(bus.address, 1);
    const saved = process.env.DBUS_SYSTEM_BUS_ADDRESS;
    process.env.DBUS_SYSTEM_BUS_ADDRESS = bus.address;
    const ctl = await startLink({ stateDir: dir, config: defaultConfig() });
    try {
      await within(5000, () => ctl.detected.cost === 'metered');
      expect(ctl.detected.source).toBe('NetworkManager');
      expect(ctl.gate.state.name).toBe('first-lane');
    } finally {
      await ctl.stop();
      nm.stop();
      if (saved === undefined) delete process.env.DBUS_SYSTEM_BUS_ADDRESS;
      else process.env.DBUS_SYSTEM_BUS_ADDRESS = saved;
    }
  }, 30_000);
});
