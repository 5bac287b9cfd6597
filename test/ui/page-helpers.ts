/** What the UI suites read from a page and keep of it: texts, layout checks, screenshots. */
import fs from 'node:fs';
import path from 'node:path';
import type { Page } from 'playwright-core';
import { expect } from 'vitest';
import { ROOT, VIEWPORT } from './browser.js';

export const SHOTS = path.join(ROOT, 'test-results', 'ui');

/** The element's text as rendered, '' when it is not there (does not wait: use inside expect.poll). */
export async function text(page: Page, selector: string): Promise<string> {
  const el = page.locator(selector).first();
  if ((await el.count()) === 0) return '';
  return (await el.innerText()).replace(/\s+/g, ' ').trim();
}

export async function noHorizontalScroll(page: Page): Promise<void> {
  const { scroll, width } = await page.evaluate(() => ({
    scroll: document.documentElement.scrollWidth,
    width: document.documentElement.clientWidth,
  }));
  expect(scroll, 'page must fit 1366 px without horizontal scrolling').toBeLessThanOrEqual(width);
}

/** What the crew sees at 1366x768 (`name`), plus the whole scrolled page (`<name>-full.png`). */
export async function shot(page: Page, name: string): Promise<void> {
  fs.mkdirSync(SHOTS, { recursive: true });
  await page.screenshot({ path: path.join(SHOTS, name) });
  // A taller window rather than fullPage, so sticky bars sit where they belong.
  const height = await page.evaluate(() => document.documentElement.scrollHeight);
  await page.setViewportSize({ width: VIEWPORT.width, height });
  await page.screenshot({ path: path.join(SHOTS, name.replace(/\.png$/, '-full.png')) });
  await page.setViewportSize(VIEWPORT);
}

export function tab(page: Page, name: string) {
  return page.getByRole('navigation', { name: 'Screens' }).getByRole('button', { name, exact: false });
}

export const banner = (page: Page) => page.getByTestId('banner');
