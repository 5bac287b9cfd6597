import { access, readdir, realpath, stat } from 'node:fs/promises';
import { constants, statSync, type Stats } from 'node:fs';
import { setImmediate as nextTurn } from 'node:timers/promises';
import { extname, resolve, sep } from 'node:path';
import { MEDIA_FILE_TYPES, SIDECAR_FILE_TYPES, VIDEO_FILE_TYPES } from '../../shared/domain.js';
import { DmsError, toDmsError } from '../errors.js';

const lowerCase = (types: readonly string[]): readonly string[] => types.map((t) => t.toLowerCase());

/** Camera originals worth uploading (lowercase, no dot). */
export const DEFAULT_MEDIA_EXTENSIONS = lowerCase(MEDIA_FILE_TYPES);

/** Side-car files (LRF, THM, SCR, SRT): never uploaded as media (no callback), even if listed in `include`. */
export const NEVER_MEDIA_EXTENSIONS = lowerCase(SIDECAR_FILE_TYPES);

/** Videos: exifr cannot read their metadata (see metadata.ts). */
export const VIDEO_EXTENSIONS = lowerCase(VIDEO_FILE_TYPES);

/**
 * What a file of a card is to the agent. Every file is kept: media (photos
 * and videos: a callback each), RTK/PPK files of a flight, and everything
 * else (SRT flight logs, LRF previews, MISC/, anything): locally copied and
 * stored in the bucket beside its flight, no callback.
 */
export type FileKind = 'media' | 'rtk' | 'other';

export interface DiscoveredFile {
  /** Absolute path. */
  path: string;
  kind: FileKind;
  /** The absolute root it was found under. */
  root: string;
  /** Relative to root, "/"-separated on every platform. */
  relPath: string;
  size: number;
  mtimeMs: number;
}

/**
 * Blocking skips whose message says all of it (what holds the card and what to do): the
 * verdicts say them as they are, not as a file "not kept anywhere".
 */
export function saidAsIs(kind: string | undefined): boolean {
  return kind === 'growing' || kind === 'rest-of-card';
}

export interface DiscoverWarning {
  path: string;
  /** Relative to the root, "/"-separated. */
  relPath: string;
  /**
   * outside-root: a link leading out of the card or folder (never followed);
   * broken-link, loop: skipped for what they are; unreadable: a folder or
   * file that cannot be read; bad-name: a name that is not valid text (it
   * cannot be opened by name); not-a-file: a pipe, device or socket (no data);
   * system: a computer's own files (.Trashes, ._ forks...), not the drone's;
   * excluded: by a pattern of the settings, on purpose; own: a folder
   * Drone Media Sync writes itself (its state, a local copies' destination).
   */
  kind:
    | 'outside-root'
    | 'broken-link'
    | 'unreadable'
    | 'loop'
    | 'bad-name'
    | 'not-a-file'
    | 'system'
    | 'excluded'
    | 'own'
    /** Being written when the card was read (a copy in progress): read once it settles. */
    | 'growing'
    /**
     * The folder synced is one folder of a card (`sync /media/CARD/DCIM/DJI_…_001`): the
     * card's other files were not read, so the card is safe to format from nowhere.
     */
    | 'rest-of-card';
  message: string;
  /** Its content exists on the card only and was not kept: the card is not safe to format while it is there. */
  blocking: boolean;
  cause?: unknown;
}

/** A computer's own files on a card (Finder, Spotlight, Windows' recycle bin): never the drone's. */
const SYSTEM_NAMES = new Set(
  [
    '.Spotlight-V100',
    '.Trashes',
    '.fseventsd',
    '.TemporaryItems',
    '.DocumentRevisions-V100',
    '.DS_Store',
    'System Volume Information',
    '$RECYCLE.BIN',
    'Thumbs.db',
    'desktop.ini',
  ].map((n) => n.toLowerCase()),
);

export function isSystemName(name: string): boolean {
  return name.startsWith('._') || SYSTEM_NAMES.has(name.toLowerCase());
}

