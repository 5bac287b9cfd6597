/**
 * A stand-in for the preload, injected into the page with Playwright's
 * `page.addInitScript(installTestBridge, options)`: it puts a `window.dms`
 * that implements every channel of the contract (main/shared/ipc.ts) over an
 * in-memory fake, validates requests like main does, records every call, and
 * exposes `window.__dmsTest` so a test can push events and make calls fail.
 *
 * Playwright sends the function's source text to the page, so everything it
 * uses must live inside it (types are fine: they are erased).
 */
import type {
  AppStateView,
  Channel,
  DmsBridge,
  FieldErrors,
  FlightPointView,
  FlightSummaryView,
  FlightView,
  HistoryEntryView,
  PushChannel,
  PushEvents,
  QueueItemView,
  RequestOf,
  ResponseOf,
  Result,
  SettingsView,
  WaylineView,
} from '../../main/shared/ipc.js';

export type Scenario = 'syncing' | 'errors' | 'idle';

export interface BridgeOptions {
  scenario: Scenario;
  /** A base-map tile source is configured: map:tile answers with drawn tiles (data: URLs). */
  tiles?: boolean;
  /** Milliseconds each answer takes, like a real IPC round trip. */
  delayMs?: number;
  /** Outside text as it may come: the failed file's name and a wayline's name, the server's refusal. */
  hostile?: { name: string; message: string };
  /** Flights built by the real main code from a real queue (flight-checks.test.ts), listed first. */
  extraFlights?: FlightView[];
}

export interface RecordedCall {
  channel: string;
  request: unknown;
}

/** What a test reaches through `window.__dmsTest` (inside page.evaluate). */
export interface DmsTestControl {
  calls: RecordedCall[];
  /** Requests main would have refused (shape, ranges): the window must never send one. */
  invalid: Array<{ channel: string; request: unknown; reason: string }>;
  push<P extends PushChannel>(channel: P, payload: PushEvents[P]): void;
  failNext(channel: Channel, error: { kind: string; message: string }): void;
  state(): AppStateView;
  setState(patch: Partial<AppStateView>): void;
  /** Moves the fake upload on by one file and pushes push:progress. */
  tick(): void;
  listeners(channel: PushChannel): number;
  setPickFolder(path: string | null): void;
}

export const TEST_PASSWORD = 'correct-horse';
export const GOOD_SERVER = 'https://fh.example.com';

