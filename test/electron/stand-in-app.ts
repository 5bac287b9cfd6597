/**
 * A real process standing in for the desktop app (or its AppImage file),
 * for tests of the app starting itself again (main/electron/v8-relaunch.ts):
 * a shell script that writes down DMS_V8_RELAUNCHED and its arguments.
 */
import fs from 'node:fs';
import path from 'node:path';

export interface StandInApp {
  /** The executable to start. */
  app: string;
  /** How it was started, once it has been: [DMS_V8_RELAUNCHED, ...arguments]. */
  started(): Promise<string[]>;
}

export function standInApp(dir: string, name = 'app'): StandInApp {
  const app = path.join(dir, name);
  const seen = path.join(dir, 'seen');
  fs.writeFileSync(
    app,
    `#!/bin/sh\nprintf '%s\\n' "$DMS_V8_RELAUNCHED" "$@" > "${seen}.tmp" && mv "${seen}.tmp" "${seen}"\n`,
    { mode: 0o755 },
  );
  return {
    app,
    async started() {
      for (let i = 0; i < 400 && !fs.existsSync(seen); i++) await new Promise((r) => setTimeout(r, 25));
      return fs.readFileSync(seen, 'utf8').trimEnd().split('\n');
    },
  };
}
