import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { z as Z } from 'zod';
import { MEDIA_FILE_TYPES } from '../shared/domain.js';
import { DmsError } from './errors.js';
import { CREW_LANE_NAMES } from './queue/lanes.js';
import { parseTimetable } from './link/timetable.js';
import { lazySchema } from './zod.js';

/** The settings' schema, made with zod when first needed (zod.ts): a run with no settings file never loads it. */
const buildConfigSchema = (z: typeof Z) => {
  const laneSetting = z.enum(CREW_LANE_NAMES).optional();

  const httpUrl = z
    .string()
    .trim()
    .refine((v) => {
      try {
        const u = new URL(v);
        return (u.protocol === 'http:' || u.protocol === 'https:') && u.hostname !== '';
      } catch {
        return false;
      }
    }, 'must be a web address starting with http:// or https://, like https://media.example.com');

  const deviceKey = z.string().regex(/^0-\d+-\d+$/, 'must be an aircraft key like 0-89-0 (M350)');
  /** An aircraft serial as DJI prints it on the aircraft and in the app (letters and digits). */
  const aircraftSerial = z
    .string()
    .trim()
    .regex(
      /^[A-Za-z0-9-]{4,64}$/,
      'must be the aircraft serial number (letters and digits, as printed on the aircraft)',
    );

  /**
   * A folder or file on this computer named in the settings, written by hand
   * as often as by the app: `~` is the home folder (`~/DroneCopies`, the
   * README's example, is not a folder named "~" wherever the app was
   * started), and a relative path is refused, naming the setting, since it
   * would depend on the folder the app happens to start in.
   */
  const localPath = (example: string) =>
    z
      .string()
      .trim()
      .min(1, 'is required')
      // Made plain too (`/media/T7/` and `/media/T7` are one folder).
      .transform((v) => {
        const p = expandHome(v);
        return path.isAbsolute(p) ? path.resolve(p) : p;
      })
      .refine(
        (v) => path.isAbsolute(v),
        `must be a full path, like ${example} (a relative one would depend on the folder the app is started in)`,
      );

  /**
   * The settings file shared by the CLI and the desktop app. Every field has a
   * default so an empty or missing file means "use the built-in local service".
   */
  return z.object({
    server: z
      .object({
        url: httpUrl,
        workspaceId: z.string().trim().min(1, 'is required').max(128),
      })
      .optional(),
    /** Use the reference service in-process even if a server is configured. */
    useLocalService: z.boolean().default(false),
    /** PEM file with extra CA certificates for self-hosted servers. */
    caFile: localPath('~/certs/office-ca.pem').optional(),
    autoSyncCards: z.boolean().default(true),
    ejectAfterSync: z.boolean().default(false),
    mountRoots: z.array(localPath('/media/pilot')).default([]),
    watchedFolders: z.array(localPath('~/Flights')).default([]),
    include: z
      .array(z.string().regex(/^[A-Za-z0-9]{1,10}$/, 'file types are extensions like JPG or MP4'))
      .default([...MEDIA_FILE_TYPES]),
    exclude: z.array(z.string()).default([]),
    /**
     * Local destinations every card is copied to first, verified by reading the
     * copy back: the card can be pulled once it is locally safe, the upload
     * goes on from the copies. 'archive': kept; 'staging': a card's copy there
     * may be deleted by the agent once every file of it is verified in the
     * workspace and older than `keepDays`.
     */
    destinations: z
      .array(
        z.object({
          path: localPath('~/DroneCopies or /media/pilot/T7_BACKUP'),
          label: z.string().trim().max(64).optional(),
          role: z.enum(['archive', 'staging']).default('archive'),
          keepDays: z.number().int().min(0).max(3650).optional(),
        }),
      )
      .max(8, 'at most 8 destinations')
      // One folder named twice (in the settings and by --copy-to, or `T7` and `T7/`) is one
      // destination, as the settings first name it: two made one copy race itself.
      .transform((list) => list.filter((d, i) => list.findIndex((o) => o.path === d.path) === i))
      .default([]),
    concurrency: z
      .object({
        files: z.number().int().min(1, 'at least 1').max(16, 'at most 16').default(3),
        parts: z.number().int().min(1, 'at least 1').max(16, 'at most 16').default(4),
      })
      .default({ files: 3, parts: 4 }),
    partSizeMiB: z.number().int().min(5, 'at least 5 MiB (the S3 minimum)').max(512).default(8),
    /**
     * After a callback whose answer was lost (timeout, cut connection, 5xx, an
     * unreadable answer) the server may still be committing it: the check
     * (fast-upload) and any re-post wait at least this long. Default 60 s, twice
     * the 30-s request timeout; a server slower than that to commit could still
     * get a second callback.
     */
    callbackSettleSeconds: z.number().int().min(0).max(3600).default(60),
    /**
     * "Safe to format" needs each object checked in the bucket. An upload is
     * checked when the store accepts it (its Content-MD5, or a completed
     * multipart); when a card comes to rest, objects whose last check is older
     * than this are looked at again (HEAD), so an object deleted since is
     * caught. 0 = every time.
     */
    recheckAfterMinutes: z
      .number()
      .int()
      .min(0)
      .max(7 * 24 * 60)
      .default(10),
    /**
     * What goes first: the lane of each class of file (queue/lanes.ts). Lanes
     * go in the order first, photos, videos, previews; a class left out keeps
     * its default (RTK files, logs and manifests first, then photos, videos,
     * previews and MISC/).
     */
    lanes: z
      .object({
        rtk: laneSetting,
        log: laneSetting,
        manifest: laneSetting,
        photo: laneSetting,
        video: laneSetting,
        preview: laneSetting,
        misc: laneSetting,
      })
      .strict()
      .default({}),
    /**
     * A connection on which less than 1 KiB/s moved for this long (the link
     * up) is dropped and its part sent again on a new one.
     */
    stallSeconds: z.number().int().min(1).max(3600).default(30),
    /** 0 = unlimited. */
    bandwidthLimitKiBps: z.number().int().min(0).max(10_000_000).default(0),
    /**
     * The link (docs/link.md). `timetable`: a bandwidth timetable in rclone's
     * --bwlimit syntax ("08:00,512k 12:00,10M 23:00,off"); when set it rules
     * instead of bandwidthLimitKiBps, and a change is in effect within 10 s.
     * `networks`, by network key (`link status`): the crew's pin (metered /
     * unmetered / ask, over what the OS says) and a data budget per day or month.
     */
    link: z
      .object({
        timetable: z
          .string()
          .trim()
          .superRefine((v, ctx) => {
            try {
              parseTimetable(v);
            } catch (err) {
              ctx.addIssue({ code: 'custom', message: `cannot be read: ${(err as Error).message}` });
            }
          })
          .optional(),
        networks: z
          .record(
            z.string(),
            z
              .object({
                label: z.string().trim().max(128).optional(),
                pin: z.enum(['metered', 'unmetered', 'ask']).optional(),
                budget: z
                  .object({
                    mib: z.number().int().min(1, 'at least 1 MiB').max(1e9),
                    per: z.enum(['day', 'month']),
                  })
                  .strict()
                  .optional(),
              })
              .strict(),
          )
          .default({}),
      })
      .default({ networks: {} }),
    aircraftDefault: deviceKey.optional(),
    /**
     * The aircraft's serial, sent as `sn` for files that do not carry it
     * themselves (payload cameras such as the H20T) when no other file of the
     * flight does. Servers like DJI's sample server require an `sn`.
     */
    aircraftSerial: aircraftSerial.optional(),
    startAtLogin: z.boolean().default(true),
    /**
     * The crew's lowest useful height above take-off, metres: photos taken
     * below it are flagged in the flight checks (offload/frames.ts). Unset:
     * only photos far below their flight's own height (take-off, landing).
     */
    flightMinHeightM: z.number().min(0).max(1000).optional(),
    /**
     * Leave the photos the flight checks flag as probably unusable out of a
     * metered upload (issue 32): they wait for an unmetered network (the
     * link holds their lane, even after a yes); they stay on the card and in
     * the local copies. Off: they go with the other photos.
     */
    holdFlaggedOnMetered: z.boolean().default(false),
    /**
     * Base-map tiles for the flight map, fetched by the app (never by the
     * window) from this one source, e.g. `https://tile.openstreetmap.org/{z}/{x}/{y}.png`.
     * Unset: the map shows points, track, scale and north without a base map.
     */
    mapTiles: z
      .object({
        url: httpUrl.refine(
          (u) => ['{z}', '{x}', '{y}'].every((p) => u.includes(p)),
          'must hold {z}, {x} and {y}',
        ),
        attribution: z.string().max(200).default(''),
        maxZoom: z.number().int().min(1).max(22).default(19),
      })
      .optional(),
    /** Per-card settings by card id (see `watch --json` / the app's card history); override the global ones (aircraftSerial: the card's aircraft). */
    cards: z
      .record(
        z.string(),
        z
          .object({
            autoSync: z.boolean().optional(),
            ejectAfterSync: z.boolean().optional(),
            aircraftSerial: aircraftSerial.optional(),
          })
          .strict(),
      )
      .default({}),
  });
};

