/**
 * A card as main would show it at a full card's numbers (issue 20: 1,214
 * files, 58 GB, on SSD and T7_BACKUP), made by main's own code from file
 * facts: the core's local verdict and "safe to format" verdict, then the
 * shell's CardLedger (live bytes, headline). Runs in the test process; the
 * result is pushed to the page as the shell would push it.
 */
import { localVerdict, fileKey, type LocalCopyFact } from '../../main/core/copies/locally-safe.js';
import type { CardOffload } from '../../main/core/offload/card.js';
import { safeToFormat } from '../../main/core/offload/safe-to-format.js';
import type { CardFileFact, ManifestFile } from '../../main/core/offload/types.js';
import type { Destination } from '../../main/core/queue/copies.js';
import { CardLedger } from '../../main/electron/card-ledger.js';
import type { CardView } from '../../main/shared/ipc.js';

const FILES = 1214;
const TOTAL = 58e9;
const THERE = 3.1e9;

export function m3eCard(): CardView {
  const sourceId = 'card:dcim:M3E_CARD:9f2c';
  const size = Math.floor(TOTAL / FILES);
  const doneCount = Math.round(THERE / size);
  const names = Array.from(
    { length: FILES },
    (_, i) => `DCIM/DJI_202405061015_001_Quarry/DJI_${String(i + 1).padStart(4, '0')}_V.JPG`,
  );
  const destinations: Destination[] = [
    { id: 1, path: '/media/crew/SSD/cards', label: 'SSD', role: 'archive', keepDays: null },
    { id: 2, path: '/media/crew/T7/cards', label: 'T7_BACKUP', role: 'staging', keepDays: 7 },
  ];
  const versions = names.map((relPath) => ({ sourceId, relPath, size, mtimeMs: 1_715_000_000_000 }));
  const copies = new Map<string, Map<number, LocalCopyFact>>();
  for (const v of versions) {
    const byDest = new Map<number, LocalCopyFact>();
    for (const d of destinations)
      byDest.set(d.id, {
        record: {
          destinationId: d.id,
          path: `${d.path}/${v.relPath}`,
          state: 'verified',
          md5: null,
          xxh3: null,
          copySize: v.size,
          copyMtimeMs: v.mtimeMs,
          readBack: 'direct',
          at: 1,
          error: null,
        },
        intact: true,
      });
    copies.set(fileKey(v), byDest);
  }
  const local = localVerdict({
    card: { id: sourceId, label: 'M3E_CARD' },
    destinations,
    scanComplete: true,
    files: versions.map((v) => ({ ...v, kind: 'media', read: true })),
    copies,
    stops: new Map(),
    skipped: [],
  });
  const facts: CardFileFact[] = names.map((relPath, i) => ({
    relPath,
    kind: 'media',
    size,
    state: i < doneCount ? 'done' : 'pending',
    acknowledged: i < doneCount ? { how: 'callback', targetId: 't', at: '2024-05-06T10:00:00Z' } : null,
    verified: null,
  }));
  const verdict = safeToFormat({
    card: { id: sourceId, label: 'M3E_CARD' },
    target: { id: 't', workspaceLabel: 'workspace ws-survey-01' },
    scanComplete: true,
    files: facts,
    flights: [],
    acceptedFlights: [],
  });
  const offload = {
    card: { sourceId, label: 'M3E_CARD' },
    files: facts.map((f) => ({ relPath: f.relPath, size: f.size, state: f.state }) as ManifestFile),
    verdict,
    local,
  } as CardOffload;
  const ledger = new CardLedger();
  ledger.local(sourceId, offload);
  return {
    id: 'dcim:M3E_CARD:9f2c',
    label: 'M3E_CARD',
    root: '/media/crew/M3E_CARD',
    waitingForSignIn: null,
    ...ledger.view(sourceId),
  };
}
