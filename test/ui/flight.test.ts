/**
 * The flight view in real headless Chromium (1366x768), fed by the test
 * bridge, and the printable offload report rendered by the same browser.
 * Screenshots: test-results/ui/flight-*.png and test-results/report/*.png.
 */
import fs from 'node:fs';
import path from 'node:path';
import type { Page } from 'playwright-core';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { renderReportHtml, reportJson } from '../../main/core/offload/report.js';
import { tempDir } from '../support/harness.js';
import { offloadFixture } from '../support/offload-fixture.js';
import { ROOT, openPage, startUi, type Opened, type Ui } from './browser.js';
import type { DmsTestControl } from './test-bridge.js';

const SHOTS = path.join(ROOT, 'test-results', 'ui');
const REPORT_SHOTS = path.join(ROOT, 'test-results', 'report');
type TestWindow = { __dmsTest: DmsTestControl };

let ui: Ui;
let opened: Opened | null = null;
const dirs: string[] = [];

beforeAll(async () => {
  ui = await startUi();
  fs.mkdirSync(SHOTS, { recursive: true });
  fs.mkdirSync(REPORT_SHOTS, { recursive: true });
}, 60_000);

afterAll(async () => {
  await ui?.close();
  for (const d of dirs) fs.rmSync(d, { recursive: true, force: true });
});

afterEach(async () => {
  const o = opened;
  opened = null;
  if (!o) return;
  try {
    await o.page.waitForTimeout(50);
    const hasBridge = await o.page.evaluate(() => '__dmsTest' in window);
    if (hasBridge) {
      const invalid = await o.page.evaluate(() => (window as unknown as TestWindow).__dmsTest.invalid);
      expect(invalid, 'requests main would refuse').toEqual([]);
    }
    expect(o.problems, 'CSP violations, console errors, failed loads').toEqual([]);
  } finally {
    await o.context.close();
  }
});

async function flightsScreen(tiles = false): Promise<Page> {
  opened = await openPage(ui, { scenario: 'idle', tiles });
  const { page } = opened;
  await page.locator('.tab', { hasText: 'Flights' }).click();
  await page.locator('.flight-point').first().waitFor();
  return page;
}

const statesOnMap = (page: Page): Promise<string[]> =>
  page.locator('.flight-point').evaluateAll((els) => els.map((e) => (e as HTMLElement).dataset.state ?? ''));

const tileCalls = (page: Page): Promise<number> =>
  page.evaluate(
    () => (window as unknown as TestWindow).__dmsTest.calls.filter((c) => c.channel === 'map:tile').length,
  );

/** Only the window's own files were requested: no tile server, no CDN. */
function onlyOwnRequests(o: Opened): void {
  const foreign = o.requests.filter((u) => !u.startsWith(ui.baseUrl) && !u.startsWith('data:'));
  expect(foreign).toEqual([]);
}

