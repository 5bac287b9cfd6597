/**
 * Settings: the local destinations each card is copied to (and read back)
 * before its upload, so the card can come out at the speed of the card.
 * Each has a folder (chosen with the system dialog), a label the crew
 * knows the drive by, and a kind: archive (kept) or staging (deleted once
 * every file of it is in the workspace and older than its keep days).
 */
import { useState } from 'preact/hooks';
import type { SettingsAnswer } from '../../main/shared/ipc.js';
import { visible } from '../../main/shared/visible.js';
import { call } from './bridge.js';
import { FieldError, ForgetConfirm, aria } from './fields.js';
import { DEFAULT_KEEP_DAYS, type DestinationForm } from './validate.js';

export function Destinations(props: {
  list: DestinationForm[];
  /** The folders of the saved settings: only these can be forgotten (a new one is just removed). */
  saved: readonly string[];
  error: string | undefined;
  onChange: (list: DestinationForm[]) => void;
  onError: (message: string) => void;
  /** Main forgot a destination (this folder): the settings as they are now. */
  onForgotten: (answer: SettingsAnswer, path: string) => void;
}) {
  const { list } = props;
  /** The destination whose forgetting is being confirmed (its folder). */
  const [asking, setAsking] = useState<string | null>(null);
  const [busy, setBusy] = useState(false);
  /** What the last forgetting did, said where it was asked. */
  const [done, setDone] = useState<string | null>(null);

  const forget = async (d: DestinationForm, name: string): Promise<void> => {
    setBusy(true);
    const r = await call('copies:forget', { path: d.path });
    setBusy(false);
    setAsking(null);
    if (!r.ok) return props.onError(r.error.message);
    setDone(`${name} forgotten: it no longer counts for any card. Its files stay on the drive.`);
    props.onForgotten(r.value, d.path);
  };
  const set = (i: number, patch: Partial<DestinationForm>): void =>
    props.onChange(list.map((d, j) => (j === i ? { ...d, ...patch } : d)));

  const add = async (): Promise<void> => {
    const r = await call('dialog:pick-folder', { purpose: 'destination' });
    if (!r.ok) return props.onError(r.error.message);
    if (r.value === null) return; // cancelled
    const path = r.value;
    if (list.some((d) => d.path === path)) return props.onError('This folder is already a destination.');
    if (list.length >= 8) return props.onError('At most 8 copy destinations.');
    props.onChange([...list, { path, label: '', role: 'archive', keepDays: DEFAULT_KEEP_DAYS }]);
  };

  return (
    <fieldset class="group destinations">
      <legend>Local copies</legend>
      <p class="hint" id="hint-destinations">
        Each card is copied to these folders and read back first. Once every file is verified on all of them,
        the card is “locally safe”: it can come out, and the upload goes on from the copies.
      </p>
      {list.length === 0 ? (
        <p class="muted">No copy destination: a card stays in until its upload is done and checked.</p>
      ) : (
        <ul class="destination-list" aria-label="Copy destinations">
          {list.map((d, i) => {
            const name = d.label.trim() || d.path;
            return (
              <li key={d.path} data-destination={d.path}>
                <span class="folder-path">{visible(d.path)}</span>
                <div class="destination-fields">
                  <label class="inline-field">
                    <span>Label</span>
                    <input
                      type="text"
                      spellcheck={false}
                      placeholder="e.g. T7_BACKUP"
                      value={d.label}
                      aria-label={`Label of ${visible(d.path)}`}
                      onInput={(ev) => set(i, { label: ev.currentTarget.value })}
                    />
                  </label>
                  <label class="inline-field">
                    <span>Kind</span>
                    <select
                      value={d.role}
                      aria-label={`Kind of ${visible(name)}`}
                      onChange={(ev) =>
                        set(i, { role: ev.currentTarget.value === 'staging' ? 'staging' : 'archive' })
                      }
                    >
                      <option value="archive">Archive: copies are kept</option>
                      <option value="staging">Staging: deleted once in the workspace</option>
                    </select>
                  </label>
                  {d.role === 'staging' ? (
                    <label class="inline-field">
                      <span>Keep</span>
                      <input
                        type="text"
                        inputMode="numeric"
                        class="num-input days-input"
                        value={d.keepDays}
                        aria-label={`Days ${visible(name)} keeps a copy once it is in the workspace`}
                        onInput={(ev) => set(i, { keepDays: ev.currentTarget.value })}
                      />
                      <span>days</span>
                    </label>
                  ) : null}
                  {props.saved.includes(d.path) ? (
                    <button
                      type="button"
                      class="btn btn-small"
                      aria-label={`Forget ${visible(name)}…`}
                      aria-expanded={asking === d.path}
                      onClick={() => {
                        setDone(null);
                        setAsking(asking === d.path ? null : d.path);
                      }}
                    >
                      Forget…
                    </button>
                  ) : (
                    <button
                      type="button"
                      class="btn btn-small"
                      aria-label={`Remove ${visible(name)}`}
                      onClick={() => props.onChange(list.filter((_, j) => j !== i))}
                    >
                      Remove
                    </button>
                  )}
                </div>
                {asking === d.path ? (
                  <ForgetConfirm
                    name={visible(name)}
                    wordsTestId="forget-words"
                    busy={busy}
                    onForget={() => void forget(d, visible(name))}
                    onKeep={() => setAsking(null)}
                  >
                    {visible(name)} no longer counts for any card: no card waits for a copy there, and no
                    verdict names it. Its files stay on the drive ({visible(d.path)}); nothing there is
                    deleted.
                  </ForgetConfirm>
                ) : null}
              </li>
            );
          })}
        </ul>
      )}
      {done ? (
        <p class="note tone-ok" role="status" data-testid="forget-done">
          {done}
        </p>
      ) : null}
      <button
        type="button"
        class="btn"
        data-field="destinations"
        onClick={() => void add()}
        {...aria('destinations', props.error, true)}
      >
        Add destination…
      </button>
      <FieldError field="destinations" error={props.error} />
    </fieldset>
  );
}
