/**
 * When to interrupt the user. Pure policy: activity goes in, at most a few
 * notices come out. Never one per file: a card is announced once when its
 * scan (and wayline matching) is done, a sync is summed up when the engine
 * goes idle, and problems that need the user are said once until resolved.
 */
import type { HaltReason, RunStateName } from '../shared/ipc.js';
import { formatBytes } from '../shared/sizes.js';

/** What the controller reports (plain data, no secrets). */
export type Activity =
  | { type: 'source-added'; sourceId: string; label: string; isCard: boolean }
  | { type: 'source-removed'; sourceId: string }
  | { type: 'wayline'; sourceId: string; folder: string; waylineName: string | null }
  | { type: 'scanned'; sourceId: string; pending: number; alreadyDone: number }
  /** What the agent's run did since its last result (it goes idle): the app sums it up, never rebuilds it. */
  | { type: 'result'; uploaded: number; bytes: number; alreadyThere: number; failed: number }
  | { type: 'state'; state: RunStateName; message: string | null; halt?: HaltReason }
  /** A card came to rest: its verdict (advisory: flights to look at before leaving, never blocking). */
  | {
      type: 'offload';
      sourceId: string;
      label: string;
      safe: boolean;
      message: string;
      reasons: string[];
      advisory?: string | null;
    }
  /** A card's copies came to rest on the local destinations: its local verdict (the upload goes on). */
  | {
      type: 'local';
      sourceId: string;
      label: string;
      safe: boolean;
      message: string;
      advisory?: string | null;
    }
  /** A local destination stopped for a card (full, unplugged, too small): its reason. */
  | { type: 'destination-stopped'; sourceId: string; label: string; destination: string; message: string }
  /** The link asks the crew (issue 31): "Upload 41.0 GB of photos and videos over this metered network?" */
  | { type: 'link-question'; network: string; text: string };

export interface Notice {
  kind: 'card' | 'synced' | 'problem' | 'sign-in' | 'halted' | 'safe' | 'locally-safe' | 'link';
  title: string;
  body: string;
}

export interface PolicyOptions {
  now?: () => number;
  /** Minimum time between two "synced" summaries; meanwhile they add up. */
  summaryCooldownMs?: number;
  /** The same card re-detected within this time (a flaky reader) is not announced again. */
  cardRepeatMs?: number;
}

interface CardScan {
  label: string;
  flights: Array<{ folder: string; waylineName: string | null }>;
}

const plural = (n: number, one: string, many = `${one}s`) => `${n} ${n === 1 ? one : many}`;

export { formatBytes };

/** "Waypoint1" from "DJI_202209021517_001_Waypoint1" (a manual flight has no name part). */
function missionOf(folder: string): string {
  return /^DJI_\d{12}_\d{3}_(.+)$/i.exec(folder)?.[1] ?? folder;
}

export class NotificationPolicy {
  private readonly now: () => number;
  private readonly cooldownMs: number;
  private readonly cardRepeatMs: number;
  private readonly scans = new Map<string, CardScan>();
  private readonly announced = new Map<string, number>();
  private batch = { uploaded: 0, fastUploaded: 0, failed: 0, bytes: 0 };
  private lastSummaryAt = -Infinity;
  private held = false;
  private signInSaid = false;
  private haltSaid = false;
  /** The last verdict said per card, so the same one is not said twice. */
  private readonly verdicts = new Map<string, string>();
  /** Cards already said to be locally safe (once per card while the app runs). */
  private readonly locallySafe = new Set<string>();
  /** Destination stops already said, by card, destination and reason. */
  private readonly stops = new Set<string>();
  /** Cards whose advisory line was said since they were inserted (once per card event). */
  private readonly advised = new Set<string>();
  /** The link's questions already said, by network and question. */
  private readonly linkAsked = new Set<string>();

  constructor(opts: PolicyOptions = {}) {
    this.now = opts.now ?? Date.now;
    this.cooldownMs = opts.summaryCooldownMs ?? 120_000;
    this.cardRepeatMs = opts.cardRepeatMs ?? 60_000;
  }

