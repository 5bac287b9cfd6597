/**
 * The second panel of Settings: signing in to the server (user name and
 * password, or a pasted token), signing out, testing the connection.
 */
import { visible } from '../../main/shared/visible.js';
import type { AccountView, FieldErrors } from '../../main/shared/ipc.js';
import { useEffect, useState } from 'preact/hooks';
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

/** The same server, as an address is typed: scheme and host in any case, trailing slashes aside. */
function sameAddress(a: string, b: string): boolean {
  const tidy = (u: string): string => {
    const t = u.trim().replace(/\/+$/, '');
    try {
      const url = new URL(t);
      return `${url.protocol}//${url.host}${url.pathname.replace(/\/+$/, '')}`.toLowerCase();
    } catch {
      return t.toLowerCase();
    }
  };
  return tidy(a) === tidy(b);
}

/**
 * What the panel says about the sign-in, from main's data: who is signed in
 * where, or why the address in the form is not signed in (an edit not
 * saved yet is another server: it is signed in to only once one signs in there).
 */
function status(
  form: SettingsForm,
  signedIn: boolean,
  a: AccountView | null,
): { here: boolean; line: string } {
  const formServer = form.serverUrl.trim();
  if (form.useLocalService)
    return a?.kind === 'local'
      ? { here: true, line: 'The built-in local service on this computer needs no sign-in.' }
      : { here: false, line: 'Save the settings to use the built-in local service (no sign-in is needed).' };
  const ws = a?.workspaceId ? `, workspace ${a.workspaceId}` : '';
  const who = a?.user ? ` as ${a.user}` : '';
  if (signedIn && a?.kind === 'server' && a.server !== null) {
    if (formServer === '' || sameAddress(formServer, a.server))
      return { here: true, line: `Signed in${who} to ${a.server}${ws}.` };
    return {
      here: false,
      line: `Not signed in to ${formServer}: it is not saved yet. Signed in${who} to ${a.server}. Signing in below switches to ${formServer} and saves it.`,
    };
  }
  if (formServer === '') return { here: false, line: 'Enter the server address above, then sign in.' };
  return { here: false, line: `Not signed in to ${formServer} yet.` };
}

export function SignIn(props: {
  form: SettingsForm;
  signedIn: boolean;
  account: AccountView | null;
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
  // What was said about signing in belongs to the address it was said for.
  useEffect(() => {
    setNote(null);
    setTestNote(null);
  }, [props.form.serverUrl.trim(), props.form.useLocalService]);

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

  const st = status(props.form, props.signedIn, props.account);
  const local = props.form.useLocalService;
  // Signed in here: who and where, and Sign out; the fields wait behind "someone else".
  const fields = (
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
      </div>
    </form>
  );

  return (
    <section class="panel signin" aria-labelledby="signin-h">
      <div class="panel-head">
        <h2 id="signin-h">Sign in</h2>
        <span class={st.here ? 'pill pill-ok' : 'pill pill-warn'} data-testid="signin-status">
          {st.here ? 'Signed in' : 'Not signed in'}
        </span>
      </div>
      <p class="signin-line" data-testid="signin-line">
        {visible(st.line)}
      </p>
      {errs.server ? (
        <p class="field-error" role="alert">
          {errs.server}
        </p>
      ) : null}

      {local ? null : st.here ? (
        <>
          <div class="button-row">
            <button type="button" class="btn" disabled={busy !== null} onClick={() => void signOut()}>
              Sign out
            </button>
          </div>
          <details class="token-box">
            <summary>Sign in as someone else</summary>
            {fields}
          </details>
        </>
      ) : (
        fields
      )}

      {local ? null : (
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
      )}

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
