import os from 'node:os';
import path from 'node:path';

/** Folder name under the platform's app-data dir; the desktop app uses the same. */
export const APP_DIR_NAME = 'drone-media-sync';

/**
 * The agent's home: config.json, the queue, the token file, logs and the
 * embedded service's data. Shared by the CLI and the desktop app so both see
 * the same queue and settings. DMS_STATE_DIR (or --state) overrides it.
 */
export function defaultStateDir(env: NodeJS.ProcessEnv = process.env, platform = process.platform): string {
  if (env.DMS_STATE_DIR) return path.resolve(env.DMS_STATE_DIR);
  const home = os.homedir();
  if (platform === 'win32')
    return path.join(env.APPDATA ?? path.join(home, 'AppData', 'Roaming'), APP_DIR_NAME);
  if (platform === 'darwin') return path.join(home, 'Library', 'Application Support', APP_DIR_NAME);
  return path.join(env.XDG_CONFIG_HOME ?? path.join(home, '.config'), APP_DIR_NAME);
}

export interface StatePaths {
  root: string;
  config: string;
  queue: string;
  token: string;
  logs: string;
  service: string;
  /** Each card's manifest (ASC MHL hash lists, the HTML report): `manifests/<card>/`. */
  manifests: string;
}

export function statePaths(root: string): StatePaths {
  return {
    root,
    config: path.join(root, 'config.json'),
    queue: path.join(root, 'queue.db'),
    token: path.join(root, 'token'),
    logs: path.join(root, 'logs'),
    service: path.join(root, 'local-service'),
    manifests: path.join(root, 'manifests'),
  };
}
