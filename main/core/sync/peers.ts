import { silentLogger } from '../log.js';
import { CopyLane } from './copy-lane.js';
import { SyncEngine, type EngineOptions } from './engine.js';
import type { RunOptions } from './run-options.js';
import { LocalCopies } from './local-copies.js';

/** The two peers under the agent: the copy lane (its loop and the copies' owner) and the upload lane (the engine). */
export interface SyncLanes {
  copies: LocalCopies;
  /** Reads each card once, copying and hashing it, with its own loop: needs no server and no sign-in. */
  copyLane: CopyLane;
  /** Sends what the copy lane has read (or, without local copies, reads and sends). */
  engine: SyncEngine;
  /** Both lanes side by side, until both are idle ('until-idle') or stopped ('forever'). */
  run: (opts: RunOptions) => Promise<void>;
}

/**
 * Builds the copy lane and the upload lane side by side: the copies own
 * their state and are said in the log (a destination stopped, a folder
 * created); each lane gets the other only as function values (the engine:
 * where to read a file from, whether the copy lane still reads; the copy
 * lane: the run state, the failure ladder, a wake), never the other itself.
 */
export function syncLanes(opts: Omit<EngineOptions, 'copies'>): SyncLanes {
  const log = opts.logger ?? silentLogger;
  const copies = new LocalCopies(opts.queue, opts.config);
  copies.on('stop', (stop) =>
    log.warn({ source: stop.sourceId, destination: stop.destination.label }, stop.message),
  );
  copies.on('seen', (seen) =>
    log.info({ source: seen.sourceId, destination: seen.destination.label }, seen.message),
  );
  const copyLane = new CopyLane(opts.queue, copies, {
    logger: log,
    ...(opts.hashConcurrency ? { readConcurrency: opts.hashConcurrency } : {}),
  });
  const engine = new SyncEngine({ ...opts, copies: copyLane.port() });
  copyLane.attach(engine.uploadPort());
  // The copy lane stops for the crew's pause and a halt only: it follows the one run state.
  engine.on('state', (change) => copyLane.stateChanged(change.to.name));
  return {
    copies,
    copyLane,
    engine,
    // The copy lane first: the engine's start (a one-shot run's fresh tries) runs before its first look.
    run: async (runOpts) => {
      const reading = copyLane.run(runOpts);
      await Promise.all([reading, engine.run(runOpts)]);
    },
  };
}
