/**
 * Issue 32: a card's advisory line ("Flight 1 of 2: 4 of 12 photos look
 * unusable … — look before you leave") where the crew looks while the
 * window is closed: the tray's tooltip and menu, and the desktop
 * notification of the card's verdict, said once per card event; the card
 * stays safe to format. The real AppController (real queue, real card
 * monitor on a temporary mount root, the built-in local service over HTTP)
 * reads a card of real M3T photos with frames made bad on purpose
 * (test/support/flight-card.ts). Electron itself is mocked: its binary
 * cannot run here (electron-mock.ts).
 */
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, expect, it, vi } from 'vitest';
import { AppController } from '../../main/electron/controller.js';
import { NotificationPolicy } from '../../main/electron/notifications.js';
import { tempDir } from '../support/harness.js';
import { badCard, writeFlightCard } from '../support/flight-card.js';
import { MemorySecrets, recordController, until } from './helpers.js';

vi.mock('electron', () => import('./electron-mock.js').then((m) => m.electronModule));
const { trayMenuTemplate, trayView } = await import('../../main/electron/tray.js');

const root = tempDir('dms-flight-advisory-');
afterAll(() => fs.rmSync(root, { recursive: true, force: true }));

const ADVISORY =
  'Flight 1 of 2: 4 of 12 photos look unusable (several reasons: see the report), first at 10:15:16; camera clock is 1 h 00 min 03 s ahead of GPS time (UTC+02:00) on 1 photo (DJI_0007.JPG) — look before you leave';

/** A card as it arrives in the field: written long ago, appearing at once under the mount root. */
function insertFlightCard(dest: string): void {
  const staging = `${dest}.staging`;
  const shots = writeFlightCard(staging, 'DCIM/100MEDIA', badCard(true));
  const old = new Date(Date.now() - 3_600_000);
  for (const s of shots) fs.utimesSync(path.join(staging, s.relPath), old, old);
  fs.renameSync(staging, dest);
}

it('the tray and the verdict notification say the advisory line, once per card event; the card stays safe to format', async () => {
  const stateDir = path.join(root, 'state');
  const mnt = path.join(root, 'media');
  fs.mkdirSync(stateDir, { recursive: true });
  fs.mkdirSync(mnt, { recursive: true });
  fs.writeFileSync(
    path.join(stateDir, 'config.json'),
    JSON.stringify({ mountRoots: [mnt], useLocalService: true, callbackSettleSeconds: 1 }),
  );
  const c = new AppController({
    stateDir,
    secrets: new MemorySecrets(),
    env: {},
    quietMs: 300,
    cardPollMs: 150,
  });
  const { activity } = recordController(c);
  await c.start();
  try {
    insertFlightCard(path.join(mnt, 'M3T_FIELD'));
    await until('the card at rest', () => c.state().cards[0]?.workspace?.final === true, 60_000);
    const card = c.state().cards[0]!;
    expect(card.advisory).toBe(ADVISORY);
    // Advisory only: the card is safe to format all the same.
    expect(card.headline?.safe).toBe(true);
    expect(card.headline?.message).toMatch(/ — safe to format$/);

    // The tray: the verdict stays the activity line and the icon; the advisory is under it.
    const s = c.state();
    const view = trayView(s);
    expect(view.icon).toBe('idle');
    expect(view.activityLine).toBe(card.headline?.message);
    expect(view.tooltip).toBe(`Drone Media Sync: ${card.headline?.message}\nM3T_FIELD: ${ADVISORY}`);
    const menu = trayMenuTemplate(view, s, {
      open: vi.fn(),
      pause: vi.fn(),
      resume: vi.fn(),
      syncNow: vi.fn(),
      openLogs: vi.fn(),
      quit: vi.fn(),
    });
    expect(menu[1]).toEqual({ id: 'advisory', label: `M3T_FIELD: ${ADVISORY}`, enabled: false });

    // The notifications of what main reported: the verdict's one notice carries it, once.
    const policy = new NotificationPolicy();
    const notices = activity.flatMap((a) => policy.handle(a));
    const withAdvisory = notices.filter((n) => n.body.includes('look before you leave'));
    expect(withAdvisory).toEqual([
      { kind: 'safe', title: 'M3T_FIELD: safe to format', body: `${card.headline?.message}\n${ADVISORY}` },
    ]);
    // The same verdict reported again (a rescan of the card at rest): nothing said twice.
    const offload = activity.filter((a) => a.type === 'offload');
    expect(offload.at(-1)).toMatchObject({ advisory: ADVISORY, safe: true });
    expect(policy.handle(offload.at(-1)!)).toEqual([]);
  } finally {
    await c.stop();
  }
}, 120_000);
