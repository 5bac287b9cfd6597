/**
 * The product's one version: package.json's. The CLI's --version, the
 * manifest and report (tool version) and the desktop app (app.getVersion(),
 * which reads the same file) all say it.
 */
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

export const PRODUCT_NAME = 'Drone Media Sync';

/** package.json of this product, found upward from this module (main/core in the sources, dist/main/core built). */
function readVersion(): string {
  let dir = path.dirname(fileURLToPath(import.meta.url));
  for (let i = 0; i < 6; i++) {
    try {
      const pkg = JSON.parse(fs.readFileSync(path.join(dir, 'package.json'), 'utf8')) as {
        name?: string;
        version?: string;
      };
      if (pkg.name === 'drone-media-sync' && pkg.version) return pkg.version;
    } catch {
      // not here: look one folder up
    }
    dir = path.dirname(dir);
  }
  return '0.0.0-unknown';
}

export const VERSION = readVersion();

/** What wrote a manifest: the tool element of the ASC MHL and the report. */
export const TOOL = { name: PRODUCT_NAME, version: VERSION } as const;