/** The settings' schema (built at its first use). */
export const configSchema = lazySchema(buildConfigSchema);

export type Config = Z.infer<ReturnType<typeof buildConfigSchema>>;
export type ConfigInput = Z.input<ReturnType<typeof buildConfigSchema>>;

/**
 * What a missing settings file means: the schema's defaults, written out so
 * that a run without settings never loads zod (config.test.ts holds them
 * equal to `configSchema().parse({})`).
 */
const DEFAULTS: Config = {
  useLocalService: false,
  autoSyncCards: true,
  ejectAfterSync: false,
  mountRoots: [],
  watchedFolders: [],
  include: [...MEDIA_FILE_TYPES],
  exclude: [],
  destinations: [],
  concurrency: { files: 3, parts: 4 },
  partSizeMiB: 8,
  callbackSettleSeconds: 60,
  recheckAfterMinutes: 10,
  lanes: {},
  stallSeconds: 30,
  bandwidthLimitKiBps: 0,
  link: { networks: {} },
  startAtLogin: true,
  holdFlaggedOnMetered: false,
  cards: {},
};

/** `~` or `~/…` (`~\\…` too) with the home folder in its place; any other path as it is. */
export function expandHome(p: string, home: string = os.homedir()): string {
  return /^~(?=$|[\\/])/.test(p) ? path.join(home, p.slice(1)) : p;
}

