/**
 * Issue 32: the crew's minimum flight height set in the window's Settings, in
 * real headless Chromium at 1366x768, the window driven by the real main
 * logic (real-main.ts: the AppController, the real IPC dispatch and its zod
 * contract, config.json on disk). Electron itself is mocked (its binary
 * cannot run here). Screenshots: test-results/ui/settings-flight-height*.png.
 */
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, afterEach, beforeAll, expect, it, vi } from 'vitest';
import { AppController } from '../../main/electron/controller.js';
import { tempDir } from '../support/harness.js';
import { MemorySecrets } from '../electron/helpers.js';
import { startUi, type Ui } from './browser.js';
import { shot, tab, text } from './page-helpers.js';
import { openRealWindow, type RealWindow } from './real-main.js';

vi.mock('electron', () => import('../electron/electron-mock.js').then((m) => m.electronModule));

let ui: Ui;
let root: string;
let c: AppController | null = null;
let win: RealWindow | null = null;

beforeAll(async () => {
  ui = await startUi();
  root = tempDir('dms-flight-settings-');
}, 60_000);

afterAll(async () => {
  await ui?.close();
  fs.rmSync(root, { recursive: true, force: true });
});

afterEach(async () => {
  try {
    if (win) expect(win.problems, 'CSP violations, console errors, failed loads').toEqual([]);
  } finally {
    await win?.context.close();
    await c?.stop();
    win = null;
    c = null;
  }
});

it('the minimum flight height: refused unless a number of metres ≥ 0, saved to config.json, said in Flights; empty = off', async () => {
  const stateDir = path.join(root, 'state');
  const mnt = path.join(root, 'media');
  fs.mkdirSync(stateDir, { recursive: true });
  fs.mkdirSync(mnt, { recursive: true });
  const file = path.join(stateDir, 'config.json');
  fs.writeFileSync(file, JSON.stringify({ mountRoots: [mnt], useLocalService: true }));
  const config = () => JSON.parse(fs.readFileSync(file, 'utf8')) as Record<string, unknown>;
  c = new AppController({ stateDir, secrets: new MemorySecrets(), env: {}, quietMs: 300, cardPollMs: 150 });
  await c.start();
  win = await openRealWindow(ui, c);
  const { page } = win;
  const saves = () => win!.calls.filter((x) => x.channel === 'settings:save');

  // Nothing set yet: the Flights tab says so, and where to set it.
  await tab(page, 'Flights').click();
  await expect
    .poll(() => text(page, '.flight-min-height'))
    .toBe('Too low: no minimum height is set (Settings, Flight checks).');

  await tab(page, 'Settings').click();
  const field = page.getByLabel('Minimum height above take-off (m)');
  await expect.poll(() => field.inputValue()).toBe('');
  const save = page.getByRole('button', { name: 'Save settings' });

  // Not a height: refused in the form, nothing sent, config.json untouched.
  for (const bad of ['-5', 'thirty', '1200']) {
    await field.fill(bad);
    await save.click();
    await expect.poll(() => text(page, '[data-testid=error-flightMinHeightM]')).not.toBe('');
    expect(await text(page, '.save-note')).toBe('Not saved: fix the fields marked in red.');
  }
  expect(await text(page, '[data-testid=error-flightMinHeightM]')).toBe(
    'Must be from 0 to 1,000 m (or empty for no minimum).',
  );
  expect(await field.getAttribute('aria-invalid')).toBe('true');
  await shot(page, 'settings-flight-height-refused.png');
  expect(saves()).toEqual([]);
  expect(config().flightMinHeightM).toBeUndefined();

  // Main refuses it too when asked directly (the contract's schema), with the field's reason.
  const direct = (await page.evaluate(async () => {
    const dms = (window as unknown as { dms: Record<string, (r: unknown) => Promise<unknown>> }).dms;
    const got = (await dms['settings:get']!(undefined)) as { value: Record<string, unknown> };
    const { signedIn: _s, account: _a, ...view } = got.value;
    return dms['settings:save']!({ ...view, flightMinHeightM: -1 });
  })) as { ok: boolean; error?: { fields?: Record<string, string> } };
  expect(direct.ok).toBe(false);
  expect(direct.error?.fields?.flightMinHeightM).toBe(
    'The minimum flight height is a number of metres from 0 to 1000, or empty (no minimum).',
  );
  expect(config().flightMinHeightM).toBeUndefined();

  // 30 m: saved through settings:save into config.json; the flight checks use it; Flights says it.
  // And flagged photos left out of a metered upload (off by default).
  const hold = page.getByLabel(/^Leave photos that look unusable out of a metered upload/);
  expect(await hold.isChecked()).toBe(false);
  await field.fill('30');
  await hold.check();
  await save.click();
  await expect.poll(() => text(page, '.save-note')).toBe('Settings saved.');
  expect(config().flightMinHeightM).toBe(30);
  expect(config().holdFlaggedOnMetered).toBe(true);
  expect(config().mountRoots).toEqual([mnt]); // what the window does not show is kept
  expect(c['flightChecks']()).toEqual({ minHeight: 30 });
  await field.scrollIntoViewIfNeeded();
  await shot(page, 'settings-flight-height.png');
  await tab(page, 'Flights').click();
  await expect.poll(() => text(page, '.flight-min-height')).toBe('Too low: below 30 m, set in Settings.');
  await shot(page, 'flights-min-height.png');

  // Emptied: off again, the key gone from config.json.
  await tab(page, 'Settings').click();
  await expect.poll(() => field.inputValue()).toBe('30');
  await field.fill('');
  await save.click();
  await expect.poll(() => text(page, '.save-note')).toBe('Settings saved.');
  expect('flightMinHeightM' in config()).toBe(false);
  expect(config().holdFlaggedOnMetered).toBe(true); // untouched by emptying the height
  expect(c['flightChecks']()).toEqual({ minHeight: null });
  await tab(page, 'Flights').click();
  await expect
    .poll(() => text(page, '.flight-min-height'))
    .toBe('Too low: no minimum height is set (Settings, Flight checks).');
}, 120_000);
