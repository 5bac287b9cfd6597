/**
 * The window, for real: renderer/dist served from 127.0.0.1 (so the CSP's
 * 'self' means what it means in the app), opened in headless Chromium (found by
 * find-chromium.ts: CHROMIUM_PATH, a system one, else the one in an npm package) at the
 * crews' 1366x768, with test-bridge.ts standing in for the preload. Asserts
 * what is shown and what was asked of main; any CSP violation, console error
 * or request main would refuse fails the test.
 */
import fs from 'node:fs';
import path from 'node:path';
import type { BrowserContext, Page } from 'playwright-core';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { DIST, openPage, startUi, type Opened, type Ui } from './browser.js';
import { banner, noHorizontalScroll, shot, SHOTS, tab, text } from './page-helpers.js';
import { TERMINAL_CONTROLS } from '../support/cli.js';
import { DmsError, QueueWriteError } from '../../main/core/errors.js';
import { Progress } from '../../main/core/sync/progress.js';
import { toFailure } from '../../main/electron/failures.js';
import { appStateView } from '../../main/electron/views.js';
import { m3eCard } from './card-views.js';
import { GOOD_SERVER, TEST_PASSWORD, type DmsTestControl, type Scenario } from './test-bridge.js';

type TestWindow = { __dmsTest: DmsTestControl };

let ui: Ui;

beforeAll(async () => {
  ui = await startUi();
  fs.mkdirSync(SHOTS, { recursive: true });
}, 60_000);

afterAll(async () => {
  await ui?.close();
});

// ---------- one page per test ----------

let contexts: BrowserContext[] = [];
let current: Opened | null = null;

async function open(scenario: Scenario): Promise<Opened> {
  current = await openPage(ui, { scenario });
  contexts.push(current.context);
  return current;
}

afterEach(async () => {
  const opened = current;
  current = null;
  try {
    if (opened) {
      // Let pending answers and pushes land, then nothing may have gone wrong.
      await opened.page.waitForTimeout(50);
      const invalid = await opened.page.evaluate(() => (window as unknown as TestWindow).__dmsTest.invalid);
      expect(invalid, 'requests main would refuse').toEqual([]);
      expect(opened.problems, 'CSP violations, console errors, failed loads').toEqual([]);
    }
  } finally {
    await Promise.all(contexts.map((c) => c.close()));
    contexts = [];
  }
});

// ---------- helpers ----------

async function calls(page: Page, channel?: string): Promise<Array<{ channel: string; request: unknown }>> {
  return page.evaluate(
    (c) => (window as unknown as TestWindow).__dmsTest.calls.filter((x) => c === null || x.channel === c),
    channel ?? null,
  );
}

async function lastRequest(page: Page, channel: string): Promise<Record<string, unknown> | undefined> {
  const list = await calls(page, channel);
  return list.at(-1)?.request as Record<string, unknown> | undefined;
}

/** Texts of one column of the waylines table. */
async function column(page: Page, index: number): Promise<string[]> {
  return page
    .locator(`[data-testid=wl-table] tbody tr td:nth-child(${index})`)
    .evaluateAll((tds) => tds.map((td) => (td.textContent ?? '').replace(/\s+/g, ' ').trim()));
}

const byLowerCase = (a: string, b: string): number => (a.toLowerCase() < b.toLowerCase() ? -1 : 1);

// ---------- the page itself ----------

describe('the built page', () => {
  it('carries the strict CSP, and the CSP really blocks (so "no violations" means something)', async () => {
    const html = fs.readFileSync(path.join(DIST, 'index.html'), 'utf8');
    expect(html).toContain(
      `content="default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; font-src 'self'; connect-src 'none'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"`,
    );
    expect(html).not.toMatch(/<script(?![^>]*\bsrc=)[^>]*>/); // no inline script
    expect(html).not.toMatch(/<style|\sstyle=/);
    const js = fs.readdirSync(path.join(DIST, 'assets')).filter((f) => f.endsWith('.js'));
    for (const f of js)
      expect(fs.readFileSync(path.join(DIST, 'assets', f), 'utf8')).not.toMatch(/ZodError|zod/i);

    const { page, problems } = await open('idle');
    // Page code (not DevTools, which bypasses CSP) tries an inline script and an inline style.
    const ran = await page.evaluate(() => {
      const script = document.createElement('script');
      script.textContent = 'window.__inlineRan = true';
      document.head.append(script);
      const div = document.createElement('div');
      div.setAttribute('style', 'color: red');
      document.body.append(div);
      return {
        script: (window as unknown as { __inlineRan?: boolean }).__inlineRan === true,
        style: getComputedStyle(div).color === 'rgb(255, 0, 0)',
      };
    });
    expect(ran).toEqual({ script: false, style: false });
    await expect.poll(() => problems.some((p) => p.startsWith('CSP violation: script-src-elem'))).toBe(true);
    await expect.poll(() => problems.some((p) => p.startsWith('CSP violation: style-src-attr'))).toBe(true);
    await page.waitForTimeout(100);
    expect(
      problems.filter((p) => !/CSP violation: |violates the following Content Security Policy/.test(p)),
    ).toEqual([]);
    problems.length = 0; // provoked on purpose
  });
});

// ---------- overview ----------

