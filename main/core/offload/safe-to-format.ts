/**
 * "Safe to format", per card: the one answer a crew needs before reusing a
 * card. A pure decision over facts the queue and the bucket check gathered.
 *
 * A card is safe only when ALL of these hold:
 * - the card was read to the end (a scan cut short cannot vouch for files it
 *   never saw), and at least one file was found;
 * - no file is pending (on its way), failed, or waiting for the card;
 * - every file is acknowledged by the CURRENT target: media by an accepted
 *   upload-callback or a fast-upload "known", RTK files by their object
 *   stored in the bucket (they get no callback: the contract's callback is
 *   for media and its metadata, which RTK files do not have). An
 *   acknowledgement by another target (the crew switched workspace or
 *   server) does not count: that bucket is not this one;
 * - every file's object was checked in the current target's bucket: found,
 *   with the expected size, and the checksum where the store gives one (a
 *   mismatch fails; 'not-given', e.g. multipart ETags, passes on size). A
 *   file the server said it already held, with no object of ours to look at,
 *   is in the workspace on the server's word only: that is named and does
 *   NOT make the card safe (a server that answers "known" for everything
 *   would otherwise free a card nothing was copied from); verified local
 *   copies do (see the local verdict);
 * - the server recorded each callback under the object we uploaded;
 * - every file found on the card is kept: what could not be read (a name
 *   that is not text, a file or folder that cannot be opened) stops it;
 *   what was excluded in the settings, a computer's own files, pipes and
 *   links out of the card are named, and do not;
 * - no flight is incomplete, unless the crew accepted that flight as it is.
 *
 * Each reason names the files or flights and says what to do. The agent
 * never formats or deletes anything itself: this only tells.
 */
import { baseName, count, listOf } from './plain.js';
import { saidAsIs } from '../media/discover.js';
import { flightAdvisory } from './advisory.js';
import { flaggedWaitLine } from '../../shared/lanes.js';
import type {
  CardFileFact,
  RunStopped,
  SafeToFormatCounts,
  SafeToFormatInput,
  SafeToFormatVerdict,
  SkippedFact,
} from './types.js';

type Problem =
  | 'flagged-held'
  | 'pending'
  | 'held'
  | 'waiting'
  | 'failed'
  | 'elsewhere'
  | 'unchecked'
  | 'on-word'
  | 'absent'
  | 'different'
  | 'other-key';

function problemOf(f: CardFileFact, targetId: string, stopped: boolean): Problem | null {
  // On its way only while something sends it: not once the run ended, nor while it waits for the server.
  if (f.state === 'pending')
    return f.flaggedHeld ? 'flagged-held' : stopped || f.waitReason ? 'held' : 'pending';
  if (f.state === 'waiting') return 'waiting';
  if (f.state === 'failed') return 'failed';
  const ack = f.acknowledged;
  const ackFits = ack !== null && ack.targetId === targetId && (f.kind !== 'media' || ack.how !== 'stored');
  if (!ackFits) return 'elsewhere';
  const v = f.verified;
  if (v === null || v.targetId !== targetId) return 'unchecked';
  // The server said it holds the content, and there is no object of ours to look at: its word only.
  if (v.by === 'server') return 'on-word';
  if (!v.found) return 'absent';
  if (!v.sizeMatches || v.checksum === 'mismatch') return 'different';
  // The server recorded the file under another object than the one uploaded and checked.
  if (f.serverKey) return 'other-key';
  return null;
}

const names = (files: ReadonlyArray<{ relPath: string }>): string =>
  listOf(files.map((f) => baseName(f.relPath)));

