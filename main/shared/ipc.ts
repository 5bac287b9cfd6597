/**
 * The one IPC contract between the desktop shell (main/electron) and the
 * window (renderer/). Every channel is listed here with its request and
 * response types; the preload exposes one function per channel, and main
 * validates every request with the zod schema below before using it.
 *
 * Nothing in here may carry a secret: the renderer never sees the access
 * token or bucket credentials (only whether one is stored).
 */
import { z } from 'zod';
import { QUEUE_FILTERS } from './domain.js';
import type { FlightPointView, FlightSummaryFigures, LatLngView } from './flight-map.js';
import type { LaneEta } from './lanes.js';
import type { FileState, HaltReason, Outcome, RunStateName } from './states.js';

export type { FlightPointView, LatLngView, PointState } from './flight-map.js';

// ---------- values shown by the window ----------

export type { HaltReason, RunStateName } from './states.js';

export interface ProgressView {
  filesTotal: number;
  filesDone: number;
  filesFailed: number;
  bytesTotal: number;
  bytesDone: number;
  bytesSent: number;
  /** bytes per second */
  rate: number;
  etaSeconds: number | null;
  currentSource: string | null;
  /** Per lane (what goes first): what is left and when it should be in the workspace (shared/lanes.ts lanesLine). */
  lanes?: LaneEta[];
}

/** One verdict of a card: safe or not, its one line, and what to do first (one sentence per problem). */
export interface VerdictView {
  safe: boolean;
  message: string;
  reasons: string[];
}

/** Locally safe: every file of the card copied to every local destination and verified by reading it back. */
export interface LocalVerdictView extends VerdictView {
  /** Files of the card. */
  files: number;
  /** Files verified on every destination (the bar: verified / files). */
  verified: number;
  /** Each destination ("SSD", "T7_BACKUP") with its files verified there. */
  destinations: Array<{ label: string; verified: number }>;
}

/** In the workspace: acknowledged by the server and checked in its bucket. */
export interface WorkspaceVerdictView extends VerdictView {
  /** Bytes of the card's files, and of those in the workspace (the bar), live while the upload goes on. */
  bytesTotal: number;
  bytesThere: number;
  /** "3.1 GB of 58 GB", in the words of the verdicts' own lines. */
  amount: string;
  /**
   * The card came to rest and was checked in the bucket: this is its verdict.
   * False while the upload goes on from the copies (reasons are then empty).
   */
  final: boolean;
}

/** A card inserted now: its two verdicts once made, and what stopped on the way. */
export interface CardView {
  id: string;
  label: string;
  root: string;
  /** No server chosen yet: the media files found on it, which wait for a sign-in (nothing is recorded). Else null. */
  waitingForSignIn: number | null;
  /** The card's one line: safe to format when either verdict holds. Null until its first verdict. */
  headline: { safe: boolean; message: string } | null;
  /** Null: no local destination (none set), or its copies are not all made yet. */
  local: LocalVerdictView | null;
  /** Null until the card's first verdict. */
  workspace: WorkspaceVerdictView | null;
  /** Local destinations that stopped for this card (full, unplugged, too small), until its next scan. */
  stopped: Array<{ destination: string; message: string }>;
  /** Destination folders made for this card (not there yet, or gone from a plugged-in drive): said once. */
  created: Array<{ destination: string; message: string }>;
  /**
   * The verdict's advisory third line (issue 32): a flight's photos that look unusable, "… — look
   * before you leave". Never part of safe or not. Absent/null when there is nothing to look at.
   */
  advisory?: string | null;
}

/** Where uploads go, as the first-run steps and the sign-in panel say it. Never a secret. */
export interface AccountView {
  /** 'none': no server chosen yet; 'local': the built-in local service. */
  kind: 'none' | 'server' | 'local';
  /** The server's address (kind 'server'), else null. */
  server: string | null;
  workspaceId: string | null;
  /** Who signed in (the user name given at sign-in); null when unknown (a pasted token, the CLI's login). */
  user: string | null;
}

/**
 * The network the agent is on and what uploads may do over it (core/link,
 * docs/link.md), for the window's link line and its one question.
 */
