/**
 * A new user's first hour, and a card's two verdicts, in real headless
 * Chromium at 1366x768, the window driven by the real main-process logic
 * (real-main.ts: the AppController, the real IPC dispatch, the real queue
 * and card monitor on a temporary mount root, the reference service or the
 * sample-server stand-in over HTTP). What the window shows is what main
 * sends; each state is kept as a screenshot in test-results/ui/.
 * Electron itself is mocked (its binary cannot run here).
 */
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import Database from 'better-sqlite3';
import type { Page } from 'playwright-core';
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { AppController } from '../../main/electron/controller.js';
import { NotificationPolicy, type Activity } from '../../main/electron/notifications.js';
import { trayView } from '../../main/electron/tray.js';
import { startService, type RunningService } from '../../main/service/index.js';
import { formatBytes } from '../../main/shared/sizes.js';
import { runCli } from '../support/cli.js';
import { FIXTURES, makeCard, tempDir } from '../support/harness.js';
import { startSampleBucket, startSampleServer } from '../support/sample-server.js';
import { FOLDER, insertCard, MemorySecrets, until } from '../electron/helpers.js';
import { startUi, type Ui } from './browser.js';
import { banner, noHorizontalScroll, shot, SHOTS, tab, text } from './page-helpers.js';
import { openRealWindow, type RealWindow } from './real-main.js';

vi.mock('electron', () => import('../electron/electron-mock.js').then((m) => m.electronModule));

let ui: Ui;
let root: string;
const cleanups: Array<() => unknown> = [];
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
    // The flights: none yet, said as such (never an error about uploads).
    await tab(page, 'Flights').click();
    await expect.poll(() => text(page, '.flight-list')).toContain('No flight on the cards seen so far.');
    expect(await page.getByRole('alert').count()).toBe(0);
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
    // The sign-in answers once the agent is rebuilt for the server (seconds on a busy machine).
    await expect
      .poll(() => text(page, '[data-testid=signin-note]'), { timeout: 20_000 })
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
    expect(c.state().hasFiles).toBe(true);
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
    for (const reason of await needYou.getByTestId('need-you-reason').allInnerTexts()) {
      expect(reason).toContain("Mavic 2 Enterprise Advanced is not in DJI's cloud device list");
      // Said once: not "The server refused this file: The server refuses M2EA_IR.JPG: …".
      expect(reason.match(/server refuse/gi)).toHaveLength(1);
    }
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

describe('a card taken out too early', () => {
  it('waits for it: its files say so, with no Retry; a banner says to insert it again; back in, they go on', async () => {
    const { c, page, mnt } = await app('pulled', { useLocalService: true });
    // Paused, so the card is read and recorded but nothing is sent before it is pulled.
    await page.getByRole('button', { name: 'Pause', exact: true }).click();
    await expect.poll(() => c.state().engine).toBe('paused');
    const card = path.join(mnt, 'DJI_CARD');
    insertCard(card);
    await until('4 files recorded', () => c.queueList('all', 10).length === 4);
    fs.renameSync(card, path.join(root, 'pulled', 'DJI_CARD.out'));
    await until('4 waiting for the card', () => c.state().waitingForCard === 4);

    const states = page.locator('[data-testid=file-state]');
    await expect.poll(() => states.allInnerTexts()).toEqual(Array(4).fill('Waiting for the card'));
    expect(await page.locator('td.problem').first().innerText()).toBe(
      'The file is not there any more (card removed?). Insert the card again and it will continue.',
    );
    expect(await page.getByRole('button', { name: /^Retry/ }).count()).toBe(0);
    expect(await page.getByTestId('need-you').count()).toBe(0);
    await expect
      .poll(() => banner(page).allInnerTexts())
      .toContainEqual(expect.stringContaining('4 files wait for the card'));
    expect(await pageText(page)).not.toMatch(/Failed|need you/);
    await noHorizontalScroll(page);
    await shot(page, 'overview-card-pulled.png');

    // Back in, resumed: they go on, and the banner is gone.
    fs.renameSync(path.join(root, 'pulled', 'DJI_CARD.out'), card);
    await page.getByRole('button', { name: 'Resume', exact: true }).click();
    await until('4 done', () => c.queueList('done', 10).length === 4, 20_000);
    await expect.poll(() => banner(page).allInnerTexts()).toEqual([expect.stringContaining('All synced')]);
  });
});