export interface DiscoverOptions {
  /** Media extensions ("jpg", ".JPG" and "*.jpg" all work): a callback each; default DEFAULT_MEDIA_EXTENSIONS. */
  include?: string[];
  /**
   * Patterns to skip, case-insensitive. Without "/": matched against every
   * file or folder name ("PANORAMA", "*.tmp"). With "/": matched against the
   * whole relPath ("DCIM/100MEDIA", "DCIM/PANORAMA/*.JPG"). `*` stays within
   * one name, `**` crosses folders, `?` is one character.
   */
  exclude?: string[];
  signal?: AbortSignal;
  /** RTK/PPK files of a flight (their own kind: the flight's report reads them). */
  isRtk?: (name: string) => boolean;
  /** Everything not kept is reported here with its reason (links out, unreadable, excluded...). */
  onWarning?: (warning: DiscoverWarning) => void;
  /**
   * Folders Drone Media Sync writes itself (its queue and settings, the local
   * copies' destinations), with what each is: never read as a source's files
   * when a source holds one (`sync ~`), nor copied into themselves.
   */
  own?: readonly OwnFolder[];
}

export interface OwnFolder {
  path: string;
  /** What it holds, for the crew: "its queue and settings", "local copies (T7_BACKUP)". */
  what: string;
}

/** MISC holds DJI's logs, thumbnails and caches: kept, never media. */
const isMisc = (name: string): boolean => name.toUpperCase() === 'MISC';

/**
 * The kind of a regular file by its folder, name and size. `inMisc`: a
 * folder of its path is MISC (worked out once per folder, not per file).
 */
function kindOf(w: Walk, inMisc: boolean, name: string, size: number): FileKind {
  if (w.isRtk?.(name)) return 'rtk';
  if (inMisc || isMisc(name)) return 'other';
  const ext = w.extensions.get(extname(name)) ?? mediaExtension(w, extname(name));
  // An empty "photo" is no photo (a write cut short): kept as a file, not sent as media.
  return ext && size > 0 ? 'media' : 'other';
}

/** Whether files with this extension (as found: ".JPG") are media, remembered for the walk. */
function mediaExtension(w: Walk, found: string): boolean {
  const ext = normaliseExtension(found);
  const media = w.include.has(ext) && !NEVER_MEDIA_EXTENSIONS.includes(ext);
  w.extensions.set(found, media);
  return media;
}

/** A child of a folder whose path is normalised already (the root is resolved): no join's normalising per file. */
const childOf = (dir: string, name: string): string => (dir.endsWith(sep) ? dir + name : dir + sep + name);

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
  isRtk: ((name: string) => boolean) | undefined;
  signal: AbortSignal | undefined;
  warn: (w: DiscoverWarning) => void;
  /** Real paths of folders entered through a symlink: a second visit is a loop or a duplicate. */
  linkedTargets: Set<string>;
  /** Who reads (POSIX), to tell from a file's mode that it may be read; null: ask access() for each file. */
  reader: Reader | null;
  /** Extensions as found on the card (".JPG") and whether they are media's. */
  extensions: Map<string, boolean>;
  /** The own folders by real path (empty: none is under any root). */
  own: ReadonlyMap<string, string>;
}

interface Reader {
  uid: number;
  groups: ReadonlySet<number>;
}

/** This process's user and groups (null on Windows, where modes say nothing of who may read). */
function readerOf(): Reader | null {
  if (typeof process.getuid !== 'function' || typeof process.getgid !== 'function') return null;
  return { uid: process.getuid(), groups: new Set([process.getgid(), ...(process.getgroups?.() ?? [])]) };
}

/**
 * The file's mode grants this reader read access (the owner's, the group's
 * or the others' bits, as the kernel picks them). False only means "not
 * from the mode": access() is asked then (root, ACLs, a mode 000 file).
 * Saves one access() per file of a card (issue 33: 10,000 thread-pool
 * round trips on a re-inserted card).
 */
function modeGrantsRead(st: Stats, r: Reader | null): boolean {
  if (r === null) return false;
  if (st.uid === r.uid) return (st.mode & 0o400) !== 0;
  if (r.groups.has(st.gid)) return (st.mode & 0o040) !== 0;
  return (st.mode & 0o004) !== 0;
}

const byName = (a: string, b: string): number => (a < b ? -1 : a > b ? 1 : 0);