  handle(a: Activity): Notice[] {
    switch (a.type) {
      case 'source-added':
        if (a.isCard) this.scans.set(a.sourceId, { label: a.label, flights: [] });
        this.advised.delete(a.sourceId); // a new insertion: its flights are said again
        return [];
      case 'source-removed':
        this.scans.delete(a.sourceId);
        return [];
      case 'wayline':
        this.scans.get(a.sourceId)?.flights.push({ folder: a.folder, waylineName: a.waylineName });
        return [];
      case 'scanned':
        return this.cardScanned(a.sourceId, a.pending, a.alreadyDone);
      case 'result':
        this.batch.uploaded += a.uploaded;
        this.batch.bytes += a.bytes;
        this.batch.fastUploaded += a.alreadyThere;
        this.batch.failed += a.failed;
        return [];
      case 'state':
        return this.stateChanged(a.state, a.message, a.halt);
      case 'offload':
        return this.offload(a);
      case 'local':
        return this.local(a);
      case 'destination-stopped': {
        const key = `${a.sourceId}|${a.destination}|${a.message}`;
        if (this.stops.has(key)) return [];
        this.stops.add(key);
        return [{ kind: 'problem', title: `${a.label}: not copied to ${a.destination}`, body: a.message }];
      }
      case 'link-question': {
        // Once per network and question: the window may be closed while the videos wait.
        const key = `${a.network}|${a.text}`;
        if (this.linkAsked.has(key)) return [];
        this.linkAsked.add(key);
        return [
          {
            kind: 'link',
            title: a.text,
            body: 'Open Drone Media Sync to answer (Yes for this network, Not now, Never on this network). RTK files and logs go meanwhile.',
          },
        ];
      }
    }
  }

  /**
   * The card's copies are verified on every local destination: the crew may
   * take the card out now, while the upload goes on from the copies. Said
   * once per card; a local verdict that is not safe is left to the window
   * (the card's full verdict follows when it comes to rest).
   */
  private local(a: Extract<Activity, { type: 'local' }>): Notice[] {
    if (!a.safe || this.locallySafe.has(a.sourceId)) return [];
    this.locallySafe.add(a.sourceId);
    return [
      {
        kind: 'locally-safe',
        title: `${a.label} is locally safe: you can take the card out`,
        body: this.withAdvisory(a, a.message),
      },
    ];
  }

  /**
   * The verdict's body, with the advisory line below it the first time a
   * verdict of this card is said after it was inserted (issue 32). It only
   * adds words: whether the card is safe is the verdict's alone.
   */
  private withAdvisory(a: { sourceId: string; advisory?: string | null }, body: string): string {
    if (!a.advisory || this.advised.has(a.sourceId)) return body;
    this.advised.add(a.sourceId);
    return `${body}\n${a.advisory}`;
  }

  /**
   * A card at rest: "M30T_CARD: 212 files verified in workspace ws-1 — safe
   * to format", once per verdict; a card that is not safe says why (its first
   * reason) once, as a problem.
   */
  private offload(a: Extract<Activity, { type: 'offload' }>): Notice[] {
    const key = `${a.safe}|${a.message}`;
    if (this.verdicts.get(a.sourceId) === key) return [];
    this.verdicts.set(a.sourceId, key);
    if (a.safe)
      return [{ kind: 'safe', title: `${a.label}: safe to format`, body: this.withAdvisory(a, a.message) }];
    return [
      {
        kind: 'problem',
        title: `${a.label}: not safe to format yet`,
        body: this.withAdvisory(a, a.reasons[0] ?? a.message),
      },
    ];
  }

  /** When a held summary is due (the shell sets a timer for it), else null. */
  get dueAt(): number | null {
    return this.held ? this.lastSummaryAt + this.cooldownMs : null;
  }

  /** Emits a summary held back by the cooldown, once its time has come. */
  flushDue(): Notice[] {
    if (!this.held || this.now() < this.lastSummaryAt + this.cooldownMs) return [];
    return this.summary();
  }

