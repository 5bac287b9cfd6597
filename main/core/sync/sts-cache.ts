import type { StsResult } from '../api/types.js';
import type { BucketTarget } from '../storage/types.js';

/**
 * Caches the server's temporary bucket credentials and fetches new ones
 * before they run out, so an upload never starts with credentials about to
 * expire. Concurrent callers share one request (single flight).
 */
export class StsCache {
  private current: { target: BucketTarget; refreshAt: number } | null = null;
  private inFlight: Promise<BucketTarget> | null = null;
  /** STS answers fetched so far (for tests and the benchmark). */
  fetches = 0;

  constructor(
    private readonly fetchSts: (signal?: AbortSignal) => Promise<StsResult>,
    /** Refresh when less than this is left: long enough for a part to finish. */
    private readonly marginMs = 5 * 60_000,
    private readonly now: () => number = Date.now,
  ) {}

  get = async (opts: { forceRefresh?: boolean; signal?: AbortSignal } = {}): Promise<BucketTarget> => {
    const cur = this.current;
    if (!opts.forceRefresh && cur && this.now() < cur.refreshAt) return cur.target;
    // A forced refresh while another refresh is in flight joins it: both
    // callers saw the same expired credentials.
    this.inFlight ??= this.refresh(opts.signal).finally(() => {
      this.inFlight = null;
    });
    return this.inFlight;
  };

  /** Forget cached credentials (e.g. after signing in as someone else). */
  clear(): void {
    this.current = null;
  }

  private async refresh(signal?: AbortSignal): Promise<BucketTarget> {
    const fetchedAt = this.now();
    const sts = await this.fetchSts(signal);
    this.fetches++;
    const lifeMs = Math.max(0, sts.credentials.expire) * 1000;
    const target: BucketTarget = {
      provider: sts.provider,
      bucket: sts.bucket,
      endpoint: sts.endpoint,
      region: sts.region,
      objectKeyPrefix: sts.object_key_prefix,
      credentials: {
        accessKeyId: sts.credentials.access_key_id,
        secretAccessKey: sts.credentials.access_key_secret,
        sessionToken: sts.credentials.security_token,
        expiresAt: fetchedAt + lifeMs,
      },
    };
    // Short-lived credentials (a server with a tiny expire) would otherwise be
    // refreshed on every call: keep using them for their first two thirds.
    const margin = Math.min(this.marginMs, lifeMs / 3);
    this.current = { target, refreshAt: fetchedAt + lifeMs - margin };
    return target;
  }
}
