import { Agent } from '../../core/agent.js';
import { LinkController } from '../../core/link/controller.js';
import { linkWaits, type LinkWaits } from '../../core/link/waits.js';
import { commandLinePath, parseConfig } from '../../core/config.js';
import { plainMessage } from '../../core/errors.js';
import { count, listOf } from '../../core/offload/plain.js';
import type { RunResult } from '../../core/run-result.js';
import { openAgentContext, type ServerFlags } from '../context.js';
import { folderArguments } from '../folders.js';
import { forgetDestinations } from './copies.js';
import { EXIT } from '../exit-codes.js';
import { localJson, offloadJson, skippedLine, VerdictsSaid } from '../offload-text.js';
import { formatBytes, printJson, ProgressBar, progressLine, writeLines } from '../output.js';
import { laneLines } from '../lanes.js';

export interface SyncFlags extends ServerFlags {
  json?: boolean;
  aircraft?: string;
  aircraftSerial?: string;
  /** Local destinations for this run (archive). */
  copyTo?: string[];
  /** Destinations of past runs to forget before this one. */
  forgetCopy?: string[];
}

/** How often `sync` says where it is when there is no terminal to draw a bar on. */
const PLAIN_PROGRESS_MS = 5_000;

/**
 * `sync <dir>...`: processes everything under the folders and exits 0 when
 * every file is done; otherwise non-zero with a reason per file (the queue
 * keeps the rest for the next run).
 */
