import { createRequire } from 'node:module';
import type { z as Z } from 'zod';

const load = createRequire(import.meta.url);
let loaded: typeof Z | undefined;

/**
 * zod, loaded at its first use: a run with nothing to check (a card
 * re-inserted whose files are all done, no settings file) never pays for
 * its modules (55-90 ms of CPU on the 2-core machine) nor for building the
 * schemas. Loaded by require: the same instance for every schema built
 * with it (the service and the window's IPC import zod as usual).
 */
export function zod(): typeof Z {
  return (loaded ??= (load('zod') as { z: typeof Z }).z);
}

/** A schema built at its first use (zod loaded then), the same object after. */
export function lazySchema<T>(build: (z: typeof Z) => T): () => T {
  let schema: T | undefined;
  return () => (schema ??= build(zod()));
}