describe('a card’s two verdicts (issue 20)', () => {
  it('locally safe first, with its bar, while the upload goes on from the copies; then in the workspace too', async () => {
    const ssd = path.join(root, 'verdicts', 'SSD');
    const t7 = path.join(root, 'verdicts', 'T7');
    fs.mkdirSync(ssd, { recursive: true });
    fs.mkdirSync(t7, { recursive: true });
    const { c, page, mnt } = await app('verdicts', {
      useLocalService: true,
      destinations: [
        { path: ssd, label: 'SSD', role: 'archive' },
        { path: t7, label: 'T7_BACKUP', role: 'staging', keepDays: 7 },
      ],
      // Slow uploads (64 KiB/s): the copies are verified long before the upload is done.
      bandwidthLimitKiBps: 64,
    });
    const activity: Activity[] = [];
    c.on('activity', (a) => activity.push(a));
    insertCard(path.join(mnt, 'DJI_CARD'));

    await until('locally safe', () => c.state().cards[0]?.local?.safe === true, 20_000);
    const card = page.locator('[data-card="DJI_CARD"]');
    await expect
      .poll(() => text(page, '[data-testid=card-headline]'))
      .toMatch(
        /^DJI_CARD: 4 files copied and verified on SSD and T7_BACKUP — safe to format; the upload continues from the copies \(.+ of 4\.5 MB sent\)$/,
      );
    expect(await text(page, '[data-testid=card-safe]')).toBe('Safe to format');
    const local = card.getByTestId('local-verdict');
    expect(await local.locator('.state').innerText()).toBe('Locally safe');
    expect(await text(page, '[data-testid=local-amount]')).toBe('4 of 4 files verified on SSD and T7_BACKUP');
    expect(await local.locator('progress').getAttribute('value')).toBe('100');
    const workspace = card.getByTestId('workspace-verdict');
    expect(await workspace.locator('.state').innerText()).toBe('Uploading');
    expect(await text(page, '[data-testid=workspace-amount]')).toMatch(
      /^.+ of 4\.5 MB in the workspace, checked in its bucket when the upload is done$/,
    );
    expect(Number(await workspace.locator('progress').getAttribute('value'))).toBeLessThan(100);
    expect(await banner(page).first().innerText()).toContain(
      'Copying each card to SSD and T7_BACKUP, and uploading to the built-in local service. A card can come out once it says “locally safe”.',
    );
    // The files of the card, each in words true for this moment.
    await expect.poll(() => page.locator('[data-testid=file-state]').count()).toBe(4);
    await noHorizontalScroll(page);
    await shot(page, 'cards-locally-safe.png');

    // The tray and the notification say it too, once.
    expect(trayView(c.state()).activityLine).toMatch(/^DJI_CARD is locally safe; uploading \d files \(/);
    const policy = new NotificationPolicy();
    const notices = activity.flatMap((a) => policy.handle(a)).filter((n) => n.kind === 'locally-safe');
    expect(notices).toEqual([
      {
        kind: 'locally-safe',
        title: 'DJI_CARD is locally safe: you can take the card out',
        body: 'DJI_CARD: 4 files copied and verified on SSD and T7_BACKUP — safe to format',
      },
    ]);

    // No more limit (saved in Settings, applied at once): the upload finishes and is checked.
    await tab(page, 'Settings').click();
    await page.locator('#f-bandwidthLimitKiBps').fill('0');
    await page.getByRole('button', { name: 'Save settings' }).click();
    await expect.poll(() => text(page, '.save-note')).toBe('Settings saved.');
    await tab(page, 'Overview').click();
    await expect
      .poll(() => text(page, '[data-testid=card-headline]'), { timeout: 25_000 })
      .toMatch(
        /^DJI_CARD: 4 files verified in the built-in workspace on this laptop, \/.+\/local-service — safe to format$/,
      );
    expect(await workspace.locator('.state').innerText()).toBe('Verified');
    expect(await text(page, '[data-testid=workspace-amount]')).toBe('4.5 MB of 4.5 MB in the workspace');
    expect(await local.locator('.state').innerText()).toBe('Locally safe');
    // The list and the history catch up with the verdict (each fetched again when main says it moved).
    await expect
      .poll(() => page.locator('[data-testid=file-state]').allInnerTexts())
      .toEqual(['Done', 'Done', 'Done', 'Done']);
    expect(await page.locator('td.problem').allInnerTexts()).toEqual(['', '', '', '']);
    await expect.poll(() => page.locator(`tr[data-folder="${FOLDER}"]`).count(), { timeout: 10_000 }).toBe(1);
    await shot(page, 'cards-both-verdicts.png');
  });

  it('a destination that stopped for a card is a warning with its reason; the other copy and the upload go on', async () => {
    const ssd = path.join(root, 'stopped', 'SSD');
    fs.mkdirSync(ssd, { recursive: true });
    // The drive is not plugged in: its mount point is not there either (a folder whose parent is there
    // is "not created yet", and is created: issue 29).
    const unplugged = path.join(root, 'stopped', 'T7-unplugged', 'DroneCopies');
    const { c, page, mnt } = await app('stopped', {
      useLocalService: true,
      destinations: [
        { path: ssd, label: 'SSD', role: 'archive' },
        { path: unplugged, label: 'T7_BACKUP', role: 'archive' },
      ],
    });
    const activity: Activity[] = [];
    c.on('activity', (a) => activity.push(a));
    // Every change of the page, from before the card is in: never "Safe to format" beside "No card
    // has been synced yet" (the history was asked again at most every 3 s, so it said so meanwhile).
    await page.evaluate(() => {
      const w = window as unknown as { bothSaid: string[] };
      w.bothSaid = [];
      const look = () => {
        const t = document.body.innerText;
        if (t.includes('Safe to format') && t.includes('No card has been synced yet')) w.bothSaid.push(t);
      };
      new MutationObserver(look).observe(document.body, {
        subtree: true,
        childList: true,
        characterData: true,
      });
    });
    insertCard(path.join(mnt, 'DJI_CARD'));
    const warning = banner(page).filter({ hasText: 'DJI_CARD is not copied to T7_BACKUP' });
    await expect.poll(() => warning.count(), { timeout: 20_000 }).toBe(1);
    expect(await warning.innerText()).toContain('T7_BACKUP: its drive is not plugged in');
    expect(await warning.getAttribute('class')).toContain('tone-warn');
    await expect
      .poll(() => text(page, '[data-testid=card-headline]'), { timeout: 20_000 })
      .toMatch(
        /^DJI_CARD: 4 files verified in the built-in workspace on this laptop, \/.+\/local-service — safe to format$/,
      );
    const local = page.getByTestId('local-verdict');
    expect(await local.locator('.state').innerText()).toBe('Not yet');
    // Said once on the screen: in its warning, not again among the card's reasons (issue 29).
    const body = async () => page.locator('body').innerText();
    expect((await body()).split('T7_BACKUP: its drive is not plugged in').length - 1).toBe(1);
    // Never "All synced" beside a warning about the same card's copy (two bars that disagree).
    expect(await banner(page).filter({ hasText: 'All synced' }).count()).toBe(0);
    await expect.poll(() => page.locator('tr[data-folder]').count(), { timeout: 10_000 }).toBeGreaterThan(0);
    const bothSaid = await page.evaluate(() => (window as unknown as { bothSaid: string[] }).bothSaid);
    expect(bothSaid.slice(0, 1)).toEqual([]);
    // The notifications: the stop once, the verdict once, no sentence twice; the tray says the verdict.
    const policy = new NotificationPolicy();
    const notices = activity.flatMap((a) => policy.handle(a));
    const bodies = notices.map((n) => n.body);
    expect(bodies.filter((b, i) => bodies.indexOf(b) !== i)).toEqual([]);
    expect(bodies.filter((b) => b.includes('T7_BACKUP: its drive is not plugged in'))).toHaveLength(1);
    expect(notices.filter((n) => n.kind === 'safe')).toHaveLength(1);
    expect(trayView(c.state()).activityLine).not.toMatch(/all synced/i);
    // Each drive's own count: the stopped one is not blamed on the other.
    expect(await text(page, '[data-testid=local-amount]')).toBe(
      '0 of 4 files verified on every drive: SSD 4, T7_BACKUP 0',
    );
    await noHorizontalScroll(page);
    await shot(page, 'overview-destination-stopped.png');
  });
});

describe('local destinations in Settings (issue 20)', () => {
  it('adds, labels and removes destinations; a staging one needs keep days; a folder that is not there or not writable is refused; saved to config.json', async () => {
    const { page, w, stateDir } = await app('settings-destinations', { useLocalService: true });
    const config = () => JSON.parse(fs.readFileSync(path.join(stateDir, 'config.json'), 'utf8'));
    const ssd = path.join(root, 'settings-destinations', 'SSD');
    const t7 = path.join(root, 'settings-destinations', 'T7');
    fs.mkdirSync(ssd, { recursive: true });
    fs.mkdirSync(t7, { recursive: true });
    await tab(page, 'Settings').click();
    await expect
      .poll(() => text(page, '.destinations'))
      .toContain('No copy destination: a card stays in until its upload is done and checked.');

    const add = page.getByRole('button', { name: 'Add destination…' });
    w.pickFolder.next = ssd;
    await add.click();
    await page.getByLabel(`Label of ${ssd}`).fill('SSD');
    w.pickFolder.next = t7;
    await add.click();
    await page.getByLabel(`Label of ${t7}`).fill('T7_BACKUP');
    await page.getByLabel('Kind of T7_BACKUP').selectOption('staging');
    const keep = page.getByLabel('Days T7_BACKUP keeps a copy once it is in the workspace');
    await keep.fill('');
    await page.getByRole('button', { name: 'Save settings' }).click();
    await expect
      .poll(() => text(page, '[data-testid=error-destinations]'))
      .toBe('T7_BACKUP (staging): Enter the days its copies are kept once in the workspace.');
    expect(w.calls.filter((x) => x.channel === 'settings:save')).toEqual([]);
    await keep.fill('7');
    await page.getByRole('button', { name: 'Save settings' }).click();
    await expect.poll(() => text(page, '.save-note')).toBe('Settings saved.');
    expect(w.pickFolder.asked).toEqual(['destination', 'destination']);
    expect(config().destinations).toEqual([
      { path: ssd, label: 'SSD', role: 'archive' },
      { path: t7, label: 'T7_BACKUP', role: 'staging', keepDays: 7 },
    ]);
    await noHorizontalScroll(page);
    await shot(page, 'settings-destinations.png');

    // Main's word on the disk: a folder that is not there, one that cannot be written to.
    const missing = path.join(root, 'settings-destinations', 'unplugged');
    w.pickFolder.next = missing;
    await add.click();
    await page.getByRole('button', { name: 'Save settings' }).click();
    await expect
      .poll(() => text(page, '[data-testid=error-destinations]'))
      .toBe(
        `The folder ${missing} does not exist (or is not a folder): plug in the drive, or choose another folder.`,
      );
    expect(await text(page, '.save-note')).toBe('Not saved: fix the fields marked in red.');
    await shot(page, 'settings-destinations-refused.png');
    await page.getByRole('button', { name: `Remove ${missing}` }).click();
    // /proc/sys cannot be written to, even by root (read-only in the kernel): a folder the app may not write.
    let readOnly = true;
    try {
      fs.accessSync('/proc/sys', fs.constants.W_OK);
      readOnly = false;
    } catch {
      // as expected
    }
    expect(readOnly, '/proc/sys must not be writable here').toBe(true);
    w.pickFolder.next = '/proc/sys';
    await add.click();
    await page.getByRole('button', { name: 'Save settings' }).click();
    await expect
      .poll(() => text(page, '[data-testid=error-destinations]'))
      .toBe('The folder /proc/sys cannot be written to: choose a folder on a drive you can write to.');
    await page.getByRole('button', { name: 'Remove /proc/sys' }).click();

    // A saved one is forgotten (issue 29: asked first, saved at once); the file keeps what the window does not show.
    expect(await page.getByRole('button', { name: 'Remove SSD' }).count()).toBe(0);
    await page.getByRole('button', { name: 'Forget SSD…' }).click();
    await page.getByRole('button', { name: 'Forget SSD', exact: true }).click();
    await expect
      .poll(() => text(page, '[data-testid=forget-done]'))
      .toBe('SSD forgotten: it no longer counts for any card. Its files stay on the drive.');
    expect(config().destinations).toEqual([{ path: t7, label: 'T7_BACKUP', role: 'staging', keepDays: 7 }]);
    expect(config().mountRoots).toHaveLength(1);
  });
});

describe('the waylines page', () => {
  it('says what stops it in its own words, never about uploads', async () => {
    const svc = await startService({ dataDir: path.join(root, 'service-waylines'), logger: false });
    let closed = false;
    cleanups.push(() => (closed ? undefined : svc.close()));
    const secrets = new MemorySecrets();
    secrets.value = { server: svc.baseUrl, workspaceId: svc.workspaceId, token: svc.token, user: 'crew' };
    const { page } = await app(
      'waylines',
      { server: { url: svc.baseUrl, workspaceId: svc.workspaceId }, autoSyncCards: false },
      secrets,
    );
    await tab(page, 'Waylines').click();
    await expect.poll(() => text(page, '[data-testid=wl-total]')).toBe('30 waylines');
    await svc.close();
    closed = true;
    await page.getByRole('button', { name: 'Next ›' }).click();
    await expect
      .poll(() => text(page, '[data-testid=wl-error]'), { timeout: 15_000 })
      .toMatch(/^Could not load the waylines: /);
    const said = await text(page, '[data-testid=wl-error]');
    expect(said).not.toMatch(/upload/i);
    expect(said).toMatch(/Nothing answers at this address|cannot be reached/);
    await shot(page, 'waylines-error.png');
  });
});

describe('forgetting a local destination (issue 29)', () => {
  it('Settings says first what forgetting drops, asks, then the queue, config.json and the card verdict drop it; its files stay', async () => {
    const ssd = path.join(root, 'forget', 'SSD');
    const t7 = path.join(root, 'forget', 'T7');
    fs.mkdirSync(ssd, { recursive: true });
    fs.mkdirSync(t7, { recursive: true });
    const { c, page, w, stateDir, mnt } = await app('forget', {
      useLocalService: true,
      destinations: [
        { path: ssd, label: 'SSD', role: 'archive' },
        { path: t7, label: 'T7_BACKUP', role: 'archive' },
      ],
    });
    insertCard(path.join(mnt, 'DJI_CARD'));
    await until('locally safe', () => c.state().cards[0]?.local?.safe === true, 20_000);
    await expect
      .poll(() => text(page, '[data-testid=local-amount]'))
      .toBe('4 of 4 files verified on SSD and T7_BACKUP');
    const onT7 = () =>
      fs.readdirSync(t7, { recursive: true }).filter((f) => String(f).endsWith('.JPG')).length;
    expect(onT7()).toBeGreaterThan(0);
    const copiesOnT7 = onT7();

    await tab(page, 'Settings').click();
    await page.getByRole('button', { name: 'Forget T7_BACKUP…' }).click();
    // Said first, in the crew's words: what it drops, what stays; nothing is forgotten yet.
    expect(await text(page, '[data-testid=forget-words]')).toBe(
      `T7_BACKUP no longer counts for any card: no card waits for a copy there, and no verdict names it. Its files stay on the drive (${t7}); nothing there is deleted.`,
    );
    expect(w.calls.filter((x) => x.channel === 'copies:forget')).toEqual([]);
    await noHorizontalScroll(page);
    await shot(page, 'settings-forget-destination-ask.png');
    // "Keep it" keeps it.
    await page.getByRole('button', { name: 'Keep it' }).click();
    expect(await page.getByTestId('forget-words').count()).toBe(0);
    expect(w.calls.filter((x) => x.channel === 'copies:forget')).toEqual([]);

    await page.getByRole('button', { name: 'Forget T7_BACKUP…' }).click();
    await page.getByRole('button', { name: 'Forget T7_BACKUP', exact: true }).click();
    await expect
      .poll(() => text(page, '[data-testid=forget-done]'))
      .toBe('T7_BACKUP forgotten: it no longer counts for any card. Its files stay on the drive.');
    // One typed call, with the folder.
    expect(w.calls.filter((x) => x.channel === 'copies:forget')).toEqual([
      { channel: 'copies:forget', request: { path: t7 } },
    ]);
    expect(await page.locator(`[data-destination="${t7}"]`).count()).toBe(0);
    expect(await page.locator(`[data-destination="${ssd}"]`).count()).toBe(1);
    await shot(page, 'settings-forget-destination-done.png');

    // Real state: config.json, the queue file's destinations, the files on the drive.
    const config = JSON.parse(fs.readFileSync(path.join(stateDir, 'config.json'), 'utf8'));
    expect(config.destinations).toEqual([{ path: ssd, label: 'SSD', role: 'archive' }]);
    const db = new Database(path.join(stateDir, 'queue.db'), { readonly: true, fileMustExist: true });
    try {
      const rows = db.prepare('SELECT path, forgotten_at FROM destinations ORDER BY id').all() as Array<{
        path: string;
        forgotten_at: number | null;
      }>;
      expect(rows.map((r) => [r.path, r.forgotten_at !== null])).toEqual([
        [ssd, false],
        [t7, true],
      ]);
      expect(
        db
          .prepare(
            "SELECT count(*) AS n FROM copies c JOIN destinations d ON d.id = c.destination_id WHERE d.path = ? AND c.state <> 'forgotten'",
          )
          .get(t7),
      ).toEqual({ n: 0 });
      expect(
        db
          .prepare(
            'SELECT count(*) AS n FROM card_destinations cd JOIN destinations d ON d.id = cd.destination_id WHERE d.path = ?',
          )
          .get(t7),
      ).toEqual({ n: 0 });
    } finally {
      db.close();
    }
    expect(onT7()).toBe(copiesOnT7);

    // The card's verdict no longer names it.
    await tab(page, 'Overview').click();
    await expect
      .poll(() => text(page, '[data-testid=local-amount]'), { timeout: 20_000 })
      .toBe('4 of 4 files verified on SSD');
    expect(await page.locator('main').innerText()).not.toContain('T7_BACKUP');
    await shot(page, 'cards-after-forgetting-destination.png');

    // Forgetting it again (another window, the CLI did it): plain words, nothing changes.
    const again = await c.forgetDestination(t7).catch((e: Error) => e.message);
    expect(again).toBe(`${t7} is not a copy destination: there is nothing to forget.`);
  });
});

describe('forgetting a server synced to before (issue 30)', () => {
  it('Settings lists each server with its files, says what forgetting a mistyped one drops, asks, then drops it in the queue; the one in use stays', async () => {
    // A real run of the CLI against a mistyped address (nothing listens on port 1): its rows wait there.
    const stateDir = path.join(root, 'targets', 'state');
    const wrongCard = makeCard(path.join(root, 'targets', 'CARD_COPY'));
    const wrong = await runCli(
      ['sync', wrongCard, '--state', stateDir, '--server', 'http://127.0.0.1:1', '--workspace', 'ws-typo'],
      { home: path.join(root, 'targets'), env: { DMS_TOKEN: 'a-token' } },
    );
    expect(wrong.out + wrong.err).toContain('Nothing answers at this address');
    // Then the app, on the same state folder, with the built-in local service: a card goes there.
    const cardSize = formatBytes(
      fs
        .readdirSync(wrongCard, { recursive: true, withFileTypes: true })
        .filter((e) => e.isFile())
        .reduce((n, e) => n + fs.statSync(path.join(e.parentPath, e.name)).size, 0),
    );
    const { c, page, w, mnt } = await app('targets', { useLocalService: true });
    insertCard(path.join(mnt, 'DJI_CARD'));
    await until('in the workspace', () => c.state().cards[0]?.workspace?.safe === true, 30_000);

    await tab(page, 'Settings').click();
    const list = page.getByRole('list', { name: 'Servers synced to' });
    await list.waitFor();
    const rows = async () =>
      (await list.locator('li').allInnerTexts()).map((t) => t.replace(/\s+/g, ' ').trim());
    const [inUseRow, wrongRow, ...more] = await rows();
    expect(inUseRow).toMatch(
      /^the built-in local service \(workspace [^)]+\) 4 of 4 files done; the app sends cards here now$/,
    );
    expect(wrongRow).toBe(
      'http://127.0.0.1:1 (workspace ws-typo) never answered: nothing was sent there (4 files waited) Forget…',
    );
    expect(more).toEqual([]);
    // The one in use has no Forget… (its uploads work on those records).
    expect(await page.getByRole('button', { name: /^Forget the built-in local service/ }).count()).toBe(0);

    await page.getByRole('button', { name: 'Forget http://127.0.0.1:1 (workspace ws-typo)…' }).click();
    const words = page.getByTestId('forget-target-words');
    await words.scrollIntoViewIfNeeded();
    // Said first, in the crew's words: what it drops, what stays; nothing is forgotten yet.
    expect(await text(page, '[data-testid=forget-target-words]')).toBe(
      'Forgetting http://127.0.0.1:1 (workspace ws-typo) drops the record of 4 files (' +
        cardSize +
        '; 0 done, 4 not done) from 1 card or folder (CARD_COPY), 1 report in state/manifests. ' +
        'The cards, the server and its bucket, and the local copies are not touched; other servers are not changed.',
    );
    expect(w.calls.filter((x) => x.channel === 'targets:forget')).toEqual([]);
    await noHorizontalScroll(page);
    await shot(page, 'settings-forget-target-ask.png');
    await page.getByRole('button', { name: 'Keep it' }).click();
    expect(await words.count()).toBe(0);
    expect(w.calls.filter((x) => x.channel === 'targets:forget')).toEqual([]);

    await page.getByRole('button', { name: 'Forget http://127.0.0.1:1 (workspace ws-typo)…' }).click();
    await page
      .getByRole('button', { name: 'Forget http://127.0.0.1:1 (workspace ws-typo)', exact: true })
      .click();
    await expect
      .poll(() => text(page, '[data-testid=forget-target-done]'))
      .toMatch(
        /^http:\/\/127\.0\.0\.1:1 \(workspace ws-typo\) forgotten: the record of 4 files .* dropped\. /,
      );
    // One typed call, naming the target by its key.
    expect(w.calls.filter((x) => x.channel === 'targets:forget')).toEqual([
      { channel: 'targets:forget', request: { key: 'http://127.0.0.1:1#ws-typo' } },
    ]);
    expect(await rows()).toHaveLength(1);
    expect((await rows())[0]).toMatch(
      /^the built-in local service .* 4 of 4 files done; the app sends cards here now$/,
    );
    await page.getByTestId('forget-target-done').scrollIntoViewIfNeeded();
    await shot(page, 'settings-forget-target-done.png');

    // Real state: the queue file holds nothing of it; the card in the built-in workspace is still safe.
    const db = new Database(path.join(stateDir, 'queue.db'), { readonly: true, fileMustExist: true });
    try {
      expect(
        db.prepare("SELECT count(*) AS n FROM targets WHERE key LIKE 'http://127.0.0.1:1#%'").get(),
      ).toEqual({
        n: 0,
      });
      expect(db.prepare("SELECT count(*) AS n FROM files WHERE abs_path LIKE '%CARD_COPY%'").get()).toEqual({
        n: 0,
      });
    } finally {
      db.close();
    }
    expect(fs.readdirSync(path.join(stateDir, 'manifests')).filter((d) => d.startsWith('CARD_COPY'))).toEqual(
      [],
    );
    expect(c.state().cards[0]?.workspace?.safe).toBe(true);
    // The one in use cannot be forgotten through the channel either: said in plain words.
    const inUse = await c.forgetTarget(c.targets()[0]!.key).catch((e: Error) => e.message);
    expect(inUse).toMatch(
      /is where the app sends cards now\. Choose another server in Settings and save, then forget it\.$/,
    );
  });
});

