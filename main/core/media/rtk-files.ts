/**
 * Which files of a card are RTK / PPK files, the ones survey crews post-process
 * their flights with. They are not media (no picture, no metadata for the
 * callback) but a flight is useless for PPK without them, so they travel to
 * the bucket beside their flight's photos.
 *
 * What DJI writes (user manuals of Phantom 4 RTK, Zenmuse P1, Mavic 3E/3T,
 * Matrice 4E/4T; names seen on cards):
 * - `<base>_Timestamp.MRK`: one line per exposure (see mrk.ts). Older P1 and
 *   lidar payloads write other `*.MRK` names; every `.MRK` counts.
 * - `<base>_Rinex.obs`: the aircraft's raw GNSS observations (RINEX 3). RINEX 2
 *   short names `*.yyO` (and `*.rnx` long names) are the same kind of file.
 * - `<base>_PPKNAV.nav`: broadcast navigation (ephemeris). RINEX 2 short names
 *   `*.yyN` (GPS), `.yyG` (GLONASS), `.yyL` (Galileo), `.yyP` (mixed),
 *   `.yyQ` (QZSS), `.yyH` (SBAS) and `*.nav` are navigation too.
 * - `<base>_PPKRAW.bin`: the receiver's raw log (the .obs is made from it).
 *   Only this name: a bare `.bin` on a card is anything (firmware, logs).
 * - `*.RTK`, `*.RTB`, `*.RTL`: RTCM 3 observation logs (Matrice 4 writes a
 *   `.rtk` at 5 Hz; the lidar payloads write these three beside their data).
 * `<base>` is `DJI_<YYYYMMDDHHMM>_<NNN>` (Pilot 2 aircraft) or `100_0001`
 * (Phantom 4 RTK). Names are compared case-insensitively: cards come from
 * FAT/exFAT and firmware writes both `.OBS` and `.obs`.
 *
 * classifyCardFile answers for one path relative to the card root; the media
 * answer repeats discovery's rules (main/core/media/discover.ts) for a single
 * name, using its exported lists, so both always agree.
 */
import { DEFAULT_MEDIA_EXTENSIONS, NEVER_MEDIA_EXTENSIONS, normaliseExtension } from './discover.js';

export type RtkKind = 'mrk' | 'obs' | 'nav' | 'ppkraw' | 'rtcm';

/** Plain names for each kind, for reports and messages. */
export const RTK_KIND_LABELS: Readonly<Record<RtkKind, string>> = {
  mrk: 'exposure log (MRK)',
  obs: 'GNSS observations (RINEX)',
  nav: 'GNSS navigation (RINEX)',
  ppkraw: 'raw GNSS log (PPKRAW.bin)',
  rtcm: 'RTCM log (RTK/RTB/RTL)',
};

const RULES: ReadonlyArray<{ kind: RtkKind; test: RegExp }> = [
  { kind: 'mrk', test: /\.mrk$/i },
  { kind: 'obs', test: /(\.obs|\.\d\do|\.rnx)$/i },
  { kind: 'nav', test: /(\.nav|\.\d\d[nglpqh])$/i },
  { kind: 'ppkraw', test: /_ppkraw\.bin$/i },
  { kind: 'rtcm', test: /\.(rtk|rtb|rtl)$/i },
];

/** The RTK kind of a file name, or undefined when it is not an RTK/PPK file. */
export function rtkKindOf(name: string): RtkKind | undefined {
  return RULES.find((r) => r.test.test(name))?.kind;
}

export type CardFileClass = 'media' | 'rtk' | 'ignore';

export interface ClassifyOptions {
  /** Media extensions (discovery's `include`); default DEFAULT_MEDIA_EXTENSIONS. */
  include?: readonly string[];
}

/**
 * 'media', 'rtk' or 'ignore' for a path relative to the card root ("/" or "\").
 * Ignored like discovery does: hidden names (macOS `._` forks, `.Trashes`)
 * anywhere in the path, anything under a `MISC` folder (DJI's logs and
 * caches), thumbnails and proxies (LRF, THM, SCR, SRT), and everything else.
 */
export function classifyCardFile(relPath: string, opts: ClassifyOptions = {}): CardFileClass {
  const parts = relPath.split(/[\\/]+/).filter((p) => p !== '' && p !== '.');
  const name = parts.at(-1);
  if (name === undefined) return 'ignore';
  if (parts.some((p) => p.startsWith('.'))) return 'ignore';
  if (parts.slice(0, -1).some((p) => p.toUpperCase() === 'MISC')) return 'ignore';
  if (rtkKindOf(name)) return 'rtk';
  const dot = name.lastIndexOf('.');
  const ext = dot > 0 ? normaliseExtension(name.slice(dot)) : '';
  const include = new Set((opts.include ?? DEFAULT_MEDIA_EXTENSIONS).map(normaliseExtension));
  return include.has(ext) && !NEVER_MEDIA_EXTENSIONS.includes(ext) ? 'media' : 'ignore';
}
