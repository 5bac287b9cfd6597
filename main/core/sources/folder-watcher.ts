import fs from 'node:fs';
import path from 'node:path';
import { createRequire } from 'node:module';
import type * as Chokidar from 'chokidar';
import type { FSWatcher } from 'chokidar';
import { isInside } from '../media/discover.js';
import type { Source } from './source.js';

export interface FolderWatcherEvents {
  /** Files whose size has been stable for the quiet period, batched. */
  files: (source: Source, absPaths: string[]) => void;
  /** The folder itself went away (unmounted share, pulled card). */
  gone: (source: Source) => void;
  /** The folder is back after being gone. */
  back: (source: Source) => void;
}

/**
 * Watches one folder with chokidar. Files still being written (a copy in
 * progress) are only reported once their size has been stable for
 * `quietMs`; bursts are batched. The folder's own presence is checked with a
 * cheap stat, because chokidar cannot tell "folder removed" from "files
 * deleted" reliably across platforms, and a pulled card must never look like
 * deleted files.
 */
export class FolderWatcher {
  private watcher: FSWatcher | null = null;
  private pending = new Set<string>();
  private flushTimer: NodeJS.Timeout | null = null;
  private presenceTimer: NodeJS.Timeout | null = null;
  private present: boolean;

  constructor(
    readonly source: Source,
    private readonly on: FolderWatcherEvents,
    private readonly opts: {
      quietMs?: number;
      batchMs?: number;
      presenceMs?: number;
      /** Folders never watched (the agent's own: its state, its copies' destinations), asked when watching starts. */
      own?: () => readonly string[];
    } = {},
  ) {
    this.present = fs.existsSync(source.root);
  }

  start(): void {
    if (this.present) this.startWatcher();
    this.presenceTimer = setInterval(() => this.checkPresence(), this.opts.presenceMs ?? 1000);
    this.presenceTimer.unref();
  }

  async stop(): Promise<void> {
    if (this.presenceTimer) clearInterval(this.presenceTimer);
    if (this.flushTimer) clearTimeout(this.flushTimer);
    this.presenceTimer = this.flushTimer = null;
    await this.watcher?.close();
    this.watcher = null;
  }

  private startWatcher(): void {
    const quietMs = this.opts.quietMs ?? 2000;
    const own = (this.opts.own?.() ?? []).map((p) => path.resolve(p));
    // Loaded when a folder is first watched: a one-shot `sync` never loads it (issue 33).
    const { watch } = createRequire(import.meta.url)('chokidar') as typeof Chokidar;
    this.watcher = watch(this.source.root, {
      ignoreInitial: true,
      // Hidden files and the MISC folder never hold media to upload.
      // The agent's own folders: its queue's writes must not wake a scan of it (`watch ~`).
      ignored: (p: string) => {
        const base = path.basename(p);
        return base.startsWith('.') || base.toUpperCase() === 'MISC' || own.some((f) => isInside(p, f));
      },
      awaitWriteFinish: { stabilityThreshold: quietMs, pollInterval: Math.min(250, quietMs) },
    });
    const add = (p: string) => {
      this.pending.add(p);
      this.scheduleFlush();
    };
    this.watcher.on('add', add);
    this.watcher.on('change', add);
    this.watcher.on('error', () => this.checkPresence());
  }

  private scheduleFlush(): void {
    if (this.flushTimer) return;
    this.flushTimer = setTimeout(() => {
      this.flushTimer = null;
      const batch = [...this.pending];
      this.pending.clear();
      if (batch.length) this.on.files(this.source, batch);
    }, this.opts.batchMs ?? 300);
  }

  private checkPresence(): void {
    const now = fs.existsSync(this.source.root);
    if (now === this.present) return;
    this.present = now;
    if (!now) {
      void this.watcher?.close();
      this.watcher = null;
      this.pending.clear();
      this.on.gone(this.source);
    } else {
      this.startWatcher();
      this.on.back(this.source);
    }
  }
}
