/**
 * A new user's first hour, and a card's two verdicts, in real headless
 * Chromium at 1366x768, the window driven by the real main-process logic
 * (real-main.ts: the AppController, the real IPC dispatch, the real queue
 * and card monitor on a temporary mount root, the reference service or the
 * sample-server stand-in over HTTP). What the window shows is what main
 * sends; each state is kept as a screenshot in test-results/ui/.
 * Electron itself is mocked (its binary cannot run here).
 */
import fs from 'node:fs';
import path from 'node:path';
import type { Page } from 'playwright-core';
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { AppController } from '../../main/electron/controller.js';
import { startService, type RunningService } from '../../main/service/index.js';
import { FIXTURES, tempDir } from '../support/harness.js';
import { startSampleBucket, startSampleServer } from '../support/sample-server.js';
import { FOLDER, insertCard, MemorySecrets, until } from '../electron/helpers.js';
import { startUi, type Ui } from './browser.js';
import { banner, noHorizontalScroll, shot, tab, text } from './page-helpers.js';
import { openRealWindow, type RealWindow } from './real-main.js';

vi.mock('electron', () => import('../electron/electron-mock.js').then((m) => m.electronModule));

let ui: Ui;
let root: string;
const cleanups: Array<() => Promise<unknown> | unknown> = [];
let win: RealWindow | null = null;

beforeAll(async () => {
  ui = await startUi();
  root = tempDir('dms-first-hour-');
}, 60_000);

afterAll(async () => {
  await ui?.close();
  fs.rmSync(root, { recursive: true, force: true });
});

afterEach(async () => {
  const w = win;
  win = null;
  try {
    if (w) {
      await w.page.waitForTimeout(50);
      expect(w.problems, 'CSP violations, console errors, failed loads').toEqual([]);
    }
  } finally {
    await w?.context.close();
    for (const c of cleanups.splice(0).reverse()) await c();
  }
});

/** A controller on a fresh state folder (config.json as given), started, with the window open on it. */
async function app(
  name: string,
  config: Record<string, unknown>,
  secrets = new MemorySecrets(),
): Promise<{ c: AppController; page: Page; w: RealWindow; stateDir: string; mnt: string }> {
  const stateDir = path.join(root, name, 'state');
  const mnt = path.join(root, name, 'media');
  fs.mkdirSync(stateDir, { recursive: true });
  fs.mkdirSync(mnt, { recursive: true });
  fs.writeFileSync(path.join(stateDir, 'config.json'), JSON.stringify({ mountRoots: [mnt], ...config }));
  const c = new AppController({
    stateDir,
    secrets,
    env: {},
    quietMs: 300,
    cardPollMs: 150,
    pushIntervalMs: 40,
  });
  await c.start();
  cleanups.push(() => c.stop());
  win = await openRealWindow(ui, c);
  return { c, page: win.page, w: win, stateDir, mnt };
}

const pageText = async (page: Page): Promise<string> =>
  ((await page.locator('main').textContent()) ?? '').replace(/\s+/g, ' ');

