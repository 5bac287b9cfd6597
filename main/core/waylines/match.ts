import type { ApiClient } from '../api/client.js';
import type { Wayline } from '../api/types.js';

export interface WaylineMatch {
  waylineId: string;
  waylineName: string;
  how: 'exact' | 'normalised' | 'user';
}

/** Case, spaces, underscores and dashes do not make two mission names different. */
export function normaliseName(name: string): string {
  return name
    .normalize('NFC')
    .toLowerCase()
    .replace(/[\s_-]+/g, '');
}

/** Exact name first, then the normalised name; ambiguous normalised matches are not guessed. */
export function matchWayline(missionName: string, waylines: readonly Wayline[]): WaylineMatch | null {
  const named = waylines.filter(
    (w): w is Wayline & { id: string; name: string } =>
      typeof w.id === 'string' && typeof w.name === 'string',
  );
  const exact = named.find((w) => w.name === missionName);
  if (exact) return { waylineId: exact.id, waylineName: exact.name, how: 'exact' };
  const key = normaliseName(missionName);
  const close = named.filter((w) => normaliseName(w.name) === key);
  const only = close.length === 1 ? close[0] : undefined;
  return only ? { waylineId: only.id, waylineName: only.name, how: 'normalised' } : null;
}

/**
 * The workspace's waylines, all pages, cached for a few minutes: a card with
 * twenty flight folders lists them once, not twenty times.
 */
export class WaylineCatalog {
  private cache: { at: number; list: Wayline[] } | null = null;
  private inFlight: Promise<Wayline[]> | null = null;

  constructor(
    private readonly api: ApiClient,
    private readonly ttlMs = 5 * 60_000,
    private readonly now: () => number = Date.now,
  ) {}

  async all(signal?: AbortSignal): Promise<Wayline[]> {
    if (this.cache && this.now() - this.cache.at < this.ttlMs) return this.cache.list;
    this.inFlight ??= this.fetchAll(signal).finally(() => {
      this.inFlight = null;
    });
    return this.inFlight;
  }

  invalidate(): void {
    this.cache = null;
  }

  private async fetchAll(signal?: AbortSignal): Promise<Wayline[]> {
    const list: Wayline[] = [];
    const pageSize = 100;
    for (let page = 1; page <= 1000; page++) {
      const res = await this.api.listWaylines(
        { order_by: 'name asc', page, page_size: pageSize },
        signal ? { signal } : {},
      );
      list.push(...res.list);
      if (res.list.length === 0 || list.length >= res.pagination.total || res.list.length < pageSize) break;
    }
    this.cache = { at: this.now(), list };
    return list;
  }
}