export async function syncCommand(dirs: string[], flags: SyncFlags): Promise<number> {
  const roots = folderArguments(dirs);
  // Local copies need no server and no sign-in: with destinations, a missing sign-in only holds the upload.
  const ctx = await openAgentContext(flags, process.env, 'allow');
  const copiesAsked = (flags.copyTo?.length ?? 0) > 0 || ctx.config.destinations.length > 0;
  if (ctx.signInMissing && !copiesAsked) {
    await ctx.close();
    throw ctx.signInMissing;
  }
  const { queue, notice } = ctx.session;
  if (notice) writeLines([notice], process.stderr);
  if (flags.forgetCopy?.length) {
    const said = forgetDestinations(queue, flags.forgetCopy);
    if (flags.json)
      for (const message of said) printJson({ type: 'destination', state: 'forgotten', message });
    else writeLines(said, process.stderr);
  }
  // The settings are checked already: checked again only with what the options add to them.
  const added = flags.aircraft || flags.aircraftSerial || (flags.copyTo?.length ?? 0) > 0;
  const config = !added
    ? ctx.config
    : parseConfig(
        {
          ...ctx.config,
          ...(flags.aircraft ? { aircraftDefault: flags.aircraft } : {}),
          ...(flags.aircraftSerial ? { aircraftSerial: flags.aircraftSerial } : {}),
          // --copy-to: archive destinations for this run, beside the settings' own.
          destinations: [
            ...ctx.config.destinations,
            ...(flags.copyTo ?? []).map((p) => ({ path: commandLinePath(p) })),
          ],
        },
        'options',
      );
  // The link (issue 31, docs/link.md), as `watch` has it, asked before every part: on a metered
  // network the first lane goes and the run ends saying what waits (exit code 5). Its watcher
  // starts before the run only when a file may be sent (issue 33: a card of done files waits for no bus).
  const link = new LinkController({ stateDir: ctx.paths.root, configFile: ctx.paths.config, config });
  const linkNotKept = link.store.notKeptMessage;
  if (linkNotKept) {
    if (flags.json) printJson({ type: 'warning', message: linkNotKept });
    else writeLines([linkNotKept], process.stderr);
  }
  const agent = new Agent({
    gate: link.gate,
    linkStart: () => link.start(),
    queue,
    api: ctx.api,
    config,
    logger: ctx.logger,
    manifestsDir: ctx.paths.manifests,
    ...(ctx.signInMissing ? { initialState: { name: 'auth-required', error: ctx.signInMissing } } : {}),
  });
  const engine = agent.engine;
  const bar = new ProgressBar();
  const controller = new AbortController();
  const stop = () => controller.abort();
  process.once('SIGINT', stop);
  process.once('SIGTERM', stop);

  agent.on('progress', (p) => bar.update(p));
  agent.on('file', (e) => {
    if (flags.json)
      printJson({
        type: 'file',
        path: e.absPath,
        size: e.size,
        outcome: e.outcome,
        ...(e.error ? { error: e.error } : {}),
      });
  });
  agent.on('source', (e) => {
    if (e.type !== 'scanned') return;
    // Links out of the card are never read: named, so nobody wonders where a file went.
    for (const w of e.skipped) {
      if (flags.json) printJson({ type: 'skipped', path: w.path, reason: w.message });
      else writeLines([skippedLine(w)], process.stderr);
    }
  });
  // Never silent: the server failing is said at once, with what happens next; back, said too.
  agent.on('state', ({ from, to }) => {
    if (to.name === 'offline') {
      const inS = Math.max(1, Math.round((to.until - Date.now()) / 1000));
      const what = plainMessage(to.error, 'request');
      // Whether any file has a try left in this run: else it stops now, and says so at the end.
      const again = agent.triesLeft;
      if (flags.json) printJson({ type: 'offline', message: what, ...(again ? { retry_in_s: inS } : {}) });
      else {
        bar.done();
        writeLines(
          [
            again
              ? `${ctx.serverLabel}: ${what} Trying again in ${inS} s; Ctrl+C stops, nothing is lost.`
              : `${ctx.serverLabel}: ${what}`,
          ],
          process.stderr,
        );
      }
    } else if (from.name === 'offline' && to.name === 'syncing') {
      if (flags.json) printJson({ type: 'online' });
      else writeLines([`${ctx.serverLabel} answers again; continuing.`], process.stderr);
    }
  });
  // Without a terminal (a log, a pipe): a plain line every few seconds instead of the bar.
  const plainProgress =
    !flags.json && !bar.enabled
      ? setInterval(() => {
          const p = engine.snapshot();
          const run = engine.status.current;
          if (run.name === 'offline') {
            // A countdown while the shared wait runs; once it is over, the try is on its way.
            const inS = Math.round((run.until - Date.now()) / 1000);
            writeLines(
              [
                inS >= 1
                  ? `Waiting for ${ctx.serverLabel}: next try in ${inS} s.`
                  : `Waiting for ${ctx.serverLabel} to answer the new try.`,
              ],
              process.stderr,
            );
          } else if (p.filesTotal > 0)
            writeLines(
              [`Progress: ${progressLine(p).replace(/^\[[#-]*\] /, '')}`, ...laneLines(p.lanes)],
              process.stderr,
            );
        }, PLAIN_PROGRESS_MS)
      : null;
  plainProgress?.unref();
  // Each verdict said once: the copies' when they come to rest, the card's later without them again.
  const said = new VerdictsSaid();
  // Copied to every local destination and read back: the card may be pulled; said at once.
  agent.on('local', ({ offload }) => {
    const lines = said.localLines(offload);
    if (lines.length > 0 && flags.json) printJson(localJson(offload));
    else writeLines(lines);
  });
  // A destination folder created (it was not there yet) or made again: said once, where it happened.
  agent.on('destination', ({ look, message }) => {
    if (look === 'unplugged') return; // said by 'destination-stopped'
    if (flags.json) printJson({ type: 'destination', state: look, message });
    else writeLines([message], process.stderr);
  });
  agent.on('destination-stopped', ({ message }) => {
    if (flags.json) printJson({ type: 'destination-stopped', message });
    else writeLines([message], process.stderr);
  });
  agent.on('warning', (message) => {
    if (flags.json) printJson({ type: 'warning', message });
    else writeLines([message], process.stderr);
  });
  // Each folder at rest: checked in the bucket, its verdict and manifest.
  agent.on('offload', (done) => {
    if (flags.json) printJson(offloadJson(done.offload, done.manifest.dir));
    else writeLines(said.offloadLines(done.offload, done.manifest.dir));
  });

  let result: RunResult;
  try {
    ({ result } = await agent.syncOnce(roots, controller.signal));
  } catch (err) {
    await link.stop(); // its bus connection would keep the command alive
    throw err;
  } finally {
    bar.done();
    if (plainProgress) clearInterval(plainProgress);
    process.off('SIGINT', stop);
    process.off('SIGTERM', stop);
  }
  // What the link's policy holds back (a metered network...): one sentence with what to do, not a line per file.
  const waits = engine.heldByLink ? linkWaits(link.gate, result.left.files) : null;
  if (flags.json) printJson(summaryJson(result, ctx.serverLabel, waits));
  else writeLines(summaryLines(result, roots, ctx.serverLabel, waits));
  await agent.stop();
  await link.stop();
  await ctx.close();
  return exitCode(result, waits);
}

/** The files of a run not done: failed, or left for later (waiting for the card, the server, the link). */
const failedOf = (r: RunResult): number => r.left.failed;
const pendingOf = (r: RunResult): number => r.left.files.length - r.left.failed;
/** Copies asked for and not made and verified: the run did not do what was asked (exit code 4). */
const copiesShort = (r: RunResult) => r.cards.filter((c) => c.copies && !c.copies.made);

