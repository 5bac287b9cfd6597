/**
 * Who sends the next part: the part slots every upload shares. A part (or a
 * small file's single PUT) takes a slot before it is read and sent, and
 * gives it back when the bucket answered. Waiting parts are served lane by
 * lane (what goes first), then first come first served: a new card's first
 * lane overtakes an older card's videos at the next part boundary; the part
 * in flight finishes, nothing sent is cancelled.
 *
 * On a slow link that boundary must come soon, so only as many bytes are in
 * flight as fill the link: the slots measure the rate the bucket takes
 * bytes at and keep about PART_SECONDS of it in flight (at 8 Mbit/s and
 * 8 MiB parts: one part, with small files beside it; on a fast link up to
 * `max` parts within MAX_BYTES_IN_FLIGHT, each a body in memory). Before anything is measured the user's bandwidth limit, when
 * set, says the rate; else two parts' worth go. Small files (a card of
 * photos) go many at once within the same bytes.
 *
 * The link must not fall idle at a part boundary: between a part's last byte
 * and the next one's first come the bucket's answer, the next part's read
 * and MD5, and a new request (measured at 15 Mbit/s under load: 0.3 s a
 * part, 7 % of the link). So when what is in flight should be on the link
 * within LEAD_SECONDS at the measured rate, one more part may start: at most
 * one beyond what fills the link, and it is the best lane's waiting part,
 * so the boundary a new card waits for comes sooner, not later.
 *
 * Before a part starts the link's gate is asked (part-gate.ts): a lane the
 * gate holds waits without holding a slot; lanes it lets go pass it.
 */
import { laneRank, type LaneName } from '../queue/lanes.js';
import { GATE_POLL_MS, OPEN_GATE, type PartGate } from './part-gate.js';

/** A part in flight should take about this long at the measured rate. */
export const PART_SECONDS = 8;
/** Parts this small say little about the link's rate (their time is mostly round trips). */
const MIN_SAMPLE_BYTES = 1024 * 1024;
/** In flight before any rate is known and no limit is set. */
const START_WIDTH = 2;
/** The next part may start when what is in flight should be sent within this (see above). */
export const LEAD_SECONDS = 1.5;
/**
 * The most bytes in flight on any link, the lead part aside: each is a body
 * in memory. On loopback or a LAN the measured rate would allow `max` parts
 * (12 × 8 MiB: 96 MiB of the agent's 415 MiB peak on a 2 GiB card, issue 33),
 * while 3 parts and the lead keep the bucket as busy (a gigabit link with
 * 100 ms of round trip holds 12 MiB): measured on the offload bench's card
 * with no destination, 40 MiB gave 313-319 MiB of peak RSS, 24 MiB 293 MiB,
 * with the time 0.87x rclone's.
 */
export const MAX_BYTES_IN_FLIGHT = 24 * 1024 * 1024;

export interface PartTicket {
  /** The bucket took the part: `bytes` crossed the link. Gives the slot back. */
  done(bytes: number): void;
  /** The part failed or was cancelled: gives the slot back, nothing counted. */
  release(): void;
}

interface Waiter {
  lane: LaneName;
  /** The lane its file is in now (it may move while the part waits: a flagged frame); default `lane`. */
  laneNow?: (() => LaneName) | undefined;
  rank: number;
  bytes: number;
  seq: number;
  grant: () => void;
}

export interface PartSlotsOptions {
  /** Most parts in flight at once, whatever the rate. */
  max: number;
  /** The usual part size, bytes (the parallelism is sized to it). */
  partBytes: number;
  /** The user's bandwidth limit, bytes/s (0: none): the rate until one is measured. */
  limitBytesPerSecond?: number;
  gate?: PartGate;
  now?: () => number;
}

