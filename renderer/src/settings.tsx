import type { FieldErrors, SettingsView } from '../../main/shared/ipc.js';
import type { ComponentChildren } from 'preact';
import { useEffect, useRef, useState } from 'preact/hooks';
import { call } from './bridge.js';
import { DRONE_MODELS, FILE_TYPES } from './models.js';
import { isKnownType, toForm, urlProblem, validateSettings, type SettingsForm } from './validate.js';

type Note = { tone: 'ok' | 'error'; text: string } | null;
type FieldName = keyof SettingsView;

const FIELD_ORDER: FieldName[] = [
  'serverUrl',
  'workspaceId',
  'watchedFolders',
  'include',
  'filesConcurrency',
  'partsConcurrency',
  'bandwidthLimitKiBps',
  'aircraftDefault',
  'aircraftSerial',
];

function errId(field: string): string {
  return `err-${field}`;
}

function FieldError(props: { field: string; error: string | undefined }) {
  if (!props.error) return null;
  return (
    <p class="field-error" id={errId(props.field)} data-testid={`error-${props.field}`}>
      {props.error}
    </p>
  );
}

/** aria attributes tying an input to its hint and its error. */
function aria(field: string, error: string | undefined, hasHint = false) {
  const ids = [hasHint ? `hint-${field}` : null, error ? errId(field) : null].filter((x) => x !== null);
  return {
    'aria-invalid': error ? ('true' as const) : undefined,
    'aria-describedby': ids.length > 0 ? ids.join(' ') : undefined,
  };
}

function Hint(props: { field: string; children: ComponentChildren }) {
  return (
    <p class="hint" id={`hint-${props.field}`}>
      {props.children}
    </p>
  );
}

export function Settings(props: { onSignedInChange: (signedIn: boolean) => void }) {
  const [form, setForm] = useState<SettingsForm | null>(null);
  const [signedIn, setSignedIn] = useState(false);
  const [loadError, setLoadError] = useState<string | null>(null);
  const [errors, setErrors] = useState<FieldErrors>({});
  const [saveNote, setSaveNote] = useState<Note>(null);
  const [saving, setSaving] = useState(false);
  const formRef = useRef<HTMLFormElement>(null);

  const load = async (): Promise<void> => {
    const r = await call('settings:get', undefined);
    if (r.ok) {
      const { signedIn: s, ...settings } = r.value;
      setForm(toForm(settings));
      setSignedIn(s);
      setLoadError(null);
    } else setLoadError(r.error.message);
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
      const { signedIn: s, ...settings } = r.value;
      setForm(toForm(settings));
      setSignedIn(s);
      setErrors({});
      setSaveNote({ tone: 'ok', text: 'Settings saved.' });
    } else {
      const fields = r.error.fields ?? {};
      setErrors(fields);
      setSaveNote({
        tone: 'error',
        text: `Not saved: ${fields.form ?? (Object.keys(fields).length > 0 ? 'fix the fields marked in red.' : r.error.message)}`,
      });
      focusFirstError(fields);
    }
  };

  const addFolder = async (): Promise<void> => {
    const r = await call('dialog:pick-folder', undefined);
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
                    <span class="folder-path">{folder}</span>
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
            <Hint field="aircraftSerial">Sent with photos from payload cameras (H20T…) that do not record the aircraft.</Hint>
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
        onSignedIn={(s, workspaceId) => {
          setSignedIn(s);
          props.onSignedInChange(s);
          if (workspaceId !== undefined && workspaceId !== form.workspaceId)
            setForm({ ...form, workspaceId });
        }}
        onFieldErrors={(f) => setErrors({ ...errors, ...f })}
      />
    </div>
  );
}

