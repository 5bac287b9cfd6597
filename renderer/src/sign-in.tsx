/**
 * The second panel of Settings: signing in to the server (user name and
 * password, or a pasted token), signing out, testing the connection.
 */
import { visible } from '../../main/shared/visible.js';
import type { FieldErrors } from '../../main/shared/ipc.js';
import { useState } from 'preact/hooks';
import { call } from './bridge.js';
import { FieldError, aria, type Note } from './fields.js';
import { urlProblem, type SettingsForm } from './validate.js';

/** Where to sign in: '' means the built-in local service. */
function target(form: SettingsForm): { serverUrl: string; problem: string | null } {
  if (form.useLocalService) return { serverUrl: '', problem: null };
  const serverUrl = form.serverUrl.trim();
  if (serverUrl === '') return { serverUrl, problem: 'Enter the server address above first.' };
  return { serverUrl, problem: urlProblem(serverUrl) };
}

export function SignIn(props: {
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
          {visible(note.text)}
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