/** A path given on the command line: `~` expanded (when the shell did not, it was quoted), then made absolute. */
export function commandLinePath(p: string): string {
  return path.resolve(expandHome(p.trim()));
}

export function defaultConfig(): Config {
  return structuredClone(DEFAULTS);
}

/** Turns zod issues into one plain sentence per problem, naming the setting. */
export function describeIssues(error: Z.ZodError): string {
  return error.issues
    .map((i) => {
      const where = i.path.length ? i.path.join('.') : 'settings';
      return `${where} ${i.message}`;
    })
    .join('; ');
}

export function parseConfig(value: unknown, source = 'settings'): Config {
  const result = configSchema().safeParse(value);
  if (!result.success) {
    throw new DmsError('invalid-input', `The ${source} are not valid: ${describeIssues(result.error)}.`, {
      retryable: false,
    });
  }
  return result.data;
}

export function loadConfig(file: string): Config {
  let text: string;
  try {
    text = fs.readFileSync(file, 'utf8');
  } catch (err) {
    if ((err as { code?: string }).code === 'ENOENT') return defaultConfig();
    throw new DmsError(
      'invalid-input',
      `The settings file ${file} cannot be read: ${(err as Error).message}`,
    );
  }
  let json: unknown;
  try {
    // A byte-order mark (Windows Notepad saves one) is not part of the JSON.
    json = JSON.parse(text.replace(/^\uFEFF/, ''));
  } catch {
    throw new DmsError(
      'invalid-input',
      `The settings file ${file} is not valid JSON. Fix it or delete it to start from the defaults.`,
      { retryable: false },
    );
  }
  try {
    return parseConfig(json, `settings in ${file}`);
  } catch (err) {
    if (!(err instanceof DmsError)) throw err;
    throw new DmsError('invalid-input', `${err.message} Fix them in that file, then run again.`, {
      retryable: false,
    });
  }
}

/** Writes atomically (temp file + rename) so a crash never leaves half a file. */
export function saveConfig(file: string, config: Config): void {
  fs.mkdirSync(path.dirname(file), { recursive: true });
  const tmp = `${file}.${process.pid}.tmp`;
  fs.writeFileSync(tmp, JSON.stringify(config, null, 2) + '\n', { mode: 0o600 });
  fs.renameSync(tmp, file);
}
