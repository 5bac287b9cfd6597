/** What the window's forms are made of: a field's hint, its error, and the aria tying them to it. */
import type { ComponentChildren } from 'preact';

export type Note = { tone: 'ok' | 'error'; text: string } | null;

function errId(field: string): string {
  return `err-${field}`;
}

export function FieldError(props: { field: string; error: string | undefined }) {
  if (!props.error) return null;
  return (
    <p class="field-error" id={errId(props.field)} data-testid={`error-${props.field}`}>
      {props.error}
    </p>
  );
}

/** aria attributes tying an input to its hint and its error. */
export function aria(field: string, error: string | undefined, hasHint = false) {
  const ids = [hasHint ? `hint-${field}` : null, error ? errId(field) : null].filter((x) => x !== null);
  return {
    'aria-invalid': error ? ('true' as const) : undefined,
    'aria-describedby': ids.length > 0 ? ids.join(' ') : undefined,
  };
}

export function Hint(props: { field: string; children: ComponentChildren }) {
  return (
    <p class="hint" id={`hint-${props.field}`}>
      {props.children}
    </p>
  );
}

export function NumberField(props: {
  field: string;
  label: string;
  hint: string;
  value: string;
  error: string | undefined;
  onInput: (v: string) => void;
}) {
  const id = `f-${props.field}`;
  return (
    <div class="field">
      <label for={id}>{props.label}</label>
      <input
        id={id}
        data-field={props.field}
        type="text"
        inputMode="numeric"
        class="num-input"
        value={props.value}
        onInput={(ev) => props.onInput(ev.currentTarget.value)}
        {...aria(props.field, props.error, true)}
      />
      <Hint field={props.field}>{props.hint}</Hint>
      <FieldError field={props.field} error={props.error} />
    </div>
  );
}

/**
 * "Forget …?" asked in place: what forgetting drops, then Forget <name> /
 * Keep it (a destination, a server). Nothing is dropped before the first.
 */
export function ForgetConfirm(props: {
  name: string;
  wordsTestId: string;
  busy: boolean;
  onForget: () => void;
  onKeep: () => void;
  children: ComponentChildren;
}) {
  return (
    <div class="note tone-warn forget-confirm" role="group" aria-label={`Forget ${props.name}`}>
      <p data-testid={props.wordsTestId}>{props.children}</p>
      <div class="forget-actions">
        <button type="button" class="btn btn-primary" disabled={props.busy} onClick={props.onForget}>
          Forget {props.name}
        </button>
        <button type="button" class="btn" disabled={props.busy} onClick={props.onKeep}>
          Keep it
        </button>
      </div>
    </div>
  );
}
