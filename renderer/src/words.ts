/** What the engine and each file are doing, in plain words. */
import type { AppStateView, ProgressView, QueueItemView, RunStateName } from '../../main/shared/ipc.js';
import { formatBytes, formatEta, plural } from './format.js';

export type Tone = 'ok' | 'busy' | 'paused' | 'warn' | 'error';

export interface Banner {
  tone: Tone;
  title: string;
  detail: string | null;
  action: 'settings' | 'retry-all' | null;
}

export function failedTitle(count: number): string {
  return count === 1 ? '1 file needs you' : `${count.toLocaleString()} files need you`;
}

/** "Uploading 37 of 212 — 1.2 GB left, ~4 min", or what the numbers mean in the other states. */
export function progressSentence(p: ProgressView, engine: RunStateName): string {
  if (p.filesTotal === 0)
    return engine === 'syncing' ? 'Looking for new files…' : 'Nothing to upload right now.';
  const total = p.filesTotal.toLocaleString();
  const done = p.filesDone.toLocaleString();
  const leftText = `${formatBytes(Math.max(0, p.bytesTotal - p.bytesDone))} left`;
  if (engine === 'halted') return `Stopped at ${done} of ${total} — ${leftText}`;
  if (engine === 'paused') return `Paused at ${done} of ${total} — ${leftText}`;
  if (engine === 'syncing') {
    if (p.filesDone + p.filesFailed >= p.filesTotal) return `Finishing ${plural(p.filesTotal, 'file')}`;
    const current = Math.min(p.filesDone + p.filesFailed + 1, p.filesTotal).toLocaleString();
    const eta = formatEta(p.etaSeconds);
    return `Uploading ${current} of ${total} — ${leftText}${eta ? `, ${eta}` : ''}`;
  }
  if (engine === 'offline' || engine === 'auth-required')
    return `Waiting: ${done} of ${total} uploaded — ${leftText}`;
  if (p.filesFailed > 0) return `${done} of ${total} uploaded — ${p.filesFailed.toLocaleString()} failed`;
  if (p.filesDone >= p.filesTotal) return `All ${plural(p.filesTotal, 'file')} uploaded`;
  return `${done} of ${total} uploaded — ${leftText}`;
}

/** The banners on top of Overview: the engine's state, then failed files if any. */
export function banners(s: AppStateView): Banner[] {
  const out: Banner[] = [];
  const failed = s.failedCount;
  switch (s.engine) {
    case 'halted':
      // The reason stays on screen until Resume: "Disk full: free space on ... then press Resume."
      out.push({
        tone: 'error',
        title: s.halt?.reason === 'disk-full' ? 'Disk full — syncing stopped' : 'Syncing stopped',
        detail:
          s.halt?.message ??
          s.attention ??
          'The upload queue cannot be written. Fix the cause, then press Resume.',
        action: null,
      });
      break;
    case 'auth-required':
      out.push({
        tone: 'error',
        // Never signed in (cards wait) vs. a sign-in the server stopped accepting.
        title: s.signedIn ? 'Sign in again' : 'Sign in to upload',
        detail:
          s.attention ??
          (s.signedIn
            ? 'The server no longer accepts this computer’s sign-in. Uploads wait until you sign in; nothing is lost.'
            : 'Nothing is uploaded until you sign in; cards found meanwhile wait.'),
        action: 'settings',
      });
      break;
    case 'offline':
      out.push({
        tone: 'warn',
        title: 'Server unreachable — retrying',
        detail:
          'Check the internet connection. Uploads continue by themselves when the server answers; nothing is lost.',
        action: null,
      });
      break;
    case 'paused':
      out.push({
        tone: 'paused',
        title: 'Paused',
        detail:
          s.progress.filesTotal > s.progress.filesDone
            ? `${plural(s.progress.filesTotal - s.progress.filesDone, 'file')} waiting. Press Resume to continue.`
            : 'Press Resume to continue.',
        action: null,
      });
      break;
    case 'syncing':
      out.push({
        tone: 'busy',
        title: 'Syncing',
        detail: `Uploading to ${s.serverLabel}. Keep the card in until this says “All synced”.`,
        action: null,
      });
      break;
    case 'idle':
      if (failed === 0) {
        out.push({
          tone: 'ok',
          title: 'All synced',
          detail: `Everything is on ${s.serverLabel}.`,
          action: null,
        });
      }
      break;
  }
  // Each card at rest: "safe to format", or why not (what to do).
  for (const c of s.cards) {
    if (!c.verdict) continue;
    out.push({
      tone: c.verdict.safe ? 'ok' : 'warn',
      title: c.verdict.message,
      detail: c.verdict.safe
        ? 'Every file of this card is in the workspace and checked in its bucket. Drone Media Sync never formats a card itself.'
        : c.verdict.reasons.join(' '),
      action: null,
    });
  }
  if (failed > 0 && s.engine !== 'auth-required') {
    out.push({
      tone: 'error',
      title: failedTitle(failed),
      detail:
        s.engine === 'idle' && s.attention
          ? s.attention
          : `${failed === 1 ? 'It' : 'They'} could not be uploaded. Read the reason in the list below, fix it, then choose Retry.`,
      action: 'retry-all',
    });
  }
  return out;
}

/** One file's state in plain words. */
export function fileStateWords(item: QueueItemView): string {
  switch (item.state) {
    case 'discovered':
    case 'hashed':
    case 'fast-upload-checked':
      return 'Waiting';
    case 'uploading':
      return item.progress === null ? 'Uploading' : `Uploading ${Math.floor(item.progress * 100)}%`;
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

export function fileTone(item: QueueItemView): Tone {
  switch (item.state) {
    case 'failed':
      return 'error';
    case 'done':
      return 'ok';
    case 'uploading':
    case 'uploaded':
      return 'busy';
    case 'waiting-for-source':
      return 'warn';
    default:
      return 'paused';
  }
}
