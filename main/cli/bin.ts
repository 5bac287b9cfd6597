#!/usr/bin/env -S MALLOC_ARENA_MAX=2 node --max-semi-space-size=8 --heap-growing-percent=100
// The line above is AGENT_ENV and AGENT_V8_FLAGS (core/node-flags.ts): both are read only at start.
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