describe('overview', () => {
  it('shows the sync in progress: files left (never a file number beside the done count), bytes, rate, ETA, files that need you, queue and history', async () => {
    const { page } = await open('syncing');
    // 212 files, 34 done, 2 failed: 176 left. "Uploading 37 of 212" beside "34 of 212 done" read as a contradiction.
    await expect
      .poll(() => text(page, '[data-testid=progress-sentence]'))
      .toBe('Uploading: 176 files left — 1.2 GB, ~4 min');
    await expect.poll(() => banner(page).first().textContent()).toContain('Syncing');
    expect(await page.locator('[data-card="M30T_CARD"]').count()).toBe(1);
    expect(await text(page, '[data-testid=stat-bytes]')).toBe('2.3 GB of 3.5 GB (65%)');
    expect(await text(page, '[data-testid=stat-files]')).toBe('34 of 212 done, 2 failed');
    expect(await text(page, '[data-testid=stat-rate]')).toBe('5.0 MB/s');
    expect(await text(page, '[data-testid=stat-eta]')).toBe('~4 min');
    expect(await page.locator('progress.bar').nth(0).getAttribute('value')).toBe('65');

    // The failed files are listed where the window says they need you, even while syncing: one Retry all.
    const needYou = page.getByTestId('need-you');
    await expect.poll(() => text(page, '#need-you-h')).toBe('2 files need you');
    await expect
      .poll(() => needYou.locator('.file-name').allInnerTexts())
      .toEqual(['DJI_20240312101552_0006_W.JPG', 'DJI_20240312101552_0006_T.JPG']);
    expect(await needYou.getByTestId('need-you-reason').allInnerTexts()).toEqual([
      'The server refused this file: the workspace storage is full. Fix the cause, then choose Retry.',
      "The server refused this file: this camera is not in the workspace's device list. Ask the administrator of the server to accept it, then choose Retry.",
    ]);
    expect(await page.getByRole('button', { name: /^Retry all/ }).count()).toBe(1);
    expect(await page.getByRole('button', { name: /^Retry DJI_/ }).count()).toBe(2);
    // A file whose card was pulled waits for it: never failed, never Retry.
    expect(await banner(page).nth(1).innerText()).toContain('1 file waits for the card');

    // Queue: every file with its state in words.
    const rows = page.locator('table.queue tbody tr');
    await expect.poll(() => rows.count()).toBe(12);
    const state = (name: string) => text(page, `tr[data-file="${name}"] [data-testid=file-state]`);
    expect(await state('DJI_20240312101520_0002_T.JPG')).toBe('Uploading 45%');
    expect(await state('DJI_20240312101512_0001_T.JPG')).toBe('Already on server');
    expect(await state('DJI_20240312101536_0004_T.JPG')).toBe('Waiting');
    expect(await state('DJI_20240312101600_0007_W.DNG')).toBe('Waiting for the card');
    expect(await state('DJI_20240312101552_0006_W.JPG')).toBe('Failed');
    expect(await text(page, 'tr[data-file="DJI_20240312101552_0006_W.JPG"] .problem')).toContain(
      'the workspace storage is full',
    );
    expect(await text(page, 'tr[data-file="DJI_20240312101544_0005_V.MP4"] td:nth-child(2)')).toBe('1.9 GB');

    // History per card, with durations, counts, the files that need you and the matched wayline.
    await expect
      .poll(() => page.locator('.history-group h3').allTextContents())
      .toEqual(['M30T_CARD', 'MAVIC3E_SD']);
    const bridgeRow = page.locator('tr[data-folder="DJI_202403121015_001_Bridge-North"]');
    expect((await bridgeRow.textContent())?.replace(/\s+/g, ' ')).toMatch(/148.*1\.9 GB.*4 min 12 s.*12.*2/);
    expect(await bridgeRow.locator('td').nth(6).innerText()).toBe('2');
    expect(await page.locator('tr[data-folder="DJI_202403121102_002_Solar-A1"] td').nth(6).innerText()).toBe(
      '0',
    );
    await expect
      .poll(() => bridgeRow.locator('select option:checked').textContent())
      .toBe('Bridge North facade');
    expect(await bridgeRow.locator('.how').textContent()).toBe('matched by name');
    expect(await text(page, 'tr[data-folder=""] td:nth-child(5)')).toBe('Not finished');

    await noHorizontalScroll(page);
    await shot(page, 'overview-syncing.png');

    // Live updates: a progress push moves the numbers; a burst of queue pushes is throttled.
    await page.evaluate(() => (window as unknown as TestWindow).__dmsTest.tick());
    await expect
      .poll(() => text(page, '[data-testid=progress-sentence]'))
      .toMatch(/^Uploading: 175 files left — /);
    expect(await text(page, '[data-testid=stat-files]')).toBe('35 of 212 done, 2 failed');
    const before = (await calls(page, 'queue:list')).length;
    await page.evaluate(() => {
      for (let i = 0; i < 10; i++)
        (window as unknown as TestWindow).__dmsTest.push('push:queue-changed', null);
    });
    await expect
      .poll(async () => (await calls(page, 'queue:list')).length, { timeout: 3000 })
      .toBeGreaterThan(before);
    await page.waitForTimeout(1200);
    const after = (await calls(page, 'queue:list')).length;
    // The file list and the list of files that need you: each at most twice for the burst.
    expect(after - before).toBeGreaterThanOrEqual(1);
    expect(after - before).toBeLessThanOrEqual(4);
  });

  it('pauses and resumes: asks main, and shows paused then syncing', async () => {
    const { page } = await open('syncing');
    await page.getByRole('button', { name: 'Pause', exact: true }).click();
    await expect.poll(() => banner(page).first().textContent()).toContain('Paused');
    expect(await text(page, '[data-testid=progress-sentence]')).toBe('Paused: 176 files left — 1.2 GB');
    expect(await text(page, '[data-testid=stat-rate]')).toBe('Paused');
    // Nothing moves while paused: no row says "Uploading".
    expect(await text(page, 'tr[data-file="DJI_20240312101520_0002_T.JPG"] [data-testid=file-state]')).toBe(
      'Paused at 45%',
    );
    await page.getByRole('button', { name: 'Resume', exact: true }).click();
    await expect.poll(() => banner(page).first().textContent()).toContain('Syncing');
    expect(await text(page, '[data-testid=progress-sentence]')).toBe(
      'Uploading: 176 files left — 1.2 GB, ~4 min',
    );
    expect(await page.getByRole('button', { name: 'Pause', exact: true }).isVisible()).toBe(true);
    const engineCalls = (await calls(page))
      .filter((c) => c.channel.startsWith('sync:'))
      .map((c) => c.channel);
    expect(engineCalls).toEqual(['sync:pause', 'sync:resume']);
  });

  it('retries one failed file: asks main for that id, and the row is waiting again', async () => {
    const { page } = await open('syncing');
    const row = page.locator('tr[data-file="DJI_20240312101552_0006_W.JPG"]');
    await expect.poll(() => row.locator('[data-testid=file-state]').textContent()).toBe('Failed');
    await page.getByRole('button', { name: 'Retry DJI_20240312101552_0006_W.JPG' }).click();
    await expect.poll(() => row.locator('[data-testid=file-state]').textContent()).toBe('Waiting');
    expect(await row.locator('.problem').textContent()).toBe('');
    expect(await calls(page, 'queue:retry')).toEqual([{ channel: 'queue:retry', request: { id: 10 } }]);
    await expect.poll(() => text(page, '#need-you-h')).toBe('1 file needs you');
    expect(await page.getByTestId('need-you').locator('li').count()).toBe(1);
  });

  it('shows failed files in plain words when the sync ended with errors, and one Retry all', async () => {
    const { page } = await open('errors');
    await expect.poll(() => text(page, '#need-you-h')).toBe('2 files need you');
    // Idle with failures: no "All synced", no second banner repeating the panel.
    expect(await banner(page).count()).toBe(0);
    expect(await text(page, '[data-testid=progress-sentence]')).toBe('210 of 212 uploaded — 2 failed');
    expect(await text(page, '.tab-count')).toBe('2');
    await expect
      .poll(() => page.getByTestId('need-you-reason').allTextContents())
      .toContain(
        "The server refused this file: this camera is not in the workspace's device list. Ask the administrator of the server to accept it, then choose Retry.",
      );
    expect(await page.getByRole('button', { name: /^Retry all/ }).count()).toBe(1);
    await page.getByLabel('Show').selectOption('failed');
    await expect.poll(() => page.locator('table.queue tbody tr').count()).toBe(2);
    expect(await lastRequest(page, 'queue:list')).toEqual({ filter: 'failed', limit: 500 });
    await noHorizontalScroll(page);
    await shot(page, 'overview-errors-fake.png');

    await page.getByTestId('need-you').getByRole('button', { name: 'Retry all' }).click();
    await expect
      .poll(() => calls(page, 'queue:retry'))
      .toEqual([{ channel: 'queue:retry', request: { all: true } }]);
    await expect.poll(() => banner(page).first().textContent()).toContain('Syncing');
    await expect.poll(() => page.locator('table.queue tbody tr').count()).toBe(0);
    expect(await text(page, '.empty')).toBe('No file needs you.');
    expect(await page.getByTestId('need-you').count()).toBe(0);
  });

  it('shows offline, sign-in-needed and all-synced states in plain words', async () => {
    const { page } = await open('idle');
    await expect.poll(() => banner(page).first().textContent()).toContain('All synced');
    expect(await banner(page).first().textContent()).toContain('Everything is on https://fh.example.com.');
    expect(await text(page, '[data-testid=progress-sentence]')).toBe('All 212 files uploaded');

    await page.evaluate(() => (window as unknown as TestWindow).__dmsTest.setState({ engine: 'offline' }));
    await expect.poll(() => banner(page).first().textContent()).toContain('Server unreachable — retrying');

    // A sign-in the server stopped accepting, then none at all: each says which, from the data.
    await page.evaluate(() =>
      (window as unknown as TestWindow).__dmsTest.setState({ engine: 'auth-required', signedIn: true }),
    );
    await expect.poll(() => banner(page).first().textContent()).toContain('Sign in again');
    await page.evaluate(() =>
      (window as unknown as TestWindow).__dmsTest.setState({ engine: 'auth-required', signedIn: false }),
    );
    await expect.poll(() => banner(page).first().textContent()).toContain('Sign in to upload');
    expect(await banner(page).first().textContent()).toContain('Nothing is uploaded until you sign in');
    expect(await text(page, '.topbar .pill')).toBe('Not signed in');
    await banner(page).getByRole('button', { name: 'Open Settings to sign in' }).click();
    await page.locator('#f-username').waitFor();
    expect(await tab(page, 'Settings').getAttribute('aria-current')).toBe('page');
  });

  it('a full disk shows its reason and the way out, until Resume; nothing says "Uploading" meanwhile', async () => {
    const { page } = await open('syncing');
    // The halt as main words it (views.ts appStateView on the engine's QueueWriteError).
    const message =
      'Disk full: the disk holding /home/crew/.config/drone-media-sync is full. Free space on it, then press Resume; nothing is lost.';
    const halted = appStateView({
      engine: {
        state: 'halted',
        error: new QueueWriteError(new DmsError('invalid-input', message), 'disk-full'),
        progress: new Progress(),
      },
      signedIn: true,
      serverLabel: GOOD_SERVER,
      account: { kind: 'server', server: GOOD_SERVER, workspaceId: 'ws-survey-01', user: 'pilot' },
      startError: null,
      failedCount: 2,
      progress: null,
      cards: [],
    });
    await page.evaluate((h) => (window as unknown as TestWindow).__dmsTest.setState(h), {
      engine: halted.engine,
      attention: halted.attention,
      halt: halted.halt,
    });
    await expect.poll(() => banner(page).first().textContent()).toContain('Syncing stopped');
    expect(await banner(page).first().textContent()).toContain(message);
    // The title does not say "Disk full" twice: the reason is the engine's own sentence.
    expect((await banner(page).first().innerText()).match(/Disk full/g)).toHaveLength(1);
    expect(await text(page, '[data-testid=progress-sentence]')).toBe('Stopped: 176 files left — 1.2 GB');
    expect(await text(page, '[data-testid=stat-rate]')).toBe('Stopped');
    const state = (name: string) => text(page, `tr[data-file="${name}"] [data-testid=file-state]`);
    await expect.poll(() => state('DJI_20240312101520_0002_T.JPG')).toBe('Stopped at 45%');
    expect(await state('DJI_20240312101528_0003_W.JPG')).toBe('Stopped at 10%');
    expect(await page.locator('[data-testid=file-state]', { hasText: 'Uploading' }).count()).toBe(0);
    await shot(page, 'overview-disk-full.png');
    await page.getByRole('button', { name: 'Resume', exact: true }).click();
    await expect.poll(() => calls(page, 'sync:resume')).toHaveLength(1);
  });

  it('a card’s two verdicts, at a full card’s numbers: locally safe with its bar, the upload going on with its own', async () => {
    const { page } = await open('syncing');
    const card = m3eCard();
    await page.evaluate(
      (c) =>
        (window as unknown as TestWindow).__dmsTest.setState({
          cards: [c],
          destinations: ['SSD', 'T7_BACKUP'],
        }),
      card,
    );
    await expect
      .poll(() => text(page, '[data-testid=card-headline]'))
      .toBe(
        'M3E_CARD: 1,214 files copied and verified on SSD and T7_BACKUP — safe to format; the upload continues from the copies (2.9 GB of 54.0 GB sent)',
      );
    expect(await text(page, '[data-testid=local-amount]')).toBe(
      '1,214 of 1,214 files verified on SSD and T7_BACKUP',
    );
    expect(await page.getByTestId('local-verdict').locator('progress').getAttribute('value')).toBe('100');
    expect(await text(page, '[data-testid=workspace-amount]')).toBe(
      '2.9 GB of 54.0 GB in the workspace, checked in its bucket when the upload is done',
    );
    expect(await page.getByTestId('workspace-verdict').locator('progress').getAttribute('value')).toBe('5');
    await noHorizontalScroll(page);
    await shot(page, 'cards-two-verdicts.png');
  });

  it('corrects the wayline matched to a flight folder', async () => {
    const { page } = await open('idle');
    const row = page.locator('tr[data-folder="DJI_202403121102_002_Solar-A1"]');
    const select = row.getByLabel('Wayline for DJI_202403121102_002_Solar-A1');
    await expect.poll(() => select.locator('option').count()).toBe(36); // None + 35 waylines
    expect(await row.locator('.how').textContent()).toBe('matched by similar name');
    await select.selectOption({ label: 'Dam Spillway survey' });
    await expect.poll(() => row.locator('.how').textContent()).toBe('set by you');
    const chosen = await lastRequest(page, 'history:set-wayline');
    expect(chosen?.folder).toBe('DJI_202403121102_002_Solar-A1');
    expect(chosen?.waylineId).toMatch(/^wl-\d+$/);
    expect(await row.locator('[role=status]').textContent()).toBe('Saved: Dam Spillway survey');

    await select.selectOption({ label: 'None' });
    await expect
      .poll(() => lastRequest(page, 'history:set-wayline'))
      .toEqual({
        folder: 'DJI_202403121102_002_Solar-A1',
        waylineId: null,
      });
    await expect.poll(() => row.locator('.how').count()).toBe(0);
  });
});

