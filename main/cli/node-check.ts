/**
 * The Node.js this CLI needs, checked first thing by bin.ts: on an older Node
 * the modules it loads later fail with a stack trace (undici needs Node 24's
 * zstd), which says nothing about the cause. This module imports nothing, so
 * it loads on any Node that runs ES modules.
 */

/** The oldest major Node.js the CLI runs on: package.json's `engines.node` says the same (tested). */
export const MIN_NODE_MAJOR = 24;

/** The sentence to print when `version` (process.versions.node) is too old, else null. */
export function nodeTooOld(version: string, execPath: string): string | null {
  const major = Number(version.split('.')[0]);
  if (Number.isInteger(major) && major >= MIN_NODE_MAJOR) return null;
  return (
    `drone-media-sync needs Node.js ${MIN_NODE_MAJOR} or newer; this is Node.js ${version} (${execPath}).\n` +
    `Install Node.js ${MIN_NODE_MAJOR} (nodejs.org, or your package manager), then run the command again.\n`
  );
}