export interface LinkView {
  /** The network's name for the crew (the label pinned, else the interface and gateway). */
  network: string;
  /** Whether the network is known (a default route): it can be pinned and answered for. */
  known: boolean;
  /** What counts now: the crew's pin, else what the OS says (not saying counts as not metered). */
  cost: 'unmetered' | 'metered' | 'roaming' | 'over-limit' | 'ask';
  /** Why: pinned by the crew, detected by the OS (source names it), or the OS does not say. */
  why: 'pinned' | 'detected' | 'not-said';
  /** Who detected it ("NetworkManager"), or why nobody did. */
  source: string;
  pin: 'metered' | 'unmetered' | 'ask' | null;
  /** What goes: every lane, the first lane only, nothing until a yes, nothing (budget used up). */
  state: 'open' | 'first-lane' | 'held' | 'spent';
  /** The crew's answer for this network, kept. */
  answer: 'yes' | 'no' | null;
  budget: { bytes: number; per: 'day' | 'month'; used: number; left: number } | null;
  /** The bandwidth limit now (bytes/s, 0: none), and the timetable it comes from. */
  limit: { bytesPerSecond: number; timetable: string | null };
  /** "Upload 41.0 GB of photos and videos over this metered network?" — asked once per network; null: nothing to ask. */
  question: string | null;
}

export interface AppStateView {
  /** The engine's one run state, as the engine has it (paused, halted... are its values, never kept twice). */
  engine: RunStateName;
  /** A plain sentence when something needs the user (sign in, failed files), else null. */
  attention: string | null;
  /** Why the engine halted (engine 'halted'): the queue cannot be written. Resume once fixed. */
  halt: { reason: HaltReason; message: string } | null;
  failedCount: number;
  /** Files whose card (or folder) was taken out: they wait for it and continue when it is back. */
  waitingForCard: number;
  progress: ProgressView;
  /** "the built-in local service" or the server URL. */
  serverLabel: string;
  signedIn: boolean;
  account: AccountView;
  /** A card or folder was read for the current target (files recorded): the first-run steps are over. */
  hasFiles: boolean;
  /** The local destinations in force (labels), copied to before the upload. */
  destinations: string[];
  /** Cards currently inserted. */
  cards: CardView[];
  /** The link (absent or null before the agent has started it). */
  link?: LinkView | null;
}

export type QueueItemState = FileState;

export interface QueueItemView {
  id: number;
  name: string;
  relPath: string;
  source: string;
  size: number;
  state: QueueItemState;
  /** stored: an RTK file in the bucket (no callback). */
  outcome: Outcome | null;
  /** 0..1 for files being uploaded, else null. */
  progress: number | null;
  error: { kind: string; plain: string } | null;
}

export interface WaylineMatchView {
  waylineId: string;
  waylineName: string;
  /** how the match was made: exact name, normalised name, or set by the user */
  how: 'exact' | 'normalised' | 'user';
}

export interface HistoryEntryView {
  id: number;
  sourceId: string;
  label: string;
  /** flight folder (DJI_<YYYYMMDDHHMM>_<NNN>_<name>) or '' for the whole card */
  folder: string;
  startedAt: number;
  finishedAt: number | null;
  files: number;
  bytes: number;
  fastUploaded: number;
  /**
   * Files of this card's flight folder that need the user now (failed, not retried through), on its
   * newest sync; null on older syncs of the same card and folder (their files are counted there).
   */
  failed: number | null;
  wayline: WaylineMatchView | null;
}

export interface WaylineView {
  id: string;
  name: string;
  droneModelKey: string | null;
  payloadModelKeys: string[];
  templateTypes: number[];
  favorited: boolean;
  actionType: number | null;
  updateTime: number | null;
  userName: string | null;
  start: { lat: number; lng: number } | null;
}

export interface WaylinePageView {
  list: WaylineView[];
  page: number;
  pageSize: number;
  total: number;
}