export function installTestBridge(options: BridgeOptions): void {
  const delay = options.delayMs ?? 5;
  const clone = <T>(v: T): T => (v === undefined ? v : structuredClone(v));
  const MIN = 60_000;
  const HOUR = 60 * MIN;
  const now = Date.now();
  const GiB = 1024 ** 3;
  const MiB = 1024 ** 2;

  // ---------- fake data ----------

  const folder = 'DJI_202403121015_001_Bridge-North';
  const errRejected = {
    kind: 'rejected',
    plain:
      options.hostile?.message ??
      'The server refused this file: the workspace storage is full. Fix the cause, then choose Retry.',
  };
  const errCamera = {
    kind: 'rejected',
    plain:
      "The server refused this file: this camera is not in the workspace's device list. Ask the administrator of the server to accept it, then choose Retry.",
  };
  // A pulled card: its files wait for it (they are never failed for it; see disposition.ts).
  const errMissing = {
    kind: 'source-missing',
    plain: 'The file is not there any more (card removed?). Insert the card again and it will continue.',
  };
  const file = (
    id: number,
    name: string,
    size: number,
    state: QueueItemView['state'],
    extra: Partial<QueueItemView> = {},
  ): QueueItemView => ({
    id,
    name,
    relPath: `DCIM/${folder}/${name}`,
    source: 'M30T_CARD',
    size,
    state,
    outcome: state === 'done' ? 'uploaded' : null,
    progress: state === 'uploading' ? 0 : null,
    error: null,
    ...extra,
  });
  const syncing = options.scenario === 'syncing';
  const idle = options.scenario === 'idle';
  let queue: QueueItemView[] = [
    file(1, 'DJI_20240312101512_0001_W.JPG', 11.2 * MiB, 'done'),
    file(2, 'DJI_20240312101512_0001_T.JPG', 1.3 * MiB, 'done', { outcome: 'fast-uploaded' }),
    file(3, 'DJI_20240312101520_0002_W.JPG', 11.4 * MiB, 'done'),
    file(4, 'DJI_20240312101520_0002_T.JPG', 1.3 * MiB, syncing ? 'uploading' : 'done', {
      progress: syncing ? 0.45 : null,
    }),
    file(5, 'DJI_20240312101528_0003_W.JPG', 11.1 * MiB, syncing ? 'uploading' : 'done', {
      progress: syncing ? 0.1 : null,
    }),
    file(6, 'DJI_20240312101528_0003_T.JPG', 1.3 * MiB, syncing ? 'fast-upload-checked' : 'done'),
    file(7, 'DJI_20240312101536_0004_W.JPG', 11.3 * MiB, syncing ? 'hashed' : 'done'),
    file(8, 'DJI_20240312101536_0004_T.JPG', 1.2 * MiB, syncing ? 'discovered' : 'done'),
    file(9, 'DJI_20240312101544_0005_V.MP4', 1.9 * GiB, syncing ? 'discovered' : 'done'),
    file(10, options.hostile?.name ?? 'DJI_20240312101552_0006_W.JPG', 11.0 * MiB, idle ? 'done' : 'failed', {
      error: idle ? null : errRejected,
    }),
    file(11, 'DJI_20240312101552_0006_T.JPG', 1.3 * MiB, idle ? 'done' : 'failed', {
      error: idle ? null : errCamera,
    }),
    file(12, 'DJI_20240312101600_0007_W.DNG', 24.6 * MiB, syncing ? 'waiting-for-source' : 'done', {
      error: syncing ? errMissing : null,
    }),
  ];

  const failedCount = (): number => queue.filter((q) => q.state === 'failed').length;
  const waitingForCard = (): number => queue.filter((q) => q.state === 'waiting-for-source').length;
  const bytesTotal = Math.round(3.5 * GiB);
  let state: AppStateView = {
    engine: syncing ? 'syncing' : 'idle',
    attention: idle ? null : '2 files could not be uploaded. Read why in the list and choose Retry.',
    halt: null,
    failedCount: failedCount(),
    waitingForCard: waitingForCard(),
    progress: syncing
      ? {
          filesTotal: 212,
          filesDone: 34,
          filesFailed: 2,
          bytesTotal,
          bytesDone: Math.round(2.3 * GiB),
          bytesSent: Math.round(2.2 * GiB),
          rate: 5 * MiB,
          etaSeconds: 246,
          currentSource: 'M30T_CARD',
        }
      : {
          filesTotal: 212,
          filesDone: idle ? 212 : 210,
          filesFailed: idle ? 0 : 2,
          bytesTotal,
          bytesDone: idle ? bytesTotal : bytesTotal - Math.round(12.3 * MiB),
          bytesSent: Math.round(3.1 * GiB),
          rate: 0,
          etaSeconds: null,
          currentSource: null,
        },
    serverLabel: 'https://fh.example.com',
    signedIn: true,
    account: { kind: 'server', server: 'https://fh.example.com', workspaceId: 'ws-survey-01', user: 'pilot' },
    hasFiles: true,
    destinations: [],
    cards: [
      {
        id: 'card-m30t',
        label: 'M30T_CARD',
        root: 'E:\\',
        waitingForSignIn: null,
        headline: null,
        local: null,
        workspace: null,
        stopped: [],
        created: [],
      },
    ],
  };

  const SITES = [
    'Bridge North',
    'Solar A1',
    'Dam Spillway',
    'Substation East',
    'Quarry Rim',
    'Rail Cut 7',
    'Tower 114',
  ];
  const SHAPES = ['facade', 'survey', 'corridor', 'orbit', 'grid'];
  const DRONES: Array<[string, string[]]> = [
    ['0-67-1', ['1-53-0']],
    ['0-77-0', ['1-66-0']],
    ['0-60-0', ['1-43-0']],
    ['0-99-0', ['1-88-0']],
    ['0-89-0', ['1-82-0', '1-50-65535']],
    ['0-91-1', ['1-81-0']],
  ];
  const USERS = ['ana.silva', 'ben.okafor', 'chen.li', 'dara.walsh'];
  const waylines: WaylineView[] = [];
  for (let i = 0; i < 35; i++) {
    const [drone, payloads] = DRONES[i % DRONES.length]!;
    waylines.push({
      id: `wl-${String(i + 1).padStart(2, '0')}`,
      name:
        i === 2 && options.hostile
          ? options.hostile.name
          : `${SITES[i % SITES.length]} ${SHAPES[Math.floor(i / SITES.length) % SHAPES.length]}`,
      droneModelKey: i === 34 ? null : drone,
      payloadModelKeys: i === 34 ? [] : payloads,
      templateTypes: [i % 4],
      favorited: i % 3 === 0,
      actionType: i % 5 === 0 ? 1 : i % 7 === 0 ? null : 0,
      updateTime: now - (i * 7 + 1) * HOUR,
      userName: i % 9 === 8 ? null : USERS[i % USERS.length]!,
      start: i % 8 === 7 ? null : { lat: 47.39764 + i * 0.00123, lng: 8.54432 - i * 0.00211 },
    });
  }

  const match = (id: string, how: 'exact' | 'normalised' | 'user') => {
    const w = waylines.find((x) => x.id === id)!;
    return { waylineId: w.id, waylineName: w.name, how };
  };
  const bridgeFacade = waylines.find((w) => w.name === 'Bridge North facade')!;
  const solar = waylines.find((w) => w.name === 'Solar A1 facade')!;
  let history: HistoryEntryView[] = [
    {
      id: 4,
      sourceId: 'card-m30t',
      label: 'M30T_CARD',
      folder,
      startedAt: now - 2 * HOUR,
      finishedAt: now - 2 * HOUR + 4 * MIN + 12_000,
      files: 148,
      bytes: Math.round(1.9 * GiB),
      fastUploaded: 12,
      failed: 0,
      wayline: match(bridgeFacade.id, 'exact'),
    },
    {
      id: 3,
      sourceId: 'card-m30t',
      label: 'M30T_CARD',
      folder: 'DJI_202403121102_002_Solar-A1',
      startedAt: now - 3 * HOUR,
      finishedAt: now - 3 * HOUR + 9 * MIN,
      files: 64,
      bytes: Math.round(0.8 * GiB),
      fastUploaded: 0,
      failed: 2,
      wayline: match(solar.id, 'normalised'),
    },
    {
      id: 2,
      sourceId: 'card-m3e',
      label: 'MAVIC3E_SD',
      folder: 'DJI_202403110930_001_Test-Hover',
      startedAt: now - 26 * HOUR,
      finishedAt: now - 26 * HOUR + 47_000,
      files: 9,
      bytes: 96 * MiB,
      fastUploaded: 9,
      failed: 0,
      wayline: null,
    },
    {
      id: 1,
      sourceId: 'card-m3e',
      label: 'MAVIC3E_SD',
      folder: '',
      startedAt: now - 27 * HOUR,
      finishedAt: null,
      files: 3,
      bytes: 20 * MiB,
      fastUploaded: 0,
      failed: 0,
      wayline: null,
    },
  ];

  let settings: SettingsView = {
    serverUrl: 'https://fh.example.com',
    workspaceId: 'ws-survey-01',
    useLocalService: false,
    autoSyncCards: true,
    ejectAfterSync: false,
    watchedFolders: ['C:\\Users\\crew\\Pictures\\DJI Export'],
    include: ['JPG', 'JPEG', 'DNG', 'MP4'],
    filesConcurrency: 3,
    partsConcurrency: 4,
    bandwidthLimitKiBps: 0,
    aircraftDefault: '',
    aircraftSerial: '',
    startAtLogin: true,
    destinations: [],
    flightMinHeightM: null,
    holdFlaggedOnMetered: false,
  };
  let pickFolder: string | null = 'D:\\Survey\\2024-03-12';

  // Two flights of an RTK card: one complete, one with every kind of problem.
  const FLIGHT_OK = 'DCIM/DJI_202405061015_001_Quarry-North';
  const FLIGHT_BAD = 'DCIM/DJI_202405061102_002_Quarry-South';
  const HOSTILE = 'DJI_<img src=x onerror=alert(1)>_0012_V.JPG';
  const flightPoints = (problems: boolean): FlightPointView[] => {
    const n = 12;
    const perLeg = n / 2;
    const points: FlightPointView[] = [];
    for (let i = 0; i < n; i++) {
      const index = i + 1;
      const leg = i < perLeg ? 0 : 1;
      const along = leg === 0 ? i : perLeg - 1 - (i - perLeg);
      let point: FlightPointView = {
        index,
        lat: 50.688176 + leg * 0.0003 + (problems ? 0.002 : 0),
        lng: 4.524342 + along * 0.00025,
        gimbalYaw: leg === 0 ? 90 : -90,
        state: 'done',
        files: [
          `DJI_202405061015${String(12 + 2 * i).padStart(2, '0')}_${String(index).padStart(4, '0')}_V.JPG`,
        ],
        problem: null,
      };
      const set = (patch: Partial<FlightPointView>): void => {
        point = { ...point, ...patch };
      };
      if (problems && index === 7)
        set({
          state: 'missing',
          files: [],
          problem: 'Exposure 7 is in the exposure log but the card has no photo for it.',
        });
      if (problems && (index === 3 || index === 4))
        set({ state: 'rtk-float', problem: 'RTK float fix (status 34): decimetre accuracy.' });
      if (problems && index === 11)
        set({ state: 'rtk-single', problem: 'No RTK fix (status 16): metre accuracy.' });
      if (problems && index === 5)
        set({
          state: 'failed',
          problem: `Upload failed for ${point.files[0]}: The server refused this file: the workspace storage is full.`,
        });
      if (problems && (index === 9 || index === 10)) set({ state: 'on-its-way' });
      if (problems && index === 12)
        set({ files: [HOSTILE], problem: 'No line in the exposure log: no PPK position.' });
      points.push(point);
    }
    return points;
  };
  const summary = (folder: string, problems: boolean): FlightSummaryView => ({
    cardId: 'card-m3t',
    cardLabel: 'M3T_CARD',
    folder,
    missionName: folder.split('_').slice(3).join('_'),
    photos: problems ? 11 : 12,
    exposuresInMrk: 12,
    missingIndexes: problems ? [7] : [],
    extraIndexes: [],
    rtkCounts: problems
      ? { fixed: 9, float: 2, single: 1, none: 0, other: 0 }
      : { fixed: 12, float: 0, single: 0, none: 0, other: 0 },
    incomplete: problems,
    accepted: false,
    flags: problems
      ? [
          {
            severity: 'incomplete',
            message:
              "1 photo missing: the aircraft logged exposure 7 but the card has no photo for it. Look for it on another card or in the aircraft's storage before formatting.",
          },
          { severity: 'warning', message: '2 exposures with an RTK float fix (decimetre accuracy).' },
          {
            severity: 'warning',
            message: '1 exposure without RTK (single point or no fix: metre accuracy).',
          },
        ]
      : [],
    wayline: problems
      ? null
      : { id: 'wl-05', name: 'Quarry North grid', start: { lat: 50.68805, lng: 4.5241 } },
  });
  const flights: FlightView[] = [
    ...(options.extraFlights ?? []),
    { ...summary(FLIGHT_OK, false), points: flightPoints(false), tiles: null },
    { ...summary(FLIGHT_BAD, true), points: flightPoints(true), tiles: null },
  ].map((f) => ({ ...f, tiles: options.tiles ? { attribution: 'Test tiles', maxZoom: 19 } : null }));
  const drawTile = (z: number, x: number, y: number): string => {
    const c = document.createElement('canvas');
    c.width = 256;
    c.height = 256;
    const g = c.getContext('2d')!;
    g.fillStyle = (x + y) % 2 === 0 ? '#e8eef2' : '#dfe7ec';
    g.fillRect(0, 0, 256, 256);
    g.strokeStyle = '#b6c2cc';
    g.strokeRect(0.5, 0.5, 255, 255);
    g.fillStyle = '#8796a3';
    g.font = '14px sans-serif';
    g.fillText(`${z}/${x}/${y}`, 8, 20);
    return c.toDataURL('image/png');
  };

  // ---------- plumbing ----------

  const calls: RecordedCall[] = [];
  const invalid: DmsTestControl['invalid'] = [];
  const failures = new Map<string, { kind: string; message: string }>();
  const listeners = new Map<string, Set<(payload: unknown) => void>>();

  const push = <P extends PushChannel>(channel: P, payload: PushEvents[P]): void => {
    for (const l of [...(listeners.get(channel) ?? [])]) l(clone(payload));
  };
  const pushState = (): void => {
    state = { ...state, failedCount: failedCount(), waitingForCard: waitingForCard() };
    push('push:state', state);
  };

  class Invalid extends Error {}
  const fail = (reason: string): never => {
    throw new Invalid(reason);
  };
  const isObject = (v: unknown): v is Record<string, unknown> =>
    typeof v === 'object' && v !== null && !Array.isArray(v);
  const strict = (req: unknown, keys: string[]): Record<string, unknown> => {
    if (!isObject(req)) fail('request must be an object');
    const o = req as Record<string, unknown>;
    for (const k of Object.keys(o)) if (!keys.includes(k)) fail(`unknown key "${k}"`);
    return o;
  };
  const empty = (req: unknown): void => {
    if (req === undefined || req === null) return;
    strict(req, []);
  };
  const int = (v: unknown, min: number, max: number, what: string): number => {
    if (typeof v !== 'number' || !Number.isInteger(v) || v < min || v > max)
      fail(`${what} must be an integer ${min}..${max}`);
    return v as number;
  };
  const str = (v: unknown, min: number, max: number, what: string): string => {
    if (typeof v !== 'string' || v.length < min || v.length > max)
      fail(`${what} must be a string of ${min}..${max}`);
    return v as string;
  };
  const bool = (v: unknown, what: string): boolean => {
    if (typeof v !== 'boolean') fail(`${what} must be a boolean`);
    return v as boolean;
  };
  const keyList = (v: unknown, what: string): string[] => {
    if (
      !Array.isArray(v) ||
      v.length > 30 ||
      v.some((k) => typeof k !== 'string' || !/^\d+-\d+-\d+$/.test(k))
    )
      fail(`${what} must be a list of device keys`);
    return v as string[];
  };
  const ok = <T>(value: T): Result<T> => ({ ok: true, value });
  const err = (kind: string, message: string, fields?: FieldErrors): Result<never> => ({
    ok: false,
    error: fields ? { kind, message, fields } : { kind, message },
  });

  /** Main's own checks on top of the schema (the ones the form also makes). */
  const checkSettings = (
    req: unknown,
  ): { ok: true; value: SettingsView } | { ok: false; fields: FieldErrors } => {
    const o = strict(req, Object.keys(settings));
    const s: SettingsView = {
      serverUrl: str(o.serverUrl, 0, 2048, 'serverUrl').trim(),
      workspaceId: str(o.workspaceId, 0, 128, 'workspaceId').trim(),
      useLocalService: bool(o.useLocalService, 'useLocalService'),
      autoSyncCards: bool(o.autoSyncCards, 'autoSyncCards'),
      ejectAfterSync: bool(o.ejectAfterSync, 'ejectAfterSync'),
      watchedFolders: Array.isArray(o.watchedFolders)
        ? (o.watchedFolders as string[])
        : fail('watchedFolders'),
      include: Array.isArray(o.include) ? (o.include as string[]) : fail('include'),
      filesConcurrency: int(o.filesConcurrency, 1, 16, 'filesConcurrency'),
      partsConcurrency: int(o.partsConcurrency, 1, 16, 'partsConcurrency'),
      bandwidthLimitKiBps: int(o.bandwidthLimitKiBps, 0, 10_000_000, 'bandwidthLimitKiBps'),
      aircraftDefault: str(o.aircraftDefault, 0, 32, 'aircraftDefault'),
      aircraftSerial: str(o.aircraftSerial, 0, 64, 'aircraftSerial').trim(),
      startAtLogin: bool(o.startAtLogin, 'startAtLogin'),
      destinations: Array.isArray(o.destinations)
        ? (o.destinations as unknown[]).map((d) => {
            const x = strict(d, ['path', 'label', 'role', 'keepDays']);
            const role = x.role === 'archive' || x.role === 'staging' ? x.role : fail('role');
            return {
              path: str(x.path, 1, 4096, 'path').trim(),
              label: str(x.label, 0, 64, 'label').trim(),
              role,
              keepDays: x.keepDays === null ? null : int(x.keepDays, 0, 3650, 'keepDays'),
            };
          })
        : fail('destinations'),
      flightMinHeightM:
        o.flightMinHeightM == null
          ? null
          : typeof o.flightMinHeightM === 'number' && o.flightMinHeightM >= 0 && o.flightMinHeightM <= 1000
            ? o.flightMinHeightM
            : fail('flightMinHeightM'),
      holdFlaggedOnMetered:
        o.holdFlaggedOnMetered === undefined ? false : bool(o.holdFlaggedOnMetered, 'holdFlaggedOnMetered'),
    };
    if (s.destinations.length > 8) fail('destinations');
    if (s.watchedFolders.length > 50 || s.watchedFolders.some((f) => typeof f !== 'string' || f.length === 0))
      fail('watchedFolders');
    if (
      s.include.length < 1 ||
      s.include.length > 30 ||
      s.include.some((t) => !/^[A-Za-z0-9]{1,10}$/.test(t))
    )
      fail('include');
    if (!/^(0-\d+-\d+)?$/.test(s.aircraftDefault)) fail('aircraftDefault');
    const fields: FieldErrors = {};
    if (s.serverUrl !== '' && !/^https?:\/\/[^\s/]+/i.test(s.serverUrl))
      fields.serverUrl = 'The server address must start with http:// or https://.';
    if (!s.useLocalService && s.serverUrl === '') fields.serverUrl = 'Enter the server address.';
    if (!s.useLocalService && s.serverUrl !== '' && s.workspaceId === '')
      fields.workspaceId = 'Enter the workspace ID.';
    // What only main can know: the disk (a Z: drive is not plugged in here), and a staging one's keep days.
    for (const d of s.destinations) {
      if (d.role === 'staging' && d.keepDays === null)
        fields.destinations ??= `${d.label || d.path}: a staging destination needs the days its copies are kept once they are in the workspace (0 or more).`;
      if (d.path.startsWith('Z:'))
        fields.destinations ??= `The folder ${d.path} does not exist (or is not a folder): plug in the drive, or choose another folder.`;
    }
    // What only main can know: the server does not have this workspace.
    if (s.workspaceId === 'unknown-ws')
      fields.workspaceId = 'The server has no workspace with this ID. Check it with your administrator.';
    return Object.keys(fields).length > 0 ? { ok: false, fields } : { ok: true, value: s };
  };

  const resumeEngine = (): void => {
    const left = queue.some((q) => q.state !== 'done' && q.state !== 'failed');
    state = { ...state, engine: left ? 'syncing' : 'idle' };
  };

  // ---------- the channels ----------

  type Handlers = { [C in Channel]: (req: RequestOf<C>) => Result<ResponseOf<C>> };
  const handlers: Handlers = {
    'app:get-state': (req) => {
      empty(req);
      return ok({ ...state, failedCount: failedCount(), waitingForCard: waitingForCard() });
    },
    'queue:list': (req) => {
      const o = strict(req, ['filter', 'limit']);
      const filter = o.filter;
      if (filter !== 'all' && filter !== 'active' && filter !== 'failed' && filter !== 'done') fail('filter');
      const limit = int(o.limit, 1, 1000, 'limit');
      const list = queue.filter((q) =>
        filter === 'all'
          ? true
          : filter === 'failed'
            ? q.state === 'failed'
            : filter === 'done'
              ? q.state === 'done'
              : q.state !== 'done' && q.state !== 'failed',
      );
      return ok(list.slice(0, limit));
    },
    'queue:retry': (req) => {
      const o = isObject(req) && 'all' in req ? strict(req, ['all']) : strict(req, ['id']);
      let ids: number[];
      if ('all' in o) {
        if (o.all !== true) fail('all must be true');
        ids = queue.filter((q) => q.state === 'failed').map((q) => q.id);
      } else {
        const id = int(o.id, 1, Number.MAX_SAFE_INTEGER, 'id');
        const item = queue.find((q) => q.id === id);
        if (!item) return err('invalid-input', 'This file is no longer in the list.');
        ids = item.state === 'failed' ? [id] : [];
      }
      queue = queue.map((q) =>
        ids.includes(q.id) ? { ...q, state: 'discovered', error: null, progress: null } : q,
      );
      if (ids.length > 0) {
        if (state.engine !== 'paused') state = { ...state, engine: 'syncing' };
        state = { ...state, attention: failedCount() > 0 ? state.attention : null };
        setTimeout(() => {
          push('push:queue-changed', null);
          pushState();
        }, 0);
      }
      return ok({ count: ids.length });
    },
    'sync:pause': (req) => {
      empty(req);
      state = {
        ...state,
        engine: 'paused',
        progress: { ...state.progress, rate: 0, etaSeconds: null },
      };
      setTimeout(pushState, 0);
      return ok({ ...state, failedCount: failedCount() });
    },
    'sync:resume': (req) => {
      empty(req);
      resumeEngine();
      state = { ...state, progress: { ...state.progress, rate: 5 * MiB, etaSeconds: 246 } };
      setTimeout(pushState, 0);
      return ok({ ...state, failedCount: failedCount() });
    },
    'sync:now': (req) => {
      empty(req);
      resumeEngine();
      setTimeout(pushState, 0);
      return ok({ ...state, failedCount: failedCount() });
    },
    'history:list': (req) => {
      const o = strict(req, ['limit']);
      // As main counts it: the files of the flight that need the user now, on its newest sync.
      const seen = new Set<string>();
      const list = history.map((h) => {
        const key = `${h.sourceId}|${h.folder}`;
        const newest = !seen.has(key);
        seen.add(key);
        const failed = queue.filter(
          (q) => q.state === 'failed' && q.relPath.split('/').slice(-2, -1)[0] === h.folder,
        ).length;
        return { ...h, failed: newest ? failed : null };
      });
      return ok(list.slice(0, int(o.limit, 1, 500, 'limit')));
    },
    'history:set-wayline': (req) => {
      const o = strict(req, ['folder', 'waylineId']);
      const f = str(o.folder, 1, 512, 'folder');
      const id = o.waylineId === null ? null : str(o.waylineId, 1, 128, 'waylineId');
      const w = id === null ? null : waylines.find((x) => x.id === id);
      if (w === undefined) return err('invalid-input', 'This wayline does not exist any more.');
      let updated = 0;
      history = history.map((h) => {
        if (h.folder !== f) return h;
        updated++;
        return { ...h, wayline: w === null ? null : { waylineId: w.id, waylineName: w.name, how: 'user' } };
      });
      return ok({ updated });
    },
    'waylines:list': (req) => {
      const o = strict(req, [
        'favorited',
        'templateTypes',
        'actionType',
        'droneModelKeys',
        'payloadModelKeys',
        'orderBy',
        'page',
        'pageSize',
      ]);
      const orderBy = str(o.orderBy, 1, 64, 'orderBy');
      const m =
        /^(name|update_time|create_time|favorited|user_name|drone_model_key|action_type) (asc|desc)$/.exec(
          orderBy,
        );
      if (!m) fail('orderBy');
      const page = int(o.page, 1, 100_000, 'page');
      const pageSize = int(o.pageSize, 1, 100, 'pageSize');
      let list = waylines.slice();
      if (o.favorited !== undefined) {
        const fav = bool(o.favorited, 'favorited');
        list = list.filter((w) => w.favorited === fav);
      }
      if (o.templateTypes !== undefined) {
        if (!Array.isArray(o.templateTypes) || o.templateTypes.length > 10) fail('templateTypes');
        const types = (o.templateTypes as unknown[]).map((t) => int(t, 0, 99, 'templateTypes[]'));
        list = list.filter((w) => w.templateTypes.some((t) => types.includes(t)));
      }
      if (o.actionType !== undefined) {
        const a = int(o.actionType, 0, 99, 'actionType');
        list = list.filter((w) => w.actionType === a);
      }
      if (o.droneModelKeys !== undefined) {
        const keys = keyList(o.droneModelKeys, 'droneModelKeys');
        list = list.filter((w) => w.droneModelKey !== null && keys.includes(w.droneModelKey));
      }
      if (o.payloadModelKeys !== undefined) {
        const keys = keyList(o.payloadModelKeys, 'payloadModelKeys');
        list = list.filter((w) => w.payloadModelKeys.some((k) => keys.includes(k)));
      }
      const [, col, dir] = m!;
      const value = (w: WaylineView): string | number => {
        switch (col) {
          case 'name':
            return w.name.toLowerCase();
          case 'favorited':
            return w.favorited ? 1 : 0;
          case 'user_name':
            return w.userName ?? '';
          case 'drone_model_key':
            return w.droneModelKey ?? '';
          case 'action_type':
            return w.actionType ?? -1;
          default:
            return w.updateTime ?? 0;
        }
      };
      list.sort((a, b) => {
        const va = value(a);
        const vb = value(b);
        const c = va < vb ? -1 : va > vb ? 1 : a.id < b.id ? -1 : 1;
        return dir === 'asc' ? c : -c;
      });
      return ok({
        list: list.slice((page - 1) * pageSize, page * pageSize),
        page,
        pageSize,
        total: list.length,
      });
    },
    'settings:get': (req) => {
      empty(req);
      return ok({ ...settings, signedIn: state.signedIn, account: state.account });
    },
    'settings:save': (req) => {
      const checked = checkSettings(req);
      if (!checked.ok) return err('invalid-input', 'Some settings are not valid.', checked.fields);
      settings = checked.value;
      state = {
        ...state,
        serverLabel: settings.useLocalService ? 'the built-in local service' : settings.serverUrl,
      };
      setTimeout(pushState, 0);
      return ok({ ...settings, signedIn: state.signedIn, account: state.account });
    },
    'copies:forget': (req) => {
      const o = strict(req, ['path']);
      const where = str(o.path, 1, 4096, 'path');
      if (!settings.destinations.some((d) => d.path === where))
        return err('invalid-input', `${where} is not a copy destination: there is nothing to forget.`);
      settings = { ...settings, destinations: settings.destinations.filter((d) => d.path !== where) };
      return ok({ ...settings, signedIn: state.signedIn, account: state.account });
    },
    // The window's list of servers synced to: none in these scenarios (real-main.ts tests the list).
    'targets:list': (req) => {
      empty(req);
      return ok([]);
    },
    'targets:forget': (req) => {
      str(strict(req, ['key']).key, 1, 4096, 'key');
      return err('invalid-input', 'This server was already forgotten: there is nothing to forget.');
    },
    // The link is exercised with the real main logic (test/ui/link.test.ts): here only checked and answered.
    'link:answer': (req) => {
      const o = strict(req, ['answer']);
      if (o.answer !== 'yes' && o.answer !== 'not-now' && o.answer !== 'never') fail('answer');
      return ok(state);
    },
    'link:pin': (req) => {
      const o = strict(req, ['pin']);
      if (!['metered', 'unmetered', 'ask', 'none'].includes(String(o.pin))) fail('pin');
      return ok(state);
    },
    'auth:login': (req) => {
      const o = strict(req, ['serverUrl', 'username', 'password']);
      str(o.serverUrl, 0, 2048, 'serverUrl');
      const user = str(o.username, 1, 256, 'username');
      const password = str(o.password, 1, 1024, 'password');
      if (user !== 'pilot' || password !== 'correct-horse')
        return err('auth', 'The user name or the password is wrong. Check them and try again.');
      state = {
        ...state,
        signedIn: true,
        engine: state.engine === 'auth-required' ? 'idle' : state.engine,
        account: { kind: 'server', server: settings.serverUrl, workspaceId: 'ws-survey-01', user },
      };
      settings = { ...settings, workspaceId: 'ws-survey-01' };
      setTimeout(pushState, 0);
      return ok({ workspaceId: 'ws-survey-01' });
    },
    'auth:set-token': (req) => {
      const o = strict(req, ['serverUrl', 'workspaceId', 'token']);
      str(o.serverUrl, 0, 2048, 'serverUrl');
      const ws = str(o.workspaceId, 1, 128, 'workspaceId');
      const token = str(o.token, 1, 8192, 'token');
      if (token.length < 20)
        return err('auth', 'The server does not accept this token. Copy it again from the web page.');
      state = {
        ...state,
        signedIn: true,
        account: { kind: 'server', server: settings.serverUrl, workspaceId: ws, user: null },
      };
      setTimeout(pushState, 0);
      return ok({ workspaceId: ws });
    },
    'auth:sign-out': (req) => {
      empty(req);
      state = { ...state, signedIn: false, account: { ...state.account, user: null } };
      setTimeout(pushState, 0);
      return ok({ signedIn: false as const });
    },
    'auth:test-connection': (req) => {
      const o = strict(req, ['serverUrl', 'workspaceId']);
      const url = str(o.serverUrl, 0, 2048, 'serverUrl');
      str(o.workspaceId, 0, 128, 'workspaceId');
      if (url === '' || url.startsWith('https://fh.example.com'))
        return ok({ message: 'Connected. The server answered in 84 ms and this workspace accepts uploads.' });
      return err('network', `Could not reach ${url}. Check the address and the network connection.`);
    },
    'flights:list': (req) => {
      const o = strict(req, ['cardId']);
      const cardId = o.cardId === undefined ? undefined : str(o.cardId, 1, 256, 'cardId');
      return ok(
        flights
          .filter((f) => cardId === undefined || f.cardId === cardId)
          .map(({ points: _points, tiles: _tiles, ...f }) => f),
      );
    },
    'flights:get': (req) => {
      const o = strict(req, ['cardId', 'folder', 'part']);
      const cardId = str(o.cardId, 1, 256, 'cardId');
      const folder = str(o.folder, 1, 1024, 'folder');
      const part = o.part === undefined ? undefined : Number(o.part);
      const f = flights.find(
        (x) => x.cardId === cardId && x.folder === folder && (part === undefined || (x.part ?? 1) === part),
      );
      return f ? ok(f) : err('not-found', 'This flight is not on the card any more.');
    },
    'flights:accept': (req) => {
      const o = strict(req, ['cardId', 'folder']);
      const cardId = str(o.cardId, 1, 256, 'cardId');
      const folder = str(o.folder, 1, 1024, 'folder');
      const i = flights.findIndex((x) => x.cardId === cardId && x.folder === folder);
      if (i < 0) return err('not-found', 'This flight is not on the card any more.');
      const accepted = { ...flights[i]!, accepted: true };
      flights[i] = accepted;
      const { points: _p, tiles: _t, ...summary } = accepted;
      return ok(summary);
    },
    'map:tile': (req) => {
      const o = strict(req, ['z', 'x', 'y']);
      const z = int(o.z, 0, 22, 'z');
      const x = int(o.x, 0, 2 ** z - 1, 'x');
      const y = int(o.y, 0, 2 ** z - 1, 'y');
      if (!options.tiles) return err('unavailable', 'No base map is configured.');
      return ok(drawTile(z, x, y));
    },
    'dialog:pick-folder': (req) => {
      if (isObject(req) && 'purpose' in req) {
        const o = strict(req, ['purpose']);
        if (o.purpose !== 'watch' && o.purpose !== 'destination') fail('purpose');
      } else empty(req);
      return ok(pickFolder);
    },
    'shell:open-log-folder': (req) => {
      empty(req);
      return ok(null);
    },
    'shell:open-help': (req) => {
      const o = strict(req, ['topic']);
      if (o.topic !== 'docs' && o.topic !== 'support') fail('topic');
      return ok(null);
    },
  };

  const bridge: Record<string, unknown> = {};
  for (const channel of Object.keys(handlers) as Channel[]) {
    bridge[channel] = (request: unknown): Promise<unknown> => {
      calls.push({ channel, request: clone(request) });
      let answer: Result<unknown>;
      const failure = failures.get(channel);
      if (failure) {
        failures.delete(channel);
        answer = { ok: false, error: failure };
      } else {
        try {
          answer = handlers[channel](clone(request) as never);
        } catch (e) {
          if (!(e instanceof Invalid)) throw e;
          invalid.push({ channel, request: clone(request), reason: e.message });
          answer = { ok: false, error: { kind: 'invalid-input', message: `Invalid request: ${e.message}` } };
        }
      }
      return new Promise((resolve) => setTimeout(() => resolve(clone(answer)), delay));
    };
  }
  bridge.on = (channel: PushChannel, listener: (payload: unknown) => void): (() => void) => {
    const set = listeners.get(channel) ?? new Set();
    set.add(listener);
    listeners.set(channel, set);
    return () => set.delete(listener);
  };

  const control: DmsTestControl = {
    calls,
    invalid,
    push,
    failNext: (channel, error) => failures.set(channel, error),
    state: () => clone(state),
    setState: (patch) => {
      state = { ...state, ...patch };
      pushState();
    },
    tick: () => {
      const p = state.progress;
      const step = Math.round(12 * MiB);
      const bytesDone = Math.min(p.bytesTotal, p.bytesDone + step);
      state = {
        ...state,
        progress: {
          ...p,
          filesDone: Math.min(p.filesTotal, p.filesDone + 1),
          bytesDone,
          bytesSent: p.bytesSent + step,
          etaSeconds: p.rate > 0 ? Math.round((p.bytesTotal - bytesDone) / p.rate) : null,
        },
      };
      push('push:progress', state.progress);
    },
    listeners: (channel) => listeners.get(channel)?.size ?? 0,
    setPickFolder: (path) => {
      pickFolder = path;
    },
  };

  const w = window as unknown as { dms: DmsBridge; __dmsTest: DmsTestControl };
  w.dms = bridge as unknown as DmsBridge;
  w.__dmsTest = control;
}
