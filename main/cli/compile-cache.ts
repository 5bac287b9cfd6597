/**
 * V8's compile cache for the CLI's own modules and its dependencies (Node's
 * `module.enableCompileCache`): a second run reads the compiled code from
 * disk instead of parsing and compiling about 650 modules again, which is a
 * good part of a short run such as a re-inserted card with nothing to do
 * (issue 33). Turned on by bin.ts before anything else is loaded. This
 * module imports only Node's own modules, which are loaded already.
 *
 * The cache is only a help: a folder that cannot be made or written (a
 * read-only home, a file in its place) leaves the CLI as it was, silently;
 * NODE_COMPILE_CACHE (another folder) and NODE_DISABLE_COMPILE_CACHE=1 (none)
 * hold as Node documents them. Node keys each entry by its Node version and
 * the module's content, so an update never runs stale code.
 */
import fs from 'node:fs';
import module from 'node:module';
import os from 'node:os';
import path from 'node:path';

const APP = 'drone-media-sync';

/** The OS's cache folder for the CLI's compiled modules (not the state folder: it may be shared or synced). */
export function compileCacheDir(env: NodeJS.ProcessEnv = process.env, platform = process.platform): string {
  const home = os.homedir();
  if (platform === 'win32')
    return path.join(env.LOCALAPPDATA ?? path.join(home, 'AppData', 'Local'), APP, 'Cache', 'compile-cache');
  if (platform === 'darwin') return path.join(home, 'Library', 'Caches', APP, 'compile-cache');
  return path.join(env.XDG_CACHE_HOME || path.join(home, '.cache'), APP, 'compile-cache');
}

/**
 * Makes `dir` one level at a time; true when it is a folder this user may
 * write. Not `mkdir -p`: Node's recursive mkdir (which enableCompileCache
 * uses) never returns for a path under /proc (measured on Node 24.21).
 */
function writableDir(dir: string): boolean {
  const levels: string[] = [];
  for (let d = dir; path.dirname(d) !== d; d = path.dirname(d)) levels.unshift(d);
  try {
    for (const d of levels) {
      try {
        fs.mkdirSync(d);
      } catch (err) {
        if ((err as { code?: string }).code !== 'EEXIST') return false;
      }
    }
    fs.accessSync(dir, fs.constants.W_OK);
    return fs.statSync(dir).isDirectory();
  } catch {
    return false;
  }
}

/**
 * Turns the cache on; never throws. Returns Node's word for what happened
 * ('ENABLED', 'FAILED'...), or 'UNWRITABLE' when the folder cannot be made
 * or written, or null on a Node without it.
 */
export function enableCompileCache(env: NodeJS.ProcessEnv = process.env): string | null {
  if (typeof module.enableCompileCache !== 'function') return null;
  try {
    // NODE_COMPILE_CACHE set: Node has turned it on in that folder already (or says why not).
    if (env.NODE_COMPILE_CACHE) return statusWord(module.enableCompileCache().status);
    const dir = compileCacheDir(env);
    return writableDir(dir) ? statusWord(module.enableCompileCache(dir).status) : 'UNWRITABLE';
  } catch {
    return null;
  }
}

const statusWord = (status: number): string =>
  Object.entries(module.constants.compileCacheStatus).find(([, v]) => v === status)?.[0] ?? String(status);
