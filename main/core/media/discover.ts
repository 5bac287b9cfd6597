import { opendir, realpath, stat } from 'node:fs/promises';
import type { Stats } from 'node:fs';
import { extname, join, resolve, sep } from 'node:path';
import { MEDIA_FILE_TYPES, SIDECAR_FILE_TYPES, VIDEO_FILE_TYPES } from '../../shared/domain.js';
import { DmsError, toDmsError } from '../errors.js';

const lowerCase = (types: readonly string[]): readonly string[] => types.map((t) => t.toLowerCase());

/** Camera originals worth uploading (lowercase, no dot). */
export const DEFAULT_MEDIA_EXTENSIONS = lowerCase(MEDIA_FILE_TYPES);

/** Side-car files (LRF, THM, SCR, SRT): never uploaded as media, even if a caller lists them in `include`. */
export const NEVER_MEDIA_EXTENSIONS = lowerCase(SIDECAR_FILE_TYPES);

/** Videos: exifr cannot read their metadata (see metadata.ts). */
export const VIDEO_EXTENSIONS = lowerCase(VIDEO_FILE_TYPES);

export interface DiscoveredFile {
  /** Absolute path. */
  path: string;
  /** The absolute root it was found under. */
  root: string;
  /** Relative to root, "/"-separated on every platform. */
  relPath: string;
  size: number;
  mtimeMs: number;
}

export interface DiscoverWarning {
  path: string;
  /** Relative to the root, "/"-separated. */
  relPath: string;
  /**
   * outside-root: a link leading out of the card or folder (never followed);
   * broken-link, unreadable, loop: skipped for what they are.
   */
  kind: 'outside-root' | 'broken-link' | 'unreadable' | 'loop';
  message: string;
  cause?: unknown;
}

export interface DiscoverOptions {
  /** Extensions to include ("jpg", ".JPG" and "*.jpg" all work); default DEFAULT_MEDIA_EXTENSIONS. */
  include?: string[];
  /**
   * Patterns to skip, case-insensitive. Without "/": matched against every
   * file or folder name ("PANORAMA", "*.tmp"). With "/": matched against the
   * whole relPath ("DCIM/100MEDIA", "DCIM/PANORAMA/*.JPG"). `*` stays within
   * one name, `**` crosses folders, `?` is one character.
   */
  exclude?: string[];
  signal?: AbortSignal;
  /** Files to find besides the media extensions (RTK/PPK files travel with their flight). */
  alsoInclude?: (name: string) => boolean;
  /** Unreadable folders, broken links and files that vanished are reported here, then skipped. */
  onWarning?: (warning: DiscoverWarning) => void;
}

/** True when `real` is `root` or below it (both real paths). */
export function isInside(real: string, root: string): boolean {
  const prefix = root.endsWith(sep) ? root : root + sep;
  return real === root || real.startsWith(prefix);
}

export function normaliseExtension(ext: string): string {
  return ext
    .trim()
    .toLowerCase()
    .replace(/^\*?\./, '');
}

function globToRegExp(glob: string): RegExp {
  let re = '';
  for (let i = 0; i < glob.length; i++) {
    const c = glob[i] ?? '';
    if (c === '*' && glob[i + 1] === '*') {
      // "**/" may match nothing, so "**/x" also matches a top-level "x".
      if (glob[i + 2] === '/') {
        re += '(?:.*/)?';
        i += 2;
      } else {
        re += '.*';
        i += 1;
      }
    } else if (c === '*') re += '[^/]*';
    else if (c === '?') re += '[^/]';
    else re += c.replace(/[.+^${}()|[\]\\]/g, '\\$&');
  }
  return new RegExp(`^${re}$`, 'i');
}

interface Matcher {
  test(relPath: string, name: string): boolean;
}

function compileExcludes(patterns: string[]): Matcher {
  const byName: RegExp[] = [];
  const byPath: RegExp[] = [];
  for (const raw of patterns) {
    const p = raw
      .trim()
      .replace(/\\/g, '/')
      .replace(/^\/+|\/+$/g, '');
    if (!p) continue;
    (p.includes('/') ? byPath : byName).push(globToRegExp(p));
  }
  return {
    test: (relPath, name) => byName.some((r) => r.test(name)) || byPath.some((r) => r.test(relPath)),
  };
}

interface Walk {
  root: string;
  include: ReadonlySet<string>;
  exclude: Matcher;
  /** The root's real path: a link whose real target is not under it is never followed. */
  realRoot: string;
  alsoInclude: ((name: string) => boolean) | undefined;
  signal: AbortSignal | undefined;
  warn: (w: DiscoverWarning) => void;
  /** Real paths of folders entered through a symlink: a second visit is a loop or a duplicate. */
  linkedTargets: Set<string>;
}

const byName = (a: string, b: string): number => (a < b ? -1 : a > b ? 1 : 0);

function checkAbort(signal: AbortSignal | undefined): void {
  if (signal?.aborted) throw new DmsError('cancelled', 'Discovery was cancelled.', { cause: signal.reason });
}

/**
 * One folder: names are collected with opendir (streamed from the OS) and
 * sorted so the order is the same on every run and platform (code-unit
 * order, not locale), then handled one by one; sub-folders are walked depth
 * first in that order. Only one folder's names are held at a time per level.
 */
