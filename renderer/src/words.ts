/** What the engine and each file are doing, in plain words. */
import type { AppStateView, LinkView, QueueItemView, RunStateName } from '../../main/shared/ipc.js';
import { formatBytes, formatEta, plural } from './format.js';

export type Tone = 'ok' | 'busy' | 'paused' | 'warn' | 'error';

export interface Banner {
  tone: Tone;
  title: string;
  detail: string | null;
  action: 'settings' | null;
}

export function failedTitle(count: number): string {
  return count === 1 ? '1 file needs you' : `${count.toLocaleString()} files need you`;
}

/**
 * What the numbers mean in the engine's state: "Uploading: 176 files left — 1.2 GB, ~4 min".
 * Files left, never "file 37 of 212": beside "34 of 212 done, 2 failed" a file number reads as a
 * contradiction. Nothing left reads the same in every state.
 */
export function progressSentence(s: AppStateView): string {
  const p = s.progress;
  const engine = s.engine;
  if (p.filesTotal === 0) {
    if (s.waitingForCard > 0) return `Waiting for the card: ${plural(s.waitingForCard, 'file')}`;
    return engine === 'syncing' ? 'Looking for new files…' : 'Nothing to upload right now.';
  }
  const total = p.filesTotal.toLocaleString();
  const done = p.filesDone.toLocaleString();
  const left = Math.max(0, p.filesTotal - p.filesDone - p.filesFailed);
  const leftText = `${plural(left, 'file')} left — ${formatBytes(Math.max(0, p.bytesTotal - p.bytesDone))}`;
  if (left === 0) {
    if (engine === 'syncing') return `Finishing ${plural(p.filesTotal, 'file')}`;
    if (p.filesFailed > 0) return `${done} of ${total} uploaded — ${p.filesFailed.toLocaleString()} failed`;
    return `All ${plural(p.filesTotal, 'file')} uploaded`;
  }
  if (engine === 'halted') return `Stopped: ${leftText}`;
  if (engine === 'paused') return `Paused: ${leftText}`;
  if (engine === 'syncing') {
    const eta = formatEta(p.etaSeconds);
    return `Uploading: ${leftText}${eta ? `, ${eta}` : ''}`;
  }
  if (engine === 'offline') return `Waiting for the server: ${leftText}`;
  if (engine === 'auth-required') return `Waiting for a sign-in: ${leftText}`;
  return `${done} of ${total} uploaded — ${leftText}`;
}

/** "4 files on DJI_CARD wait. " for the cards counted before any sign-in, '' when none. */
function waitingForSignIn(s: AppStateView): string {
  const cards = s.cards.filter((c) => (c.waitingForSignIn ?? 0) > 0);
  const files = cards.reduce((n, c) => n + (c.waitingForSignIn ?? 0), 0);
  if (files === 0) return '';
  return `${plural(files, 'file')} on ${listOf(cards.map((c) => c.label))} ${files === 1 ? 'waits' : 'wait'}. `;
}

/** "SSD and T7_BACKUP". */
export function listOf(names: readonly string[]): string {
  if (names.length <= 1) return names[0] ?? '';
  return `${names.slice(0, -1).join(', ')} and ${names[names.length - 1] ?? ''}`;
}

/**
 * The banners on top of Overview: the engine's state, files waiting for
 * their card, destinations that stopped. Failed files have a panel of their
 * own (the list of them, with one Retry all), so no banner repeats them.
 */
