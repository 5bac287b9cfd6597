#!/usr/bin/env -S node --max-semi-space-size=8
// --max-semi-space-size=8 (issue 33): V8's young generation grows to 64 MiB
// semi-spaces here (new space 128 MiB), and a sync of a 10,000-file card
// keeps it full of short-lived objects: about 100 MiB of the agent's RSS
// (first sync peak 419-442 MiB without, 306-327 with, 287-308 with the manifest's
// reused buffers too) for 1-2 % more CPU in runs paired at the same load
// (39.9/41.9/38.7 s without, 40.3/42.3/39.4 s with). V8 reads the flag only
// at start, so it is given on the first line (env -S: Linux, macOS, npm's shims).
import { enableCompileCache } from './compile-cache.js';
import { nodeTooOld } from './node-check.js';

// Before anything else is loaded: on an older Node the CLI's modules fail to
// load with a stack trace instead of saying what is wrong.
const tooOld = nodeTooOld(process.versions.node, process.execPath);
if (tooOld !== null) {
  process.stderr.write(tooOld);
  process.exitCode = 1;
} else {
  // Compiled modules from the last run (a third of a short run's start): before the first import.
  enableCompileCache();
  const { main } = await import('./program.js');
  process.exitCode = await main(process.argv);
}
