/**
 * One place for how the UI suites get a real browser: renderer/dist built
 * when stale, served from 127.0.0.1 (so the CSP's 'self' means what it means
 * in the app), Debian's headless Chromium driven by playwright-core, and a
 * page opened at the crews' 1366x768 with test-bridge.ts standing in for the
 * preload, every CSP violation, console error, failed load and request
 * recorded. Used by ui.test.ts and flight.test.ts.
 */
import { execFile } from 'node:child_process';
import fs from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { chromium, type Browser, type BrowserContext, type Page } from 'playwright-core';
import { findChromium } from './find-chromium.js';
import { installTestBridge, type BridgeOptions } from './test-bridge.js';

export const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..');
const RENDERER = path.join(ROOT, 'renderer');
export const DIST = path.join(RENDERER, 'dist');
export const VIEWPORT = { width: 1366, height: 768 };

const FRAME_ANCESTORS_IN_META =
  "The Content Security Policy directive 'frame-ancestors' is ignored when delivered via a <meta> element.";

function newestMtime(p: string): number {
  const st = fs.statSync(p);
  if (!st.isDirectory()) return st.mtimeMs;
  let newest = 0;
  for (const e of fs.readdirSync(p)) {
    if (e === 'dist' || e === 'node_modules') continue;
    newest = Math.max(newest, newestMtime(path.join(p, e)));
  }
  return newest;
}

/** Builds renderer/dist when it is missing or older than any source (clean clone, edited sources). */
async function ensureBuilt(): Promise<void> {
  const sources = Math.max(newestMtime(RENDERER), newestMtime(path.join(ROOT, 'main', 'shared')));
  const built = fs.existsSync(path.join(DIST, 'index.html'))
    ? fs.statSync(path.join(DIST, 'index.html')).mtimeMs
    : 0;
  if (built >= sources) return;
  const vite = path.join(ROOT, 'node_modules', 'vite', 'bin', 'vite.js');
  await promisify(execFile)(
    process.execPath,
    [vite, 'build', '--config', 'renderer/vite.config.ts', '--logLevel', 'warn'],
    { cwd: ROOT },
  );
}

const TYPES: Record<string, string> = {
  '.html': 'text/html; charset=utf-8',
  '.js': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.svg': 'image/svg+xml',
  '.png': 'image/png',
  '.woff2': 'font/woff2',
};

function serve(dir: string): Promise<http.Server> {
  const server = http.createServer((req, res) => {
    const url = new URL(req.url ?? '/', 'http://127.0.0.1');
    const rel = decodeURIComponent(url.pathname === '/' ? '/index.html' : url.pathname);
    const file = path.resolve(dir, `.${rel}`);
    if (!file.startsWith(dir + path.sep) || !fs.existsSync(file) || !fs.statSync(file).isFile()) {
      res.writeHead(404, { 'content-type': 'text/plain' }).end('not found');
      return;
    }
    // No CSP header on purpose: the page's own <meta> policy is what is tested.
    res.writeHead(200, {
      'content-type': TYPES[path.extname(file)] ?? 'application/octet-stream',
      'cache-control': 'no-store',
    });
    fs.createReadStream(file).pipe(res);
  });
  return new Promise((resolve) => server.listen(0, '127.0.0.1', () => resolve(server)));
}

export interface Ui {
  browser: Browser;
  baseUrl: string;
  close(): Promise<void>;
}

/** The window served from 127.0.0.1 and a headless Chromium found by find-chromium.ts. */
export async function startUi(): Promise<Ui> {
  const found = await findChromium();
  console.log(`[ui] Chromium from ${found.description}`);
  await ensureBuilt();
  const server = await serve(DIST);
  const browser = await chromium.launch({
    executablePath: found.executablePath,
    args: [
      '--headless',
      '--no-sandbox',
      '--disable-gpu',
      '--disable-background-networking',
      '--disable-component-update',
      '--disable-sync',
      '--no-first-run',
    ],
  });
  return {
    browser,
    baseUrl: `http://127.0.0.1:${(server.address() as AddressInfo).port}/`,
    close: async () => {
      await browser.close();
      await new Promise((r) => server.close(r));
    },
  };
}

export interface Opened {
  context: BrowserContext;
  page: Page;
  /** CSP violations, console errors and warnings, page errors, failed loads, HTTP errors. */
  problems: string[];
  /** Every URL the page requested. */
  requests: string[];
}

/** A new context and page, watched; `bridge` installs the test bridge and opens the window. */
export async function openPage(ui: Ui, bridge?: BridgeOptions): Promise<Opened> {
  const context = await ui.browser.newContext({ viewport: VIEWPORT, locale: 'en-GB', timezoneId: 'UTC' });
  context.setDefaultTimeout(5000);
  const page = await context.newPage();
  const problems: string[] = [];
  const requests: string[] = [];
  page.on('request', (r) => requests.push(r.url()));
  page.on('console', (m) => {
    if (m.type() !== 'error' && m.type() !== 'warning') return;
    // The contract's CSP includes frame-ancestors, which only an HTTP header can enforce:
    // Chromium says so once per load. Nothing is blocked by it; it is the only message allowed.
    if (m.text() === FRAME_ANCESTORS_IN_META) return;
    problems.push(`console.${m.type()}: ${m.text()}`);
  });
  page.on('pageerror', (e) => problems.push(`page error: ${e.message}`));
  page.on('requestfailed', (r) =>
    problems.push(`request failed: ${r.url()} ${r.failure()?.errorText ?? ''}`),
  );
  page.on('response', (r) => {
    if (r.status() >= 400) problems.push(`HTTP ${r.status()} for ${r.url()}`);
  });
  await page.exposeFunction('__reportCspViolation', (text: string) =>
    problems.push(`CSP violation: ${text}`),
  );
  await page.addInitScript(() => {
    document.addEventListener('securitypolicyviolation', (e) => {
      void (window as unknown as { __reportCspViolation: (t: string) => Promise<void> }).__reportCspViolation(
        `${e.effectiveDirective} blocked ${e.blockedURI || 'inline'} (${e.sourceFile}:${e.lineNumber})`,
      );
    });
  });
  if (bridge) {
    await page.addInitScript(installTestBridge, bridge);
    await page.goto(ui.baseUrl);
    await page.locator('.topbar').waitFor();
  }
  return { context, page, problems, requests };
}
