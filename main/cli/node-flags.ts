/**
 * The V8 flags every agent process starts with, however it is launched:
 * `bin.js`'s first line (`npx drone-media-sync`, an installed command),
 * `npm run cli`, the headless agent of `npm start`, and the desktop app's
 * main process (Electron's `--js-flags`, which V8 reads only at start).
 *
 * --max-semi-space-size=8 (issue 33): V8's young generation grows to 64 MiB
 * semi-spaces here (new space 128 MiB), and a sync of a 10,000-file card
 * keeps it full of short-lived objects: about 100 MiB of the agent's RSS
 * (first sync peak 419-442 MiB without, 306-327 with, 287-308 with the
 * manifest's reused buffers too) for 1-2 % more CPU in runs paired at the
 * same load (39.9/41.9/38.7 s without, 40.3/42.3/39.4 s with).
 *
 * test/cli/node-flags.test.ts holds every launcher to this list.
 */
export const AGENT_V8_FLAGS: readonly string[] = ['--max-semi-space-size=8'];
