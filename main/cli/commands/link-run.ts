/**
 * `link`: the network the agent is on, and what uploads may do over it.
 *
 *   link status                      what the OS says, the pin, what goes, the budget, the limit
 *   link pin metered|unmetered|ask|none [--label <name>]
 *   link budget <size> --per day|month | link budget off
 *   link limit <timetable> | link limit none   (rclone's --bwlimit syntax)
 *   link answer yes|no               the answer to "Upload 41 GB ... over this metered network?"
 *
 * Pins, budgets and the limit are settings (config.json `link`); a running
 * agent reads them within 10 s. The answer and the bytes each network
 * carried are in link.db.
 */
import path from 'node:path';
import { loadConfig, parseConfig, saveConfig, type Config } from '../../core/config.js';
import { DmsError } from '../../core/errors.js';
import { factsOf, LINK_DB } from '../../core/link/controller.js';
import { LinkGate } from '../../core/link/gate.js';
import { linuxNetwork, NO_NETWORK, type NetworkId } from '../../core/link/network.js';
import { LinkStore } from '../../core/link/store.js';
import { describeRate, parseTimetable, rateAt } from '../../core/link/timetable.js';
import { linkWatcherFor } from '../../core/link/watcher.js';
import { statePaths } from '../../core/paths.js';
import { formatBytes } from '../../shared/sizes.js';
import { resolveStateDir } from '../context.js';
import { printJson, writeLines } from '../output.js';
import { requireWritable } from '../state-access.js';

export interface LinkFlags {
  state?: string;
  json?: boolean;
  /** A network other than the one the agent is on now (its key, from `link status`). */
  network?: string;
  label?: string;
  per?: string;
}

const MiB = 1024 * 1024;

const WHAT_GOES: Record<string, string> = {
  open: 'every lane goes',
  'first-lane': 'only the first lane (RTK files and logs) goes; photos, videos and previews wait',
  held: 'nothing goes until you say yes',
  spent: "nothing goes: this network's data budget is used up",
};

const COST_WORDS: Record<string, string> = {
  unmetered: 'not metered',
  metered: 'metered',
  roaming: 'roaming',
  'over-limit': 'over its data limit',
  ask: 'ask first',
  unknown: 'does not say',
};

function invalid(message: string): DmsError {
  return new DmsError('invalid-input', message, { retryable: false });
}

async function here(flags: LinkFlags): Promise<{
  id: NetworkId;
  reading: Awaited<ReturnType<Awaited<ReturnType<typeof linkWatcherFor>>['read']>>;
}> {
  const reading = await (await linkWatcherFor()).read();
  if (flags.network !== undefined) return { id: { key: flags.network, label: flags.network }, reading };
  const id = reading.network ?? (process.platform === 'linux' ? linuxNetwork() : NO_NETWORK);
  return { id, reading };
}

function requireNetwork(id: NetworkId): void {
  if (!id.key)
    throw invalid(
      'No network found (no default route). Connect first, or name the network with --network <key> (see `link status`).',
    );
}

/** Reads, changes and saves the settings' `link` section, checked as the settings are. */
function changeSettings(flags: LinkFlags, change: (link: Config['link']) => void): Config {
  const paths = statePaths(resolveStateDir(flags));
  requireWritable(paths.root, 'the link settings');
  const config = loadConfig(paths.config);
  const link = structuredClone(config.link);
  change(link);
  const next = parseConfig({ ...config, link }, 'link settings');
  saveConfig(paths.config, next);
  return next;
}

function parseSize(text: string): number {
  const m = /^(\d+(?:\.\d+)?)\s*(M|MB|MiB|G|GB|GiB|T|TB|TiB)?$/i.exec(text.trim());
  if (!m) throw invalid(`"${text}" is not a size: write it like 500M, 5G or 2.5G (1G = 1024 MB).`);
  const unit = (m[2] ?? 'M').toUpperCase()[0];
  const mib = Number(m[1]) * (unit === 'G' ? 1024 : unit === 'T' ? 1024 * 1024 : 1);
  if (mib < 1) throw invalid('A budget must be at least 1 MB.');
  return Math.round(mib);
}

