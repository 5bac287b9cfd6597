/**
 * Issue 32 in real headless Chromium (1366x768): the Flights tab and the
 * printable report of a card with frames made bad on purpose. The card
 * (real M3T photos, test/support/flight-card.ts) goes through the real
 * engine, reference service and SQLite queue; the window's flights are what
 * main builds from that queue (main/electron/flights.ts), handed to the
 * test bridge in place of IPC (the Electron binary cannot run here).
 * Screenshots: test-results/ui/flight-checks-*.png, test-results/report/report-flagged*.png.
 */
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, afterEach, beforeAll, expect, it } from 'vitest';
import { cardOffload, reportInput } from '../../main/core/offload/card.js';
import { renderReportHtml, reportJson } from '../../main/core/offload/report.js';
import { flightSummaries, flightView } from '../../main/electron/flights.js';
import { startService, type RunningService } from '../../main/service/index.js';
import type { FlightView } from '../../main/shared/ipc.js';
import { tempDir } from '../support/harness.js';
import { badCard, offloadCard, writeFlightCard } from '../support/flight-card.js';
import { ROOT, openPage, startUi, type Opened, type Ui } from './browser.js';

const SHOTS = path.join(ROOT, 'test-results', 'ui');
const REPORT_SHOTS = path.join(ROOT, 'test-results', 'report');

let ui: Ui;
let svc: RunningService;
let dir: string;
let opened: Opened | null = null;
let views: FlightView[];
let html: string;

beforeAll(async () => {
  dir = tempDir('dms-flight-checks-ui-');
  fs.mkdirSync(SHOTS, { recursive: true });
  fs.mkdirSync(REPORT_SHOTS, { recursive: true });
  svc = await startService({ dataDir: path.join(dir, 'svc'), logger: false });
  [views, html] = await offloadCard(
    {
      dir,
      name: 'M3T_FIELD',
      service: svc,
      build: (root) => writeFlightCard(root, 'DCIM/100MEDIA', badCard(true)),
    },
    (queue, card) => [
      flightSummaries(queue, [card]).map((f) =>
        flightView(queue, card, f.folder, undefined, f.part ?? undefined),
      ),
      renderReportHtml(reportJson(reportInput(cardOffload(queue, card)))),
    ],
  );
  ui = await startUi();
}, 120_000);

afterAll(async () => {
  await ui?.close();
  await svc?.close();
  fs.rmSync(dir, { recursive: true, force: true });
});

afterEach(async () => {
  const o = opened;
  opened = null;
  if (!o) return;
  try {
    expect(o.problems, 'CSP violations, console errors, failed loads').toEqual([]);
  } finally {
    await o.context.close();
  }
});

it('the Flights tab names each flight of the folder and each photo to look at, on the map', async () => {
  expect(views.map((v) => v.name)).toEqual(['100MEDIA, flight 1 of 2', '100MEDIA, flight 2 of 2']);
  opened = await openPage(ui, { scenario: 'idle', extraFlights: views });
  const { page } = opened;
  await page.locator('.tab', { hasText: 'Flights' }).click();
  await page.locator('.flight-point').first().waitFor();
  await expect.poll(() => page.locator('.flight-title').innerText()).toBe('100MEDIA, flight 1 of 2');
  expect(await page.locator('.flight-summary').innerText()).toBe(
    '08:15:12–08:15:34 UTC · 3–80 m above take-off · 0.43 ha · no MRK',
  );
  expect(await page.locator('.flight-frames h3').innerText()).toBe(
    'Photos to look at: 4 probably unusable, 1 worth a look',
  );
  const items = await page.locator('.flight-frames li').allInnerTexts();
  expect(items).toEqual([
    expect.stringMatching(/^DJI_0003\.JPG 10:15:16: black frame .*lens cap/),
    "DJI_0005.JPG 10:15:20: gimbal at -10° while the flight's photos are at -90°",
    "DJI_0007.JPG 11:15:27 (GPS 08:15:24 UTC): camera clock off: see the flight's clock note",
    'DJI_0009.JPG 10:15:28: GPS position 0, 0 (no fix): it cannot be placed',
    'DJI_0012.JPG 10:15:34: taken at 3 m in a flight at 80 m: during take-off or landing?',
  ]);
  expect(await page.locator('.flight-flags li', { hasText: 'Camera clock' }).innerText()).toMatch(
    /^Camera clock is 1 h 00 min 03 s ahead of GPS time \(UTC\+02:00\)/,
  );
  await page.waitForTimeout(300);
  await page.screenshot({ path: path.join(SHOTS, 'flight-checks-top.png') });
  const flagged = page.locator('.flight-point[data-state="flagged"]');
  expect(await flagged.count()).toBe(3); // 0003, 0005, 0012 (0009 has no position)
  expect(await page.locator('.map-legend li[data-state="flagged"]').innerText()).toBe(
    'Probably unusable (see why) (3)',
  );
  await page.locator('.flight-point[data-index="5"]').click();
  await expect
    .poll(() => page.locator('.point-problem').innerText())
    .toBe("gimbal at -10° while the flight's photos are at -90°.");
  await page.waitForTimeout(300);
  await page.screenshot({ path: path.join(SHOTS, 'flight-checks-frames.png') });

  // The second battery of the same folder: its own flight, its own map.
  await page.locator('.flight-item', { hasText: '100MEDIA, flight 2 of 2' }).click();
  await expect.poll(() => page.locator('.flight-title').innerText()).toBe('100MEDIA, flight 2 of 2');
  await expect
    .poll(() => page.locator('.flight-summary').innerText())
    .toMatch(/^08:55:12–08:55:22 UTC · 30 m above take-off/);
  // The map is drawn again after the title: its points are the second flight's once it has been.
  await expect.poll(() => page.locator('.flight-point').count()).toBe(6);
  await page.waitForTimeout(300);
  await page.screenshot({ path: path.join(SHOTS, 'flight-checks-second.png') });
});

it('the printable report shows the advisory line, the photos to look at and the GPS time beside the camera time', async () => {
  opened = await openPage(ui);
  const { page } = opened;
  await page.setContent(html);
  expect(await page.locator('.advisory').innerText()).toBe(
    'Look before you leave: Flight 1 of 2: 4 of 12 photos look unusable (several reasons: see the report), first at 10:15:16; camera clock is 1 h 00 min 03 s ahead of GPS time (UTC+02:00) on 1 photo (DJI_0007.JPG) — look before you leave',
  );
  expect(await page.locator('table.frames tbody tr').count()).toBe(5);
  expect(await page.locator('svg.map g.point[data-state="flagged"]').count()).toBe(3);
  expect(
    await page
      .locator('table.files td', { hasText: 'GPS: 2024-05-06 10:15:24+02:00 (08:15:24 UTC)' })
      .count(),
  ).toBe(1);
  await page.screenshot({ path: path.join(REPORT_SHOTS, 'report-flagged-top.png') });
  await page
    .locator('section.flight')
    .first()
    .screenshot({ path: path.join(REPORT_SHOTS, 'report-flagged-flight.png') });
  expect(opened.requests.filter((u) => u !== 'about:blank')).toEqual([]);
});
