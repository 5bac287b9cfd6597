/**
 * Which server the agent talks to, resolved as the CLI does (main/cli/context.ts):
 * DMS_* environment first, then config.json + the stored sign-in for that
 * server; with no server (or useLocalService) the built-in local service runs
 * in-process, so a fresh install works with nothing configured.
 */
import { ApiClient } from '../core/api/client.js';
import type { Config } from '../core/config.js';
import type { RunningService } from '../service/index.js';
import type { SecretStore } from './secrets.js';
import { normaliseServerUrl } from './settings.js';

export const LOCAL_LABEL = 'the built-in local service';

export interface Connection {
  api: ApiClient;
  /** "the built-in local service" or the server URL. */
  serverLabel: string;
  /** null for the built-in local service. */
  serverUrl: string | null;
  /** A token and a workspace are known; without them the engine waits for a sign-in. */
  signedIn: boolean;
}

export interface ConnectionInputs {
  config: Config;
  secrets: SecretStore;
  env: NodeJS.ProcessEnv;
  localService(): Promise<RunningService>;
}

export function sameServer(a: string, b: string): boolean {
  return normaliseServerUrl(a) === normaliseServerUrl(b);
}

/** The server to use, or null for the built-in local service. */
export function configuredServer(config: Config, env: NodeJS.ProcessEnv): string | null {
  return env.DMS_SERVER ?? (config.useLocalService ? undefined : config.server?.url) ?? null;
}

export async function resolveConnection(o: ConnectionInputs): Promise<Connection> {
  const serverUrl = configuredServer(o.config, o.env);
  if (serverUrl === null) {
    const svc = await o.localService();
    const api = new ApiClient({ baseUrl: svc.baseUrl, workspaceId: svc.workspaceId, token: svc.token });
    return { api, serverLabel: LOCAL_LABEL, serverUrl: null, signedIn: true };
  }
  const stored = o.secrets.read();
  const same = stored !== null && sameServer(stored.server, serverUrl);
  const token = o.env.DMS_TOKEN ?? (same ? stored.token : undefined);
  const workspace =
    o.env.DMS_WORKSPACE ?? (same ? stored.workspaceId : undefined) ?? o.config.server?.workspaceId ?? '';
  // A token without a workspace would make every file fail as "no workspace";
  // without the token the engine stops at "sign in" instead and loses nothing.
  const usable = token !== undefined && workspace !== '';
  let api: ApiClient;
  try {
    api = new ApiClient({ baseUrl: serverUrl, workspaceId: workspace, ...(usable ? { token } : {}) });
  } catch {
    // A damaged stored token (unexpected characters): as good as none.
    return {
      api: new ApiClient({ baseUrl: serverUrl, workspaceId: workspace }),
      serverLabel: serverUrl,
      serverUrl,
      signedIn: false,
    };
  }
  return { api, serverLabel: serverUrl, serverUrl, signedIn: usable };
}