function checkAbort(signal: AbortSignal | undefined): void {
  if (signal?.aborted) throw new DmsError('cancelled', 'Discovery was cancelled.', { cause: signal.reason });
}

/** Files found in one folder handed on together (and the event loop let through between). */
const BATCH = 512;

/**
 * One folder: its names are read in one call and sorted so the order is the
 * same on every run and platform (code-unit order, not locale), then handled
 * one by one; sub-folders are walked depth first in that order. Only one
 * folder's names are held at a time per level. Files are handed on in
 * batches, each stat'ed in a tight synchronous loop: a re-inserted card of
 * 10,000 files was 10,000 thread-pool round trips and as many promises
 * (issue 33: 0.29 s of a run with nothing to do); between batches the event
 * loop runs (timers, Ctrl+C, the window).
 */
async function* walkDir(
  w: Walk,
  dir: string,
  rel: string,
  realDir: string,
): AsyncGenerator<DiscoveredFile[]> {
  const entries: { name: string; dir: boolean; file: boolean; link: boolean }[] = [];
  try {
    for (const e of await readdir(dir, { withFileTypes: true }))
      entries.push({ name: e.name, dir: e.isDirectory(), file: e.isFile(), link: e.isSymbolicLink() });
  } catch (err) {
    const code = (err as { code?: string }).code;
    w.warn({
      path: dir,
      relPath: rel,
      kind: 'unreadable',
      message:
        code === 'ENOENT' && rel.includes('\ufffd')
          ? `The folder ${rel} has a name that is not valid text: nothing in it can be read. Rename it on a computer, then sync again.`
          : `The folder ${rel || dir} cannot be read (${code ?? (err as Error).message}): nothing in it is kept.`,
      blocking: true,
      cause: err,
    });
    return;
  }
  entries.sort((a, b) => byName(a.name, b.name));

  const inMisc = rel.split('/').some(isMisc);
  let found: DiscoveredFile[] = [];
  for (const e of entries) {
    checkAbort(w.signal);
    const full = childOf(dir, e.name);
    const relChild = rel ? `${rel}/${e.name}` : e.name;
    const skip = (kind: DiscoverWarning['kind'], message: string, blocking: boolean, cause?: unknown) =>
      w.warn({ path: full, relPath: relChild, kind, message, blocking, ...(cause ? { cause } : {}) });
    // A computer's own files (macOS ._ resource forks, .Spotlight-V100, .Trashes...): not the drone's.
    if (isSystemName(e.name)) {
      skip('system', `${relChild}: a computer's own file, not the drone's: not kept.`, false);
      continue;
    }
    // Names the file system gave as invalid UTF-8 come back with U+FFFD: they cannot be opened by that name.
    if (e.name.includes('\ufffd')) {
      const what = e.dir
        ? `The folder ${relChild} has a name that is not valid text: nothing in it`
        : `${relChild} has a name that is not valid text: it`;
      skip(
        'bad-name',
        `${what} can be read by Drone Media Sync, so it is kept nowhere. Rename it on a computer, then sync again.`,
        true,
      );
      continue;
    }
    if (w.exclude.test(relChild, e.name)) {
      skip('excluded', `${relChild}: excluded in the settings: not kept.`, false);
      continue;
    }
    let isDir = e.dir;
    let isFile = e.file;
    let st: Stats | undefined;
    let realChild = childOf(realDir, e.name);
    if (e.link) {
      try {
        realChild = await realpath(full);
        st = await stat(realChild);
      } catch (err) {
        skip('broken-link', `${relChild} is a link to nothing: skipped.`, false, err);
        continue;
      }
      // Card contents are not trusted: a link to ~/.ssh/id_ed25519 named
      // DJI_0777.JPG, or to the home folder, must never be read, let alone
      // uploaded. The check is on the real target, not on the link's name.
      if (!isInside(realChild, w.realRoot)) {
        skip(
          'outside-root',
          `${relChild} is a link to ${realChild}, outside ${w.root}: skipped, nothing of it is read or sent.`,
          false,
        );
        continue;
      }
      isDir = st.isDirectory();
      isFile = st.isFile();
    }
    if (isDir) {
      const own = w.own.get(realChild);
      if (own !== undefined) {
        skip('own', `${relChild} is Drone Media Sync's own folder (${own}): not read.`, false);
        continue;
      }
      if (e.link) {
        const prefix = realChild.endsWith(sep) ? realChild : realChild + sep;
        const isAncestor = realDir === realChild || realDir.startsWith(prefix);
        if (isAncestor || w.linkedTargets.has(realChild)) {
          skip(
            'loop',
            `${relChild} is a link to a folder already read (a loop or a duplicate): skipped.`,
            false,
          );
          continue;
        }
        w.linkedTargets.add(realChild);
      }
      // Depth first: what this folder found before the sub-folder goes first.
      if (found.length > 0) yield found;
      found = [];
      yield* walkDir(w, full, relChild, realChild);
      continue;
    }
    if (!isFile) {
      // Sockets, devices, pipes: no data to keep, and reading a pipe would wait forever.
      skip(
        'not-a-file',
        `${relChild} is not a regular file (a pipe, device or socket): it holds no data to keep.`,
        false,
      );
      continue;
    }
    if (!st) {
      try {
        st = statSync(full);
      } catch (err) {
        // Deleted between listing and stat, or the card is going away.
        const code = (err as { code?: string }).code ?? (err as Error).message;
        skip('unreadable', `${relChild} cannot be read (${code}): it is kept nowhere.`, true, err);
        continue;
      }
    }
    // A file this user may not read (its permissions): named and left for the next run, not
    // queued to fail at its first read; once its permissions are fixed the next run takes it.
    if (!modeGrantsRead(st, w.reader) && (await notPermitted(full))) {
      skip(
        'unreadable',
        `${relChild} cannot be read (permission denied): it is left for the next run; fix its permissions on a computer (or copy it off by hand), then sync again.`,
        true,
      );
      continue;
    }
    found.push({
      path: full,
      kind: kindOf(w, inMisc, e.name, st.size),
      root: w.root,
      relPath: relChild,
      size: st.size,
      mtimeMs: st.mtimeMs,
    });
    if (found.length >= BATCH) {
      yield found;
      found = [];
      await nextTurn();
    }
  }
  if (found.length > 0) yield found;
}