/** One flight folder of a card, as the flight list shows it (main builds it from analyseFlight). */
export interface FlightSummaryView {
  cardId: string;
  cardLabel: string;
  /** The folder relative to the card root. */
  folder: string;
  missionName: string | null;
  photos: number;
  exposuresInMrk: number | null;
  missingIndexes: number[];
  extraIndexes: number[];
  rtkCounts: { fixed: number; float: number; single: number; none: number; other: number } | null;
  incomplete: boolean;
  /** The crew accepted this incomplete flight as it is. */
  accepted: boolean;
  flags: Array<{ severity: 'incomplete' | 'warning'; message: string }>;
  wayline: { id: string; name: string; start: LatLngView | null } | null;
  /** "100MEDIA, flight 2 of 3" when one folder held several flights (split.ts); else the folder's name. */
  name?: string;
  /** Which flight of its folder (1-based), when the folder held several. */
  part?: number | null;
  /** When, how high, how much ground, which MRK (offload/summary.ts). */
  summary?: FlightSummaryFigures;
  /** Photos that look unusable, or are worth a look (offload/frames.ts), with why. Nothing is deleted. */
  frames?: FlaggedFrameView[];
  /** The camera clock's notes, e.g. photos without a time zone (offload/clock.ts); its findings are flags. */
  clock?: string[];
}

export interface FlaggedFrameView {
  file: string;
  index: number | null;
  capturedAt: string | null;
  /** The exposure's GPS time (UTC) when the camera's clock is off. */
  gpsTime: string | null;
  reasons: string[];
  unusable: boolean;
}

/** One flight with its map points (main: flightPoints of main/core/offload/points.ts). */
export interface FlightView extends FlightSummaryView {
  points: FlightPointView[];
  /** Base-map tiles: null when no tile source is configured (the map still shows points, track, scale, north). */
  tiles: { attribution: string; maxZoom: number } | null;
}

/** One local destination as the Settings window edits it (config.json `destinations`). */
export const DestinationSchema = z
  .object({
    path: z.string().trim().min(1).max(4096),
    /** What the crew calls the drive ("T7_BACKUP"); '' = the folder's name. */
    label: z.string().trim().max(64),
    role: z.enum(['archive', 'staging']),
    /** Staging only: days a copy is kept once every file of it is in the workspace. */
    keepDays: z.number().int().min(0).max(3650).nullable(),
  })
  .strict();

/** Settings as the window edits them (config.json minus secrets, plus sign-in status). */
export const SettingsSchema = z.object({
  serverUrl: z.string().trim().max(2048),
  workspaceId: z.string().trim().max(128),
  useLocalService: z.boolean(),
  autoSyncCards: z.boolean(),
  ejectAfterSync: z.boolean(),
  watchedFolders: z.array(z.string().min(1).max(4096)).max(50),
  include: z
    .array(z.string().regex(/^[A-Za-z0-9]{1,10}$/))
    .min(1)
    .max(30),
  filesConcurrency: z.number().int().min(1).max(16),
  partsConcurrency: z.number().int().min(1).max(16),
  bandwidthLimitKiBps: z.number().int().min(0).max(10_000_000),
  aircraftDefault: z.string().regex(/^(0-\d+-\d+)?$/),
  /** The aircraft's serial for files that do not carry it (H20T photos...); '' = none. */
  aircraftSerial: z
    .string()
    .trim()
    .regex(/^([A-Za-z0-9-]{4,64})?$/),
  startAtLogin: z.boolean(),
  /**
   * Local destinations every card is copied to first (verified by reading back): the card can be
   * taken out once it is locally safe. 'staging' copies are deleted once in the workspace and older
   * than keepDays; 'archive' ones are kept.
   */
  destinations: z.array(DestinationSchema).max(8),

  // --- flight checks (issue 32) ---
  /** Photos taken below this height above take-off are flagged (metres); null = no minimum; absent = unchanged. */
  flightMinHeightM: z.number().min(0).max(1000).nullish(),
  /** Photos flagged as unusable wait for an unmetered network (config holdFlaggedOnMetered); absent = unchanged. */
  holdFlaggedOnMetered: z.boolean().optional(),
});
export type SettingsView = z.infer<typeof SettingsSchema>;
export type DestinationView = z.infer<typeof DestinationSchema>;

/** What settings:get and settings:save answer: the settings, whether a sign-in is stored, and for whom. */
export type SettingsAnswer = SettingsView & { signedIn: boolean; account: AccountView };

/** Per-field reasons a form shows next to the field. */
export type FieldErrors = Partial<Record<keyof SettingsView | 'form', string>>;