export async function linkStatus(flags: LinkFlags): Promise<number> {
  const paths = statePaths(resolveStateDir(flags));
  const config = loadConfig(paths.config);
  const { id, reading } = await here(flags);
  const facts = factsOf(config, reading, id);
  const store = new LinkStore(path.join(paths.root, LINK_DB));
  try {
    const gate = new LinkGate(store);
    gate.see(facts);
    const snap = gate.snapshot();
    const pin = id.key ? config.link.networks[id.key]?.pin : undefined;
    const timetable = config.link.timetable;
    const rateNow = timetable
      ? rateAt(parseTimetable(timetable), new Date())
      : config.bandwidthLimitKiBps * 1024;
    if (flags.json) {
      printJson({
        network: { key: id.key, label: facts.label },
        detected: { cost: reading.cost, source: reading.source },
        pin: pin ?? null,
        cost: facts.cost,
        state: snap.state.name,
        answer: snap.state.answer,
        budget: snap.budget,
        limit: { timetable: timetable ?? null, bytesPerSecond: rateNow },
      });
      return 0;
    }
    const b = snap.budget;
    writeLines([
      `Network: ${facts.label}${id.key ? ` (key: ${id.key})` : ''}`,
      `The system says: ${COST_WORDS[reading.cost] ?? reading.cost} (${reading.source})`,
      `Pinned: ${pin ? COST_WORDS[pin] : 'no'}`,
      `Uploads: ${WHAT_GOES[snap.state.name] ?? snap.state.name}${
        snap.state.answer ? ` (you answered ${snap.state.answer})` : ''
      }`,
      ...(snap.state.name !== 'open' && snap.state.name !== 'spent' && !snap.state.answer
        ? ['  To upload everything over this network: drone-media-sync link answer yes']
        : []),
      b
        ? `Budget: ${formatBytes(b.used)} of ${formatBytes(b.bytes)} used ${b.per === 'day' ? 'today' : 'this month'}, ${formatBytes(b.left)} left`
        : 'Budget: none',
      `Bandwidth: ${describeRate(rateNow)} now${timetable ? ` (timetable "${timetable}")` : ''}`,
    ]);
    return 0;
  } finally {
    store.close();
  }
}

export async function linkPin(how: string, flags: LinkFlags): Promise<number> {
  if (!['metered', 'unmetered', 'ask', 'none'].includes(how))
    throw invalid(`"${how}" is not a pin: use metered, unmetered, ask or none.`);
  const { id } = await here(flags);
  requireNetwork(id);
  changeSettings(flags, (link) => {
    const entry = { ...link.networks[id.key] };
    if (how === 'none') delete entry.pin;
    else entry.pin = how as 'metered' | 'unmetered' | 'ask';
    if (flags.label !== undefined) entry.label = flags.label;
    if (Object.keys(entry).length === 0) delete link.networks[id.key];
    else link.networks[id.key] = entry;
  });
  // A new pin is a new question: the answer given for the old one no longer holds.
  const store = new LinkStore(path.join(statePaths(resolveStateDir(flags)).root, LINK_DB));
  store.setAnswer(id.key, null);
  store.close();
  writeLines([
    how === 'none'
      ? `${flags.label ?? id.label}: not pinned; what the system says counts.`
      : `${flags.label ?? id.label}: pinned as ${COST_WORDS[how]}. A running agent follows within 10 s.`,
  ]);
  return 0;
}

export async function linkBudget(size: string, flags: LinkFlags): Promise<number> {
  const { id } = await here(flags);
  requireNetwork(id);
  const off = size === 'off' || size === 'none';
  const per = flags.per ?? 'month';
  if (!off && per !== 'day' && per !== 'month') throw invalid(`--per must be day or month, not "${per}".`);
  const mib = off ? 0 : parseSize(size);
  changeSettings(flags, (link) => {
    const entry = { ...link.networks[id.key] };
    if (off) delete entry.budget;
    else entry.budget = { mib, per: per as 'day' | 'month' };
    if (Object.keys(entry).length === 0) delete link.networks[id.key];
    else link.networks[id.key] = entry;
  });
  writeLines([
    off
      ? `${id.label}: no data budget.`
      : `${id.label}: a budget of ${formatBytes(mib * MiB)} per ${per}. A running agent follows within 10 s.`,
  ]);
  return 0;
}

export function linkLimit(timetable: string, flags: LinkFlags): number {
  const none = timetable === 'none';
  if (!none) parseTimetable(timetable); // says what is wrong, before anything is saved
  changeSettings(flags, (link) => {
    if (none) delete link.timetable;
    else link.timetable = timetable.trim();
  });
  writeLines([
    none
      ? 'No bandwidth timetable: the fixed limit of the settings counts (bandwidthLimitKiBps).'
      : `Bandwidth timetable "${timetable.trim()}": ${describeRate(rateAt(parseTimetable(timetable), new Date()))} now. A running agent follows within 10 s, uploads in flight too.`,
  ]);
  return 0;
}

export async function linkAnswer(answer: string, flags: LinkFlags): Promise<number> {
  if (answer !== 'yes' && answer !== 'no') throw invalid(`Answer yes or no, not "${answer}".`);
  const { id } = await here(flags);
  requireNetwork(id);
  const paths = statePaths(resolveStateDir(flags));
  requireWritable(paths.root, 'the answer');
  const store = new LinkStore(path.join(paths.root, LINK_DB));
  store.setAnswer(id.key, answer);
  store.close();
  writeLines([
    answer === 'yes'
      ? `${id.label}: everything may upload over this network (kept for this network).`
      : `${id.label}: only what the link allows goes over this network; you will not be asked again here.`,
  ]);
  return 0;
}