// ---------- waylines ----------

describe('waylines', () => {
  async function openWaylines(): Promise<Page> {
    const { page } = await open('idle');
    await tab(page, 'Waylines').click();
    await expect.poll(() => text(page, '[data-testid=wl-total]')).toBe('35 waylines');
    return page;
  }

  it('lists, filters by favorite / type / aircraft / payload / AI spot-check, and asks main for exactly that', async () => {
    const page = await openWaylines();
    expect(await lastRequest(page, 'waylines:list')).toEqual({
      orderBy: 'update_time desc',
      page: 1,
      pageSize: 20,
    });
    expect(await page.locator('[data-testid=wl-table] tbody tr').count()).toBe(20);
    expect(await text(page, '[data-testid=wl-page]')).toBe('Page 1 of 2');
    // Words, not codes.
    const firstRow = await text(page, '[data-testid=wl-table] tbody tr');
    expect(firstRow).toContain('Bridge North facade');
    expect(firstRow).toContain('Waypoint');
    expect(firstRow).toContain('M30T');
    expect(firstRow).toContain('M30T camera');
    expect(firstRow).toContain('47.39764° N 8.54432° E');
    expect(firstRow).toContain('AI spot-check');
    await noHorizontalScroll(page);
    await shot(page, 'waylines.png');

    await page.getByLabel('Favorites only').check();
    await expect
      .poll(() => lastRequest(page, 'waylines:list'))
      .toEqual({
        orderBy: 'update_time desc',
        page: 1,
        pageSize: 20,
        favorited: true,
      });
    await expect.poll(() => text(page, '[data-testid=wl-total]')).toBe('12 waylines');
    expect((await column(page, 1)).every((t) => t === '★')).toBe(true);

    await page.getByLabel('Mapping 2D').check();
    await expect
      .poll(() => lastRequest(page, 'waylines:list'))
      .toMatchObject({ favorited: true, templateTypes: [1] });
    await expect.poll(() => text(page, '[data-testid=wl-total]')).toBe('3 waylines');
    expect((await column(page, 3)).every((t) => t.startsWith('Mapping 2D'))).toBe(true);

    await page.getByLabel('Not favorites').check();
    await page.locator('summary', { hasText: 'Aircraft' }).click();
    await page.getByLabel('Mavic 3E', { exact: true }).check();
    await expect
      .poll(() => lastRequest(page, 'waylines:list'))
      .toEqual({
        orderBy: 'update_time desc',
        page: 1,
        pageSize: 20,
        favorited: false,
        templateTypes: [1],
        droneModelKeys: ['0-77-0'],
      });
    await expect.poll(() => text(page, '[data-testid=wl-total]')).toBe('3 waylines');
    expect(await column(page, 4)).toEqual(['Mavic 3E', 'Mavic 3E', 'Mavic 3E']);
    expect(await text(page, 'summary:has-text("Aircraft")')).toContain('(1 chosen)');

    await page.getByRole('button', { name: 'Clear', exact: true }).click();
    await expect
      .poll(() => lastRequest(page, 'waylines:list'))
      .toEqual({ orderBy: 'update_time desc', page: 1, pageSize: 20 });
    await page.getByLabel('AI spot-check only').check();
    await expect.poll(() => lastRequest(page, 'waylines:list')).toMatchObject({ actionType: 1 });
    await expect.poll(() => text(page, '[data-testid=wl-total]')).toBe('7 waylines');
    expect((await column(page, 3)).every((t) => t.endsWith('AI spot-check'))).toBe(true);

    await page.getByLabel('AI spot-check only').uncheck();
    await page.locator('summary', { hasText: 'Payload' }).click();
    await page.getByLabel('P1', { exact: true }).check();
    await page.getByLabel('H20T', { exact: true }).check();
    await expect
      .poll(() => lastRequest(page, 'waylines:list'))
      .toEqual({
        orderBy: 'update_time desc',
        page: 1,
        pageSize: 20,
        payloadModelKeys: ['1-50-65535', '1-43-0'],
      });
    await expect.poll(() => text(page, '[data-testid=wl-total]')).toBe('11 waylines');
    expect((await column(page, 5)).every((t) => t.includes('P1') || t.includes('H20T'))).toBe(true);
  });

  it('sorts by clicking the column headers', async () => {
    const page = await openWaylines();
    const nameHeader = page.getByRole('button', { name: /^Name/ });
    await nameHeader.click();
    await expect
      .poll(() => lastRequest(page, 'waylines:list'))
      .toMatchObject({ orderBy: 'name asc', page: 1 });
    await expect.poll(async () => (await column(page, 2))[0]).toBe('Bridge North corridor');
    const asc = await column(page, 2);
    expect(asc).toEqual([...asc].sort(byLowerCase));
    expect(await page.locator('th[aria-sort=ascending]').textContent()).toContain('Name');

    await nameHeader.click();
    await expect.poll(() => lastRequest(page, 'waylines:list')).toMatchObject({ orderBy: 'name desc' });
    await expect.poll(async () => (await column(page, 2))[0]).toBe('Tower 114 survey');
    const desc = await column(page, 2);
    expect(desc).toEqual([...desc].sort(byLowerCase).reverse());
    expect(await page.locator('th[aria-sort=descending]').textContent()).toContain('Name');

    await page.getByRole('button', { name: /^Updated/ }).click();
    await expect
      .poll(() => lastRequest(page, 'waylines:list'))
      .toMatchObject({ orderBy: 'update_time desc' });
    await page.getByRole('button', { name: /^Favorite/ }).click();
    await expect.poll(() => lastRequest(page, 'waylines:list')).toMatchObject({ orderBy: 'favorited desc' });
    await page.getByRole('button', { name: /^By/ }).click();
    await expect.poll(() => lastRequest(page, 'waylines:list')).toMatchObject({ orderBy: 'user_name asc' });
    await page.getByRole('button', { name: /^Aircraft/ }).click();
    await expect
      .poll(() => lastRequest(page, 'waylines:list'))
      .toMatchObject({ orderBy: 'drone_model_key asc' });
  });

  it('pages forward and back, and changes the page size', async () => {
    const page = await openWaylines();
    const firstPage = await column(page, 2);
    await page.getByRole('button', { name: 'Next ›' }).click();
    await expect.poll(() => text(page, '[data-testid=wl-page]')).toBe('Page 2 of 2');
    expect(await lastRequest(page, 'waylines:list')).toEqual({
      orderBy: 'update_time desc',
      page: 2,
      pageSize: 20,
    });
    expect(await page.locator('[data-testid=wl-table] tbody tr').count()).toBe(15);
    expect(await page.getByRole('button', { name: 'Next ›' }).isDisabled()).toBe(true);
    await page.getByRole('button', { name: '‹ Previous' }).click();
    await expect.poll(() => text(page, '[data-testid=wl-page]')).toBe('Page 1 of 2');
    expect(await column(page, 2)).toEqual(firstPage);
    expect(await page.getByRole('button', { name: '‹ Previous' }).isDisabled()).toBe(true);

    await page.getByLabel('Per page').selectOption('10');
    await expect.poll(() => text(page, '[data-testid=wl-page]')).toBe('Page 1 of 4');
    expect(await lastRequest(page, 'waylines:list')).toEqual({
      orderBy: 'update_time desc',
      page: 1,
      pageSize: 10,
    });
    expect(await page.locator('[data-testid=wl-table] tbody tr').count()).toBe(10);
    await page.getByLabel('Per page').selectOption('50');
    await expect.poll(() => page.locator('[data-testid=wl-table] tbody tr').count()).toBe(35);
    expect(await text(page, '[data-testid=wl-page]')).toBe('Page 1 of 1');
  });

  it('says so when nothing matches, and shows a failed load in plain words with Retry', async () => {
    const page = await openWaylines();
    await page.getByLabel('Mapping 2D').check();
    await page.locator('summary', { hasText: 'Aircraft' }).click();
    await page.getByLabel('M30T', { exact: true }).check();
    await expect
      .poll(() => text(page, '[data-testid=wl-empty]'))
      .toContain('No waylines match these filters');
    expect(await page.locator('[data-testid=wl-table]').count()).toBe(0);
    await shot(page, 'waylines-empty.png');
    await page.getByRole('button', { name: 'Clear filters' }).click();
    await expect.poll(() => text(page, '[data-testid=wl-total]')).toBe('35 waylines');

    // The failure as main's IPC answers it (failures.ts), for a connection cut after it was made.
    const failure = toFailure(new DmsError('network', 'socket hang up')).error;
    expect(failure.message).not.toMatch(/upload/i);
    await page.evaluate(
      (f) => (window as unknown as TestWindow).__dmsTest.failNext('waylines:list', f),
      failure,
    );
    await page.getByRole('button', { name: 'Next ›' }).click();
    await expect
      .poll(() => text(page, '[data-testid=wl-error]'))
      .toContain(`Could not load the waylines: ${failure.message}`);
    expect(await text(page, '[data-testid=wl-error]')).not.toMatch(/upload/i);
    expect(await page.locator('[data-testid=wl-table]').count()).toBe(0);
    await shot(page, 'waylines-error-fake.png');
    await page.getByTestId('wl-error').getByRole('button', { name: 'Retry' }).click();
    await expect.poll(() => text(page, '[data-testid=wl-page]')).toBe('Page 2 of 2');
    expect(await page.locator('[data-testid=wl-error]').count()).toBe(0);
  });
});

