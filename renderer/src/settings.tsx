/**
 * Settings: the form (server, cards and folders, speed, aircraft) and, below
 * it, the sign-in panel (sign-in.tsx), which fills in the workspace.
 */
import { visible } from '../../main/shared/visible.js';
import type { AccountView, FieldErrors, SettingsView } from '../../main/shared/ipc.js';
import { useEffect, useRef, useState } from 'preact/hooks';
import { call } from './bridge.js';
import { FieldError, Hint, NumberField, aria, type Note } from './fields.js';
import { DRONE_MODELS, FILE_TYPES } from './models.js';
import { SignIn } from './sign-in.js';
import { Destinations } from './destinations.js';
import { Targets } from './targets.js';
import { isKnownType, toForm, validateSettings, type SettingsForm } from './validate.js';

type FieldName = keyof SettingsView;

const FIELD_ORDER: FieldName[] = [
  'serverUrl',
  'workspaceId',
  'watchedFolders',
  'include',
  'destinations',
  'filesConcurrency',
  'partsConcurrency',
  'bandwidthLimitKiBps',
  'aircraftDefault',
  'aircraftSerial',
  'flightMinHeightM',
];

export function Settings(props: { onSignedInChange: (signedIn: boolean) => void }) {
  const [form, setForm] = useState<SettingsForm | null>(null);
  const [signedIn, setSignedIn] = useState(false);
  const [account, setAccount] = useState<AccountView | null>(null);
  const [loadError, setLoadError] = useState<string | null>(null);
  const [errors, setErrors] = useState<FieldErrors>({});
  const [saveNote, setSaveNote] = useState<Note>(null);
  const [saving, setSaving] = useState(false);
  /** The destinations' folders as saved (config.json): those can be forgotten. */
  const [savedDestinations, setSavedDestinations] = useState<string[]>([]);
  const formRef = useRef<HTMLFormElement>(null);

  const load = async (): Promise<void> => {
    const r = await call('settings:get', undefined);
    if (r.ok) {
      const { signedIn: s, account: a, ...settings } = r.value;
      setForm(toForm(settings));
      setSavedDestinations(settings.destinations.map((d) => d.path));
      setSignedIn(s);
      setAccount(a);
      setLoadError(null);
    } else setLoadError(r.error.message);
  };

  /** After a sign-in or out: who and where, from main; the form's unsaved edits stay. */
  const refreshAccount = async (): Promise<void> => {
    const r = await call('settings:get', undefined);
    if (!r.ok) return;
    setSignedIn(r.value.signedIn);
    setAccount(r.value.account);
    props.onSignedInChange(r.value.signedIn);
  };

  useEffect(() => {
    void load();
  }, []);

  if (form === null) {
    return (
      <div class="screen">
        <h1 class="visually-hidden">Settings</h1>
        {loadError ? (
          <div class="note tone-error" role="alert">
            <span>Could not read the settings: {loadError}</span>
            <button type="button" class="btn" onClick={() => void load()}>
              Try again
            </button>
          </div>
        ) : (
          <p class="muted">Loading…</p>
        )}
      </div>
    );
  }

  const update = (patch: Partial<SettingsForm>): void => {
    setForm({ ...form, ...patch });
    setSaveNote(null);
    // An edited field's old reason no longer applies.
    const cleared = { ...errors };
    for (const k of Object.keys(patch) as FieldName[]) delete cleared[k];
    if ('useLocalService' in patch || 'serverUrl' in patch) delete cleared.workspaceId;
    delete cleared.form;
    setErrors(cleared);
  };

  const focusFirstError = (errs: FieldErrors): void => {
    const first = FIELD_ORDER.find((f) => errs[f]);
    if (!first) return;
    requestAnimationFrame(() => {
      const el = formRef.current?.querySelector<HTMLElement>(`[data-field="${first}"]`);
      el?.focus();
    });
  };

  const save = async (): Promise<void> => {
    const checked = validateSettings(form);
    if (!checked.ok) {
      setErrors(checked.errors);
      setSaveNote({ tone: 'error', text: 'Not saved: fix the fields marked in red.' });
      focusFirstError(checked.errors);
      return;
    }
    setSaving(true);
    const r = await call('settings:save', checked.value);
    setSaving(false);
    if (r.ok) {
      const { signedIn: s, account: a, ...settings } = r.value;
      setForm(toForm(settings));
      setSavedDestinations(settings.destinations.map((d) => d.path));
      setSignedIn(s);
      setAccount(a);
      setErrors({});
      setSaveNote({ tone: 'ok', text: 'Settings saved.' });
    } else {
      const fields = r.error.fields ?? {};
      setErrors(fields);
      const why = Object.keys(fields).length > 0 ? 'fix the fields marked in red.' : r.error.message;
      setSaveNote({ tone: 'error', text: `Not saved: ${fields.form ?? why}` });
      focusFirstError(fields);
    }
  };

  const addFolder = async (): Promise<void> => {
    const r = await call('dialog:pick-folder', { purpose: 'watch' });
    if (!r.ok) {
      setErrors({ ...errors, watchedFolders: r.error.message });
      return;
    }
    if (r.value === null) return; // cancelled
    if (form.watchedFolders.includes(r.value)) {
      setErrors({ ...errors, watchedFolders: 'This folder is already in the list.' });
      return;
    }
    update({ watchedFolders: [...form.watchedFolders, r.value] });
  };

  const e = errors;
  const knownChecked = (t: string): boolean => form.include.some((i) => i.toUpperCase() === t);
  const setType = (t: string, on: boolean): void => {
    const others = form.include.filter((i) => i.toUpperCase() !== t);
    update({ include: on ? [...others, t] : others });
  };
  const extraTypes = form.include.filter((t) => !isKnownType(t));

  return (
    <div class="screen settings-screen">
      <h1 class="visually-hidden">Settings</h1>
      <form
        ref={formRef}
        class="panel settings-form"
        aria-labelledby="settings-h"
        noValidate
        onSubmit={(ev) => {
          ev.preventDefault();
          void save();
        }}
      >
        <div class="panel-head">
          <h2 id="settings-h">Settings</h2>
        </div>

        <fieldset class="group">
          <legend>Server</legend>
          <label class="check switch-row">
            <input
              type="checkbox"
              role="switch"
              checked={form.useLocalService}
              onChange={(ev) => update({ useLocalService: ev.currentTarget.checked })}
            />
            Use the built-in local service
          </label>
          <div class="field-row field-row-server">
            <div class="field">
              <label for="f-serverUrl">Server address</label>
              <input
                id="f-serverUrl"
                data-field="serverUrl"
                type="url"
                inputMode="url"
                autoComplete="url"
                spellcheck={false}
                placeholder="https://fh.example.com"
                value={form.serverUrl}
                onInput={(ev) => update({ serverUrl: ev.currentTarget.value })}
                {...aria('serverUrl', e.serverUrl, form.useLocalService)}
              />
              {form.useLocalService ? (
                <Hint field="serverUrl">Not used while the built-in local service is on.</Hint>
              ) : null}
              <FieldError field="serverUrl" error={e.serverUrl} />
            </div>
            <div class="field">
              <label for="f-workspaceId">Workspace ID</label>
              <input
                id="f-workspaceId"
                data-field="workspaceId"
                type="text"
                spellcheck={false}
                autoComplete="off"
                value={form.workspaceId}
                onInput={(ev) => update({ workspaceId: ev.currentTarget.value })}
                {...aria('workspaceId', e.workspaceId)}
              />
              <FieldError field="workspaceId" error={e.workspaceId} />
            </div>
          </div>
        </fieldset>

        <fieldset class="group">
          <legend>Cards and folders</legend>
          <label class="check">
            <input
              type="checkbox"
              checked={form.autoSyncCards}
              onChange={(ev) => update({ autoSyncCards: ev.currentTarget.checked })}
            />
            Sync a card as soon as it is inserted
          </label>
          <label class="check">
            <input
              type="checkbox"
              checked={form.ejectAfterSync}
              onChange={(ev) => update({ ejectAfterSync: ev.currentTarget.checked })}
            />
            Eject the card when its sync is done
          </label>

          <div class="field">
            <span class="label" id="l-watchedFolders">
              Watched folders
            </span>
            {form.watchedFolders.length === 0 ? (
              <p class="muted">No folder is watched. Cards are still synced.</p>
            ) : (
              <ul class="folder-list" aria-labelledby="l-watchedFolders">
                {form.watchedFolders.map((folder) => (
                  <li key={folder}>
                    <span class="folder-path">{visible(folder)}</span>
                    <button
                      type="button"
                      class="btn btn-small"
                      aria-label={`Remove ${folder}`}
                      onClick={() =>
                        update({ watchedFolders: form.watchedFolders.filter((f) => f !== folder) })
                      }
                    >
                      Remove
                    </button>
                  </li>
                ))}
              </ul>
            )}
            <button
              type="button"
              class="btn"
              data-field="watchedFolders"
              onClick={() => void addFolder()}
              {...aria('watchedFolders', e.watchedFolders)}
            >
              Add folder…
            </button>
            <FieldError field="watchedFolders" error={e.watchedFolders} />
          </div>

          <fieldset class="field types" {...aria('include', e.include)}>
            <legend>File types to upload</legend>
            <div class="check-row">
              {FILE_TYPES.map((t, i) => (
                <label key={t} class="check">
                  <input
                    type="checkbox"
                    data-field={i === 0 ? 'include' : undefined}
                    checked={knownChecked(t)}
                    onChange={(ev) => setType(t, ev.currentTarget.checked)}
                  />
                  {t}
                </label>
              ))}
            </div>
            {extraTypes.length > 0 ? <p class="hint">Also: {extraTypes.join(', ')}</p> : null}
            <FieldError field="include" error={e.include} />
          </fieldset>
        </fieldset>

        <Destinations
          list={form.destinations}
          error={e.destinations}
          onChange={(destinations) => update({ destinations })}
          saved={savedDestinations}
          onError={(destinations) => setErrors({ ...errors, destinations })}
          onForgotten={(answer, forgotten) => {
            // Saved at once by main: the form's other edits (a new destination too) stay unsaved.
            setForm({ ...form, destinations: form.destinations.filter((d) => d.path !== forgotten) });
            setSavedDestinations(answer.destinations.map((d) => d.path));
            const cleared = { ...errors };
            delete cleared.destinations;
            setErrors(cleared);
          }}
        />

        <Targets />

        <fieldset class="group">
          <legend>Speed</legend>
          <div class="field-row">
            <NumberField
              field="filesConcurrency"
              label="Files in parallel"
              hint="1 to 16"
              value={form.filesConcurrency}
              error={e.filesConcurrency}
              onInput={(v) => update({ filesConcurrency: v })}
            />
            <NumberField
              field="partsConcurrency"
              label="Parts per file"
              hint="1 to 16"
              value={form.partsConcurrency}
              error={e.partsConcurrency}
              onInput={(v) => update({ partsConcurrency: v })}
            />
            <NumberField
              field="bandwidthLimitKiBps"
              label="Bandwidth limit (KiB/s)"
              hint="0 = no limit"
              value={form.bandwidthLimitKiBps}
              error={e.bandwidthLimitKiBps}
              onInput={(v) => update({ bandwidthLimitKiBps: v })}
            />
          </div>
        </fieldset>

        <fieldset class="group">
          <legend>Other</legend>
          <div class="field">
            <label for="f-aircraftDefault">Aircraft, when the photos do not say</label>
            <select
              id="f-aircraftDefault"
              data-field="aircraftDefault"
              value={form.aircraftDefault}
              onChange={(ev) => update({ aircraftDefault: ev.currentTarget.value })}
              {...aria('aircraftDefault', e.aircraftDefault)}
            >
              <option value="">Automatic</option>
              {DRONE_MODELS.map((m) => (
                <option key={m.key} value={m.key}>
                  {m.name}
                </option>
              ))}
            </select>
            <FieldError field="aircraftDefault" error={e.aircraftDefault} />
          </div>
          <div class="field">
            <label for="f-aircraftSerial">Aircraft serial, when the photos do not say</label>
            <input
              id="f-aircraftSerial"
              data-field="aircraftSerial"
              type="text"
              spellcheck={false}
              value={form.aircraftSerial}
              onInput={(ev) => update({ aircraftSerial: ev.currentTarget.value })}
              {...aria('aircraftSerial', e.aircraftSerial)}
            />
            <Hint field="aircraftSerial">
              Sent with photos from payload cameras (H20T…) that do not record the aircraft.
            </Hint>
            <FieldError field="aircraftSerial" error={e.aircraftSerial} />
          </div>
          <label class="check">
            <input
              type="checkbox"
              checked={form.startAtLogin}
              onChange={(ev) => update({ startAtLogin: ev.currentTarget.checked })}
            />
            Start Drone Media Sync when I log in to this computer
          </label>
        </fieldset>

        {/* --- flight checks (issue 32) --- */}
        <fieldset class="group">
          <legend>Flight checks</legend>
          <div class="field-row">
            <NumberField
              field="flightMinHeightM"
              label="Minimum height above take-off (m)"
              hint="Photos taken lower are listed in Flights to look at. Empty = no minimum."
              value={form.flightMinHeightM}
              error={e.flightMinHeightM}
              onInput={(v) => update({ flightMinHeightM: v })}
            />
          </div>
          <label class="check">
            <input
              type="checkbox"
              checked={form.holdFlaggedOnMetered}
              onChange={(ev) => update({ holdFlaggedOnMetered: ev.currentTarget.checked })}
            />
            Leave photos that look unusable out of a metered upload (they stay on the card and the copies, and
            go on a network that is not metered)
          </label>
        </fieldset>

        <div class="save-bar">
          <button type="submit" class="btn btn-primary" disabled={saving}>
            {saving ? 'Saving…' : 'Save settings'}
          </button>
          {saveNote ? (
            <p
              class={`save-note tone-${saveNote.tone}`}
              role={saveNote.tone === 'error' ? 'alert' : 'status'}
            >
              {saveNote.text}
            </p>
          ) : null}
        </div>
      </form>

      <SignIn
        form={form}
        signedIn={signedIn}
        account={account}
        onSignedIn={(s, workspaceId) => {
          setSignedIn(s);
          props.onSignedInChange(s);
          if (workspaceId !== undefined && workspaceId !== form.workspaceId)
            setForm({ ...form, workspaceId });
          void refreshAccount();
        }}
        onFieldErrors={(f) => setErrors({ ...errors, ...f })}
      />
    </div>
  );
}