/** The verdict for one card. */
export function safeToFormat(input: SafeToFormatInput): SafeToFormatVerdict {
  const { card, target, files } = input;
  const ws = target.workspaceLabel;
  const by = new Map<Problem, CardFileFact[]>();
  for (const f of files) {
    const p = problemOf(f, target.id, Boolean(input.stopped));
    if (!p) continue;
    // Pushed, not copied: a copy per file made 50 million copies for 10,000 files not checked yet.
    const list = by.get(p);
    if (list) list.push(f);
    else by.set(p, [f]);
  }
  const get = (p: Problem): CardFileFact[] => by.get(p) ?? [];
  const accepted = new Set(input.acceptedFlights);
  const incomplete = input.flights.filter((f) => f.incomplete);
  const blocking = incomplete.filter((f) => !accepted.has(f.folder));

  const reasons: string[] = [];
  if (!input.scanComplete && !(input.skipped ?? []).some((x) => x.kind === 'growing')) {
    reasons.push(
      'The card was not read to the end: insert it again and let Drone Media Sync read all of it.',
    );
  } else if (files.length === 0) {
    reasons.push('No photos, videos or RTK files were found on this card: there is nothing to verify.');
  }
  const say = (p: Problem, text: (n: string, list: string) => string): void => {
    const list = get(p);
    if (list.length > 0) reasons.push(text(count(list.length, 'file'), names(list)));
  };
  say('pending', (n, l) => `${n} still on the way (${l}): wait until they are done.`);
  say('held', (n, l) => notSentYet(n, l, get('held'), input.stopped ?? null));
  const held = get('flagged-held');
  if (held.length > 0)
    reasons.push(
      `${flaggedWaitLine(held.length, input.copies === true)} (${names(held)}): they are sent once this computer is on a network that is not metered.`,
    );
  say('waiting', (n, l) => `${n} waiting for the card (${l}): insert the card again so they can be sent.`);
  const failed = get('failed');
  if (failed.length > 0) {
    const why = failed.find((f) => f.error)?.error?.replace(/[.\s]+$/, '');
    reasons.push(
      `${count(failed.length, 'file')} failed (${names(failed)})${why ? `: ${why}` : ''}. Read why in the list, fix it and choose Retry.`,
    );
  }
  say(
    'elsewhere',
    (n, l) =>
      `${n} not acknowledged by ${ws} (${l}): they went to another workspace or server, or were never confirmed. Sync the card again to send them here.`,
  );
  say(
    'unchecked',
    (n, l) => `${n} not yet checked in the bucket of ${ws} (${l}): wait for the check to finish.`,
  );
  say(
    'absent',
    (n, l) =>
      `${n} missing from the bucket of ${ws} although the server acknowledged them (${l}): do not format; sync the card again.`,
  );
  say(
    'different',
    (n, l) => `${n} in the bucket of ${ws} differ from the card (${l}): do not format; sync them again.`,
  );
  say(
    'on-word',
    (n, l) =>
      `${n} already in ${ws} on the server's word only (${l}): the server had them from elsewhere, and they could not be checked in the bucket. Keep the card, or copy it to a local destination first.`,
  );
  say(
    'other-key',
    (n, l) =>
      `${n} recorded by the server under another object than the one uploaded and checked (${l}): check them in the workspace before formatting.`,
  );
  const skipped = input.skipped ?? [];
  const lost = skipped.filter((s) => s.blocking);
  for (const s of lost) reasons.push(saidAsIs(s.kind) ? s.message : `Not kept anywhere: ${s.message}`);
  const notes = namedNotes(skipped.filter((s) => !s.blocking));
  for (const f of blocking) {
    const first = f.flags.find((x) => x.severity === 'incomplete');
    reasons.push(
      `Flight ${baseName(f.folder)} is incomplete${first ? `: ${first.message}` : '.'} If it is fine as it is, accept the flight to format anyway.`,
    );
  }

  const notVerified =
    get('unchecked').length + get('absent').length + get('different').length + get('other-key').length;
  const counts: SafeToFormatCounts = {
    files: files.length,
    media: files.filter((f) => f.kind === 'media').length,
    rtk: files.filter((f) => f.kind === 'rtk').length,
    other: files.filter((f) => f.kind === 'other').length,
    verified: files.length - [...by.values()].reduce((n, l) => n + l.length, 0),
    onServerWord: get('on-word').length,
    skippedBlocking: lost.length,
    skippedNamed: skipped.length - lost.length,
    pending: get('pending').length + get('held').length + get('flagged-held').length,
    notSent: get('held').length,
    flaggedHeld: get('flagged-held').length,
    failed: failed.length,
    waiting: get('waiting').length,
    notAcknowledged: get('elsewhere').length,
    notVerified,
    flights: input.flights.length,
    flightsIncomplete: incomplete.length,
    flightsAccepted: incomplete.length - blocking.length,
  };
  const safe = reasons.length === 0;
  const message = verdictLine(
    card.label,
    ws,
    safe,
    counts,
    input.scanComplete,
    lost.some((s) => s.kind === 'rest-of-card'),
  );
  // Advisory only (flagged frames, camera clock): never part of `safe`.
  return { safe, reasons, notes, counts, message, advisory: flightAdvisory(input.flights) };
}

