/**
 * Credentials and client lifetime, shared by the providers.
 *
 * Every request asks the TargetProvider for the current target (the engine
 * caches STS answers, so this is cheap) and reuses the client as long as the
 * target is the same. Credentials that expire within a minute are refreshed
 * before use; when the bucket says the token is expired or unknown, the
 * target is force-refreshed once and the request is sent again once — a
 * second refusal is reported, never looped on.
 *
 * Nothing leaves before two checks: the target's storage settings (bucket,
 * endpoint, region, prefix: settings.ts) before a client is built for it,
 * and the object key (under the prefix, keys.ts) before every request, so
 * no caller of an uploader can write outside the workspace's folder.
 */
import { checkObjectKey } from './keys.js';
import { checkStorageSettings } from './settings.js';
import type { BucketTarget, TargetProvider } from './types.js';

/**
 * Credentials this close to expiry are refreshed before a request. Small on
 * purpose: the engine's STS cache already refreshes ahead of time (a third of
 * the lifetime for short-lived credentials); a large margin here would fetch
 * new credentials for every request when the server hands out short ones.
 */
export const REFRESH_MARGIN_MS = 2_000;

export class ClientSession<C> {
  private client: C | undefined;
  private clientId = '';
  /** The target the current client was built for. */
  private lastTarget: BucketTarget | undefined;
  private refreshing: Promise<BucketTarget> | undefined;

  constructor(
    private readonly target: TargetProvider,
    private readonly build: (t: BucketTarget) => C,
    /** Whether a (raw) failure means "credentials no longer valid". */
    private readonly isCredentialFailure: (err: unknown) => boolean,
  ) {}

  /** Runs one request on the object `key` with a client for the current target; see the file comment. */
  async run<T>(
    key: string,
    signal: AbortSignal | undefined,
    fn: (client: C, target: BucketTarget) => Promise<T>,
  ): Promise<T> {
    const first = await this.current(signal);
    try {
      return await fn(this.checked(first, key), first);
    } catch (err) {
      if (signal?.aborted === true || !this.isCredentialFailure(err)) throw err;
      const fresh = await this.refresh(signal, first);
      return await fn(this.checked(fresh, key), fresh);
    }
  }

  /** The client for `t`, once `key` is known to be under its prefix. */
  private checked(t: BucketTarget, key: string): C {
    const client = this.clientFor(t);
    checkObjectKey(t.objectKeyPrefix, key);
    return client;
  }

  /** Target for the next request, refreshed ahead of expiry. */
  async current(signal?: AbortSignal): Promise<BucketTarget> {
    const t = await this.target(signal ? { signal } : {});
    if (t.credentials.expiresAt - Date.now() >= REFRESH_MARGIN_MS) return t;
    return this.refresh(signal, t);
  }

  /**
   * Forces a new STS answer. Parts in flight that fail together share one
   * refresh; a part that failed with credentials already replaced by another
   * part's refresh just uses the new ones.
   */
  private async refresh(signal: AbortSignal | undefined, failed: BucketTarget): Promise<BucketTarget> {
    if (this.refreshing) return this.refreshing;
    const latest = this.lastTarget;
    if (latest !== undefined && targetId(latest) !== targetId(failed)) return latest;
    this.refreshing = this.target(signal ? { forceRefresh: true, signal } : { forceRefresh: true });
    try {
      return await this.refreshing;
    } finally {
      this.refreshing = undefined;
    }
  }

  clientFor(t: BucketTarget): C {
    const id = targetId(t);
    if (this.client === undefined || id !== this.clientId) {
      checkStorageSettings(t);
      // The old client is simply dropped, not destroyed: requests still in
      // flight on it share the uploader's sockets and must finish.
      this.client = this.build(t);
      this.clientId = id;
      this.lastTarget = t;
    }
    return this.client;
  }

  forget(): void {
    this.client = undefined;
    this.clientId = '';
    this.lastTarget = undefined;
  }
}

/** Identity of a target for client reuse (kept in memory only, like the credentials). */
function targetId(t: BucketTarget): string {
  const c = t.credentials;
  return JSON.stringify([
    t.provider,
    t.endpoint,
    t.region,
    t.bucket,
    c.accessKeyId,
    c.secretAccessKey,
    c.sessionToken,
  ]);
}
