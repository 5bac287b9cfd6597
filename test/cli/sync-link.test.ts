/**
 * Issue 31, the link in a one-shot `sync`: the real CLI (dist/) against the
 * real reference service on loopback, NetworkManager's word from a real
 * dbus-daemon (a private bus given to the CLI as its system bus, a stand-in
 * NetworkManager saying metered), the queue read from its SQLite file. The
 * run sends the first lane (the flight log), ENDS by itself saying what
 * waits and what to do, with the documented exit code; the command it names
 * (`link answer yes`) and a second sync send the rest.
 */
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { EXIT } from '../../main/cli/exit-codes.js';
import { startService, type RunningService } from '../../main/service/index.js';
import { BIN, runCli } from '../support/cli.js';
import { FIXTURES, tempDir } from '../support/harness.js';
import { makeCard, MiB } from '../faults/rig.js';
import {
  dbusDaemonMissing,
  startNetworkManager,
  startPrivateBus,
  type PrivateBus,
} from '../link/dbus-bus.js';
import { queueFiles } from '../support/queue-rows.js';

const missing = dbusDaemonMissing();
if (missing) console.warn(`Skipping the one-shot sync on a metered link: ${missing}.`);

const rows = queueFiles;

describe.skipIf(missing !== null)('sync on a metered link (real CLI, service, dbus-daemon)', () => {
  let dir: string;
  let svc: RunningService;
  let bus: PrivateBus;
  beforeAll(async () => {
    expect(fs.existsSync(BIN), 'run npm run build first').toBe(true);
    dir = tempDir('dms-sync-link-');
    svc = await startService({ dataDir: path.join(dir, 'svc'), logger: false });
    bus = await startPrivateBus();
  }, 20_000);
  afterAll(async () => {
    await bus?.stop();
    await svc?.close();
    fs.rmSync(dir, { recursive: true, force: true });
  });

  it('sends the first lane, ends saying what waits and what to do (exit 5); "link answer yes" and sync again send the rest', async () => {
    const nm = await startNetworkManager(bus.address, 3); // GUESS_YES: a phone's hotspot
    const home = path.join(dir, 'home');
    fs.mkdirSync(home);
    const state = path.join(dir, 'state');
    const card = path.join(dir, 'CARD');
    const folder = 'DJI_202301011200_001_Survey';
    makeCard(card, folder, [
      { name: 'DJI_20230101120000_0001_W.MP4', size: 3 * MiB },
      { name: 'DJI_20230101120100_0002_W.MP4', size: 3 * MiB },
    ]);
    const srt = path.join(card, 'DCIM', folder, 'DJI_20230101120000_0001_W.SRT');
    fs.copyFileSync(path.join(FIXTURES, 'SRT', 'p4_rtk.SRT'), srt);
    const old = Date.now() / 1000 - 3600;
    fs.utimesSync(srt, old, old);
    const cli = (args: string[]) =>
      runCli(args, {
        home,
        env: {
          DBUS_SYSTEM_BUS_ADDRESS: bus.address,
          DMS_STATE_DIR: state,
          DMS_SERVER: svc.baseUrl,
          DMS_WORKSPACE: svc.workspaceId,
          DMS_TOKEN: svc.token,
        },
      });
    try {
      // The exit code is documented where the crew looks.
      const help = await cli(['sync', '--help']);
      expect(help.out).toMatch(/ {2}5 {2}everything this network allows was sent; the rest waits/);

      const first = await cli(['sync', card]);
      expect(first.code, first.out + first.err).toBe(EXIT.linkWaits);
      const of = (ext: string) => rows(state).filter((r) => r.rel_path.endsWith(ext));
      expect(of('.SRT').map((r) => r.state)).toEqual(['done']);
      expect(of('.MP4').map((r) => r.state)).not.toContain('done');
      expect(of('.MP4').reduce((n, r) => n + r.bytes_sent, 0)).toBe(0);
      expect(first.out).toContain(
        '6.0 MB of videos wait for an unmetered network: run `drone-media-sync link answer yes` to send them over this one, or sync again on another network.',
      );
      // One sentence, not a line per waiting file.
      expect(first.out).not.toMatch(/LATER .*\.MP4/);

      // The machine-readable summary says the same (a second run: still metered, nothing new sent).
      const again = await cli(['sync', card, '--json']);
      expect(again.code, again.err).toBe(EXIT.linkWaits);
      const summary = JSON.parse(again.out.trim().split('\n').at(-1) ?? '{}') as Record<string, unknown>;
      expect(summary).toMatchObject({
        type: 'summary',
        failed: 0,
        pending: 2,
        bytes_sent: 0,
        link: { state: 'first-lane', cost: 'metered', waiting: { files: 2, lanes: ['videos'] } },
      });
      expect((summary.files as Array<{ kind: string }>).map((f) => f.kind)).toEqual(['link', 'link']);

      // The command the line names, then sync again: the rest goes, exit 0.
      const yes = await cli(['link', 'answer', 'yes']);
      expect(yes.code, yes.out + yes.err).toBe(0);
      const last = await cli(['sync', card]);
      expect(last.code, last.out + last.err).toBe(EXIT.ok);
      expect(of('.MP4').map((r) => r.state)).toEqual(['done', 'done']);
    } finally {
      nm.stop();
    }
  }, 180_000);

  it('a network pinned "ask first": nothing goes, the run ends at once saying so (exit 5), nothing lost', async () => {
    const nm = await startNetworkManager(bus.address, 2); // NO: the system sees nothing special
    const home = path.join(dir, 'home-ask');
    fs.mkdirSync(home);
    const state = path.join(dir, 'state-ask');
    const card = path.join(dir, 'CARD-ASK');
    const folder = 'DJI_202301021200_002_Survey';
    makeCard(card, folder, [{ name: 'DJI_20230102120000_0001_W.MP4', size: 2 * MiB }]);
    const srt = path.join(card, 'DCIM', folder, 'DJI_20230102120000_0001_W.SRT');
    fs.copyFileSync(path.join(FIXTURES, 'SRT', 'p4_rtk.SRT'), srt);
    const old = Date.now() / 1000 - 3600;
    fs.utimesSync(srt, old, old);
    const cli = (args: string[]) =>
      runCli(args, {
        home,
        env: {
          DBUS_SYSTEM_BUS_ADDRESS: bus.address,
          DMS_STATE_DIR: state,
          DMS_SERVER: svc.baseUrl,
          DMS_WORKSPACE: svc.workspaceId,
          DMS_TOKEN: svc.token,
        },
      });
    try {
      expect((await cli(['link', 'pin', 'ask'])).code).toBe(0);
      const run = await cli(['sync', card]);
      expect(run.code, run.out + run.err).toBe(EXIT.linkWaits);
      expect(run.out).toMatch(
        /of RTK files and logs and videos wait: this network is pinned "ask first"\. Run `drone-media-sync link answer yes` to send them over it, or sync again on another network\./,
      );
      expect(rows(state).every((r) => r.state !== 'done' && r.bytes_sent === 0)).toBe(true);
      expect(rows(state)).toHaveLength(2);
    } finally {
      nm.stop();
    }
  }, 120_000);
});
