/**
 * Desktop entry (package.json "main" -> dist/main/electron/main.js). Kept
 * tiny: it decides whether this process is the app at all before anything
 * heavy loads. Started without the agent's V8 flags, it starts itself once
 * more with them and exits (v8-relaunch.ts). A second launch (double-clicked
 * again, or started at login while running) only wakes the first one, which
 * shows its window.
 */
import { app } from 'electron';
import { argvForSecondStart } from './login-item.js';
import { startWithV8Flags } from './v8-relaunch.js';

/** Same as electron-builder's appId: Windows ties notifications and the taskbar to it. */
export const APP_USER_MODEL_ID = 'com.dronemediasync.app';

const restarted = await startWithV8Flags({
  argv: argvForSecondStart(process.argv),
  jsFlags: app.commandLine.getSwitchValue('js-flags'),
  packaged: app.isPackaged,
});
if (restarted) {
  app.exit(0); // the second start, with the agent's V8 flags, is the app
} else if (!app.requestSingleInstanceLock()) {
  app.quit();
} else {
  app.setAppUserModelId(APP_USER_MODEL_ID);
  const { runApp } = await import('./app.js');
  // Not awaited: Electron emits `ready` only once this entry module has finished
  // evaluating, and runApp waits for `ready` (a top-level await here would hang).
  runApp().catch((err: unknown) => {
    process.stderr.write(
      `Drone Media Sync could not start: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`,
    );
    app.exit(1);
  });
}