/**
 * Files not sent and not moving, said for what holds them: the reason the
 * run stopped (or their own last error), in the crew's words, and what to do.
 */
function notSentYet(
  n: string,
  list: string,
  held: readonly CardFileFact[],
  stopped: RunStopped | null,
): string {
  const reason = (stopped?.reason ?? held.find((f) => f.waitReason)?.waitReason ?? null)?.replace(
    /[.\s]+$/,
    '',
  );
  const head = `${n} not uploaded yet (${list})`;
  if (!stopped) return `${head}: ${reason ?? 'waiting for their next try'}.`;
  const again = `run sync again once ${stopped.once}.`;
  return reason
    ? `${head}: ${reason}${reason.endsWith('?') ? ` ${again[0]?.toUpperCase()}${again.slice(1)}` : `; ${again}`}`
    : `${head}: the run ended before they were sent; run sync again.`;
}

/** What was not kept on purpose or holds nothing, grouped by reason: named, never silent. */
function namedNotes(skipped: readonly SkippedFact[]): string[] {
  const groups: Array<[string, string]> = [
    ['excluded', 'excluded in the settings, not kept'],
    ['system', "a computer's own files, not the drone's, not kept"],
    ['not-a-file', 'not regular files (pipes, devices): no data to keep'],
    ['outside-root', 'links out of the card: not followed'],
    ['broken-link', 'links to nothing: skipped'],
    ['loop', 'links to a folder already read: skipped'],
    ['own', "Drone Media Sync's own folders (its state, its local copies): not read"],
  ];
  return groups.flatMap(([kind, what]) => {
    const list = skipped.filter((s) => s.kind === kind);
    return list.length > 0 ? [`${count(list.length, 'item')} ${what} (${names(list)}).`] : [];
  });
}

function verdictLine(
  label: string,
  ws: string,
  safe: boolean,
  c: SafeToFormatCounts,
  scanned: boolean,
  /** A folder of a card synced, not the card: the rest of it was not read. */
  folderOfCard = false,
): string {
  if (safe) return `${label}: ${count(c.verified, 'file')} verified in ${ws} — safe to format`;
  const parts = [
    c.pending - c.notSent - (c.flaggedHeld ?? 0) > 0 &&
      `${c.pending - c.notSent - (c.flaggedHeld ?? 0)} on the way`,
    c.notSent > 0 && `${c.notSent} not uploaded yet`,
    (c.flaggedHeld ?? 0) > 0 && `${c.flaggedHeld} flagged waiting for an unmetered network`,
    c.waiting > 0 && `${c.waiting} waiting for the card`,
    c.failed > 0 && `${c.failed} failed`,
    c.notAcknowledged > 0 && `${c.notAcknowledged} not acknowledged`,
    c.notVerified > 0 && `${c.notVerified} not verified`,
    c.onServerWord > 0 && `${c.onServerWord} on the server's word only`,
    c.skippedBlocking - Number(folderOfCard) > 0 &&
      `${c.skippedBlocking - Number(folderOfCard)} not kept anywhere`,
    c.flightsIncomplete - c.flightsAccepted > 0 &&
      count(c.flightsIncomplete - c.flightsAccepted, 'flight') + ' incomplete',
  ].filter((p): p is string => typeof p === 'string');
  if (folderOfCard) parts.unshift('the rest of the card not read');
  if (!scanned) parts.unshift('card not read to the end');
  else if (c.files === 0) parts.unshift('no files found');
  return `${label}: not safe to format yet — ${parts.join(', ')}`;
}