export class PartSlots {
  private active = 0;
  private activeBytes = 0;
  private readonly waiting: Waiter[] = [];
  private seq = 0;
  private measured = 0;
  private gate: PartGate;
  private unsubscribe: (() => void) | undefined;
  private poll: NodeJS.Timeout | undefined;
  private readonly now: () => number;
  /** The parts in flight: their bytes and the share integral when they started. */
  private readonly flying = new Set<{ bytes: number; shareAtStart: number }>();
  /** Wakes the waiters when a part may start ahead of the boundary. */
  private lead: NodeJS.Timeout | undefined;
  /** The link's time each part in flight had to itself: the integral of 1/active (ms). */
  private shareMs = 0;
  private shareAt = 0;

  constructor(private opts: PartSlotsOptions) {
    this.gate = opts.gate ?? OPEN_GATE;
    this.now = opts.now ?? Date.now;
    this.unsubscribe = this.gate.subscribe?.(() => this.drain());
  }

  /** New settings (limit, part size, most in flight) or a new gate. */
  update(opts: Partial<PartSlotsOptions>): void {
    this.opts = { ...this.opts, ...opts };
    if (opts.gate && opts.gate !== this.gate) {
      this.unsubscribe?.();
      this.gate = opts.gate;
      this.unsubscribe = this.gate.subscribe?.(() => this.drain());
    }
    this.drain();
  }

  /** The rate the bucket took bytes at lately (bytes/s), or the limit, or 0 when unknown. */
  get rate(): number {
    return this.measured > 0 ? this.measured : (this.opts.limitBytesPerSecond ?? 0);
  }

  /** Bytes that may be in flight at once now (one part always may). */
  get budget(): number {
    const rate = this.rate;
    const fill = rate > 0 ? rate * PART_SECONDS : START_WIDTH * Math.max(1, this.opts.partBytes);
    return Math.min(fill, MAX_BYTES_IN_FLIGHT);
  }

  /** How many full-size parts go at once now. */
  get width(): number {
    const fit = Math.floor(this.budget / Math.max(1, this.opts.partBytes));
    return Math.max(1, Math.min(Math.max(1, this.opts.max), fit));
  }

  get inFlight(): number {
    return this.active;
  }

  /** Waits for a slot for a part of `bytes` bytes of `lane` (its turn, and the gate's yes). */
  take(lane: LaneName, bytes: number, signal?: AbortSignal, laneNow?: () => LaneName): Promise<PartTicket> {
    const aborted = (): Error =>
      signal?.reason instanceof Error
        ? signal.reason
        : new DOMException('The operation was aborted', 'AbortError');
    if (signal?.aborted === true) return Promise.reject(aborted());
    return new Promise<PartTicket>((resolve, reject) => {
      const waiter: Waiter = {
        lane,
        laneNow,
        rank: laneRank(lane),
        bytes,
        seq: this.seq++,
        grant: () => {
          signal?.removeEventListener('abort', onAbort);
          resolve(this.ticket(lane, bytes));
        },
      };
      const onAbort = (): void => {
        const i = this.waiting.indexOf(waiter);
        if (i >= 0) this.waiting.splice(i, 1);
        reject(aborted());
      };
      signal?.addEventListener('abort', onAbort, { once: true });
      // Lane by lane, then in arrival order.
      let at = this.waiting.findIndex((w) => w.rank > waiter.rank);
      if (at < 0) at = this.waiting.length;
      this.waiting.splice(at, 0, waiter);
      this.drain();
    });
  }

  /**
   * The lanes whose parts wait for the gate alone (asked again first), when
   * nothing else happens on the link: no part in flight and every waiting
   * part held by the gate. Else null. A one-shot run ends on it.
   */
  heldByGate(): ReadonlySet<LaneName> | null {
    this.drain();
    // With no part in flight every waiter the gate lets go was granted: those left are held.
    if (this.active > 0 || this.waiting.length === 0) return null;
    return new Set(this.waiting.map((w) => w.lane));
  }

  /** Stops listening to the gate. */
  close(): void {
    this.unsubscribe?.();
    this.unsubscribe = undefined;
    if (this.poll) clearInterval(this.poll);
    this.poll = undefined;
    if (this.lead) clearTimeout(this.lead);
    this.lead = undefined;
  }