export function banners(s: AppStateView): Banner[] {
  const out: Banner[] = [];
  const failed = s.failedCount;
  switch (s.engine) {
    case 'halted':
      // The reason stays on screen until Resume: "Disk full: the disk holding ... is full. Free space ..."
      out.push({
        tone: 'error',
        title: 'Syncing stopped',
        detail:
          s.halt?.message ??
          s.attention ??
          'The upload queue cannot be written. Fix the cause, then press Resume.',
        action: null,
      });
      break;
    case 'auth-required': {
      // Never signed in (cards counted, nothing recorded) vs. a sign-in the server stopped accepting.
      const waiting = waitingForSignIn(s);
      out.push({
        tone: 'error',
        title: s.signedIn ? 'Sign in again' : 'Sign in to upload',
        detail: s.signedIn
          ? (s.attention ??
            'The server no longer accepts this computer’s sign-in. Uploads wait until you sign in; nothing is lost.')
          : s.account.kind === 'none'
            ? `${waiting}Nothing is uploaded until you sign in${waiting ? '' : '; cards found meanwhile wait'}.`
            : (s.attention ?? 'Nothing is uploaded until you sign in; cards found meanwhile wait.'),
        action: 'settings',
      });
      break;
    }
    case 'offline':
      out.push({
        tone: 'warn',
        title: 'Server unreachable — retrying',
        detail:
          'Check the internet connection. Uploads continue by themselves when the server answers; nothing is lost.',
        action: null,
      });
      break;
    case 'paused': {
      const left = s.progress.filesTotal - s.progress.filesDone - s.progress.filesFailed;
      out.push({
        tone: 'paused',
        title: 'Paused',
        detail:
          left > 0
            ? `${plural(left, 'file')} waiting. Press Resume to continue.`
            : 'Press Resume to continue.',
        action: null,
      });
      break;
    }
    case 'syncing':
      out.push({
        tone: 'busy',
        title: 'Syncing',
        detail:
          s.destinations.length > 0
            ? `Copying each card to ${listOf(s.destinations)}, and uploading to ${s.serverLabel}. A card can come out once it says “locally safe”.`
            : `Uploading to ${s.serverLabel}. Keep the card in until this says “All synced”.`,
        action: null,
      });
      break;
    case 'idle':
      // Not beside a card's copy that stopped (its warning below): two bars about one card never disagree.
      if (failed === 0 && s.waitingForCard === 0 && !s.cards.some((c) => c.stopped.length > 0)) {
        out.push({
          tone: 'ok',
          title: 'All synced',
          detail: `Everything is on ${s.serverLabel}.`,
          action: null,
        });
      }
      break;
  }
  // The link holds lanes back (issue 31): said at the top; the question and the pin are in the Network panel.
  const link = s.link;
  if (link && link.state !== 'open' && s.engine === 'syncing') out.push(linkBanner(link));
  if (s.waitingForCard > 0) {
    out.push({
      tone: 'warn',
      title: `${plural(s.waitingForCard, 'file')} ${s.waitingForCard === 1 ? 'waits' : 'wait'} for the card`,
      detail:
        s.waitingForCard === 1
          ? 'The card (or folder) was taken out before it was done. Insert it again: it continues where it stopped; nothing is lost.'
          : 'The card (or folder) was taken out before these were done. Insert it again: they continue where they stopped; nothing is lost.',
      action: null,
    });
  }
  // A destination folder made for a card (it was not there yet): said once, as news, not as a problem.
  for (const c of s.cards) {
    for (const d of c.created) {
      out.push({ tone: 'ok', title: `${d.destination}: folder created`, detail: d.message, action: null });
    }
  }
  // A local destination that stopped for a card (full, unplugged): its own reason, until the next scan.
  for (const c of s.cards) {
    for (const d of c.stopped) {
      out.push({
        tone: 'warn',
        title: `${c.label} is not copied to ${d.destination}`,
        detail: d.message,
        action: null,
      });
    }
  }
  return out;
}

/** The words of an upload that is not moving now, by the engine's state: a row never says "Uploading" then. */
const STILL: Partial<Record<RunStateName, string>> = {
  halted: 'Stopped at',
  paused: 'Paused at',
  offline: 'Waiting for the server at',
  'auth-required': 'Waiting for a sign-in at',
};

/** One file's state in plain words, as the engine's run state makes it true ("Stopped at 45%" on a full disk). */
export function fileStateWords(item: QueueItemView, engine: RunStateName = 'syncing'): string {
  switch (item.state) {
    case 'discovered':
    case 'hashed':
    case 'fast-upload-checked':
      return 'Waiting';
    case 'uploading': {
      const still = STILL[engine];
      const pct = item.progress === null ? null : `${Math.floor(item.progress * 100)}%`;
      if (still) return pct ? `${still} ${pct}` : still.replace(/ at$/, '');
      return pct ? `Uploading ${pct}` : 'Uploading';
    }
    case 'uploaded':
      return 'Finishing';
    case 'done':
      return item.outcome === 'fast-uploaded' ? 'Already on server' : 'Done';
    case 'failed':
      return 'Failed';
    case 'waiting-for-source':
      return 'Waiting for the card';
  }
}

export function fileTone(item: QueueItemView, engine: RunStateName = 'syncing'): Tone {
  switch (item.state) {
    case 'failed':
      return 'error';
    case 'done':
      return 'ok';
    case 'uploading':
    case 'uploaded':
      return STILL[engine] ? 'paused' : 'busy';
    case 'waiting-for-source':
      return 'warn';
    default:
      return 'paused';
  }
}

/** What the link lets through now, when it holds something back (metered, roaming, a budget used up). */
function linkBanner(l: LinkView): Banner {
  const tail = 'Keep the card in; nothing is lost.';
  if (l.state === 'first-lane')
    return {
      tone: 'warn',
      title: 'Metered network: RTK files and logs go first',
      detail: `Photos, videos and previews wait for an unmetered network${l.answer === 'no' ? '' : ', or for your yes in the Network panel below'}. ${tail}`,
      action: null,
    };
  if (l.state === 'spent')
    return {
      tone: 'warn',
      title: 'The data budget of this network is used up',
      detail: `Uploads continue ${l.budget?.per === 'day' ? 'tomorrow' : 'next month'}, or on another network. ${tail}`,
      action: null,
    };
  return {
    tone: 'warn',
    title: 'Nothing is uploaded over this network yet',
    detail: `${l.cost === 'roaming' ? 'This network is roaming' : l.cost === 'over-limit' ? 'This network is over its data limit' : 'You asked to be asked first on this network'}: say yes in the Network panel below, or connect to another network. ${tail}`,
    action: null,
  };
}
