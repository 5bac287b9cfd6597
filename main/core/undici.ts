import { createRequire } from 'node:module';
import type * as Undici from 'undici';

const load = createRequire(import.meta.url);
let loaded: typeof Undici | undefined;

/**
 * undici (the HTTP client of the API and the bucket), loaded at its first
 * use: a run that sends nothing (a card re-inserted whose files are all done)
 * never pays for its ~110 modules (60-180 ms of a start on a loaded 2-core
 * machine). undici is CommonJS: one instance whoever loads it.
 */
export function undici(): typeof Undici {
  return (loaded ??= load('undici') as typeof Undici);
}
