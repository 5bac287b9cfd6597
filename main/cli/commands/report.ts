import fs from 'node:fs';
import path from 'node:path';
import { cardOffload, reportInput } from '../../core/offload/card.js';
import { TOOL } from '../../core/offload/complete.js';
import { writeManifest } from '../../core/offload/publish.js';
import { reportJson } from '../../core/offload/report.js';
import { DmsError } from '../../core/errors.js';
import { statePaths } from '../../core/paths.js';
import { Queue } from '../../core/queue/queue.js';
import { folderSource } from '../../core/sources/source.js';
import { resolveStateDir } from '../context.js';
import { printJson } from '../output.js';
import { offloadText } from '../offload-text.js';

export interface ReportFlags {
  state?: string;
  json?: boolean;
  acceptFlight?: string[];
}

/**
 * `report [<dir>...]`: each card's (or folder's) verdict — safe to format or
 * why not — its flights and where its manifest is, from the queue (works
 * beside a running agent, without the server). `--accept-flight <folder>`
 * records that the crew accepts a flagged flight as it is.
 */
export function reportCommand(dirs: string[], flags: ReportFlags): number {
  const paths = statePaths(resolveStateDir(flags));
  if (!fs.existsSync(paths.queue))
    throw new DmsError('invalid-input', 'Nothing synced yet: there is nothing to report.', {
      retryable: false,
    });
  const queue = new Queue(paths.queue);
  try {
    if (!queue.bindLastTarget())
      throw new DmsError('invalid-input', 'Nothing synced yet: there is nothing to report.', {
        retryable: false,
      });
    const cards = dirs.length
      ? dirs.map((d) => {
          const root = path.resolve(d);
          return { sourceId: folderSource(root).sourceId, label: path.basename(root) || root };
        })
      : queue
          .recentSources()
          .slice(0, 20)
          .map((sourceId) => ({ sourceId, label: queue.sources.labelOf(sourceId) }));
    const out = [];
    for (const card of cards) {
      let offload = cardOffload(queue, card);
      for (const f of flags.acceptFlight ?? []) {
        const flight = offload.flights.find((x) => x.folder === f || path.posix.basename(x.folder) === f);
        if (!flight)
          throw new DmsError(
            'invalid-input',
            `No flight ${f} on ${card.label}: the flights are ${offload.flights.map((x) => x.folder).join(', ') || 'none'}.`,
            { retryable: false },
          );
        queue.flights.accept(card.sourceId, flight.folder);
      }
      if (flags.acceptFlight?.length) offload = cardOffload(queue, card);
      // Written here too when the verdict changed (an accepted flight); uploaded at the next sync.
      const manifest = writeManifest(paths.manifests, offload, TOOL);
      out.push({ offload, manifest });
    }
    if (flags.json) {
      const reports = out.map(({ offload }) => reportJson(reportInput(offload, new Date(), TOOL)));
      printJson(reports.length === 1 ? reports[0] : reports);
    } else {
      for (const { offload, manifest } of out) process.stdout.write(offloadText(offload, manifest.dir));
    }
    return 0;
  } finally {
    queue.close();
  }
}
