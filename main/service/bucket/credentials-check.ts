/**
 * Can this instance get bucket credentials? Asked of the provider's STS at
 * start and by /readyz (one call, its answer kept for a short while), and
 * learnt from every real `sts` request in between:
 *
 * - at start, a refusal (HTTP 4xx: wrong keys, role, or a lifetime above the
 *   role's limit) stops the service with the fix; an STS that cannot be
 *   reached does not (it may come back), the instance is just not ready;
 * - /readyz answers 503 while the last answer was a failure, so a load
 *   balancer takes the instance out of rotation instead of sending crews to
 *   an instance whose every `sts` answers 502001;
 * - the provider's own reason is logged whenever the state changes.
 */
import type { Logger } from 'pino';
import { StorageProviderError, type BucketBackend } from './types.js';

/** Refused at start: `serve` prints the message and exits. */
export class BucketCredentialsError extends Error {
  constructor(message: string, cause: unknown) {
    super(message, { cause });
    this.name = 'BucketCredentialsError';
  }
}

export type CredentialsState = { ok: true } | { ok: false; reason: string };

/** Providers' shortest session (AWS, Ceph RGW, Alibaba). */
const SHORTEST = 900;
/** The role's limit is looked for at most this many calls (binary search over 900..43,200 s). */
const MAX_PROBES = 16;

export class CredentialsCheck {
  private state: CredentialsState = { ok: true };
  private checkedAt = -Infinity;
  private running: Promise<CredentialsState> | null = null;

  constructor(
    private readonly bucket: BucketBackend,
    private readonly expireSeconds: () => number,
    private readonly log: Logger | null,
    private readonly keepMs: number,
  ) {}

  /**
   * At start: resolves when credentials can be had or the STS cannot be
   * reached (then logged: not ready until it answers); throws
   * BucketCredentialsError, with the fix, when the provider refuses them.
   */
  async atStart(): Promise<void> {
    if (!this.bucket.probe) return;
    const expire = this.expireSeconds();
    try {
      await this.bucket.probe(expire);
      this.record({ ok: true });
    } catch (err) {
      if (!(err instanceof StorageProviderError) || !err.refused) {
        this.record(failure(err));
        return;
      }
      throw new BucketCredentialsError(await this.refusal(err, expire), err);
    }
  }

  /** The state /readyz reports: asked again once the last answer is older than `keepMs`. */
  current(): Promise<CredentialsState> {
    if (!this.bucket.probe || Date.now() - this.checkedAt < this.keepMs) return Promise.resolve(this.state);
    this.running ??= this.bucket
      .probe(this.expireSeconds())
      .then(
        (): CredentialsState => ({ ok: true }),
        (err: unknown) => failure(err),
      )
      .then((state) => {
        this.record(state);
        return state;
      })
      .finally(() => (this.running = null));
    return this.running;
  }

  /** The last answer, however old. */
  last(): CredentialsState {
    return this.state;
  }

  /** What a real `sts` request found: the same evidence as a check. */
  record(state: CredentialsState): void {
    this.checkedAt = Date.now();
    if (state.ok && !this.state.ok) this.log?.info('bucket credentials: the STS gives them again');
    if (!state.ok && (this.state.ok || this.state.reason !== state.reason)) {
      this.log?.warn(
        `bucket credentials: the STS gives none (${state.reason}); /readyz answers 503 until it does`,
      );
    }
    this.state = state;
  }

  /** The refusal at start, in words: the role's limit when the lifetime is what it refuses. */
  private async refusal(err: StorageProviderError, expire: number): Promise<string> {
    const asked = Math.max(expire, SHORTEST);
    const said = `The bucket's STS refuses credentials (${err.providerReason})`;
    const settings =
      'Check accessKeyId, secretAccessKey and roleArn in the --bucket-config file, and that the role trusts that user.';
    if (asked <= SHORTEST) return `${said}. ${settings}`;
    const limit = await this.roleLimit(asked);
    if (limit === null) return `${said}. ${settings}`;
    return (
      `${said} for ${asked} s (--sts-expire): the role allows ${limit} s; lower --sts-expire ` +
      `or raise the role's MaxSessionDuration.`
    );
  }

  /**
   * The longest lifetime below `refused` the provider gives, found by asking
   * (binary search, at most MAX_PROBES calls); null when even the shortest is
   * refused (the refusal is about something else).
   */
  private async roleLimit(refused: number): Promise<number | null> {
    const gives = async (seconds: number): Promise<boolean | null> => {
      try {
        await this.bucket.probe!(seconds);
        return true;
      } catch (err) {
        return err instanceof StorageProviderError && err.refused ? false : null;
      }
    };
    if ((await gives(SHORTEST)) !== true) return null;
    let lo = SHORTEST;
    let hi = refused;
    for (let i = 0; i < MAX_PROBES && hi - lo > 1; i++) {
      const mid = Math.floor((lo + hi) / 2);
      const answer = await gives(mid);
      if (answer === null) break;
      if (answer) lo = mid;
      else hi = mid;
    }
    return lo;
  }
}

function failure(err: unknown): CredentialsState {
  return {
    ok: false,
    reason: err instanceof StorageProviderError ? err.providerReason : String((err as Error)?.message ?? err),
  };
}
