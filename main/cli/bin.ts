#!/usr/bin/env node
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
