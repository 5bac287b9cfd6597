/**
 * What the service allows any one client, with the defaults the README's
 * Security section lists. Every limit is an option of startService, so tests
 * can use short ones; `serve` uses the defaults.
 */
export interface ServiceLimits {
  /** Both servers: time to receive a request's headers (a connection that sends none is cut after it). */
  headersTimeoutMs: number;
  /**
   * Both servers: a connection with no byte in either direction for this long
   * is closed. At the bucket this is the only limit on a request once its
   * headers are in: an upload that keeps sending, however slowly, is served
   * however long it takes (a crew's uplink, shared by a dozen uploads under
   * a bandwidth limit, can take hours over one large part).
   */
  idleTimeoutMs: number;
  /** Both servers: an idle keep-alive connection is closed after this. */
  keepAliveTimeoutMs: number;
  /** API: a whole request (headers and body). */
  requestTimeoutMs: number;
  /**
   * Each server: the most open connections. At the cap a new connection
   * replaces the longest-idle one that is not in the middle of a request
   * (connections.ts); when every one is busy, it is closed at once.
   */
  maxConnections: number;
  /**
   * Each server: connections one client address (IPv6: one /64) may hold. At
   * this bound its new connection replaces its own longest-idle one; when all
   * of its connections are busy, the new one is closed at once.
   */
  maxConnectionsPerAddress: number;
  /** Largest PutObject body. */
  maxObjectBytes: number;
  /** Largest UploadPart body. */
  maxPartBytes: number;
  maxObjectsPerWorkspace: number;
  maxOpenUploadsPerWorkspace: number;
  /** Wrong passwords a client IP or a username may send before each next try must wait. */
  loginFreeFailures: number;
  /** The wait after the first failure beyond those... */
  loginFirstWaitSeconds: number;
  /** ...doubles with each further failure, up to this. */
  loginMaxWaitSeconds: number;
  /** STS issues one API token may ask for at once... */
  stsBurst: number;
  /** ...and then one more every this many seconds. */
  stsRefillSeconds: number;
  /** External bucket: /readyz asks the STS for credentials again once its last answer is this old. */
  bucketCheckSeconds: number;
  /**
   * External bucket: a request to the provider (its STS) with nothing back for
   * this long is given up; the client is answered that the provider failed.
   */
  providerIdleMs: number;
}

const GiB = 1024 ** 3;

export const DEFAULT_LIMITS: Readonly<ServiceLimits> = {
  headersTimeoutMs: 10_000,
  idleTimeoutMs: 30_000,
  keepAliveTimeoutMs: 5_000,
  requestTimeoutMs: 30_000,
  maxConnections: 256,
  // The agent holds up to 32 connections to the API and 48 to a bucket (storage/s3.ts); a few agents behind one NAT fit.
  maxConnectionsPerAddress: 64,
  maxObjectBytes: 5 * GiB,
  maxPartBytes: 5 * GiB,
  maxObjectsPerWorkspace: 1_000_000,
  maxOpenUploadsPerWorkspace: 1000,
  loginFreeFailures: 5,
  loginFirstWaitSeconds: 1,
  loginMaxWaitSeconds: 900,
  stsBurst: 60,
  stsRefillSeconds: 10,
  bucketCheckSeconds: 30,
  // Under requestTimeoutMs: the agent gets the provider's failure, not a cut connection.
  providerIdleMs: 20_000,
};

/** The defaults with `given` applied; every value must be a positive integer, every name a limit. */
export function resolveLimits(given: Partial<ServiceLimits> = {}): ServiceLimits {
  for (const name of Object.keys(given)) {
    if (!(name in DEFAULT_LIMITS)) throw new Error(`limits.${name} is not a limit of the service.`);
  }
  const limits = { ...DEFAULT_LIMITS, ...given };
  for (const [name, value] of Object.entries(limits)) {
    if (!Number.isSafeInteger(value) || value < 1) {
      throw new Error(`limits.${name} must be a positive integer (got ${String(value)}).`);
    }
  }
  return limits;
}

/** How often Node checks the header and request timeouts: often enough for the shortest one. */
export function checkingInterval(...timeoutsMs: number[]): number {
  return Math.max(50, Math.min(5_000, Math.floor(Math.min(...timeoutsMs) / 4)));
}
