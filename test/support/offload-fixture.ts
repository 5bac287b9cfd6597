/**
 * A whole offload report input for tests: the synthetic RTK card read from
 * disk (real photos, real metadata reader, real MRK), its flight analysed,
 * MD5s computed, and each file given a queue state, acknowledgement and
 * bucket check. `hostile` adds files whose names attack HTML and XML.
 */
import { createHash } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { analyseFlight } from '../../main/core/offload/flight.js';
import { safeToFormat } from '../../main/core/offload/safe-to-format.js';
import type {
  CardFileFact,
  FileQueueState,
  ManifestFile,
  OffloadReportInput,
} from '../../main/core/offload/types.js';
import { buildRtkCard, readFlightFromDisk } from './rtk-card.js';
import type { RtkCardOptions } from './rtk-card.js';

export const TARGET_ID = 'http://127.0.0.1:7000|ws-survey';
export const HOSTILE_NAMES = [
  'DJI_<img src=x onerror=alert(1)>_0099_V.JPG',
  'a&b "quoted" \'single\' ]]> <!-- x.JPG',
  'ctrl\u0001\u001b[31mred.JPG',
];

export interface OffloadFixtureOptions extends Omit<RtkCardOptions, 'root'> {
  /** relPath -> state; others are done. */
  states?: Record<string, FileQueueState>;
  hostile?: boolean;
}

export async function offloadFixture(
  root: string,
  o: OffloadFixtureOptions = {},
): Promise<OffloadReportInput> {
  const card = buildRtkCard({ root, ...o });
  if (o.hostile) {
    const dir = path.join(root, ...card.folder.split('/'));
    for (const name of HOSTILE_NAMES) fs.writeFileSync(path.join(dir, name), `not a photo: ${name}`);
  }
  const input = await readFlightFromDisk(root, card.folder);
  const flight = analyseFlight(input);
  const at = '2024-05-06T09:02:03Z';
  const files: ManifestFile[] = [
    ...input.media.map((m) => ({ ...m, kind: 'media' as const })),
    ...input.rtkFiles.map((r) => ({ relPath: r.relPath, kind: 'rtk' as const })),
  ].map((f) => {
    const full = path.join(root, ...f.relPath.split('/'));
    const content = fs.readFileSync(full);
    const md5 = createHash('md5').update(content).digest('hex');
    const state = o.states?.[f.relPath] ?? 'done';
    const done = state === 'done';
    const media = 'capturedAt' in f ? f : null;
    return {
      relPath: f.relPath,
      kind: f.kind,
      size: content.length,
      mtimeMs: fs.statSync(full).mtimeMs,
      md5,
      state,
      capturedAt: media?.capturedAt ?? null,
      position: media?.position
        ? { ...media.position, absoluteAltitude: 174.767, relativeAltitude: 10.351 }
        : null,
      gimbalYaw: media?.gimbalYaw ?? null,
      aircraft: media ? { modelKey: '0-77-1', serial: '1581F5BKD23' } : null,
      camera: media ? { model: 'M3T', payloadKey: '1-67-0', serial: '53HQN4T0' } : null,
      objectKey: `ws-survey/${card.folder.split('/')[1]}/${md5}/${path.basename(f.relPath)}`,
      acknowledged: done
        ? { how: f.kind === 'rtk' ? ('stored' as const) : ('callback' as const), targetId: TARGET_ID, at }
        : null,
      verified: done
        ? { targetId: TARGET_ID, at, found: true, sizeMatches: true, checksum: 'match' as const }
        : null,
    };
  });
  const facts: CardFileFact[] = files.map((f) => ({
    relPath: f.relPath,
    kind: f.kind,
    size: f.size,
    state: f.state,
    acknowledged: f.acknowledged,
    verified: f.verified,
  }));
  const target = { id: TARGET_ID, workspaceLabel: 'Survey West', serverLabel: 'http://127.0.0.1:7000' };
  const verdict = safeToFormat({
    card: { id: 'card-m3t', label: 'M3T_CARD' },
    target,
    scanComplete: true,
    files: facts,
    flights: [flight],
    acceptedFlights: [],
  });
  return {
    card: { id: 'card-m3t', label: 'M3T_CARD' },
    target,
    createdAt: '2024-05-06T09:05:00Z',
    hostname: 'crew-laptop',
    tool: { name: 'drone-media-sync', version: '0.1.0' },
    files,
    flights: [flight],
    verdict,
  };
}
