/**
 * The link (issue 31, docs/link.md): one line saying which network the
 * laptop is on, whether it counts as metered and why (the system detected
 * it, or the crew pinned it), the data budget left and the bandwidth limit
 * now; the crew pins the network here; and the link's one question
 * ("Upload 41.0 GB of photos and videos over this metered network?"),
 * answered once per network through `link:answer`.
 */
import { useState } from 'preact/hooks';
import { visible } from '../../main/shared/visible.js';
import type { AppStateView, LinkView } from '../../main/shared/ipc.js';
import { call, type Result } from './bridge.js';
import { formatBytes, formatRate } from './format.js';

const COST: Record<LinkView['cost'], string> = {
  unmetered: 'not metered',
  metered: 'metered',
  roaming: 'roaming',
  'over-limit': 'over its data limit',
  ask: 'ask first',
};

const GOES: Record<LinkView['state'], string> = {
  open: 'every file goes',
  'first-lane': 'only RTK files and logs go; photos, videos and previews wait',
  held: 'nothing goes until you say yes',
  spent: "nothing goes: this network's data budget is used up",
};

const PINS: Array<{ value: LinkView['pin'] | 'none'; label: string }> = [
  { value: 'none', label: 'as the system says' },
  { value: 'metered', label: 'metered' },
  { value: 'unmetered', label: 'not metered' },
  { value: 'ask', label: 'ask me first' },
];

/** "metered (NetworkManager says so)", "not metered (pinned by you)", "not metered (the system does not say)". */
export function costWhy(l: LinkView): string {
  const why =
    l.why === 'pinned'
      ? 'pinned by you'
      : l.why === 'detected'
        ? `${l.source} says so`
        : 'the system does not say';
  return `${COST[l.cost]} (${why})`;
}

export function budgetWords(l: LinkView): string {
  const b = l.budget;
  if (!b) return 'no data budget';
  return `${formatBytes(b.left)} of ${formatBytes(b.bytes)} left ${b.per === 'day' ? 'today' : 'this month'}`;
}

export function limitWords(l: LinkView): string {
  const rate = l.limit.bytesPerSecond > 0 ? formatRate(l.limit.bytesPerSecond) : 'no limit';
  return l.limit.timetable ? `${rate} now (timetable)` : rate;
}

export function LinkPanel({ state, onState }: { state: AppStateView; onState: (s: AppStateView) => void }) {
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<string | null>(null);
  const link = state.link;
  if (!link) return null;

  const send = async (run: () => Promise<Result<AppStateView>>, what: string) => {
    setBusy(true);
    setError(null);
    try {
      const r = await run();
      if (r.ok) onState(r.value);
      else setError(`Could not ${what}: ${r.error.message}`);
    } finally {
      setBusy(false);
    }
  };
  const answer = (a: 'yes' | 'not-now' | 'never') =>
    send(() => call('link:answer', { answer: a }), 'save the answer');
  const pin = (p: 'metered' | 'unmetered' | 'ask' | 'none') =>
    send(() => call('link:pin', { pin: p }), 'pin this network');

  return (
    <section class="panel link-panel" aria-labelledby="link-h" data-testid="link">
      <div class="panel-head">
        <h2 id="link-h">Network</h2>
        {link.known ? (
          <label class="inline-field">
            <span>This network is</span>
            <select
              data-testid="link-pin"
              disabled={busy}
              value={link.pin ?? 'none'}
              onChange={(e) => void pin(e.currentTarget.value as 'metered' | 'unmetered' | 'ask' | 'none')}
            >
              {PINS.map((p) => (
                <option key={p.value} value={p.value ?? 'none'}>
                  {p.label}
                </option>
              ))}
            </select>
          </label>
        ) : null}
      </div>
      <p class="link-line" data-testid="link-line">
        <strong>{visible(link.network)}</strong>: {costWhy(link)}. Uploads: {GOES[link.state]}
        {link.answer === 'yes' ? ' (you said yes for this network)' : ''}
        {link.answer === 'no' ? ' (you said never for this network)' : ''}.
      </p>
      <p class="link-line muted" data-testid="link-budget">
        Data budget: {budgetWords(link)}. Bandwidth: {limitWords(link)}.
      </p>
      {link.question ? (
        <div
          class="note tone-warn link-question"
          role="group"
          aria-label="Metered network"
          data-testid="link-question"
        >
          <span class="link-question-text">{visible(link.question)}</span>
          <span class="link-question-actions">
            <button type="button" class="btn btn-primary" disabled={busy} onClick={() => void answer('yes')}>
              Yes for this network
            </button>
            <button type="button" class="btn" disabled={busy} onClick={() => void answer('not-now')}>
              Not now
            </button>
            <button type="button" class="btn" disabled={busy} onClick={() => void answer('never')}>
              Never on this network
            </button>
          </span>
        </div>
      ) : null}
      {error ? (
        <p class="note tone-error" role="alert">
          {error}
        </p>
      ) : null}
    </section>
  );
}