function NumberField(props: {
  field: FieldName;
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

/** Where to sign in: '' means the built-in local service. */
function target(form: SettingsForm): { serverUrl: string; problem: string | null } {
  if (form.useLocalService) return { serverUrl: '', problem: null };
  const serverUrl = form.serverUrl.trim();
  if (serverUrl === '') return { serverUrl, problem: 'Enter the server address above first.' };
  return { serverUrl, problem: urlProblem(serverUrl) };
}

function SignIn(props: {
  form: SettingsForm;
  signedIn: boolean;
  onSignedIn: (signedIn: boolean, workspaceId?: string) => void;
  onFieldErrors: (f: FieldErrors) => void;
}) {
  const [username, setUsername] = useState('');
  const [password, setPassword] = useState('');
  const [token, setToken] = useState('');
  const [errs, setErrs] = useState<Record<string, string>>({});
  const [note, setNote] = useState<Note>(null);
  const [testNote, setTestNote] = useState<Note>(null);
  const [busy, setBusy] = useState<string | null>(null);

  const run = async (name: string, fn: () => Promise<void>): Promise<void> => {
    setBusy(name);
    try {
      await fn();
    } finally {
      setBusy(null);
    }
  };

  const login = () =>
    run('login', async () => {
      const t = target(props.form);
      const v: Record<string, string> = {};
      if (t.problem) v.server = t.problem;
      if (username.trim() === '') v.username = 'Enter your user name.';
      if (password === '') v.password = 'Enter your password.';
      setErrs(v);
      setNote(null);
      if (Object.keys(v).length > 0) return;
      const r = await call('auth:login', { serverUrl: t.serverUrl, username: username.trim(), password });
      setPassword('');
      if (r.ok) {
        setNote({ tone: 'ok', text: `Signed in. Workspace: ${r.value.workspaceId}.` });
        props.onSignedIn(true, r.value.workspaceId);
      } else {
        if (r.error.fields) props.onFieldErrors(r.error.fields);
        setNote({ tone: 'error', text: `Not signed in: ${r.error.message}` });
      }
    });

  const useToken = () =>
    run('token', async () => {
      const t = target(props.form);
      const v: Record<string, string> = {};
      if (t.problem) v.server = t.problem;
      if (props.form.workspaceId.trim() === '') v.token = 'Enter the workspace ID in the form first.';
      if (token.trim() === '') v.token = 'Paste the token.';
      setErrs(v);
      setNote(null);
      if (Object.keys(v).length > 0) return;
      const r = await call('auth:set-token', {
        serverUrl: t.serverUrl,
        workspaceId: props.form.workspaceId.trim(),
        token: token.trim(),
      });
      setToken('');
      if (r.ok) {
        setNote({ tone: 'ok', text: `Signed in with the token. Workspace: ${r.value.workspaceId}.` });
        props.onSignedIn(true, r.value.workspaceId);
      } else {
        if (r.error.fields) props.onFieldErrors(r.error.fields);
        setNote({ tone: 'error', text: `Token not accepted: ${r.error.message}` });
      }
    });

  const signOut = () =>
    run('signout', async () => {
      const r = await call('auth:sign-out', undefined);
      if (r.ok) {
        setNote({ tone: 'ok', text: 'Signed out.' });
        props.onSignedIn(false);
      } else setNote({ tone: 'error', text: `Could not sign out: ${r.error.message}` });
    });

  const test = () =>
    run('test', async () => {
      const t = target(props.form);
      if (t.problem) {
        setTestNote({ tone: 'error', text: t.problem });
        return;
      }
      setTestNote(null);
      const r = await call('auth:test-connection', {
        serverUrl: t.serverUrl,
        workspaceId: props.form.workspaceId.trim(),
      });
      setTestNote(r.ok ? { tone: 'ok', text: r.value.message } : { tone: 'error', text: r.error.message });
    });

  return (
    <section class="panel signin" aria-labelledby="signin-h">
      <div class="panel-head">
        <h2 id="signin-h">Sign in</h2>
        <span class={props.signedIn ? 'pill pill-ok' : 'pill pill-warn'} data-testid="signin-status">
          {props.signedIn ? 'Signed in' : 'Not signed in'}
        </span>
      </div>
      <p class="muted small">
        {props.form.useLocalService
          ? 'To the built-in local service.'
          : `To ${props.form.serverUrl.trim() || 'the server above'}.`}
      </p>
      {errs.server ? (
        <p class="field-error" role="alert">
          {errs.server}
        </p>
      ) : null}

      <form
        class="stack"
        noValidate
        aria-label="Sign in with user name and password"
        onSubmit={(ev) => {
          ev.preventDefault();
          void login();
        }}
      >
        <div class="field">
          <label for="f-username">User name</label>
          <input
            id="f-username"
            type="text"
            autoComplete="username"
            spellcheck={false}
            value={username}
            onInput={(ev) => setUsername(ev.currentTarget.value)}
            {...aria('username', errs.username)}
          />
          <FieldError field="username" error={errs.username} />
        </div>
        <div class="field">
          <label for="f-password">Password</label>
          <input
            id="f-password"
            type="password"
            autoComplete="current-password"
            value={password}
            onInput={(ev) => setPassword(ev.currentTarget.value)}
            {...aria('password', errs.password)}
          />
          <FieldError field="password" error={errs.password} />
        </div>
        <div class="button-row">
          <button type="submit" class="btn btn-primary" disabled={busy !== null}>
            {busy === 'login' ? 'Signing in…' : 'Sign in'}
          </button>
          {props.signedIn ? (
            <button type="button" class="btn" disabled={busy !== null} onClick={() => void signOut()}>
              Sign out
            </button>
          ) : null}
        </div>
      </form>

      <details class="token-box">
        <summary>Or paste an access token</summary>
        <form
          class="stack"
          noValidate
          aria-label="Sign in with an access token"
          onSubmit={(ev) => {
            ev.preventDefault();
            void useToken();
          }}
        >
          <div class="field">
            <label for="f-token">Access token</label>
            <textarea
              id="f-token"
              rows={2}
              spellcheck={false}
              autoComplete="off"
              value={token}
              onInput={(ev) => setToken(ev.currentTarget.value)}
              {...aria('token', errs.token)}
            />
            <FieldError field="token" error={errs.token} />
          </div>
          <button type="submit" class="btn" disabled={busy !== null}>
            Use this token
          </button>
        </form>
      </details>

      {note ? (
        <p
          class={`note tone-${note.tone}`}
          role={note.tone === 'error' ? 'alert' : 'status'}
          data-testid="signin-note"
        >
          {note.text}
        </p>
      ) : null}

      <div class="test-connection">
        <h3>Connection</h3>
        <button type="button" class="btn" disabled={busy !== null} onClick={() => void test()}>
          {busy === 'test' ? 'Testing…' : 'Test connection'}
        </button>
        {testNote ? (
          <p class={`note tone-${testNote.tone}`} role="status" data-testid="test-note">
            {testNote.text}
          </p>
        ) : null}
      </div>
    </section>
  );
}
