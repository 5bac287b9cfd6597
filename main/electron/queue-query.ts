/**
 * The queue as the window lists it: what is moving first, then what needs
 * the user, then the latest finished files (newest first: after months of
 * use the oldest uploads are the least interesting).
 */
import type { Queue, QueueRow } from '../core/queue/queue.js';
import { UNFINISHED_STATES } from '../core/queue/states.js';
import type { QueueFilter } from '../shared/domain.js';

export type { QueueFilter };

/** Done rows, newest first. */
function recentDone(queue: Queue, limit: number): QueueRow[] {
  return queue.list({ states: ['done'], limit, newestFirst: true });
}

/** "Active" in the window: not finished and not failed, files waiting for their card included. */
export function listQueue(queue: Queue, filter: QueueFilter, limit: number): QueueRow[] {
  if (filter === 'active') return queue.list({ states: UNFINISHED_STATES, limit });
  if (filter === 'failed') return queue.list({ states: ['failed'], limit });
  if (filter === 'done') return recentDone(queue, limit);
  const rows = queue.list({ states: UNFINISHED_STATES, limit });
  if (rows.length < limit) rows.push(...queue.list({ states: ['failed'], limit: limit - rows.length }));
  if (rows.length < limit) rows.push(...recentDone(queue, limit - rows.length));
  return rows;
}

/** Puts failed files back in line; returns how many, and the rows to count into the progress. */
export function retryFailed(
  queue: Queue,
  selector: { id: number } | { all: true },
): { count: number; rows: QueueRow[] } {
  const rows = queue.retry('all' in selector ? { all: true } : { ids: [selector.id] });
  return { count: rows.length, rows };
}