/** The exit code: what was asked happened (0), or why not (sign-in, copies, files left). */
function exitCode(r: RunResult, waits: LinkWaits | null): number {
  if (r.stopped.kind === 'sign-in' && r.stopped.error.kind === 'auth') return EXIT.auth;
  if (copiesShort(r).length > 0) return EXIT.copies;
  // Only what waits for a better network is left: done as far as this network allows.
  if (waits && r.left.files.length === waits.files && r.notKept === 0 && r.stopped.kind !== 'halted')
    return EXIT.linkWaits;
  // Halted (disk full...): not everything may even be recorded yet.
  return r.left.files.length === 0 && r.notKept === 0 && r.stopped.kind !== 'halted'
    ? EXIT.ok
    : EXIT.notAllDone;
}

/** Why the run stopped short, when it is the store or the sign-in: a sign-in to renew, or a halt. */
const stopError = (r: RunResult) =>
  r.stopped.kind === 'sign-in' || r.stopped.kind === 'halted' ? r.stopped.error : null;

/** The run's result as the last JSON line of `sync --json`. */
function summaryJson(r: RunResult, server: string, waits: LinkWaits | null): Record<string, unknown> {
  const short = copiesShort(r);
  const error = stopError(r);
  return {
    type: 'summary',
    server,
    uploaded: r.uploaded.files,
    fast_uploaded: r.alreadyThere,
    skipped: r.skipped,
    failed: failedOf(r),
    pending: pendingOf(r),
    bytes_sent: r.bytesSent,
    // Copies made in this run (the first copies of a card, or copies again to a drive that lacked them).
    copied: r.copied.map((c) => ({
      destination: c.destination.label,
      path: c.destination.path,
      files: c.files,
      bytes: c.bytes,
    })),
    ...(short.length > 0 ? { copies_not_done: short.map((c) => c.copies!.message) } : {}),
    ...(error ? { error: { kind: error.kind, message: plainMessage(error) } } : {}),
    ...(waits
      ? {
          link: {
            state: waits.state,
            cost: waits.cost,
            network: waits.network,
            waiting: { files: waits.files, bytes: waits.bytes, lanes: waits.lanes },
            message: waits.message,
          },
        }
      : {}),
    stopped: r.stopped.kind,
    files: r.left.files.map((f) => ({
      path: f.absPath,
      state: f.state,
      kind: waits?.ids.has(f.id) ? 'link' : f.kind,
      reason: waits?.ids.has(f.id) ? waits.message : f.message,
      why: f.why,
    })),
  };
}

/** The run's result for a person. Paths and the server's words are outside text: writeLines makes each line visible-safe. */
function summaryLines(
  r: RunResult,
  roots: readonly string[],
  server: string,
  waits: LinkWaits | null,
): string[] {
  const offline = r.stopped.kind === 'server-unreachable' ? r.stopped : null;
  const error = stopError(r);
  const left = r.left.files;
  return [
    `Done with ${roots.length === 1 ? roots[0] : `${roots.length} folders`} (${server}): ` +
      `${r.uploaded.files} uploaded, ${r.alreadyThere} already on the server, ${r.skipped} skipped (done before), ` +
      `${failedOf(r)} failed, ${pendingOf(r)} left for later; ${formatBytes(r.bytesSent)} sent.`,
    ...(r.copied.length > 0
      ? [
          `Copied and verified in this run: ${listOf(
            r.copied.map(
              (c) => `${count(c.files, 'file')} (${formatBytes(c.bytes)}) to ${c.destination.label}`,
            ),
            r.copied.length,
          )}.`,
        ]
      : []),
    // The reason is the card's copies verdict above: named, not said again.
    ...copiesShort(r).map(
      (c) => `Copies not done: ${c.label} (why: its copies' verdict above); exit code 4.`,
    ),
    ...(error ? [plainMessage(error)] : []),
    ...(waits ? [waits.message] : []),
    ...(offline
      ? [
          // The one reason said from the first line to the last (issue 30), and what follows from it.
          `Stopped trying for now: ${server}: ${offline.reason} ${
            r.bytesSent === 0 && r.uploaded.files + r.alreadyThere === 0
              ? 'Nothing was sent; run sync again once it answers.'
              : 'Run sync again once it answers; nothing is lost.'
          }`,
        ]
      : []),
    // A file left for later because the server is down carries no reason of its own (said once above).
    ...left
      .filter((f) => !waits?.ids.has(f.id))
      .slice(0, 50)
      .map((f) =>
        f.why !== 'failed' && offline
          ? `  LATER  ${f.absPath}`
          : `  ${f.why === 'failed' ? 'FAILED' : 'LATER '} ${f.absPath}: ${f.plain ?? f.message ?? f.state}`,
      ),
    ...(left.length > 50 ? [`  ... and ${left.length - 50} more (drone-media-sync status)`] : []),
  ];
}