/** Every answer carries success or a plain-words failure: failures are data, never exceptions across IPC. */
/**
 * A server (and workspace), or the built-in local service, this laptop has
 * synced to (issue 30): what the window lists in Settings, with what
 * forgetting it would drop, said before the crew confirms.
 */
export interface TargetView {
  /** The queue's key of the target: what `targets:forget` names. */
  key: string;
  /** "https://media.example.com (workspace ws-1)", or the built-in local service. */
  name: string;
  /** The server has answered about a file (false: a mistyped address, nothing was sent there). */
  answered: boolean;
  /** Where the app sends cards now: it cannot be forgotten while it is. */
  inUse: boolean;
  files: number;
  filesDone: number;
  /** What forgetting drops, in a sentence ("the record of 15 files (…) from 1 card or folder (…), 1 report in …"). */
  drops: string;
  /** What forgetting leaves alone. */
  keeps: string;
}

export type Result<T> =
  { ok: true; value: T } | { ok: false; error: { kind: string; message: string; fields?: FieldErrors } };

// ---------- request schemas (validated in main) ----------

const Empty = z.undefined().or(z.null()).or(z.object({}).strict());

export const WaylineQuerySchema = z
  .object({
    favorited: z.boolean().optional(),
    templateTypes: z.array(z.number().int().min(0).max(99)).max(10).optional(),
    actionType: z.number().int().min(0).max(99).optional(),
    droneModelKeys: z
      .array(z.string().regex(/^\d+-\d+-\d+$/))
      .max(30)
      .optional(),
    payloadModelKeys: z
      .array(z.string().regex(/^\d+-\d+-\d+$/))
      .max(30)
      .optional(),
    orderBy: z
      .string()
      .regex(/^(name|update_time|create_time|favorited|user_name|drone_model_key|action_type) (asc|desc)$/),
    page: z.number().int().min(1).max(100_000),
    pageSize: z.number().int().min(1).max(100),
  })
  .strict();
export type WaylineQueryView = z.infer<typeof WaylineQuerySchema>;