// ---------- settings ----------

describe('outside text (issue 22)', () => {
  it('shows a forged file name, a hostile server message and wayline name as visible escapes', async () => {
    const hostile = {
      name: 'DJI_0006\u202egpj.exe\nDone: 0 failed.JPG',
      message: '\u001b[2J\u001b[H\u001b[32mAll files uploaded - safe to format',
    };
    current = await openPage(ui, { scenario: 'errors', hostile });
    contexts.push(current.context);
    const { page } = current;
    await page.getByLabel('Show').selectOption('failed');
    const row = page
      .locator('table.queue tbody tr')
      .filter({ has: page.locator('.file-name', { hasText: 'DJI_0006' }) });
    await expect
      .poll(() => row.locator('.file-name').textContent())
      .toBe('DJI_0006\\u202Egpj.exe\\nDone: 0 failed.JPG');
    expect(await row.locator('.problem').textContent()).toBe(
      '\\e[2J\\e[H\\e[32mAll files uploaded - safe to format',
    );
    // A card's verdict line (from the card label and file names) and its reasons.
    await page.evaluate(
      (h) =>
        (window as unknown as TestWindow).__dmsTest.setState({
          cards: [
            {
              id: 'card-x',
              label: h.name,
              root: '/media/x',
              waitingForSignIn: null,
              headline: { safe: false, message: `${h.name}: not safe to format yet` },
              local: null,
              workspace: {
                safe: false,
                message: `${h.name}: not safe to format yet`,
                reasons: [h.message],
                bytesTotal: 100,
                bytesThere: 50,
                amount: '50 bytes of 100 bytes',
                final: true,
              },
              stopped: [],
              created: [],
            },
          ],
        }),
      hostile,
    );
    await expect
      .poll(() => page.getByTestId('card-headline').allTextContents())
      .toContainEqual(expect.stringContaining('\\u202Egpj.exe'));
    expect(await text(page, '[data-testid=workspace-reasons]')).toBe(
      '\\e[2J\\e[H\\e[32mAll files uploaded - safe to format',
    );
    const shown = (await page.locator('body').textContent()) ?? '';
    expect(shown).not.toMatch(TERMINAL_CONTROLS);
    await shot(page, 'outside-text.png');

    await tab(page, 'Waylines').click();
    await expect
      .poll(() => page.locator('.wl-name').allTextContents())
      .toContain('DJI_0006\\u202Egpj.exe\\nDone: 0 failed.JPG');
    const list = (await page.locator('table').last().textContent()) ?? '';
    expect(list).not.toMatch(TERMINAL_CONTROLS);
  });
});

