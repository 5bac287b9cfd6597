/**
 * A new user's first hour: choose the server, sign in, insert a card. Each
 * step says what it is waiting for and leads to where it is done; a step
 * done says with what (the server, who signed in). Shown until the first
 * card is in and no card was read yet, from main's data only.
 */
import { visible } from '../../main/shared/visible.js';
import type { AppStateView } from '../../main/shared/ipc.js';

interface Step {
  title: string;
  done: boolean;
  /** What was done (when done), or what to do. */
  text: string;
  action: 'server' | 'sign-in' | null;
}

export function firstRunSteps(s: AppStateView): Step[] | null {
  const a = s.account;
  const server = a.kind !== 'none';
  const signedIn = s.signedIn;
  const card = s.cards.length > 0;
  if (s.hasFiles || (server && signedIn && card)) return null;
  const where =
    a.kind === 'local'
      ? 'The built-in local service on this computer (for trying the app: nothing leaves this computer).'
      : `${a.server ?? ''}${a.workspaceId ? `, workspace ${a.workspaceId}` : ''}`;
  return [
    {
      title: 'Choose your server',
      done: server,
      text: server
        ? where
        : 'Enter the address of your team’s media server in Settings (your administrator has it).',
      action: server ? null : 'server',
    },
    {
      title: 'Sign in',
      done: signedIn,
      text: signedIn
        ? a.kind === 'local'
          ? 'No sign-in is needed for the built-in local service.'
          : `Signed in${a.user ? ` as ${a.user}` : ''}.`
        : 'Sign in with your user name and password for that server, in Settings.',
      action: signedIn || !server ? null : 'sign-in',
    },
    {
      title: 'Insert a drone card',
      done: card,
      text: card
        ? `${s.cards.map((c) => c.label).join(', ')} found.`
        : 'Put the drone’s SD card in this computer: it is found by itself, and its photos and videos go to your workspace.',
      action: null,
    },
  ];
}

export function GetStarted(props: { state: AppStateView; onGoToSettings: () => void }) {
  const steps = firstRunSteps(props.state);
  if (!steps) return null;
  const current = steps.findIndex((s) => !s.done);
  return (
    <section class="panel get-started" aria-labelledby="get-started-h" data-testid="get-started">
      <div class="panel-head">
        <h2 id="get-started-h">Get started: three steps</h2>
      </div>
      <ol class="steps">
        {steps.map((step, i) => (
          <li
            key={step.title}
            class={step.done ? 'step step-done' : i === current ? 'step step-current' : 'step'}
            aria-current={i === current ? 'step' : undefined}
            data-testid="step"
          >
            <span class="step-mark" aria-hidden="true">
              {step.done ? '✓' : i + 1}
            </span>
            <div class="step-text">
              <p class="step-title">
                {step.title}
                <span class="visually-hidden">{step.done ? ' (done)' : ''}</span>
              </p>
              <p class="step-detail">{visible(step.text)}</p>
            </div>
            {step.action && i === current ? (
              <button type="button" class="btn btn-primary" onClick={props.onGoToSettings}>
                {step.action === 'server' ? 'Open Settings' : 'Open Settings to sign in'}
              </button>
            ) : null}
          </li>
        ))}
      </ol>
    </section>
  );
}
