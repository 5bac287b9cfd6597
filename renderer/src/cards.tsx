/**
 * The inserted cards, each with its two verdicts: locally safe (its files
 * copied to every local destination and read back: the bar is files
 * verified everywhere / files) and in the workspace (acknowledged and
 * checked in the bucket: the bar is bytes there / the card's bytes), each
 * with what to do first, under the card's one line: safe to format when
 * either holds. Everything shown comes from main's data; no sentence is
 * matched to choose what to show.
 */
import { visible } from '../../main/shared/visible.js';
import type { AppStateView, CardView } from '../../main/shared/ipc.js';
import { plural } from './format.js';
import { listOf } from './words.js';

export function Cards(props: { state: AppStateView }) {
  const { state } = props;
  if (state.cards.length === 0) return null;
  return (
    <section class="panel cards" aria-labelledby="cards-h">
      <div class="panel-head">
        <h2 id="cards-h">
          {state.cards.length === 1
            ? 'Card in this computer'
            : `Cards in this computer (${state.cards.length})`}
        </h2>
      </div>
      {state.cards.map((c) => (
        <CardVerdicts key={c.id} card={c} state={state} />
      ))}
    </section>
  );
}

function CardVerdicts({ card, state }: { card: CardView; state: AppStateView }) {
  const h = card.headline;
  return (
    <article class="card" data-card={card.label} aria-label={`Card ${visible(card.label)}`}>
      <div class="card-head">
        <h3 class="card-name">{visible(card.label)}</h3>
        {h ? (
          <span class={`state tone-${h.safe ? 'ok' : 'warn'}`} data-testid="card-safe">
            {h.safe ? 'Safe to format' : 'Not safe to format yet'}
          </span>
        ) : null}
      </div>
      <p class="card-headline" data-testid="card-headline">
        {h ? visible(h.message) : pendingLine(card, state)}
      </p>
      {/* Nothing to show on either side yet (no copies to make, no verdict): the line above says it all. */}
      {card.local || card.workspace || state.destinations.length > 0 ? (
        <div class="verdicts">
          <LocalPart card={card} state={state} />
          <WorkspacePart card={card} />
        </div>
      ) : null}
    </article>
  );
}

/** The engine not moving: what the card waits for (its reason is in the banner above). */
const STILL: Partial<Record<AppStateView['engine'], string>> = {
  halted: 'Syncing stopped (see above): keep it in.',
  paused: 'Paused: keep it in, and press Resume to go on.',
  offline: 'Waiting for the server: keep it in.',
  'auth-required': 'Waiting for a sign-in: keep it in.',
};

/** Before the first verdict: what is happening to the card, from the data. */
function pendingLine(card: CardView, state: AppStateView): string {
  if (card.waitingForSignIn !== null)
    return `${plural(card.waitingForSignIn, 'file')} found on it. Nothing is copied or uploaded until you sign in.`;
  const still = STILL[state.engine];
  if (still) return still;
  if (state.destinations.length > 0)
    return `Being copied to ${listOf(state.destinations)}: it can come out once it is locally safe.`;
  return 'Being uploaded: keep it in until it is safe to format.';
}

function Bar(props: { value: number; max: number; label: string; text: string }) {
  const pct = props.max > 0 ? Math.min(100, Math.floor((props.value / props.max) * 100)) : 0;
  return (
    <progress
      class="bar bar-verdict"
      max={100}
      value={pct}
      aria-label={props.label}
      aria-valuetext={`${pct}%, ${props.text}`}
    />
  );
}

function Reasons({ reasons, testid }: { reasons: string[]; testid: string }) {
  if (reasons.length === 0) return null;
  return (
    <ul class="reasons" data-testid={testid}>
      {reasons.map((r) => (
        <li key={r}>{visible(r)}</li>
      ))}
    </ul>
  );
}

function LocalPart({ card, state }: { card: CardView; state: AppStateView }) {
  const l = card.local;
  if (!l) {
    const text =
      state.destinations.length > 0
        ? `Being copied to ${listOf(state.destinations)} and read back…`
        : 'No local copies: add a copy destination in Settings to free a card before its upload is done.';
    return (
      <div class="verdict" data-testid="local-verdict">
        <p class="verdict-title">
          <span class="verdict-name">On this computer’s drives</span>
        </p>
        <p class="muted">{text}</p>
      </div>
    );
  }
  // One count when every drive holds the same; else each drive's own, so a stopped one is not blamed on the others.
  const same = l.destinations.every((d) => d.verified === l.verified);
  const text = same
    ? `${l.verified.toLocaleString()} of ${plural(l.files, 'file')} verified on ${listOf(l.destinations.map((d) => d.label))}`
    : `${l.verified.toLocaleString()} of ${plural(l.files, 'file')} verified on every drive: ${l.destinations
        .map((d) => `${d.label} ${d.verified.toLocaleString()}`)
        .join(', ')}`;
  return (
    <div class="verdict" data-testid="local-verdict">
      <p class="verdict-title">
        <span class="verdict-name">On this computer’s drives</span>
        <span class={`state tone-${l.safe ? 'ok' : 'warn'}`}>{l.safe ? 'Locally safe' : 'Not yet'}</span>
      </p>
      <Bar value={l.verified} max={l.files} label={`${visible(card.label)}: local copies`} text={text} />
      <p class="verdict-amount" data-testid="local-amount">
        {visible(text)}
      </p>
      {/* A destination that stopped is said in its warning above: once, not again here (in other words). */}
      <Reasons
        reasons={l.reasons.filter(
          (r) => !card.stopped.some((x) => x.message === r || r.startsWith(`${x.destination}:`)),
        )}
        testid="local-reasons"
      />
    </div>
  );
}

function WorkspacePart({ card }: { card: CardView }) {
  const w = card.workspace;
  if (!w) {
    return (
      <div class="verdict" data-testid="workspace-verdict">
        <p class="verdict-title">
          <span class="verdict-name">In the workspace</span>
        </p>
        <p class="muted">Said once the upload of this card is done and checked.</p>
      </div>
    );
  }
  const word = w.safe ? 'Verified' : w.final ? 'Not yet' : 'Uploading';
  return (
    <div class="verdict" data-testid="workspace-verdict">
      <p class="verdict-title">
        <span class="verdict-name">In the workspace</span>
        <span class={`state tone-${w.safe ? 'ok' : w.final ? 'warn' : 'busy'}`}>{word}</span>
      </p>
      <Bar
        value={w.bytesThere}
        max={w.bytesTotal}
        label={`${visible(card.label)}: in the workspace`}
        text={w.amount}
      />
      <p class="verdict-amount" data-testid="workspace-amount">
        {w.amount} in the workspace{w.final ? '' : ', checked in its bucket when the upload is done'}
      </p>
      {w.final && !w.safe ? <Reasons reasons={w.reasons} testid="workspace-reasons" /> : null}
    </div>
  );
}