export const Channels = {
  'app:get-state': { request: Empty, response: null as unknown as AppStateView },
  'queue:list': {
    request: z.object({ filter: z.enum(QUEUE_FILTERS), limit: z.number().int().min(1).max(1000) }).strict(),
    response: null as unknown as QueueItemView[],
  },
  'queue:retry': {
    request: z.union([
      z.object({ id: z.number().int().positive() }).strict(),
      z.object({ all: z.literal(true) }).strict(),
    ]),
    response: null as unknown as { count: number },
  },
  'sync:pause': { request: Empty, response: null as unknown as AppStateView },
  'sync:resume': { request: Empty, response: null as unknown as AppStateView },
  'sync:now': { request: Empty, response: null as unknown as AppStateView },
  'history:list': {
    request: z.object({ limit: z.number().int().min(1).max(500) }).strict(),
    response: null as unknown as HistoryEntryView[],
  },
  'history:set-wayline': {
    request: z
      .object({ folder: z.string().min(1).max(512), waylineId: z.string().min(1).max(128).nullable() })
      .strict(),
    response: null as unknown as { updated: number },
  },
  'waylines:list': { request: WaylineQuerySchema, response: null as unknown as WaylinePageView },
  'settings:get': { request: Empty, response: null as unknown as SettingsAnswer },
  'settings:save': { request: SettingsSchema, response: null as unknown as SettingsAnswer },
  /**
   * The crew forgets a local destination (issue 29): out of the settings, and it no longer counts
   * for any card (its copy records are forgotten, as `copies forget DIR` does); its files stay.
   */
  'copies:forget': {
    request: z.object({ path: z.string().trim().min(1).max(4096) }).strict(),
    response: null as unknown as SettingsAnswer,
  },
  /** The servers and workspaces this laptop synced to, each with what forgetting it would drop. */
  'targets:list': { request: Empty, response: null as unknown as TargetView[] },
  /**
   * The crew forgets a server (and workspace) it no longer wants, as `forget --server URL --yes`
   * does: its queue rows, history, accepted flights and reports here; answers the list as it is now.
   */
  'targets:forget': {
    request: z.object({ key: z.string().min(1).max(4096) }).strict(),
    response: null as unknown as TargetView[],
  },
  /**
   * The crew's answer to the link's question, for the network the agent is on (issue 31):
   * yes (kept for this network), not now (asked again later), never (kept: only what the link allows).
   */
  'link:answer': {
    request: z.object({ answer: z.enum(['yes', 'not-now', 'never']) }).strict(),
    response: null as unknown as AppStateView,
  },
  /** The crew says what this network is, over what the system says ('none': the system's word counts). */
  'link:pin': {
    request: z.object({ pin: z.enum(['metered', 'unmetered', 'ask', 'none']) }).strict(),
    response: null as unknown as AppStateView,
  },
  'auth:login': {
    request: z
      .object({
        serverUrl: z.string().max(2048),
        username: z.string().min(1).max(256),
        password: z.string().min(1).max(1024),
      })
      .strict(),
    response: null as unknown as { workspaceId: string },
  },
  'auth:set-token': {
    request: z
      .object({
        serverUrl: z.string().max(2048),
        workspaceId: z.string().min(1).max(128),
        token: z.string().min(1).max(8192),
      })
      .strict(),
    response: null as unknown as { workspaceId: string },
  },
  'auth:sign-out': { request: Empty, response: null as unknown as { signedIn: false } },
  'auth:test-connection': {
    request: z.object({ serverUrl: z.string().max(2048), workspaceId: z.string().max(128) }).strict(),
    response: null as unknown as { message: string },
  },
  'flights:list': {
    request: z.object({ cardId: z.string().min(1).max(256).optional() }).strict(),
    response: null as unknown as FlightSummaryView[],
  },
  /** The crew accepts a flagged (incomplete) flight as it is: it no longer stops "safe to format". */
  'flights:accept': {
    request: z.object({ cardId: z.string().min(1).max(256), folder: z.string().min(1).max(1024) }).strict(),
    response: null as unknown as FlightSummaryView,
  },
  'flights:get': {
    request: z
      .object({
        cardId: z.string().min(1).max(256),
        folder: z.string().min(1).max(1024),
        /** Which flight of the folder, when it held several (FlightSummaryView.part). */
        part: z.number().int().min(1).max(1000).optional(),
      })
      .strict(),
    response: null as unknown as FlightView,
  },
  /**
   * One base-map tile, fetched by main from the configured tile source only
   * (the window loads nothing from the network: see renderer/src/flight-map.tsx),
   * as a data: URL of a PNG/JPEG/WebP image.
   */
  'map:tile': {
    request: z
      .object({ z: z.number().int().min(0).max(22), x: z.number().int().min(0), y: z.number().int().min(0) })
      .strict()
      .refine((t) => t.x < 2 ** t.z && t.y < 2 ** t.z, 'tile outside the world'),
    response: null as unknown as string,
  },
  /** A folder chosen by the user: to watch, or as a local destination (the dialog's title says which). */
  'dialog:pick-folder': {
    request: Empty.or(z.object({ purpose: z.enum(['watch', 'destination']) }).strict()),
    response: null as unknown as string | null,
  },
  'shell:open-log-folder': { request: Empty, response: null },
  'shell:open-help': { request: z.object({ topic: z.enum(['docs', 'support']) }).strict(), response: null },
} as const;

export type Channel = keyof typeof Channels;
export type RequestOf<C extends Channel> = z.input<(typeof Channels)[C]['request']>;
export type ResponseOf<C extends Channel> = (typeof Channels)[C]['response'];

/** Pushed from main to the window. */
export interface PushEvents {
  'push:state': AppStateView;
  'push:progress': ProgressView;
  'push:queue-changed': null;
}
export type PushChannel = keyof PushEvents;

/** What the preload puts on `window.dms`: one function per channel, plus subscriptions. */
export type DmsBridge = {
  [C in Channel]: (request: RequestOf<C>) => Promise<Result<ResponseOf<C>>>;
} & {
  on<P extends PushChannel>(channel: P, listener: (payload: PushEvents[P]) => void): () => void;
};

export const CHANNEL_NAMES = Object.keys(Channels) as Channel[];
export const PUSH_CHANNELS: PushChannel[] = ['push:state', 'push:progress', 'push:queue-changed'];
