import fs from 'node:fs';
import path from 'node:path';
import { Agent } from '../../core/agent.js';
import { startLink } from '../../core/link/controller.js';
import { linkWaits } from '../../core/link/waits.js';
import { parseConfig } from '../../core/config.js';
import { DmsError, plainMessage } from '../../core/errors.js';
import type { CardOffload } from '../../core/offload/card.js';
import { count, listOf } from '../../core/offload/plain.js';
import { NOT_DONE_STATES } from '../../core/queue/states.js';
import type { Source } from '../../core/sources/source.js';
import { ONE_SHOT_TRIES, type FileEvent } from '../../core/sync/engine.js';
import { openAgentContext, type ServerFlags } from '../context.js';
import { forgetDestinations } from './copies.js';
import { EXIT } from '../exit-codes.js';
import { localJson, offloadJson, VerdictsSaid } from '../offload-text.js';
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
  const roots = dirs.map((d) => path.resolve(d));
  for (const r of roots) {
    if (!fs.existsSync(r) || !fs.statSync(r).isDirectory()) {
      throw new DmsError('source-missing', `${r} is not a folder that exists. Is the card inserted?`, {
        retryable: false,
      });
    }
  }
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
  const config = parseConfig(
    {
      ...ctx.config,
      ...(flags.aircraft ? { aircraftDefault: flags.aircraft } : {}),
      ...(flags.aircraftSerial ? { aircraftSerial: flags.aircraftSerial } : {}),
      // --copy-to: archive destinations for this run, beside the settings' own.
      destinations: [...ctx.config.destinations, ...(flags.copyTo ?? []).map((p) => ({ path: p }))],
    },
    'options',
  );
  // The link (issue 31, docs/link.md), as `watch` has it, asked before every part: on a metered
  // network the first lane goes and the run ends saying what waits (exit code 5).
  const link = await startLink({ stateDir: ctx.paths.root, configFile: ctx.paths.config, config });
  const agent = new Agent({
    gate: link.gate,
    queue,
    api: ctx.api,
    config,
    logger: ctx.logger,
    manifestsDir: ctx.paths.manifests,
    ...(ctx.signInMissing ? { initialState: { name: 'auth-required', error: ctx.signInMissing } } : {}),
  });
  const engine = agent.engine;
  const bar = new ProgressBar();
  const counts = { uploaded: 0, fastUploaded: 0, skipped: 0, failed: 0, pending: 0 };
  const problems = new Map<number, FileEvent>();
  const controller = new AbortController();
  const stop = () => controller.abort();
  process.once('SIGINT', stop);
  process.once('SIGTERM', stop);

  agent.on('progress', (p) => bar.update(p));
  agent.on('file', (e) => {
    if (e.outcome === 'uploaded' || e.outcome === 'stored') counts.uploaded++;
    else if (e.outcome === 'fast-uploaded') counts.fastUploaded++;
    if (e.outcome === 'uploaded' || e.outcome === 'fast-uploaded' || e.outcome === 'stored')
      problems.delete(e.id);
    else problems.set(e.id, e);
    if (flags.json)
      printJson({
        type: 'file',
        path: e.absPath,
        size: e.size,
        outcome: e.outcome,
        ...(e.error ? { error: e.error } : {}),
      });
  });
  // Found on a card and kept nowhere (a name that is not text, a file that cannot be read): not done.
  let lost = 0;
  agent.on('source', (e) => {
    if (e.type !== 'scanned') return;
    counts.skipped += e.alreadyDone;
    lost += e.skipped.filter((w) => w.blocking).length;
    // Links out of the card are never read: named, so nobody wonders where a file went.
    for (const w of e.skipped) {
      if (flags.json) printJson({ type: 'skipped', path: w.path, reason: w.message });
      else writeLines([`Skipped: ${w.message}`], process.stderr);
    }
  });
  // Never silent: the server failing is said at once, with what happens next; back, said too.
  agent.on('state', ({ from, to }) => {
    if (to.name === 'offline') {
      const inS = Math.max(1, Math.round((to.until - Date.now()) / 1000));
      const what = plainMessage(to.error, 'request');
      // Whether any file has a try left in this run: else it stops now, and says so at the end.
      const again = !engine.givesUp && queue.nextWakeAt(ONE_SHOT_TRIES) !== null;
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
  // The copies asked for, per card, as their last verdict left them: the exit code says whether they were made.
  const copies = new Map<string, { label: string; safe: boolean; message: string }>();
  const noteCopies = (o: CardOffload) => {
    if (o.local)
      copies.set(o.card.sourceId, { label: o.card.label, safe: o.local.safe, message: o.local.message });
  };
  // Copied to every local destination and read back: the card may be pulled; said at once.
  agent.on('local', ({ offload }) => {
    noteCopies(offload);
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
    noteCopies(done.offload);
    if (flags.json) printJson(offloadJson(done.offload, done.manifest.dir));
    else writeLines(said.offloadLines(done.offload, done.manifest.dir));
  });

  let sources: readonly Source[];
  try {
    ({ sources } = await agent.syncOnce(roots, controller.signal));
  } catch (err) {
    await link.stop(); // its bus connection would keep the command alive
    throw err;
  } finally {
    bar.done();
    if (plainProgress) clearInterval(plainProgress);
    process.off('SIGINT', stop);
    process.off('SIGTERM', stop);
  }

  // What is not done is reported from the queue itself: the truth survives us.
  // Only unfinished rows are read: loading (and parsing) every done row of a
  // card seen before cost more than recognising them did.
  // An answer the server should never send (nested too deep, too large): said in the crew's words;
  // the request and the parser's detail stay in the queue and the log.
  const crewReason = (id: number): string | undefined => {
    const e = problems.get(id)?.error;
    return e?.kind === 'malformed-response' ? e.plain : undefined;
  };
  // The server failing as a whole when the run ended: its reason, said once at the end.
  const offline = engine.state === 'offline' ? engine.status.error : null;
  const leftovers = sources.flatMap((source) =>
    queue.list({ sourceId: source.sourceId, states: NOT_DONE_STATES, limit: 1_000_000 }),
  );
  counts.failed = leftovers.filter((r) => r.state === 'failed').length;
  counts.pending = leftovers.length - counts.failed;
  // Why the run stopped short, when it did: a sign-in to renew, or a halt (disk full...).
  const authError = engine.state === 'auth-required' || engine.state === 'halted' ? engine.error : null;
  // Copies made in this run (the first copies of a card, or copies again to a drive that lacked them).
  const copied = engine.copiesMade.map((m) => ({
    destination: m.destination.label,
    path: m.destination.path,
    files: m.files,
    bytes: m.bytes,
  }));
  // Copies asked for and not made and verified: the run did not do what was asked (exit code 4).
  const copiesShort = [...copies.values()].filter((c) => !c.safe);
  // What the link's policy holds back (a metered network...): one sentence with what to do, not a line per file.
  const waits = engine.heldByLink ? linkWaits(link.gate, leftovers) : null;
  const summary = {
    type: 'summary',
    server: ctx.serverLabel,
    uploaded: counts.uploaded,
    fast_uploaded: counts.fastUploaded,
    skipped: counts.skipped,
    failed: counts.failed,
    pending: counts.pending,
    bytes_sent: engine.progress.bytesSent,
    copied,
    ...(copiesShort.length > 0 ? { copies_not_done: copiesShort.map((c) => c.message) } : {}),
    ...(authError ? { error: { kind: authError.kind, message: plainMessage(authError) } } : {}),
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
    files: leftovers.map((r) => ({
      path: r.absPath,
      state: r.state,
      kind: waits?.ids.has(r.id) ? 'link' : r.errorKind,
      reason: waits?.ids.has(r.id) ? waits.message : r.errorMessage,
    })),
  };
  if (flags.json) printJson(summary);
  else {
    // Paths and the server's words are outside text: each line made visible-safe (no forged lines).
    writeLines([
      `Done with ${roots.length === 1 ? roots[0] : `${roots.length} folders`} (${ctx.serverLabel}): ` +
        `${counts.uploaded} uploaded, ${counts.fastUploaded} already on the server, ${counts.skipped} skipped (done before), ` +
        `${counts.failed} failed, ${counts.pending} left for later; ${formatBytes(engine.progress.bytesSent)} sent.`,
      ...(copied.length > 0
        ? [
            `Copied and verified in this run: ${listOf(
              copied.map((c) => `${count(c.files, 'file')} (${formatBytes(c.bytes)}) to ${c.destination}`),
              copied.length,
            )}.`,
          ]
        : []),
      // The reason is the card's copies verdict above: named, not said again.
      ...copiesShort.map((c) => `Copies not done: ${c.label} (why: its copies' verdict above); exit code 4.`),
      ...(authError ? [plainMessage(authError)] : []),
      ...(waits ? [waits.message] : []),
      ...(offline && counts.pending > 0
        ? [
            // The one reason said from the first line to the last (issue 30), and what follows from it.
            `Stopped trying for now: ${ctx.serverLabel}: ${plainMessage(offline, 'request')} ${
              engine.progress.bytesSent === 0 && counts.uploaded + counts.fastUploaded === 0
                ? 'Nothing was sent; run sync again once it answers.'
                : 'Run sync again once it answers; nothing is lost.'
            }`,
          ]
        : []),
      // A file left for later because the server is down carries no reason of its own (said once above).
      ...leftovers
        .filter((r) => !waits?.ids.has(r.id))
        .slice(0, 50)
        .map((r) =>
          r.state !== 'failed' && offline
            ? `  LATER  ${r.absPath}`
            : `  ${r.state === 'failed' ? 'FAILED' : 'LATER '} ${r.absPath}: ${crewReason(r.id) ?? r.errorMessage ?? r.state}`,
        ),
      ...(leftovers.length > 50 ? [`  ... and ${leftovers.length - 50} more (drone-media-sync status)`] : []),
    ]);
  }
  await agent.stop();
  await link.stop();
  await ctx.close();
  if (authError?.kind === 'auth') return EXIT.auth;
  if (copiesShort.length > 0) return EXIT.copies;
  // Only what waits for a better network is left: done as far as this network allows.
  if (waits && leftovers.length === waits.files && lost === 0 && engine.state !== 'halted')
    return EXIT.linkWaits;
  // Halted (disk full...): not everything may even be recorded yet.
  return leftovers.length === 0 && lost === 0 && engine.state !== 'halted' ? EXIT.ok : EXIT.notAllDone;
}