  private ticket(lane: LaneName, size: number): PartTicket {
    this.share();
    const part = { bytes: size, shareAtStart: this.shareMs };
    this.flying.add(part);
    let open = true;
    const give = (): void => {
      open = false;
      this.share();
      this.flying.delete(part);
      this.active--;
      this.activeBytes -= size;
      this.drain();
    };
    return {
      done: (bytes) => {
        if (!open) return;
        this.share();
        this.learn(bytes, this.shareMs - part.shareAtStart);
        this.gate.sent(lane, bytes);
        give();
      },
      release: () => {
        if (open) give();
      },
    };
  }

  /** Brings the share integral up to now (before `active` changes). */
  private share(): void {
    const t = this.now();
    if (this.active > 0 && t > this.shareAt) this.shareMs += (t - this.shareAt) / this.active;
    this.shareAt = t;
  }

  /**
   * One part's bytes over the link's time it had to itself (its time with n
   * parts in flight counts 1/n): the link's rate, smoothed. A part that
   * shared its start or end with the next one's lead is not taken for a
   * faster link.
   */
  private learn(bytes: number, ownMs: number): void {
    if (bytes < MIN_SAMPLE_BYTES || ownMs <= 0) return;
    const sample = (bytes * 1000) / ownMs;
    this.measured = this.measured === 0 ? sample : this.measured * 0.6 + sample * 0.4;
  }

  /** The waiter may start now: nothing in flight, it fits the bytes that fill the link, or it leads. */
  private fits(bytes: number): boolean {
    if (this.active === 0 || this.activeBytes + bytes <= this.budget) return true;
    // One part beyond what fills the link, once what is in flight is nearly sent.
    const rate = this.rate;
    const fill = this.width * Math.max(1, this.opts.partBytes);
    return (
      rate > 0 &&
      this.activeBytes + bytes <= fill + Math.max(1, this.opts.partBytes) &&
      this.leftBytes() <= rate * LEAD_SECONDS
    );
  }

  /**
   * Bytes of the parts in flight not yet on the link, as the measured rate
   * says: each has had its share of the link since it started.
   */
  private leftBytes(): number {
    this.share();
    const rate = this.rate;
    let left = 0;
    for (const p of this.flying)
      left += Math.max(0, p.bytes - (rate * (this.shareMs - p.shareAtStart)) / 1000);
    return left;
  }

  /** Wakes the waiters when the lead time of what is in flight comes. */
  private wakeForLead(): void {
    if (this.lead) clearTimeout(this.lead);
    this.lead = undefined;
    if (this.waiting.length === 0 || this.active === 0 || this.rate <= 0) return;
    const ms = ((this.leftBytes() - this.rate * LEAD_SECONDS) * 1000) / this.rate;
    if (ms <= 0) return;
    this.lead = setTimeout(() => {
      this.lead = undefined;
      this.drain();
    }, ms);
    this.lead.unref();
  }

  private drain(): void {
    let held = false;
    const max = Math.max(1, this.opts.max);
    for (let i = 0; i < this.waiting.length && this.active < max;) {
      const w = this.waiting[i] as Waiter;
      if (!this.gate.mayStart(w.laneNow?.() ?? w.lane, w.bytes)) {
        held = true;
        i++;
        continue;
      }
      // The best waiter the gate lets go must fit the bytes in flight (one part always fits):
      // those behind it wait too, so a big part of the first lane is not overtaken by small ones.
      if (!this.fits(w.bytes)) break;
      this.waiting.splice(i, 1);
      this.share(); // the time so far at the old count
      this.active++;
      this.activeBytes += w.bytes;
      w.grant();
    }
    this.wakeForLead();
    // A gate that said no is asked again, even if it never says it changed.
    if (held && !this.poll) this.poll = setInterval(() => this.drain(), GATE_POLL_MS);
    if (!held && this.poll) {
      clearInterval(this.poll);
      this.poll = undefined;
    }
  }
}