  private cardScanned(sourceId: string, pending: number, alreadyDone: number): Notice[] {
    const scan = this.scans.get(sourceId);
    if (!scan) return []; // a rescan of a known source, or a watched folder: nothing to announce
    this.scans.delete(sourceId);
    const last = this.announced.get(sourceId);
    this.announced.set(sourceId, this.now());
    if (last !== undefined && this.now() - last < this.cardRepeatMs) return [];
    if (pending === 0) {
      const body =
        alreadyDone > 0
          ? `All ${plural(alreadyDone, 'file')} on it are already uploaded. You can remove it.`
          : 'No drone media was found on it.';
      return [{ kind: 'card', title: `Card ${scan.label}`, body }];
    }
    const lines = [
      `${plural(pending, 'new file')} to upload${alreadyDone ? ` (${alreadyDone} already uploaded)` : ''}.`,
    ];
    const matched = scan.flights.filter((f) => f.waylineName !== null);
    if (matched.length === 1 && matched[0])
      lines.push(`Mission ${missionOf(matched[0].folder)}: wayline “${matched[0].waylineName}”.`);
    else if (matched.length > 1) {
      const names = [...new Set(matched.map((f) => `“${f.waylineName}”`))];
      lines.push(
        `${plural(matched.length, 'flight')} matched to waylines ${names.slice(0, 3).join(', ')}${names.length > 3 ? '…' : ''}.`,
      );
    }
    const unmatched = scan.flights.length - matched.length;
    if (unmatched > 0) lines.push(`${plural(unmatched, 'flight')} without a matching wayline.`);
    return [{ kind: 'card', title: `Card ${scan.label} detected`, body: lines.join(' ') }];
  }

  private stateChanged(state: RunStateName, message: string | null, halt?: HaltReason): Notice[] {
    if (state === 'auth-required') {
      if (this.signInSaid) return [];
      this.signInSaid = true;
      return [
        {
          kind: 'sign-in',
          title: 'Sign in needed',
          body: message ?? 'The server no longer accepts your sign-in. Sign in again; nothing is lost.',
        },
      ];
    }
    if (state === 'halted') {
      // Once per halt: the reason (disk full...) and what to do, from the engine's own words.
      if (this.haltSaid) return [];
      this.haltSaid = true;
      const body =
        message ?? 'The upload queue cannot be written. Fix the cause, then press Resume; nothing is lost.';
      return [
        {
          kind: 'halted',
          title: halt === 'disk-full' ? 'Disk full: syncing stopped' : 'Syncing stopped',
          body,
        },
      ];
    }
    // Anything but auth-required means the sign-in works again (or the user resumed): a later expiry is news.
    if (state === 'syncing' || state === 'idle') {
      this.signInSaid = false;
      this.haltSaid = false;
    }
    if (state !== 'idle') return [];
    const { uploaded, fastUploaded, failed } = this.batch;
    if (uploaded + fastUploaded + failed === 0) return [];
    if (this.now() - this.lastSummaryAt < this.cooldownMs) {
      this.held = true; // sums up with what follows; flushDue() says it later
      return [];
    }
    return this.summary();
  }

  private summary(): Notice[] {
    const { uploaded, fastUploaded, failed, bytes } = this.batch;
    this.batch = { uploaded: 0, fastUploaded: 0, failed: 0, bytes: 0 };
    this.held = false;
    this.lastSummaryAt = this.now();
    const out: Notice[] = [];
    const done = uploaded + fastUploaded;
    if (done > 0) {
      const parts = [`${plural(done, 'file')} synced`];
      if (uploaded > 0) parts[0] += ` (${formatBytes(bytes)} uploaded)`;
      if (fastUploaded > 0)
        parts.push(`${fastUploaded} ${fastUploaded === 1 ? 'was' : 'were'} already on the server`);
      out.push({ kind: 'synced', title: 'Sync finished', body: `${parts.join('; ')}.` });
    }
    if (failed > 0) {
      out.push({
        kind: 'problem',
        title: `${plural(failed, 'file')} not uploaded`,
        body: 'The server refused them or they could not be read. Open Drone Media Sync to see why, then choose Retry.',
      });
    }
    return out;
  }
}