describe('settings', () => {
  async function openSettings(): Promise<Page> {
    const { page } = await open('idle');
    await tab(page, 'Settings').click();
    await expect.poll(() => page.locator('#f-serverUrl').inputValue()).toBe(GOOD_SERVER);
    return page;
  }

  it('refuses bad input in the form, next to the field, without sending anything', async () => {
    const page = await openSettings();
    await noHorizontalScroll(page);
    await shot(page, 'settings.png');

    for (const bad of ['ftp://x', 'not a url']) {
      await page.locator('#f-serverUrl').fill(bad);
      await page.getByRole('button', { name: 'Save settings' }).click();
      await expect
        .poll(() => text(page, '[data-testid=error-serverUrl]'))
        .toBe('The address must start with http:// or https://');
      expect(await page.locator('#f-serverUrl').getAttribute('aria-invalid')).toBe('true');
      expect(await page.locator('#f-serverUrl').getAttribute('aria-describedby')).toContain('err-serverUrl');
      // Focused in the next animation frame (settings.tsx): Chromium's headless shell may paint it later.
      await expect.poll(() => page.evaluate(() => document.activeElement?.id)).toBe('f-serverUrl');
    }
    await page.locator('#f-serverUrl').fill('https://fh2.example.com');
    await page.locator('#f-workspaceId').fill('');
    await page.locator('#f-filesConcurrency').fill('40');
    await page.locator('#f-bandwidthLimitKiBps').fill('-5');
    for (const t of ['JPG', 'JPEG', 'DNG', 'MP4']) await page.getByLabel(t, { exact: true }).uncheck();
    await page.getByRole('button', { name: 'Save settings' }).click();
    await expect
      .poll(() => text(page, '[data-testid=error-workspaceId]'))
      .toBe('Enter the workspace ID: a server needs one.');
    expect(await text(page, '[data-testid=error-serverUrl]')).toBe(''); // fixed, so gone
    expect(await text(page, '[data-testid=error-filesConcurrency]')).toBe('Must be from 1 to 16.');
    expect(await text(page, '[data-testid=error-bandwidthLimitKiBps]')).toBe(
      'Enter a whole number from 0 to 10,000,000.',
    );
    expect(await text(page, '[data-testid=error-include]')).toBe('Choose at least one file type.');
    expect(await text(page, '.save-note')).toBe('Not saved: fix the fields marked in red.');
    await shot(page, 'settings-errors.png');
    expect(await calls(page, 'settings:save')).toEqual([]);
  });

  it('saves good settings (folders added and removed), and shows field errors main returns', async () => {
    const page = await openSettings();
    await page.locator('#f-serverUrl').fill('https://fh2.example.com/');
    await page.locator('#f-workspaceId').fill('unknown-ws');
    await page.getByRole('button', { name: 'Save settings' }).click();
    await expect
      .poll(() => text(page, '[data-testid=error-workspaceId]'))
      .toBe('The server has no workspace with this ID. Check it with your administrator.');
    expect((await calls(page, 'settings:save')).length).toBe(1);

    await page.locator('#f-workspaceId').fill('ws-survey-02');
    await page.getByRole('button', { name: 'Add folder…' }).click();
    await expect.poll(() => page.locator('.folder-list li').count()).toBe(2);
    await page.getByRole('button', { name: 'Remove C:\\Users\\crew\\Pictures\\DJI Export' }).click();
    await page.getByLabel('TIF', { exact: true }).check();
    await page.getByLabel('MP4', { exact: true }).uncheck();
    await page.locator('#f-filesConcurrency').fill('6');
    await page.locator('#f-bandwidthLimitKiBps').fill('2048');
    await page.getByLabel('Eject the card when its sync is done').check();
    await page.getByLabel('Aircraft, when the photos do not say').selectOption({ label: 'M350 RTK' });
    await page.getByLabel('Aircraft serial, when the photos do not say').fill('1ZNBJ7R00C00PH');
    await page.getByRole('button', { name: 'Save settings' }).click();
    await expect.poll(() => text(page, '.save-note')).toBe('Settings saved.');
    expect(await lastRequest(page, 'settings:save')).toEqual({
      serverUrl: 'https://fh2.example.com/',
      workspaceId: 'ws-survey-02',
      useLocalService: false,
      autoSyncCards: true,
      ejectAfterSync: true,
      watchedFolders: ['D:\\Survey\\2024-03-12'],
      include: ['JPG', 'JPEG', 'DNG', 'TIF'],
      filesConcurrency: 6,
      partsConcurrency: 4,
      bandwidthLimitKiBps: 2048,
      aircraftDefault: '0-89-0',
      aircraftSerial: '1ZNBJ7R00C00PH',
      startAtLogin: true,
      destinations: [],
      flightMinHeightM: null,
      holdFlaggedOnMetered: false,
    });
    expect(await calls(page, 'dialog:pick-folder')).toEqual([
      { channel: 'dialog:pick-folder', request: { purpose: 'watch' } },
    ]);
    await expect.poll(() => text(page, '.topbar .connection-server')).toBe('https://fh2.example.com/');

    // The local service needs no server address or workspace.
    await page.getByLabel('Use the built-in local service').check();
    expect(await text(page, '#hint-serverUrl')).toBe('Not used while the built-in local service is on.');
    await page.locator('#f-workspaceId').fill('');
    await page.getByRole('button', { name: 'Save settings' }).click();
    await expect
      .poll(() => lastRequest(page, 'settings:save'))
      .toMatchObject({ useLocalService: true, workspaceId: '' });
    await expect.poll(() => text(page, '.save-note')).toBe('Settings saved.');
  });

  it('signs in with a password or a token, signs out, and tests the connection; says who is signed in where', async () => {
    const page = await openSettings();
    // Signed in: who and where, and Sign out; no empty user name and password fields beside "Signed in".
    expect(await text(page, '[data-testid=signin-line]')).toBe(
      'Signed in as pilot to https://fh.example.com, workspace ws-survey-01.',
    );
    expect(await page.getByLabel('User name', { exact: true }).isVisible()).toBe(false);
    await page.getByRole('button', { name: 'Sign out' }).click();
    await expect.poll(() => text(page, '[data-testid=signin-status]')).toBe('Not signed in');
    expect(await text(page, '[data-testid=signin-line]')).toBe(
      'Not signed in to https://fh.example.com yet.',
    );
    expect(await page.getByRole('button', { name: 'Sign out' }).count()).toBe(0);

    await page.getByRole('button', { name: 'Sign in', exact: true }).click();
    await expect.poll(() => text(page, '[data-testid=error-username]')).toBe('Enter your user name.');
    expect(await text(page, '[data-testid=error-password]')).toBe('Enter your password.');
    expect(await calls(page, 'auth:login')).toEqual([]);

    await page.getByLabel('User name', { exact: true }).fill('pilot');
    await page.getByLabel('Password', { exact: true }).fill('wrong');
    await page.getByRole('button', { name: 'Sign in', exact: true }).click();
    await expect
      .poll(() => text(page, '[data-testid=signin-note]'))
      .toBe('Not signed in: The user name or the password is wrong. Check them and try again.');
    expect(await page.getByLabel('Password', { exact: true }).inputValue()).toBe(''); // never kept

    await page.getByLabel('Password', { exact: true }).fill(TEST_PASSWORD);
    await page.getByLabel('Password', { exact: true }).press('Enter');
    await expect
      .poll(() => text(page, '[data-testid=signin-note]'))
      .toBe('Signed in. Workspace: ws-survey-01.');
    expect(await lastRequest(page, 'auth:login')).toEqual({
      serverUrl: GOOD_SERVER,
      username: 'pilot',
      password: TEST_PASSWORD,
    });
    expect(await text(page, '[data-testid=signin-status]')).toBe('Signed in');
    await expect
      .poll(() => text(page, '[data-testid=signin-line]'))
      .toBe('Signed in as pilot to https://fh.example.com, workspace ws-survey-01.');

    await page.getByRole('button', { name: 'Sign out' }).click();
    await expect.poll(() => text(page, '[data-testid=signin-status]')).toBe('Not signed in');
    await expect.poll(() => text(page, '.topbar .pill')).toBe('Not signed in');
    expect(await calls(page, 'auth:sign-out')).toHaveLength(2);

    await page.locator('summary', { hasText: 'Or paste an access token' }).click();
    await page.getByLabel('Access token', { exact: true }).fill('short');
    await page.getByRole('button', { name: 'Use this token' }).click();
    await expect.poll(() => text(page, '[data-testid=signin-note]')).toContain('Token not accepted');
    await page
      .getByLabel('Access token', { exact: true })
      .fill('eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJjcmV3In0.sig');
    await page.getByRole('button', { name: 'Use this token' }).click();
    await expect
      .poll(() => text(page, '[data-testid=signin-note]'))
      .toBe('Signed in with the token. Workspace: ws-survey-01.');
    expect(await lastRequest(page, 'auth:set-token')).toEqual({
      serverUrl: GOOD_SERVER,
      workspaceId: 'ws-survey-01',
      token: 'eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJjcmV3In0.sig',
    });
    // A pasted token says where, not who (the server never said).
    await expect
      .poll(() => text(page, '[data-testid=signin-line]'))
      .toBe('Signed in to https://fh.example.com, workspace ws-survey-01.');

    await page.getByRole('button', { name: 'Test connection' }).click();
    await expect
      .poll(() => text(page, '[data-testid=test-note]'))
      .toBe('Connected. The server answered in 84 ms and this workspace accepts uploads.');
    await page.locator('#f-serverUrl').fill('http://10.0.0.9:6789');
    await page.getByRole('button', { name: 'Test connection' }).click();
    await expect
      .poll(() => text(page, '[data-testid=test-note]'))
      .toBe('Could not reach http://10.0.0.9:6789. Check the address and the network connection.');
    expect(await lastRequest(page, 'auth:test-connection')).toEqual({
      serverUrl: 'http://10.0.0.9:6789',
      workspaceId: 'ws-survey-01',
    });
    await page.locator('#f-serverUrl').fill('ftp://x');
    await page.getByRole('button', { name: 'Test connection' }).click();
    await expect
      .poll(() => text(page, '[data-testid=test-note]'))
      .toBe('The address must start with http:// or https://');
    expect(await calls(page, 'auth:test-connection')).toHaveLength(2);
  });
});
