/**
 * The link, put together for an agent: what the OS says (the watcher), which
 * network it is (network.ts, or the watcher's), what the crew pinned and
 * budgeted for it and the bandwidth timetable (settings `link`), applied to
 * the gate the engine asks before every part. The settings file is looked at
 * every `pollMs` (2 s), so `link pin`, `link budget` and `link limit` from
 * another process are in force within 10 s; `onSettings` hands new link
 * settings to the bucket's limiter (BucketAccess.updateConfig keeps the
 * uploads in flight when only the link changed).
 */
import fs from 'node:fs';
import path from 'node:path';
import { loadConfig, type Config } from '../config.js';
import { LinkGate, type GateOptions, type NetworkFacts } from './gate.js';
import { linuxNetwork, NO_NETWORK, type NetworkId } from './network.js';
import { LinkStore } from './store.js';
import type { LinkCost } from './transitions.js';
import type { LinkReading, LinkWatcher } from './watcher.js';

export const LINK_DB = 'link.db';
const MiB = 1024 * 1024;

export interface LinkControllerOptions {
  stateDir: string;
  /** The settings file to follow (its `link` section); absent: `config` only. */
  configFile?: string;
  config: Config;
  /** What the OS says (default: this OS's watcher, loaded by `start`). */
  watcher?: LinkWatcher;
  /** Which network (default: Linux's default route; elsewhere the watcher's). */
  network?: () => NetworkId;
  pollMs?: number;
  gate?: GateOptions;
  /** New settings were read from the file (their link section changed). */
  onSettings?: (config: Config) => void;
}

/** Pins and the OS's word, put together: the pin wins; an OS that does not say counts as not metered. */
export function factsOf(config: Config, reading: LinkReading, id: NetworkId): NetworkFacts {
  const entry = id.key ? config.link.networks[id.key] : undefined;
  const cost: LinkCost = entry?.pin ?? (reading.cost === 'unknown' ? 'unmetered' : reading.cost);
  return {
    key: id.key,
    label: entry?.label ?? id.label,
    cost,
    budget: entry?.budget && { bytes: entry.budget.mib * MiB, per: entry.budget.per },
  };
}

export class LinkController {
  readonly store: LinkStore;
  readonly gate: LinkGate;
  private config: Config;
  private reading: LinkReading = { cost: 'unknown', source: 'not read yet' };
  private lastFacts = '';
  private lastFile = '';
  private timer: NodeJS.Timeout | undefined;
  private stopWatch: (() => Promise<void>) | undefined;
  private started: Promise<void> | undefined;

  constructor(private readonly opts: LinkControllerOptions) {
    this.config = opts.config;
    this.store = new LinkStore(path.join(opts.stateDir, LINK_DB));
    this.gate = new LinkGate(this.store, opts.gate);
  }

  get settings(): Config {
    return this.config;
  }

  get detected(): LinkReading {
    return this.reading;
  }

  /**
   * Follows the OS's word and the settings file; resolves once the gate has
   * its first facts. Once: a second call waits for the first.
   */
  start(): Promise<void> {
    return (this.started ??= this.watchNow());
  }

  private async watchNow(): Promise<void> {
    this.lastFile = this.fileStamp();
    // The OS's client (Linux: a D-Bus client and a connection to the system bus) is loaded here, not before.
    const watcher = this.opts.watcher ?? (await (await import('./watcher.js')).linkWatcherFor());
    this.stopWatch = await watcher.watch((r) => {
      this.reading = r;
      this.refresh();
    });
    this.refresh();
    this.timer = setInterval(() => this.tick(), this.opts.pollMs ?? 2000);
    this.timer.unref();
  }

  async stop(): Promise<void> {
    await this.started?.catch(() => undefined);
    clearInterval(this.timer);
    await this.stopWatch?.();
    this.gate.close();
    this.store.close();
  }

  /** Looks at the settings file and the network again (also every pollMs). */
  tick(): void {
    const stamp = this.fileStamp();
    if (this.opts.configFile && stamp !== this.lastFile) {
      this.lastFile = stamp;
      try {
        const next = loadConfig(this.opts.configFile);
        const changed = JSON.stringify(next.link) !== JSON.stringify(this.config.link);
        this.config = next;
        if (changed) this.opts.onSettings?.(next);
      } catch {
        // A settings file being written or broken: keep the settings in force (the CLI said why).
      }
    }
    this.refresh();
  }

  private refresh(): void {
    const id = this.reading.network ?? (this.opts.network ?? defaultNetwork)();
    const facts = factsOf(this.config, this.reading, id);
    const sig = JSON.stringify(facts);
    if (sig !== this.lastFacts) {
      this.lastFacts = sig;
      this.gate.see(facts);
    }
  }

  private fileStamp(): string {
    if (!this.opts.configFile) return '';
    try {
      const st = fs.statSync(this.opts.configFile);
      return `${st.mtimeMs} ${st.size}`;
    } catch {
      return 'none';
    }
  }
}

function defaultNetwork(): NetworkId {
  return process.platform === 'linux' ? linuxNetwork() : NO_NETWORK;
}

/**
 * The link of this computer, started: the OS's watcher (watcher.ts), the
 * network of its default route. What an agent runs: give `gate` to the
 * engine (EngineOptions.gate) and route `onSettings` to its updateConfig.
 */
export async function startLink(opts: LinkControllerOptions): Promise<LinkController> {
  const ctl = new LinkController(opts);
  await ctl.start();
  return ctl;
}