describe('the first hour of a new user', () => {
  let svc: RunningService;
  beforeAll(async () => {
    svc = await startService({ dataDir: path.join(root, 'service'), logger: false });
    await svc.admin.createUser('crew', 'correct-horse-battery');
  });
  afterAll(() => svc.close());

  it('first run: choose the server, sign in, insert a card — each step said from main’s data, nothing about uploads before', async () => {
    const { c, page, mnt } = await app('first-run', {});

    // Nothing chosen yet: the three steps, the first one current; no error anywhere.
    const steps = page.getByTestId('step');
    await expect.poll(() => steps.count()).toBe(3);
    expect(await steps.allInnerTexts()).toEqual([
      expect.stringContaining('Choose your server'),
      expect.stringContaining('Sign in'),
      expect.stringContaining('Insert a drone card'),
    ]);
    expect(await steps.nth(0).getAttribute('aria-current')).toBe('step');
    expect(await page.getByRole('alert').count()).toBe(0);
    await expect
      .poll(() => text(page, '.empty'))
      .toBe('Nothing is recorded before you sign in: the files of a card are listed here once you do.');
    await noHorizontalScroll(page);
    await shot(page, 'first-run-1-choose-server.png');

    // The waylines need a sign-in: said for that page, not about uploads.
    await tab(page, 'Waylines').click();
    await expect
      .poll(() => text(page, '[data-testid=wl-error]'))
      .toContain('Sign in (Settings, Sign in) to see the waylines of your workspace.');
    expect(await text(page, '[data-testid=wl-error]')).not.toMatch(/upload/i);
    await shot(page, 'waylines-before-sign-in.png');
    await tab(page, 'Overview').click();

    // A card before any sign-in: counted, waiting; nothing says "uploaded", nothing is Done.
    insertCard(path.join(mnt, 'DJI_CARD'));
    await expect
      .poll(() => banner(page).first().innerText())
      .toContain('4 files on DJI_CARD wait. Nothing is uploaded until you sign in.');
    expect(await banner(page).first().innerText()).toMatch(/^Sign in to upload/);
    expect(await text(page, '[data-testid=card-headline]')).toBe(
      '4 files found on it. Nothing is copied or uploaded until you sign in.',
    );
    // No engine yet: no progress to show, nothing to pause or sync.
    expect(await page.getByTestId('progress-sentence').count()).toBe(0);
    expect(await pageText(page)).not.toMatch(/\d+ of \d+ uploaded|100 ?%|All \d+ files uploaded/);
    expect(await page.locator('[data-testid=file-state]').count()).toBe(0);
    expect(await page.getByRole('button', { name: 'Pause', exact: true }).count()).toBe(0);
    expect(await page.getByRole('alert').count()).toBe(0);
    expect(await text(page, '[data-testid=step]:nth-child(3)')).toContain('DJI_CARD found.');
    await noHorizontalScroll(page);
    await shot(page, 'overview-sign-in-to-upload.png');

    // Step 1 leads to Settings: the server and the sign-in are there.
    await page.getByTestId('step').nth(0).getByRole('button', { name: 'Open Settings' }).click();
    await page.locator('#f-serverUrl').fill(svc.baseUrl);
    expect(await text(page, '[data-testid=signin-status]')).toBe('Not signed in');
    expect(await text(page, '[data-testid=signin-line]')).toBe(`Not signed in to ${svc.baseUrl} yet.`);
    await page.getByLabel('User name', { exact: true }).fill('crew');
    await page.getByLabel('Password', { exact: true }).fill('correct-horse-battery');
    await page.getByRole('button', { name: 'Sign in', exact: true }).click();
    await expect
      .poll(() => text(page, '[data-testid=signin-note]'))
      .toBe(`Signed in. Workspace: ${svc.workspaceId}.`);

    // Signed in: who, where and which workspace; the empty fields are out of the way.
    await expect
      .poll(() => text(page, '[data-testid=signin-line]'))
      .toBe(`Signed in as crew to ${svc.baseUrl}, workspace ${svc.workspaceId}.`);
    expect(await text(page, '[data-testid=signin-status]')).toBe('Signed in');
    expect(await page.getByLabel('User name', { exact: true }).isVisible()).toBe(false);
    expect(await page.getByLabel('Password', { exact: true }).isVisible()).toBe(false);
    expect(await page.getByRole('button', { name: 'Sign out' }).isVisible()).toBe(true);
    expect(await page.getByRole('button', { name: 'Sign in', exact: true }).isVisible()).toBe(false);
    await noHorizontalScroll(page);
    await shot(page, 'settings-signed-in.png');

    // A server address typed but not saved is not the one signed in to.
    await page.locator('#f-serverUrl').fill('https://other.example.com');
    await expect.poll(() => text(page, '[data-testid=signin-status]')).toBe('Not signed in');
    expect(await text(page, '[data-testid=signin-line]')).toBe(
      `Not signed in to https://other.example.com: it is not saved yet. Signed in as crew to ${svc.baseUrl}. Signing in below switches to https://other.example.com and saves it.`,
    );
    expect(await page.getByLabel('User name', { exact: true }).isVisible()).toBe(true);
    // What was said for the other address is gone with it.
    expect(await page.getByTestId('signin-note').count()).toBe(0);
    await shot(page, 'settings-unsaved-server.png');
    await page.locator('#f-serverUrl').fill(svc.baseUrl);
    await expect.poll(() => text(page, '[data-testid=signin-status]')).toBe('Signed in');

    // The card waiting since before the sign-in goes up; the steps give way to the card's verdict.
    await tab(page, 'Overview').click();
    await until(
      '4 records on the server',
      async () => (await svc.admin.mediaRecords(svc.workspaceId)).length === 4,
    );
    await expect
      .poll(() => text(page, '[data-testid=card-headline]'), { timeout: 20_000 })
      .toMatch(/^DJI_CARD: 4 files verified in workspace .* — safe to format$/);
    expect(await page.getByTestId('get-started').count()).toBe(0);
    // The same sizes as the progress below says them.
    expect(await text(page, '[data-testid=workspace-amount]')).toBe('4.5 MB of 4.5 MB in the workspace');
    expect(await text(page, '[data-testid=stat-bytes]')).toBe('4.5 MB of 4.5 MB (100%)');
    expect(await text(page, '.topbar .pill')).toBe('Signed in');
    const synced = page.locator(`tr[data-folder="${FOLDER}"]`);
    await expect.poll(() => synced.count(), { timeout: 10_000 }).toBe(1);
    expect(await synced.locator('td').nth(6).innerText()).toBe('0');
    await shot(page, 'first-run-done.png');
    expect(c.state().synced).toBe(true);
  });
});

