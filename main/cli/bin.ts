#!/usr/bin/env -S node --max-semi-space-size=8
// --max-semi-space-size=8 (issue 33): V8's young generation on Node 24 grows to
// 32 MiB semi-spaces here, and a run that reads a large card fills them with
// short-lived objects: about 100 MiB of the agent's RSS on a 10,000-file card
// (peak 524-541 MiB; with 8 MiB semi-spaces 393). V8 reads the flag only at
// start, so it is given on the first line (env -S: Linux, macOS, npm's shims).
import { nodeTooOld } from './node-check.js';

// Before anything else is loaded: on an older Node the CLI's modules fail to
// load with a stack trace instead of saying what is wrong.
const tooOld = nodeTooOld(process.versions.node, process.execPath);
if (tooOld !== null) {
  process.stderr.write(tooOld);
  process.exitCode = 1;
} else {
  const { main } = await import('./program.js');
  process.exitCode = await main(process.argv);
}
