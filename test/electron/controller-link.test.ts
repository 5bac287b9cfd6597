/**
 * Issue 31, the link in the app: the AppController (Electron-free, real
 * queue, real card monitor on a temporary mount root, the built-in local
 * service over HTTP) with NetworkManager's word from a real dbus-daemon (a
 * private bus, a stand-in NetworkManager saying metered). Only the first
 * lane (the flight log) goes; the videos wait without a byte sent, and the
 * crew is asked once ("Not now" puts it off, nothing kept). The crew's `link pin unmetered` from a terminal (the built CLI, the same
 * private bus as its system bus) is followed by the running app without a
 * restart: the videos go. Quitting stops the link (its bus connection and
 * link.db) with the agent.
 */
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { AppController } from '../../main/electron/controller.js';
import { NetworkManagerWatcher } from '../../main/core/link/nm-dbus.js';
import { BIN, runCli } from '../support/cli.js';
import { FIXTURES, tempDir } from '../support/harness.js';
import { makeCard, MiB } from '../faults/rig.js';
import {
  dbusDaemonMissing,
  startNetworkManager,
  startPrivateBus,
  type PrivateBus,
} from '../link/dbus-bus.js';
import { MemorySecrets, until } from './helpers.js';
import { queueFiles } from '../support/queue-rows.js';

const missing = dbusDaemonMissing();
if (missing) console.warn(`Skipping the app's link test: ${missing}.`);

const FOLDER = 'DJI_202301011200_001_Survey';

const rows = queueFiles;

describe.skipIf(missing !== null)('the app on a metered link (real dbus-daemon)', () => {
  let bus: PrivateBus;
  let dir: string;
  beforeAll(async () => {
    expect(fs.existsSync(BIN), 'run npm run build first').toBe(true);
    bus = await startPrivateBus();
    dir = tempDir('dms-app-link-');
  }, 20_000);
  afterAll(async () => {
    await bus?.stop();
    fs.rmSync(dir, { recursive: true, force: true });
  });

  it('sends the first lane only; a pin from the terminal lets the videos go without a restart; quit stops the link', async () => {
    const nm = await startNetworkManager(bus.address, 1); // YES: a mobile broadband modem
    const stateDir = path.join(dir, 'state');
    const mnt = path.join(dir, 'mnt');
    fs.mkdirSync(mnt, { recursive: true });
    fs.mkdirSync(stateDir, { recursive: true });
    fs.writeFileSync(
      path.join(stateDir, 'config.json'),
      JSON.stringify({ useLocalService: true, mountRoots: [mnt] }),
    );
    const c = new AppController({
      stateDir,
      secrets: new MemorySecrets(),
      env: {},
      quietMs: 300,
      cardPollMs: 150,
      pushIntervalMs: 40,
      linkWatcher: new NetworkManagerWatcher(bus.address),
    });
    const asked: string[] = [];
    c.on('activity', (a) => {
      if (a.type === 'link-question') asked.push(a.text);
    });
    await c.start();
    let stopped = false;
    try {
      // A card as it arrives: two videos and the flight log, written long ago, appearing at once.
      const staging = path.join(dir, 'CARD.staging');
      makeCard(staging, FOLDER, [
        { name: 'DJI_20230101120000_0001_W.MP4', size: 3 * MiB },
        { name: 'DJI_20230101120100_0002_W.MP4', size: 3 * MiB },
      ]);
      const srt = path.join(staging, 'DCIM', FOLDER, 'DJI_20230101120000_0001_W.SRT');
      fs.copyFileSync(path.join(FIXTURES, 'SRT', 'p4_rtk.SRT'), srt);
      const old = Date.now() / 1000 - 3600;
      fs.utimesSync(srt, old, old);
      fs.renameSync(staging, path.join(mnt, 'DJI_CARD'));

      const of = (ext: string) => rows(stateDir).filter((r) => r.rel_path.endsWith(ext));
      await until('the flight log in the workspace', () => of('.SRT')[0]?.state === 'done', 60_000);
      // The engine asks the gate at least once a second: three seconds later the videos still wait.
      await new Promise((r) => setTimeout(r, 3_000));
      expect(of('.MP4')).toHaveLength(2);
      expect(of('.MP4').filter((v) => v.state === 'done')).toEqual([]);
      expect(of('.MP4').reduce((n, v) => n + v.bytes_sent, 0)).toBe(0);
      // Asked once, with what waits; "Not now" puts it off without an answer kept, the videos still wait.
      expect(c.state().link).toMatchObject({
        cost: 'metered',
        why: 'detected',
        source: 'NetworkManager',
        state: 'first-lane',
        question: 'Upload 6.0 MB of videos over this metered network?',
      });
      // The tray's notification policy gets the question once (the window may be closed).
      expect(asked).toEqual(['Upload 6.0 MB of videos over this metered network?']);
      expect(c.linkAnswer('not-now').link).toMatchObject({
        question: null,
        answer: null,
        state: 'first-lane',
      });
      await new Promise((r) => setTimeout(r, 1_500));
      expect(of('.MP4').reduce((n, v) => n + v.bytes_sent, 0)).toBe(0);

      // Starlink-style: the crew says this network is not metered, from a terminal.
      const pin = await runCli(['link', 'pin', 'unmetered', '--state', stateDir], {
        home: dir,
        env: { DBUS_SYSTEM_BUS_ADDRESS: bus.address },
      });
      expect(pin.code, pin.out + pin.err).toBe(0);
      await until('the videos in the workspace', () => of('.MP4').every((v) => v.state === 'done'), 60_000);

      await c.stop();
      stopped = true;
      // Stopped: link.db is closed (no WAL left behind by an open connection) and the bus let go.
      expect(fs.existsSync(path.join(stateDir, 'link.db-wal'))).toBe(false);
    } finally {
      if (!stopped) await c.stop();
      nm.stop();
    }
  }, 150_000);
});
