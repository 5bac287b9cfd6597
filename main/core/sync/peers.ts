import { silentLogger } from '../log.js';
import { SyncEngine, type EngineOptions } from './engine.js';
import { LocalCopies } from './local-copies.js';

/** The two peers under the agent: the copy lane (the copies' owner) and the upload lane (the engine). */
export interface SyncLanes {
  copies: LocalCopies;
  engine: SyncEngine;
}

/**
 * Builds the copy lane and the upload lane side by side: the copies own
 * their state and are said in the log (a destination stopped, a folder
 * created); the engine is handed only their port, function values (where
 * to read a file from, the copy steps), never the copies themselves.
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
  return { copies, engine: new SyncEngine({ ...opts, copies: copies.port() }) };
}
