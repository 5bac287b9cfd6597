/**
 * Sign-in, token entry and the connection test: the conversations with a
 * server that happen before the agent uses it. Failures come back phrased
 * for the form that asked; the token itself is only ever handed to the
 * secret store by the caller, never returned to the window.
 */
import { ApiClient } from '../core/api/client.js';
import { toDmsError } from '../core/errors.js';
import type { Logger } from '../core/log.js';
import { serverApi } from '../core/session/connection.js';
import { LOCAL_LABEL, sameServer, tidyServerUrl } from '../core/session/target.js';
import type { RunningService } from '../service/index.js';
import { connectionFailure, UserError } from './failures.js';
import type { SecretStore, StoredToken } from './secrets.js';
import { serverUrlProblem } from './settings.js';

/** The cheapest authenticated call that also proves the workspace: one wayline. */
const PROBE = { order_by: 'name asc', page: 1, page_size: 1 } as const;

export function checkedUrl(serverUrl: string): string {
  const url = tidyServerUrl(serverUrl);
  const problem = serverUrlProblem(url);
  if (problem) throw new UserError('invalid-input', problem, { serverUrl: problem });
  return url;
}

export async function signIn(
  serverUrl: string,
  username: string,
  password: string,
  caFile?: string,
): Promise<StoredToken> {
  const url = checkedUrl(serverUrl);
  try {
    const r = await serverApi({ serverUrl: url, workspaceId: '', ...(caFile ? { caFile } : {}) }).login(
      username,
      password,
    );
    return { server: url, workspaceId: r.workspace_id, token: r.access_token, user: username };
  } catch (err) {
    throw connectionFailure(err, url, 'login');
  }
}

/**
 * A token pasted from the server's web page. Refused when the server says it
 * is wrong; kept when the server cannot be reached now (field crews are
 * often offline), the engine will ask again if it turns out wrong.
 */
export async function verifyToken(
  serverUrl: string,
  workspaceId: string,
  token: string,
  log: Logger,
  caFile?: string,
): Promise<StoredToken> {
  const url = checkedUrl(serverUrl);
  const ws = workspaceId.trim();
  try {
    await serverApi({ serverUrl: url, workspaceId: ws, token, ...(caFile ? { caFile } : {}) }).listWaylines(
      PROBE,
    );
  } catch (err) {
    const e = toDmsError(err);
    if (e.kind === 'auth' || e.kind === 'rejected' || e.kind === 'invalid-input')
      throw connectionFailure(e, url, 'token');
    log.info({ server: url, kind: e.kind }, 'token stored without a check: the server cannot be reached now');
  }
  return { server: url, workspaceId: ws, token: token.trim() };
}

/** Address, sign-in and workspace in one call, with the stored sign-in of that server. */
export async function testConnection(o: {
  serverUrl: string;
  workspaceId: string;
  secrets: SecretStore;
  local: RunningService | null;
  caFile?: string;
}): Promise<{ message: string }> {
  let api: ApiClient;
  let label: string;
  if (tidyServerUrl(o.serverUrl) === '') {
    if (!o.local)
      return { message: 'The built-in local service runs inside this app; there is nothing to connect to.' };
    api = new ApiClient({ baseUrl: o.local.baseUrl, workspaceId: o.local.workspaceId, token: o.local.token });
    label = LOCAL_LABEL;
  } else {
    const url = checkedUrl(o.serverUrl);
    const stored = o.secrets.read();
    const mine = stored !== null && sameServer(stored.server, url) ? stored : null;
    const ws = o.workspaceId.trim() || mine?.workspaceId || '';
    if (ws === '') {
      throw new UserError('invalid-input', 'Enter the workspace to test.', {
        workspaceId: 'The workspace is required to test the connection.',
      });
    }
    if (!mine) throw new UserError('auth', `Not signed in to ${url} yet. Sign in, then test again.`);
    api = serverApi({
      serverUrl: url,
      workspaceId: ws,
      token: mine.token,
      ...(o.caFile ? { caFile: o.caFile } : {}),
    });
    label = url;
  }
  try {
    const n = (await api.listWaylines(PROBE)).pagination.total;
    return { message: `Connected: ${n} wayline${n === 1 ? '' : 's'} in this workspace.` };
  } catch (err) {
    throw connectionFailure(err, label, 'test');
  }
}
