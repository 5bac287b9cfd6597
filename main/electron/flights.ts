/**
 * The flight view's data (IPC flights:list, flights:get) from the queue, and
 * the base-map tiles (map:tile) from the one configured tile source: the
 * window loads nothing from the network itself (strict CSP), main fetches,
 * checks and caches each tile and hands it over as a data: URL.
 */
import { createHash } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { request } from 'undici';
import type { Config } from '../core/config.js';
import { cardOffload, type CardRef, type FlightOptions } from '../core/offload/card.js';
import { flightPoints, type FileStates } from '../core/offload/points.js';
import type { FlightCompleteness } from '../core/offload/types.js';
import type { Queue } from '../core/queue/queue.js';
import type { FlightSummaryView, FlightView } from '../shared/ipc.js';
import { UserError } from './failures.js';

function summary(card: CardRef, f: FlightCompleteness, accepted: readonly string[]): FlightSummaryView {
  return {
    cardId: card.sourceId,
    cardLabel: card.label,
    folder: f.folder,
    missionName: f.missionName,
    photos: f.photos,
    exposuresInMrk: f.exposuresInMrk,
    missingIndexes: f.missingIndexes,
    extraIndexes: f.extraIndexes,
    rtkCounts: f.rtkCounts,
    incomplete: f.incomplete,
    accepted: accepted.includes(f.folder),
    flags: f.flags.map((x) => ({ severity: x.severity, message: x.message })),
    wayline: f.wayline,
    name: f.name,
    part: f.part?.n ?? null,
    summary: f.summary,
    frames: f.frames.map((x) => ({
      file: path.posix.basename(x.relPath),
      index: x.index,
      capturedAt: x.capturedAt,
      gpsTime: f.clock.corrected[x.relPath] ?? null,
      reasons: x.reasons.map((r) => r.message),
      unusable: x.unusable,
    })),
    // The clock's findings are among the flags already; its notes (a missing time zone) are not.
    clock: f.clock.notes,
  };
}

/** The flights of the given cards (or folders), newest card first. */
export function flightSummaries(
  queue: Queue,
  cards: readonly CardRef[],
  checks: FlightOptions = {},
): FlightSummaryView[] {
  return cards.flatMap((card) => {
    const o = cardOffload(queue, card, [], checks);
    const accepted = queue.flights.accepted(card.sourceId);
    return o.flights
      .filter((f) => f.photos > 0 || f.exposuresInMrk !== null)
      .map((f) => summary(card, f, accepted));
  });
}

/** One flight with its map points. */
export function flightView(
  queue: Queue,
  card: CardRef,
  folder: string,
  tiles: Config['mapTiles'],
  /** Which flight of the folder, when it held several. */
  part?: number,
  checks: FlightOptions = {},
): FlightView {
  const o = cardOffload(queue, card, [], checks);
  const f = o.flights.find((x) => x.folder === folder && (part === undefined || (x.part?.n ?? 1) === part));
  if (!f) throw new UserError('invalid-input', `There is no flight ${folder} on ${card.label}.`);
  const states: FileStates = Object.fromEntries(
    o.files.map((x) => [x.relPath, { state: x.state, error: x.error ?? null }]),
  );
  return {
    ...summary(card, f, queue.flights.accepted(card.sourceId)),
    points: flightPoints(f, states),
    tiles: tiles ? { attribution: tiles.attribution, maxZoom: tiles.maxZoom } : null,
  };
}

const IMAGE_TYPES = new Set(['image/png', 'image/jpeg', 'image/webp']);
const MAX_TILE_BYTES = 1024 * 1024;

/**
 * Tiles from the configured source, kept in `<state>/tiles/<source>/z/x/y`
 * so a map seen once still shows on site without a network. Only that
 * source's host is ever asked; an answer that is not an image is refused.
 */
export class TileCache {
  constructor(
    private readonly dir: string,
    private readonly source: Config['mapTiles'],
  ) {}

  async tile(z: number, x: number, y: number): Promise<string> {
    const src = this.source;
    if (!src) throw new UserError('unavailable', 'No base map is configured: the flight shows without one.');
    if (z > src.maxZoom)
      throw new UserError('invalid-input', `The base map goes to zoom ${src.maxZoom} at most.`);
    const folder = path.join(
      this.dir,
      createHash('sha256').update(src.url).digest('hex').slice(0, 12),
      String(z),
      String(x),
    );
    const file = path.join(folder, String(y));
    try {
      return fs.readFileSync(file, 'utf8');
    } catch {
      // not cached yet
    }
    const url = src.url.replace('{z}', String(z)).replace('{x}', String(x)).replace('{y}', String(y));
    let res;
    try {
      res = await request(url, {
        method: 'GET',
        headers: { 'user-agent': 'drone-media-sync (flight map)' },
        headersTimeout: 10_000,
        bodyTimeout: 10_000,
      });
    } catch {
      throw new UserError('network', 'The base map cannot be reached now; the flight shows without it.');
    }
    const type =
      String(res.headers['content-type'] ?? '')
        .split(';')[0]
        ?.trim() ?? '';
    const body = Buffer.from(await res.body.arrayBuffer());
    if (res.statusCode !== 200 || !IMAGE_TYPES.has(type) || body.length > MAX_TILE_BYTES) {
      throw new UserError(
        'network',
        `The base map answered something that is not a tile (HTTP ${res.statusCode}).`,
      );
    }
    const data = `data:${type};base64,${body.toString('base64')}`;
    fs.mkdirSync(folder, { recursive: true });
    fs.writeFileSync(file, data);
    return data;
  }
}