/**
 * Streams every file under each root with its kind, in a deterministic order (roots
 * in the order given, then sorted names, depth first). Throws DmsError
 * `source-missing` before yielding anything if a root does not exist,
 * `invalid-input` if a root is not a folder, `cancelled` on abort. Anything
 * that goes wrong inside a root is reported through onWarning and skipped.
 */
export async function* discoverFiles(
  roots: string[],
  opts: DiscoverOptions = {},
): AsyncGenerator<DiscoveredFile> {
  for await (const batch of discoverBatches(roots, opts))
    for (const f of batch) {
      checkAbort(opts.signal);
      yield f;
    }
}

/**
 * discoverFiles a batch at a time (the files of one folder, at most a few
 * hundred): the same files in the same order, without a promise per file.
 */
export async function* discoverBatches(
  roots: string[],
  opts: DiscoverOptions = {},
): AsyncGenerator<DiscoveredFile[]> {
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
  const reader = readerOf();
  const own = await ownFolders(opts.own ?? []);
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
      isRtk: opts.isRtk,
      reader,
      extensions: new Map(),
      own,
    };
    yield* walkDir(w, root, '', real);
  }
}

/** The own folders that exist, by real path (one not made yet holds nothing to skip). */
async function ownFolders(folders: readonly OwnFolder[]): Promise<Map<string, string>> {
  const out = new Map<string, string>();
  for (const f of folders) {
    try {
      out.set(await realpath(resolve(f.path)), f.what);
    } catch {
      // not there (yet): nothing of it can be under a root
    }
  }
  return out;
}

/** This user may not read the file (EACCES, EPERM); other failures are said at its read. */
async function notPermitted(file: string): Promise<boolean> {
  try {
    await access(file, constants.R_OK);
    return false;
  } catch (err) {
    const code = (err as { code?: string }).code;
    return code === 'EACCES' || code === 'EPERM';
  }
}