describe('each local destination state, as the crew reads it (issue 29)', () => {
  it('ready, not created yet (created, said once), not plugged in, too small (a 16 MB tmpfs), read-only (a read-only bind mount)', async () => {
    const base = path.join(root, 'states');
    const ssd = path.join(base, 'SSD');
    const fresh = path.join(base, 'NEW_SSD', 'DroneCopies'); // its drive is there, the folder not yet
    const unplugged = path.join(base, 'T7-unplugged', 'DroneCopies');
    const small = path.join(base, 'SMALL_USB');
    const roSource = path.join(base, 'RO-source');
    const ro = path.join(base, 'RO_DRIVE');
    for (const d of [ssd, path.dirname(fresh), small, roSource, ro]) fs.mkdirSync(d, { recursive: true });
    // Real disks in those states (we are root here): a 16 MB tmpfs, a read-only bind mount.
    execFileSync('mount', ['-t', 'tmpfs', '-o', 'size=16m', 'tmpfs', small]);
    cleanups.push(() => execFileSync('umount', [small]));
    execFileSync('mount', ['--bind', roSource, ro]);
    cleanups.push(() => execFileSync('umount', [ro]));
    execFileSync('mount', ['-o', 'remount,bind,ro', ro]);
    expect(() => fs.writeFileSync(path.join(ro, 'probe'), 'x')).toThrow(/EROFS/);

    const { c, page, mnt } = await app('states', {
      useLocalService: true,
      destinations: [
        { path: ssd, label: 'SSD', role: 'archive' },
        { path: fresh, label: 'NEW_SSD', role: 'archive' },
        { path: unplugged, label: 'T7_BACKUP', role: 'archive' },
        { path: small, label: 'SMALL_USB', role: 'archive' },
        { path: ro, label: 'RO_DRIVE', role: 'archive' },
      ],
    });
    insertCard(path.join(mnt, 'DJI_CARD'));
    const says = (title: string) => banner(page).filter({ hasText: title });
    const words = async (title: string) => (await says(title).innerText()).replace(/\s+/g, ' ').trim();
    await expect.poll(() => says('RO_DRIVE').count(), { timeout: 25_000 }).toBe(1);
    await expect.poll(() => says('SMALL_USB').count(), { timeout: 25_000 }).toBe(1);
    await expect.poll(() => says('T7_BACKUP').count(), { timeout: 25_000 }).toBe(1);
    await expect.poll(() => says('NEW_SSD').count(), { timeout: 25_000 }).toBe(1);
    await until('a verdict', () => c.state().cards[0]?.headline !== null, 25_000);
    fs.mkdirSync(SHOTS, { recursive: true });

    // Not created yet: made, and said once (news, not a problem).
    expect(fs.statSync(fresh).isDirectory()).toBe(true);
    expect(await words('NEW_SSD')).toBe(
      `NEW_SSD: folder created NEW_SSD: the folder ${fresh} did not exist yet; it was created.`,
    );
    expect(await says('NEW_SSD').getAttribute('class')).toContain('tone-ok');
    await says('NEW_SSD').screenshot({ path: path.join(SHOTS, 'destination-state-not-created.png') });
    // Not plugged in.
    expect(await words('T7_BACKUP')).toContain(
      `T7_BACKUP: its drive is not plugged in (${unplugged} is not there): its copy of this card stopped. Plug it in, then sync again; the other copies go on.`,
    );
    await says('T7_BACKUP').screenshot({ path: path.join(SHOTS, 'destination-state-unplugged.png') });
    // Too small for the card: said before a byte is written.
    expect(await words('SMALL_USB')).toMatch(
      /^DJI_CARD is not copied to SMALL_USB SMALL_USB: \d+ MB free, the card needs \d+ MB\. Nothing was written there; free space \(or choose another destination\), then sync again\. 64 MB more must stay free on the drive, so no file is cut short\.$/,
    );
    expect(fs.readdirSync(small)).toEqual([]);
    await says('SMALL_USB').screenshot({ path: path.join(SHOTS, 'destination-state-too-small.png') });
    // Read-only.
    expect(await words('RO_DRIVE')).toBe(
      'DJI_CARD is not copied to RO_DRIVE RO_DRIVE cannot be written (read-only, or no permission): its copy of this card stopped. The other copies go on.',
    );
    await says('RO_DRIVE').screenshot({ path: path.join(SHOTS, 'destination-state-read-only.png') });
    // Ready: the SSD holds every file, each drive's own count beside it.
    await expect
      .poll(() => text(page, '[data-testid=local-amount]'), { timeout: 20_000 })
      .toMatch(/SSD 4, NEW_SSD 4, T7_BACKUP 0, SMALL_USB 0, RO_DRIVE 0$/);
    await page
      .getByTestId('local-verdict')
      .screenshot({ path: path.join(SHOTS, 'destination-state-ready.png') });
    await noHorizontalScroll(page);
    await shot(page, 'destination-states.png');
    // Each said once on the screen.
    const body = await page.locator('body').innerText();
    for (const said of [
      'did not exist yet; it was created',
      'its drive is not plugged in',
      'cannot be written',
    ])
      expect(body.split(said).length - 1, said).toBe(1);
  });
});
