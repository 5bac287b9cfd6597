/**
 * Settings: the servers (and workspaces) this laptop has synced to (issue
 * 30), each with what it holds here. One the crew no longer wants (a
 * mistyped address, a server retired) can be forgotten: what that drops is
 * said first, and nothing is done until the crew confirms. The one the app
 * sends cards to now cannot be (its uploads work on those records).
 */
import { useEffect, useState } from 'preact/hooks';
import type { TargetView } from '../../main/shared/ipc.js';
import { visible } from '../../main/shared/visible.js';
import { call } from './bridge.js';
import { ForgetConfirm } from './fields.js';

export function Targets() {
  const [list, setList] = useState<TargetView[] | null>(null);
  /** The target whose forgetting is being confirmed (its key). */
  const [asking, setAsking] = useState<string | null>(null);
  const [busy, setBusy] = useState(false);
  const [note, setNote] = useState<{ tone: 'ok' | 'bad'; text: string } | null>(null);

  const load = async (): Promise<void> => {
    const r = await call('targets:list', undefined);
    if (r.ok) setList(r.value);
    else setNote({ tone: 'bad', text: r.error.message });
  };
  useEffect(() => {
    void load();
  }, []);

  const forget = async (t: TargetView): Promise<void> => {
    setBusy(true);
    const r = await call('targets:forget', { key: t.key });
    setBusy(false);
    setAsking(null);
    if (!r.ok) return setNote({ tone: 'bad', text: r.error.message });
    setList(r.value);
    setNote({ tone: 'ok', text: `${visible(t.name)} forgotten: ${t.drops} dropped. ${t.keeps}` });
  };

  if (!list?.length && !note) return null;
  return (
    <fieldset class="group targets">
      <legend>Servers synced to</legend>
      <p class="hint">
        What this laptop keeps for each server it sent cards to. Forget one you no longer use, such as a
        mistyped address.
      </p>
      <ul class="destination-list" aria-label="Servers synced to">
        {(list ?? []).map((t) => {
          const name = visible(t.name);
          return (
            <li key={t.key} data-target={t.key}>
              <div class="destination-fields">
                <span class="folder-path">{name}</span>
                <span class="muted" data-testid="target-facts">
                  {t.answered
                    ? `${t.filesDone} of ${t.files} files done`
                    : `never answered: nothing was sent there (${t.files} files waited)`}
                  {t.inUse ? '; the app sends cards here now' : ''}
                </span>
                {t.inUse ? null : (
                  <button
                    type="button"
                    class="btn btn-small"
                    aria-label={`Forget ${name}…`}
                    aria-expanded={asking === t.key}
                    onClick={() => {
                      setNote(null);
                      setAsking(asking === t.key ? null : t.key);
                    }}
                  >
                    Forget…
                  </button>
                )}
              </div>
              {asking === t.key ? (
                <ForgetConfirm
                  name={name}
                  wordsTestId="forget-target-words"
                  busy={busy}
                  onForget={() => void forget(t)}
                  onKeep={() => setAsking(null)}
                >
                  Forgetting {name} drops {t.drops}. {t.keeps}
                </ForgetConfirm>
              ) : null}
            </li>
          );
        })}
      </ul>
      {note ? (
        <p
          class={`note ${note.tone === 'ok' ? 'tone-ok' : 'tone-error'}`}
          role={note.tone === 'ok' ? 'status' : 'alert'}
          data-testid="forget-target-done"
        >
          {note.text}
        </p>
      ) : null}
    </fieldset>
  );
}
