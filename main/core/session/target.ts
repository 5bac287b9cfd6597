import path from 'node:path';
import type { TargetRef } from '../queue/queue.js';

export const LOCAL_LABEL = 'the built-in local service';

/** The address as typed, minus spaces and trailing slashes: what settings store. */
export function tidyServerUrl(url: string): string {
  return url.trim().replace(/\/+$/, '');
}

/**
 * One spelling per server, for comparing addresses and naming targets:
 * scheme and host lower-cased, default port dropped, no trailing slash
 * (`HTTPS://Media.Example.com:443/api/` is `https://media.example.com/api`).
 */
export function canonicalServerUrl(url: string): string {
  const tidy = tidyServerUrl(url);
  try {
    const u = new URL(tidy);
    return `${u.protocol}//${u.host}${u.pathname.replace(/\/+$/, '')}`;
  } catch {
    return tidy;
  }
}

export function sameServer(a: string, b: string): boolean {
  return canonicalServerUrl(a) === canonicalServerUrl(b);
}

/** A server's workspace as a queue target. */
export function serverTarget(serverUrl: string, workspaceId: string): TargetRef {
  const url = canonicalServerUrl(serverUrl);
  return { key: `${url}#${workspaceId}`, label: url, workspaceId };
}

/** The built-in local service as a queue target: named by its data folder, not by its port (a new one each start). */
export function localTarget(dataDir: string, workspaceId: string): TargetRef {
  return { key: `local:${path.resolve(dataDir)}#${workspaceId}`, label: LOCAL_LABEL, workspaceId };
}

/**
 * How a verdict names the target's workspace: "workspace <id>" on a server;
 * for the built-in local service, where its media are (a folder of this
 * laptop), since "safe to format" then rests on that folder.
 */
export function workspaceLabelOf(target: TargetRef): string {
  const local = /^local:(.*)#[^#]*$/.exec(target.key);
  if (local) return `the built-in workspace on this laptop, ${local[1]}`;
  return target.workspaceId ? `workspace ${target.workspaceId}` : target.label;
}