describe('flight view', () => {
  it('shows a complete flight offline: every point, track, wayline start, scale and north, no network', async () => {
    const page = await flightsScreen();
    await expect
      .poll(() => page.locator('.flight-title').innerText())
      .toBe('DJI_202405061015_001_Quarry-North');
    expect(await statesOnMap(page)).toEqual(Array(12).fill('done'));
    expect(await page.locator('path.flight-track').count()).toBe(1);
    expect(await page.locator('.wayline-start').count()).toBe(1);
    expect(await page.locator('.leaflet-control-scale-line').innerText()).toMatch(/^\d+ (m|km)$/);
    expect(await page.locator('.north-arrow').isVisible()).toBe(true);
    expect(await page.locator('.map-legend li[data-state="done"]').innerText()).toBe('Done (12)');
    expect(await page.locator('.flight-complete').innerText()).toMatch(/^Complete/);
    // the gimbal tick of the first leg points east (yaw 90)
    expect(await page.locator('.flight-point line').first().getAttribute('transform')).toBe('rotate(90)');
    expect(await page.locator('.leaflet-tile').count()).toBe(0);
    expect(await tileCalls(page)).toBe(0);
    await page.waitForTimeout(300); // let Leaflet settle before the picture
    await page.screenshot({ path: path.join(SHOTS, 'flight-complete.png') });
    onlyOwnRequests(opened!);
  });

  it('shows a flight with problems in colours and tells what is wrong with a clicked point', async () => {
    const page = await flightsScreen();
    await page.locator('.flight-item', { hasText: 'Quarry-South' }).click();
    await expect
      .poll(() => page.locator('.flight-title').innerText())
      .toBe('DJI_202405061102_002_Quarry-South');
    await expect.poll(async () => (await statesOnMap(page)).length).toBe(12);
    const states = await statesOnMap(page);
    const n = (s: string) => states.filter((x) => x === s).length;
    expect([n('done'), n('on-its-way'), n('failed'), n('missing'), n('rtk-float'), n('rtk-single')]).toEqual([
      5, 2, 1, 1, 2, 1,
    ]);
    expect(await page.locator('.flight-point[data-state="failed"] circle').getAttribute('fill')).toBe(
      '#cf222e',
    );
    expect(await page.locator('.flight-point[data-state="missing"] rect').count()).toBe(1);
    expect(await page.locator('.flight-flags .flag-incomplete').innerText()).toMatch(/^1 photo missing/);

    await page.locator('.flight-point[data-state="missing"]').click();
    await expect.poll(() => page.locator('.point-details h3').innerText()).toMatch(/^Exposure 7/);
    expect(await page.locator('.point-files').innerText()).toBe('No photo on the card');
    expect(await page.locator('.point-problem').innerText()).toBe(
      'Exposure 7 is in the exposure log but the card has no photo for it.',
    );

    await page.locator('.flight-point[data-state="failed"]').click();
    await expect
      .poll(() => page.locator('.point-problem').innerText())
      .toMatch(
        /^Upload failed for DJI_\d+_0005_V\.JPG: The server refused this file: the workspace storage is full\.$/,
      );

    // a hostile file name is shown as text, never as markup
    await page.locator('.flight-point[data-index="12"]').click();
    await expect
      .poll(() => page.locator('.point-files').innerText())
      .toBe('DJI_<img src=x onerror=alert(1)>_0012_V.JPG');
    expect(await page.locator('img[src="x"]').count()).toBe(0);
    await page.waitForTimeout(300);
    await page.screenshot({ path: path.join(SHOTS, 'flight-problems.png') });

    // The crew accepts the flight as it is: asked of main, and shown as accepted.
    await page.getByRole('button', { name: 'Accept this flight as it is' }).click();
    await expect.poll(() => page.locator('.flight-accepted').count()).toBe(1);
    expect(await page.locator('.flight-item', { hasText: 'Quarry-South' }).locator('.pill').innerText()).toBe(
      'Accepted',
    );
    const accepts = await page.evaluate(() =>
      (
        window as unknown as { __dmsTest: { calls: Array<{ channel: string; request: unknown }> } }
      ).__dmsTest.calls.filter((c) => c.channel === 'flights:accept'),
    );
    expect(accepts).toEqual([
      {
        channel: 'flights:accept',
        request: { cardId: expect.any(String), folder: expect.stringMatching(/Quarry-South$/) },
      },
    ]);
    onlyOwnRequests(opened!);
  });

  it('draws base-map tiles that main hands over IPC, and still requests nothing itself', async () => {
    const page = await flightsScreen(true);
    await expect.poll(() => page.locator('.leaflet-tile-loaded').count()).toBeGreaterThan(0);
    expect(await tileCalls(page)).toBeGreaterThan(0);
    const src = await page.locator('.leaflet-tile-loaded').first().getAttribute('src');
    expect(src).toMatch(/^data:image\/png;base64,/);
    expect(await page.locator('.leaflet-control-attribution').innerText()).toContain('Test tiles');
    await page.waitForTimeout(300);
    await page.screenshot({ path: path.join(SHOTS, 'flight-tiles.png') });
    onlyOwnRequests(opened!);
  });
});

describe('offload report in Chromium', () => {
  it('renders the printable report whole, loads nothing, and runs no card content', async () => {
    const root = tempDir('dms-report-ui-');
    dirs.push(root);
    const input = await offloadFixture(root, { hostile: true, missing: [7], float: [3, 4], single: [11] });
    const html = renderReportHtml(reportJson(input, 'ascmhl/0001_M3T_CARD_2024-05-06_090500Z.mhl'));
    opened = await openPage(ui);
    const { page } = opened;
    let dialogs = 0;
    page.on('dialog', (d) => {
      dialogs++;
      void d.dismiss();
    });
    await page.setContent(html);
    expect(await page.locator('.verdict h2').innerText()).toBe('Not safe to format yet');
    expect(await page.locator('svg.map g.point').count()).toBe(12);
    expect(await page.locator('svg.map g.scale text').textContent()).toMatch(/^\d+ (m|km)$/);
    expect(await page.locator('table.files tbody tr').count()).toBe(input.files.length);
    expect(await page.locator('td.path', { hasText: 'onerror=alert(1)' }).count()).toBe(2); // path and object key
    expect(await page.locator('img').count()).toBe(0);
    expect(dialogs).toBe(0);
    await page.screenshot({ path: path.join(REPORT_SHOTS, 'report-top.png') });
    await page.screenshot({ path: path.join(REPORT_SHOTS, 'report-full.png'), fullPage: true });
    expect(opened.requests.filter((u) => u !== 'about:blank')).toEqual([]);
  });
});