/** A card as it arrives (old files, appearing at once) with these files in its flight folder. */
function insertFiles(dest: string, files: Record<string, Buffer>): void {
  const staging = `${dest}.staging`;
  const dir = path.join(staging, 'DCIM', FOLDER);
  fs.mkdirSync(dir, { recursive: true });
  const old = new Date(Date.now() - 3_600_000);
  for (const [name, bytes] of Object.entries(files)) {
    fs.writeFileSync(path.join(dir, name), bytes);
    fs.utimesSync(path.join(dir, name), old, old);
  }
  fs.renameSync(staging, dest);
}

const fixture = (f: string): Buffer => fs.readFileSync(path.join(FIXTURES, f));

describe('files that need you', () => {
  it('are listed where the window says so, with their reasons and one Retry all; the history counts them once, after a retry too', async () => {
    // DJI's sample server (the stand-in) refuses the Mavic 2 Enterprise Advanced: two such photos fail.
    const bucket = await startSampleBucket(path.join(root, 'failing', 's3'));
    const sample = await startSampleServer({ sts: bucket.sts });
    cleanups.push(
      () => bucket.close(),
      () => sample.close(),
    );
    const secrets = new MemorySecrets();
    secrets.value = { server: sample.baseUrl, workspaceId: sample.workspaceId, token: 'sample-token' };
    const { c, page, mnt } = await app(
      'failing',
      { server: { url: sample.baseUrl, workspaceId: sample.workspaceId } },
      secrets,
    );
    const m2ea = fixture('M2EA/M2EA_IR.JPG');
    insertFiles(path.join(mnt, 'DJI_CARD'), {
      'M2EA_IR.JPG': m2ea,
      'M2EA_IR_2.JPG': Buffer.concat([m2ea, Buffer.from([0])]),
      'M30T_IR.JPG': fixture('M30T/M30T_IR.JPG'),
    });

    const needYou = page.getByTestId('need-you');
    await expect.poll(() => text(page, '#need-you-h'), { timeout: 20_000 }).toBe('2 files need you');
    const listed = needYou.locator('li');
    await expect.poll(() => listed.count()).toBe(2);
    expect(await listed.locator('.file-name').allInnerTexts()).toEqual(
      expect.arrayContaining(['M2EA_IR.JPG', 'M2EA_IR_2.JPG']),
    );
    for (const reason of await needYou.getByTestId('need-you-reason').allInnerTexts())
      expect(reason).toContain("Mavic 2 Enterprise Advanced is not in DJI's cloud device list");
    // One "Retry all", and a Retry beside each file: no second button doing the same.
    expect(await page.getByRole('button', { name: /^Retry all/ }).count()).toBe(1);
    expect(await page.getByRole('button', { name: /^Retry M2EA_IR/ }).count()).toBe(2);

    // The card's verdict says why it is not safe; the history counts the two files that need you.
    await expect
      .poll(() => text(page, '[data-testid=card-headline]'), { timeout: 20_000 })
      .toBe('DJI_CARD: not safe to format yet — 2 failed');
    expect(await text(page, '[data-testid=workspace-reasons]')).toContain('2 files failed');
    const row = page.locator(`tr[data-folder="${FOLDER}"]`);
    await expect.poll(() => row.locator('td').nth(6).innerText(), { timeout: 10_000 }).toBe('2');
    await noHorizontalScroll(page);
    await shot(page, 'overview-errors.png');

    // Retry all: both fail again (the server still refuses them). Still 2 files need you, never 4.
    const fastUploads = () => sample.calls.filter((x) => x.path.endsWith('/fast-upload')).length;
    const before = fastUploads();
    await needYou.getByRole('button', { name: 'Retry all' }).click();
    await until('both asked again', () => fastUploads() >= before + 2);
    await until('both failed again', () => c.state().failedCount === 2 && c.state().engine === 'idle');
    await expect.poll(() => listed.count()).toBe(2);
    await page.waitForTimeout(3_500); // the history is fetched again at most every 3 s
    expect(await row.locator('td').nth(6).innerText()).toBe('2');
    expect(c.history(10).find((h) => h.folder === FOLDER)?.failed).toBe(2);
  });
});
