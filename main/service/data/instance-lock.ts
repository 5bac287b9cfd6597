import pg from 'pg';
import type { Logger } from 'pino';
import type { PostgresConfig } from './config.js';
import { connectionOptions, describeDatabase } from './config.js';

/** Advisory lock key of the instance lock ('dms' in ASCII, then a number). */
export const INSTANCE_LOCK = 0x646d73_0002;

/** Tries of taking the lock again after its connection was lost: this often while the database is away. */
const RETAKE_MS = 1_000;
/** ... and this often while another instance holds it in a mode that excludes ours. */
const CONFLICT_RETAKE_MS = 5_000;

const ignore = (): undefined => undefined;

/**
 * The instance lock, held for the life of the service on a connection of its
 * own: `exclusive` for an instance with the embedded bucket (its files are on
 * this machine only), `shared` for instances with an external bucket.
 * PostgreSQL grants an exclusive lock only when no one else holds it in any
 * mode, so neither a second embedded-bucket instance nor a mix of the two
 * kinds can start.
 *
 * A session lock lives as long as its connection: when the database restarts
 * (or the connection is cut), it is gone, and another instance could start
 * beside this one unseen. So a lost lock is taken again, every second until
 * the database is back. Should another instance have taken it in the
 * meantime, `conflict` says so (readiness answers 503 with it: a load
 * balancer stops sending here) and the lock is tried again every 5 s, until
 * one of the two is stopped.
 */
export class InstanceLock {
  private client: pg.Client | null = null;
  private timer: NodeJS.Timeout | null = null;
  private closed = false;
  /** Why this instance must not serve now (another instance took the lock while ours was lost), else null. */
  conflict: string | null = null;

  constructor(
    private readonly config: PostgresConfig,
    readonly mode: 'exclusive' | 'shared',
    private readonly log: Logger | null,
  ) {}

  /** True while the lock is held (a connection holding it is open). */
  get held(): boolean {
    return this.client !== null;
  }

  /**
   * The first take, at start: false when another instance holds the lock in
   * a mode that excludes ours. A connection failure is thrown (the start fails).
   */
  async take(): Promise<boolean> {
    const client = this.newClient();
    await client.connect();
    if (!(await this.lockOn(client))) return false;
    this.hold(client);
    return true;
  }

  async close(): Promise<void> {
    this.closed = true;
    if (this.timer) clearTimeout(this.timer);
    const client = this.client;
    this.client = null;
    await client?.end().catch(ignore);
  }

  private newClient(): pg.Client {
    return new pg.Client({
      ...connectionOptions(this.config),
      application_name: 'drone-media-sync instance lock',
      keepAlive: true,
      connectionTimeoutMillis: 5_000,
    });
  }

  /** Takes the lock on `client`; when it is not granted, closes the client and returns false. */
  private async lockOn(client: pg.Client): Promise<boolean> {
    const fn = this.mode === 'exclusive' ? 'pg_try_advisory_lock' : 'pg_try_advisory_lock_shared';
    try {
      const got = (await client.query<{ ok: boolean }>(`SELECT ${fn}($1) AS ok`, [INSTANCE_LOCK])).rows[0]
        ?.ok;
      if (got) return true;
    } catch (err) {
      await client.end().catch(ignore);
      throw err;
    }
    await client.end().catch(ignore);
    return false;
  }

  private hold(client: pg.Client): void {
    this.client = client;
    // An idle connection cut by a server restart says so with 'error', then 'end'.
    const lost = (err?: Error) => this.lost(client, err);
    client.on('error', lost);
    client.on('end', () => lost());
  }

  private lost(client: pg.Client, err?: Error): void {
    if (this.closed || this.client !== client) return;
    this.client = null;
    client.end().catch(ignore);
    this.log?.warn(
      { err: err?.message },
      'the database connection holding the instance lock was lost; taking the lock again',
    );
    this.retakeIn(RETAKE_MS);
  }

  private retakeIn(ms: number): void {
    if (this.closed) return;
    if (this.timer) clearTimeout(this.timer);
    this.timer = setTimeout(() => void this.retake(), ms);
    // Never what keeps the process alive.
    this.timer.unref();
  }

  private async retake(): Promise<void> {
    this.timer = null;
    const client = this.newClient();
    client.on('error', ignore); // a failed connect rejects below; nothing else to say
    let got: boolean;
    try {
      await client.connect();
      got = await this.lockOn(client);
    } catch {
      await client.end().catch(ignore);
      return this.retakeIn(RETAKE_MS); // the database is still away
    }
    if (this.closed) {
      if (got) await client.end().catch(ignore);
      return;
    }
    if (!got) {
      if (!this.conflict) {
        this.conflict = this.conflictMessage();
        this.log?.error(this.conflict);
      }
      return this.retakeIn(CONFLICT_RETAKE_MS);
    }
    client.removeAllListeners('error');
    this.hold(client);
    if (this.conflict) this.log?.info('the other instance is gone: this instance holds the database again');
    else this.log?.info('the instance lock is held again');
    this.conflict = null;
  }

  private conflictMessage(): string {
    const db = describeDatabase(this.config.url);
    const why =
      this.mode === 'exclusive'
        ? 'This one has the embedded bucket, whose files stay on this machine, so it must be the only service on that database.'
        : 'That one has the embedded bucket, whose files stay on its own machine, so no other instance may share the database.';
    return (
      `This instance lost its connection to the database ${db} for a while, and another drone-media-sync ` +
      `service started on that database meanwhile. ${why} This instance no longer reports ready ` +
      '(GET /readyz answers 503): stop one of the two services (see docs/deploy.md).'
    );
  }
}
