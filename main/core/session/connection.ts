/**
 * Which server the agent talks to, for the CLI and the app alike: flags,
 * then DMS_* environment, then the settings and the stored sign-in for that
 * server; the custom CA (caFile) applies to every call. With no server, the
 * CLI uses the built-in local service; the app does so only when the user
 * chose it, and otherwise waits for a sign-in (a card synced into a local
 * bucket on the laptop would never reach the real server).
 */
import { ApiClient } from '../api/client.js';
import type { Config } from '../config.js';
import { DmsError } from '../errors.js';
import type { TargetRef } from '../queue/queue.js';
import { dispatcherWithCa, loadCaFile } from '../tls.js';
import { localTarget, sameServer, serverTarget, tidyServerUrl } from './target.js';
import type { StoredToken, TokenStore } from './token-file.js';

/** The built-in local service as core sees it (started by the CLI or the app: core never imports it). */
export interface LocalServiceHandle {
  baseUrl: string;
  workspaceId: string;
  token: string;
  dataDir: string;
}

export type Connection =
  | {
      kind: 'server';
      api: ApiClient;
      target: TargetRef;
      /** The server URL, for messages. */
      label: string;
      serverUrl: string;
      /** A token is known (it may still turn out refused). */
      signedIn: boolean;
      /** Re-reads the stored sign-in (after `login` elsewhere); true when the token changed. */
      reloadToken(): boolean;
    }
  | { kind: 'local'; api: ApiClient; target: TargetRef; label: string; service: LocalServiceHandle }
  /** Nothing to upload to yet: sources are scanned and wait for a sign-in. */
  | { kind: 'none'; label: string; reason: string };

export interface ServerFlags {
  server?: string;
  token?: string;
  workspace?: string;
}

export interface ConnectionInputs {
  config: Config;
  env: NodeJS.ProcessEnv;
  flags?: ServerFlags;
  tokens: TokenStore;
  /** 'local': no server means the built-in local service (CLI). 'sign-in': only when chosen (app). */
  noServer: 'local' | 'sign-in';
  localService(): Promise<LocalServiceHandle>;
}

/** The connection can upload now: the local service, or a server with a token. */
export function canUpload(c: Connection): boolean {
  return c.kind === 'local' || (c.kind === 'server' && c.signedIn);
}

export const SIGN_IN_TO_UPLOAD = 'Sign in to upload: files are found and wait until a server is set.';

/** An API client for a server, trusting the configured CA. */
export function serverApi(o: {
  serverUrl: string;
  workspaceId: string;
  token?: string;
  caFile?: string;
}): ApiClient {
  return new ApiClient({
    baseUrl: o.serverUrl,
    workspaceId: o.workspaceId,
    ...(o.token === undefined ? {} : { token: o.token }),
    ...(o.caFile ? { dispatcher: dispatcherWithCa(loadCaFile(o.caFile)) } : {}),
  });
}

export async function resolveConnection(i: ConnectionInputs): Promise<Connection> {
  const { config, env } = i;
  const flags = i.flags ?? {};
  const serverUrl =
    flags.server ?? env.DMS_SERVER ?? (config.useLocalService ? undefined : config.server?.url);
  if (serverUrl === undefined || tidyServerUrl(serverUrl) === '') {
    if (!config.useLocalService && i.noServer === 'sign-in')
      return { kind: 'none', label: 'no server', reason: SIGN_IN_TO_UPLOAD };
    const service = await i.localService();
    const api = new ApiClient({
      baseUrl: service.baseUrl,
      workspaceId: service.workspaceId,
      token: service.token,
    });
    return {
      kind: 'local',
      api,
      target: localTarget(service.dataDir, service.workspaceId),
      label: 'the built-in local service',
      service,
    };
  }
  const url = tidyServerUrl(serverUrl);
  const stored = i.tokens.read();
  const mine: StoredToken | null = stored && sameServer(stored.server, url) ? stored : null;
  const token = flags.token ?? env.DMS_TOKEN ?? mine?.token;
  const workspaceId =
    flags.workspace ?? env.DMS_WORKSPACE ?? mine?.workspaceId ?? config.server?.workspaceId ?? '';
  if (workspaceId === '') {
    return { kind: 'none', label: url, reason: `Sign in to ${url} to upload: no workspace is set yet.` };
  }
  let api: ApiClient;
  try {
    api = serverApi({
      serverUrl: url,
      workspaceId,
      ...(token === undefined ? {} : { token }),
      ...(config.caFile ? { caFile: config.caFile } : {}),
    });
  } catch (err) {
    // A damaged stored token (characters a header cannot carry) is as good as none.
    if (!(err instanceof DmsError) || err.kind !== 'invalid-input' || token === undefined) throw err;
    api = serverApi({ serverUrl: url, workspaceId, ...(config.caFile ? { caFile: config.caFile } : {}) });
    return {
      kind: 'server',
      api,
      target: serverTarget(url, workspaceId),
      label: url,
      serverUrl: url,
      signedIn: false,
      reloadToken: () => false,
    };
  }
  let current = token;
  const fromStore = flags.token === undefined && env.DMS_TOKEN === undefined;
  const reloadToken = (): boolean => {
    if (!fromStore) return false;
    const s = i.tokens.read();
    if (!s || !sameServer(s.server, url) || s.token === current) return false;
    current = s.token;
    api.setToken(s.token);
    return true;
  };
  return {
    kind: 'server',
    api,
    target: serverTarget(url, workspaceId),
    label: url,
    serverUrl: url,
    signedIn: token !== undefined,
    reloadToken,
  };
}
