/**
 * Issue 31, the link in the window: real headless Chromium at 1366x768, the
 * window driven by the real main-process logic (real-main.ts: the
 * AppController, the real IPC dispatch with the contract's schemas, the real
 * queue and card monitor, the built-in local service over HTTP), and
 * NetworkManager's word from a real dbus-daemon (a private bus, a stand-in
 * NetworkManager saying metered). The link line says the network, metered
 * and why, the budget and the limit; the question is asked with what waits,
 * answered once for this network; the network is pinned from the window.
 * Screenshots in test-results/ui/link-*.png. Electron itself is mocked (its
 * binary cannot run here).
 */
import fs from 'node:fs';
import path from 'node:path';
import Database from 'better-sqlite3';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { AppController } from '../../main/electron/controller.js';
import { NetworkManagerWatcher } from '../../main/core/link/nm-dbus.js';
import { FIXTURES, tempDir } from '../support/harness.js';
import { makeCard, MiB } from '../faults/rig.js';
import {
  dbusDaemonMissing,
  startNetworkManager,
  startPrivateBus,
  type PrivateBus,
} from '../link/dbus-bus.js';
import { MemorySecrets, until } from '../electron/helpers.js';
import { startUi, type Ui } from './browser.js';
import { noHorizontalScroll, shot, text } from './page-helpers.js';
import { openRealWindow } from './real-main.js';
import { queueFiles } from '../support/queue-rows.js';

vi.mock('electron', () => import('../electron/electron-mock.js').then((m) => m.electronModule));

const missing = dbusDaemonMissing();
if (missing) console.warn(`Skipping the window's link test: ${missing}.`);

const FOLDER = 'DJI_202301011200_001_Survey';

const rows = queueFiles;

describe.skipIf(missing !== null)('the link in the window (real main, real dbus-daemon)', () => {
  let ui: Ui;
  let bus: PrivateBus;
  let root: string;
  beforeAll(async () => {
    ui = await startUi();
    bus = await startPrivateBus();
    root = tempDir('dms-ui-link-');
  }, 60_000);
  afterAll(async () => {
    await ui?.close();
    await bus?.stop();
    fs.rmSync(root, { recursive: true, force: true });
  });

  it('shows the link line, asks once with what waits, "Yes for this network" lets the videos go; a pin from the window', async () => {
    const nm = await startNetworkManager(bus.address, 1); // YES: a mobile broadband modem
    const stateDir = path.join(root, 'state');
    const mnt = path.join(root, 'mnt');
    fs.mkdirSync(stateDir, { recursive: true });
    fs.mkdirSync(mnt, { recursive: true });
    fs.writeFileSync(
      path.join(stateDir, 'config.json'),
      JSON.stringify({ useLocalService: true, mountRoots: [mnt], link: { timetable: '00:00,1M' } }),
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
    await c.start();
    const w = await openRealWindow(ui, c);
    const { page } = w;
    try {
      const line = () => text(page, '[data-testid=link-line]');
      await expect.poll(line, { timeout: 15_000 }).toContain('metered (NetworkManager says so)');
      expect(await line()).toContain(
        'Uploads: only RTK files and logs go; photos, videos and previews wait.',
      );
      expect(await text(page, '[data-testid=link-budget]')).toBe(
        'Data budget: no data budget. Bandwidth: 1.0 MB/s now (timetable).',
      );

      // A card: the flight log goes, the videos wait, and the crew is asked with what waits.
      const staging = path.join(root, 'CARD.staging');
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

      const question = page.getByTestId('link-question');
      await expect
        .poll(() => text(page, '[data-testid=link-question]'), { timeout: 15_000 })
        .toContain('Upload 6.0 MB of videos over this metered network?');
      expect(of('.MP4').reduce((n, r) => n + r.bytes_sent, 0)).toBe(0);
      // Said at the top too: what goes now, and where to answer.
      expect(await text(page, '[data-testid=banner]:has-text("Metered network")')).toBe(
        'Metered network: RTK files and logs go first Photos, videos and previews wait for an unmetered network, or for your yes in the Network panel below. Keep the card in; nothing is lost.',
      );
      await noHorizontalScroll(page);
      await shot(page, 'link-1-metered-question.png');

      // Answered once, for this network, through the one typed call.
      await question.getByRole('button', { name: 'Yes for this network' }).click();
      await expect.poll(() => question.count()).toBe(0);
      await until('the videos in the workspace', () => of('.MP4').every((r) => r.state === 'done'), 60_000);
      await expect.poll(line).toContain('Uploads: every file goes (you said yes for this network).');
      expect(w.calls.filter((x) => x.channel === 'link:answer')).toEqual([
        { channel: 'link:answer', request: { answer: 'yes' } },
      ]);
      const linkDb = new Database(path.join(stateDir, 'link.db'), { readonly: true });
      try {
        expect(linkDb.prepare('SELECT answer FROM link_answers').all()).toEqual([{ answer: 'yes' }]);
      } finally {
        linkDb.close();
      }
      await shot(page, 'link-2-answered-yes.png');

      // Pinned from the window (a Starlink dish no system flags): a setting, in force at once.
      await page.getByTestId('link-pin').selectOption('unmetered');
      await expect.poll(line).toContain('not metered (pinned by you)');
      const config = JSON.parse(fs.readFileSync(path.join(stateDir, 'config.json'), 'utf8')) as {
        link: { networks: Record<string, { pin?: string }> };
      };
      expect(Object.values(config.link.networks)).toEqual([{ pin: 'unmetered' }]);
      await shot(page, 'link-3-pinned.png');
      expect(w.problems, 'CSP violations, console errors, failed loads').toEqual([]);
    } finally {
      await w.context.close();
      await c.stop();
      nm.stop();
    }
  }, 180_000);
});
