/**
 * Linux detection against a real dbus-daemon (a private bus) and a stand-in
 * NetworkManager publishing its Metered property: the stand-in is ours, the
 * bus, the protocol and the client are real.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { NetworkManagerWatcher } from '../../main/core/link/nm-dbus.js';
import type { LinkReading } from '../../main/core/link/watcher.js';
import { dbusDaemonMissing, startNetworkManager, startPrivateBus, type PrivateBus } from './dbus-bus.js';

const missing = dbusDaemonMissing();
if (missing) console.warn(`Skipping the NetworkManager detection tests: ${missing}.`);

describe.skipIf(missing !== null)('Linux: NetworkManager Metered over D-Bus (real dbus-daemon)', () => {
  let bus: PrivateBus;
  beforeAll(async () => {
    bus = await startPrivateBus();
  }, 20_000);
  afterAll(async () => {
    await bus?.stop();
  });

  it('reads each NMMetered value: YES and GUESS_YES are metered, NO and GUESS_NO are not', async () => {
    const nm = await startNetworkManager(bus.address, 0);
    try {
      const watcher = new NetworkManagerWatcher(bus.address);
      const seen: string[] = [];
      for (const v of [0, 1, 2, 3, 4]) {
        nm.setMetered(v);
        seen.push((await watcher.read()).cost);
      }
      expect(seen).toEqual(['unknown', 'metered', 'unmetered', 'metered', 'unmetered']);
    } finally {
      nm.stop();
    }
  });

  it('follows its changes (PropertiesChanged): the hotspot goes metered, then the office Wi-Fi not', async () => {
    const nm = await startNetworkManager(bus.address, 4);
    const readings: LinkReading[] = [];
    const stop = await new NetworkManagerWatcher(bus.address).watch((r) => readings.push(r));
    try {
      const until = async (n: number): Promise<void> => {
        for (let i = 0; i < 100 && readings.length < n; i++) await new Promise((r) => setTimeout(r, 50));
      };
      await until(1);
      nm.setMetered(3);
      await until(2);
      nm.setMetered(3); // the same again: not a change
      nm.setMetered(2);
      await until(3);
      expect(readings.map((r) => `${r.cost} (${r.source})`)).toEqual([
        'unmetered (NetworkManager)',
        'metered (NetworkManager)',
        'unmetered (NetworkManager)',
      ]);
    } finally {
      await stop();
      nm.stop();
    }
  });

  it('NetworkManager not on the bus: unknown, saying so (no hang, no crash)', async () => {
    const r = await new NetworkManagerWatcher(bus.address).read();
    expect(r.cost).toBe('unknown');
    expect(r.source).toMatch(/^NetworkManager not reachable \(.+\)$/);
  });

  it('no bus at all: unknown, saying so', async () => {
    const r = await new NetworkManagerWatcher('unix:path=/nonexistent/dms-bus').read();
    expect(r.cost).toBe('unknown');
    expect(r.source).toMatch(/^NetworkManager not reachable/);
  });
});
