import { startLink } from '../../core/link/controller.js';
import { Agent } from '../../core/agent.js';
import { commandLinePath, parseConfig } from '../../core/config.js';
import { plainMessage } from '../../core/errors.js';
import { CardMonitor } from '../../core/sources/cards.js';
import { openAgentContext, type ServerFlags } from '../context.js';
import { folderArguments } from '../folders.js';
import { localJson, offloadJson, skippedLine, VerdictsSaid } from '../offload-text.js';
import { formatBytes, printJson, writeLines } from '../output.js';

export interface WatchFlags extends ServerFlags {
  /** Local destinations for this run (archive). */
  copyTo?: string[];
  cards?: boolean;
  mountRoot?: string[];
  json?: boolean;
}

/**
 * `watch`: long-running. One line per card inserted/removed and per sync
 * summary (or JSON lines with --json); runs until SIGINT/SIGTERM.
 */
export async function watchCommand(dirs: string[], flags: WatchFlags): Promise<number> {
  const named = folderArguments(dirs);
  const ctx = await openAgentContext(flags, process.env, 'refuse', { logFile: true });
  const { queue, notice } = ctx.session;
  // --copy-to: archive destinations for this run, beside the settings' own.
  const config = flags.copyTo?.length
    ? parseConfig(
        {
          ...ctx.config,
          destinations: [
            ...ctx.config.destinations,
            ...flags.copyTo.map((p) => ({ path: commandLinePath(p) })),
          ],
        },
        'options',
      )
    : ctx.config;
  // The link (docs/link.md): what the OS says, the crew's pins, budgets and timetable, asked before
  // every part; `link pin/budget/limit/answer` from another terminal are followed within seconds.
  const live: { agent?: Agent } = {};
  const link = await startLink({
    stateDir: ctx.paths.root,
    configFile: ctx.paths.config,
    config,
    onSettings: (next) => live.agent?.updateConfig({ ...config, link: next.link }),
  });
  const linkNotKept = link.store.notKeptMessage;
  if (linkNotKept) {
    if (flags.json) printJson({ type: 'warning', message: linkNotKept });
    else writeLines([linkNotKept], process.stderr);
  }
  const agent = new Agent({
    queue,
    api: ctx.api,
    config,
    logger: ctx.logger,
    manifestsDir: ctx.paths.manifests,
    gate: link.gate,
  });
  live.agent = agent;
  // One event, one JSON line or its lines of text (each made visible-safe, never a literal \n).
  const say = (json: Record<string, unknown>, text: string | readonly string[]) => {
    if (flags.json) printJson(json);
    else writeLines(typeof text === 'string' ? [text] : text);
  };
  const verdicts = new VerdictsSaid();
  const said = new Set<string>();
  const firstTime = (key: string): boolean => !said.has(key) && said.add(key).size > 0;

  agent.on('source', (e) => {
    const name = e.source.label;
    if (e.type === 'source-added')
      say(
        { type: 'source-added', id: e.source.sourceId, root: e.source.root, label: name },
        `Found ${name} (${e.source.root})`,
      );
    else if (e.type === 'source-removed')
      say(
        { type: 'source-removed', id: e.source.sourceId, waiting: e.waiting, message: e.message },
        e.message,
      );
    else if (e.type === 'ejected' || e.type === 'eject-failed')
      say({ type: e.type, id: e.source.sourceId, message: e.message }, e.message);
    else if (e.type === 'scanned') {
      // A file still being written is looked at again every few seconds: said once, not at each look.
      for (const w of e.skipped.filter((x) => firstTime(`${e.source.sourceId}\0${x.relPath}\0${x.message}`)))
        say({ type: 'skipped', id: e.source.sourceId, path: w.path, reason: w.message }, skippedLine(w));
      if (e.pending > 0)
        say(
          { type: 'scanned', id: e.source.sourceId, pending: e.pending, already_done: e.alreadyDone },
          `${name}: ${e.pending} new file(s) to sync, ${e.alreadyDone} already done`,
        );
    }
  });
  agent.on('file', (e) => {
    if (e.outcome === 'failed') {
      say(
        { type: 'file-failed', path: e.absPath, error: e.error },
        `FAILED ${e.absPath}: ${e.error?.plain ?? ''}`,
      );
    }
  });
  // After "sign in again", a `login` in another terminal writes a new token:
  // pick it up and continue, without a restart.
  let tokenWatch: NodeJS.Timeout | null = null;
  agent.on('state', ({ from, to }) => {
    const state = to.name;
    const err = 'error' in to ? to.error : null;
    // Never silent: the server failing is said when it starts, and when it is back.
    if (to.name === 'offline' && from.name !== 'offline') {
      const inS = Math.max(1, Math.round((to.until - Date.now()) / 1000));
      say(
        { type: 'offline', message: plainMessage(to.error, 'request'), retry_in_s: inS },
        `${ctx.serverLabel}: ${plainMessage(to.error, 'request')} Trying again in ${inS} s and after that by itself; nothing is lost.`,
      );
    }
    // Each later round: the reason is not said again, only when the next try comes (the wait grows).
    if (to.name === 'offline' && from.name === 'offline' && to.failures > from.failures) {
      const inS = Math.max(1, Math.round((to.until - Date.now()) / 1000));
      say(
        { type: 'offline-wait', retry_in_s: inS },
        `${ctx.serverLabel}: still no answer; next try in ${inS} s.`,
      );
    }
    if (from.name === 'offline' && to.name === 'syncing')
      say({ type: 'online' }, `${ctx.serverLabel} answers again; continuing.`);
    if (state === 'halted' && err) {
      // No Resume button here: look again every 30 s; it halts again if the cause is still there.
      say(
        { type: 'halted', message: plainMessage(err) },
        `${plainMessage(err)} (watch tries again every 30 s)`,
      );
      setTimeout(() => agent.engine.resume(), 30_000).unref();
    }
    if (state === 'auth-required' && err) {
      say(
        { type: 'auth-required', message: plainMessage(err) },
        `${plainMessage(err)} Run: drone-media-sync login --server ${ctx.serverLabel} --username <name>`,
      );
      tokenWatch ??= setInterval(() => {
        if (!ctx.reloadToken()) return;
        if (tokenWatch) clearInterval(tokenWatch);
        tokenWatch = null;
        say({ type: 'signed-in' }, 'Signed in again; continuing.');
        agent.engine.resume();
      }, 2000);
    }
  });
  // Each time the engine goes idle: what it did since the last time (the agent's run result).
  agent.on('result', (r) => {
    if (r.uploaded.files + r.alreadyThere + r.failedNow === 0) return;
    say(
      {
        type: 'summary',
        uploaded: r.uploaded.files,
        fast_uploaded: r.alreadyThere,
        failed: r.failedNow,
        bytes_sent: r.uploaded.bytes,
      },
      `Synced: ${r.uploaded.files} uploaded (${formatBytes(r.uploaded.bytes)}), ${r.alreadyThere} already on the server, ${r.failedNow} failed.`,
    );
  });
  agent.on('warning', (w) => say({ type: 'warning', message: w }, w));
  agent.on('local', ({ offload }) => {
    const lines = verdicts.localLines(offload);
    if (lines.length > 0) say(localJson(offload), lines);
  });
  agent.on('destination-stopped', ({ message }) => say({ type: 'destination-stopped', message }, message));
  agent.on('cleaned', (c) =>
    say(
      { type: 'cleaned', destination: c.destination.label, folder: c.folder, files: c.files },
      `${c.destination.label}: the staging copy ${c.folder} was deleted (every file of it is in the workspace, checked).`,
    ),
  );
  agent.on('offload', (o) =>
    say(offloadJson(o.offload, o.manifest.dir), verdicts.offloadLines(o.offload, o.manifest.dir)),
  );
  agent.on('wayline', ({ source, folder, match }) =>
    say(
      { type: 'wayline', id: source.sourceId, folder, wayline: match },
      match
        ? `${folder}: wayline "${match.waylineName}" (${match.how} name match)`
        : `${folder}: no wayline of this name in the workspace`,
    ),
  );

  if (notice) say({ type: 'warning', message: notice }, notice);
  agent.start();
  const folders = [...named, ...ctx.config.watchedFolders];
  for (const d of folders) await agent.addFolder(d);
  if (flags.cards || (flags.mountRoot?.length ?? 0) > 0) {
    const roots = flags.mountRoot?.length
      ? flags.mountRoot.map((r) => commandLinePath(r))
      : ctx.config.mountRoots.length
        ? ctx.config.mountRoots
        : undefined;
    agent.watchCards(new CardMonitor(roots ? { mountRoots: roots } : {}));
  }
  say(
    {
      type: 'ready',
      server: ctx.serverLabel,
      folders,
      cards: Boolean(flags.cards || flags.mountRoot?.length),
      log: ctx.logDir,
    },
    `Watching (${ctx.serverLabel}). Press Ctrl+C to stop.${ctx.logDir ? ` Log: ${ctx.logDir}` : ''}`,
  );

  // Every timer of the agent is unref'd (they must never keep a finished
  // `sync` alive); this one is what keeps the long-running agent up when idle.
  const keepAlive = setInterval(() => undefined, 1 << 30);
  await new Promise<void>((resolve) => {
    process.once('SIGINT', resolve);
    process.once('SIGTERM', resolve);
  });
  clearInterval(keepAlive);
  if (tokenWatch) clearInterval(tokenWatch);
  await agent.stop();
  await link.stop();
  await ctx.close();
  return 0;
}