async function* walkDir(w: Walk, dir: string, rel: string, realDir: string): AsyncGenerator<DiscoveredFile> {
  const entries: { name: string; dir: boolean; file: boolean; link: boolean }[] = [];
  try {
    const handle = await opendir(dir);
    for await (const e of handle) {
      entries.push({ name: e.name, dir: e.isDirectory(), file: e.isFile(), link: e.isSymbolicLink() });
    }
  } catch (err) {
    w.warn({
      path: dir,
      relPath: rel,
      kind: 'unreadable',
      message: `Cannot read folder: ${(err as Error).message}`,
      cause: err,
    });
    return;
  }
  entries.sort((a, b) => byName(a.name, b.name));

  for (const e of entries) {
    checkAbort(w.signal);
    // Hidden entries: macOS ._ resource forks, .Spotlight-V100, .Trashes...
    if (e.name.startsWith('.')) continue;
    const full = join(dir, e.name);
    const relChild = rel ? `${rel}/${e.name}` : e.name;
    let isDir = e.dir;
    let isFile = e.file;
    let st: Stats | undefined;
    let realChild = join(realDir, e.name);
    if (e.link) {
      try {
        realChild = await realpath(full);
        st = await stat(realChild);
      } catch (err) {
        w.warn({
          path: full,
          relPath: relChild,
          kind: 'broken-link',
          message: `Broken link skipped: ${(err as Error).message}`,
          cause: err,
        });
        continue;
      }
      // Card contents are not trusted: a link to ~/.ssh/id_ed25519 named
      // DJI_0777.JPG, or to the home folder, must never be read, let alone
      // uploaded. The check is on the real target, not on the link's name.
      if (!isInside(realChild, w.realRoot)) {
        w.warn({
          path: full,
          relPath: relChild,
          kind: 'outside-root',
          message: `${relChild} is a link to ${realChild}, outside ${w.root}: skipped, nothing of it is read or sent.`,
        });
        continue;
      }
      isDir = st.isDirectory();
      isFile = st.isFile();
    }
    if (isDir) {
      // MISC holds DJI's logs, thumbnails and caches: never media.
      if (e.name.toUpperCase() === 'MISC' || w.exclude.test(relChild, e.name)) continue;
      if (e.link) {
        const prefix = realChild.endsWith(sep) ? realChild : realChild + sep;
        const isAncestor = realDir === realChild || realDir.startsWith(prefix);
        if (isAncestor || w.linkedTargets.has(realChild)) {
          w.warn({
            path: full,
            relPath: relChild,
            kind: 'loop',
            message: 'Link to a folder already walked (a loop or a duplicate) skipped.',
          });
          continue;
        }
        w.linkedTargets.add(realChild);
      }
      yield* walkDir(w, full, relChild, realChild);
      continue;
    }
    if (!isFile) continue; // sockets, devices, fifos
    const ext = normaliseExtension(extname(e.name));
    const wanted =
      (w.include.has(ext) && !NEVER_MEDIA_EXTENSIONS.includes(ext)) || w.alsoInclude?.(e.name) === true;
    if (!wanted) continue;
    if (w.exclude.test(relChild, e.name)) continue;
    if (!st) {
      try {
        st = await stat(full);
      } catch (err) {
        // Deleted between listing and stat, or the card is going away.
        w.warn({
          path: full,
          relPath: relChild,
          kind: 'unreadable',
          message: `Cannot read file: ${(err as Error).message}`,
          cause: err,
        });
        continue;
      }
    }
    if (st.size === 0) continue; // a write cut short (battery, card pulled): nothing to upload
    yield { path: full, root: w.root, relPath: relChild, size: st.size, mtimeMs: st.mtimeMs };
  }
}

/**
 * Streams the media files under each root, in a deterministic order (roots
 * in the order given, then sorted names, depth first). Throws DmsError
 * `source-missing` before yielding anything if a root does not exist,
 * `invalid-input` if a root is not a folder, `cancelled` on abort. Anything
 * that goes wrong inside a root is reported through onWarning and skipped.
 */
export async function* discoverMedia(
  roots: string[],
  opts: DiscoverOptions = {},
): AsyncGenerator<DiscoveredFile> {
  const include = new Set((opts.include ?? DEFAULT_MEDIA_EXTENSIONS).map(normaliseExtension));
  const exclude = compileExcludes(opts.exclude ?? []);
  const warn = (w: DiscoverWarning): void => opts.onWarning?.(w);

  // Check every root first, so a missing card fails the scan before any file is queued.
  const resolved: { root: string; real: string }[] = [];
  for (const r of roots) {
    const root = resolve(r);
    let st: Stats;
    try {
      st = await stat(root);
    } catch (err) {
      const e = toDmsError(err, 'source-missing');
      throw new DmsError('source-missing', `Folder not found: ${root} (is the card inserted?)`, {
        cause: err,
        retryable: e.retryable,
      });
    }
    if (!st.isDirectory()) throw new DmsError('invalid-input', `Not a folder: ${root}`);
    resolved.push({ root, real: await realpath(root) });
  }

  const linkedTargets = new Set<string>();
  for (const { root, real } of resolved) {
    checkAbort(opts.signal);
    const w: Walk = {
      root,
      realRoot: real,
      include,
      exclude,
      signal: opts.signal,
      warn,
      linkedTargets,
      alsoInclude: opts.alsoInclude,
    };
    yield* walkDir(w, root, '', real);
  }
}
