import fs from 'node:fs';
import readline from 'node:readline';
import { loadConfig, saveConfig } from '../../core/config.js';
import { DmsError } from '../../core/errors.js';
import { statePaths } from '../../core/paths.js';
import { serverApi } from '../../core/session/connection.js';
import { tidyServerUrl } from '../../core/session/target.js';
import { readTokenFile, TokenFile, writeTokenFile } from '../../core/session/token-file.js';
import { resolveStateDir } from '../context.js';
import { writeLines } from '../output.js';
import { requireWritable } from '../state-access.js';

/** Reads the password without echoing it on a terminal, or from piped stdin. */
async function readPassword(prompt: string): Promise<string> {
  const input = process.stdin;
  if (!input.isTTY) {
    let text = '';
    for await (const chunk of input) text += String(chunk);
    return text.replace(/\r?\n$/, '');
  }
  const rl = readline.createInterface({ input, output: process.stderr, terminal: true });
  // Mute the echo of typed characters, keep the prompt.
  (rl as unknown as { _writeToOutput: (s: string) => void })._writeToOutput = (s: string) => {
    if (s.includes(prompt)) process.stderr.write(prompt);
  };
  try {
    return await new Promise<string>((resolve) => rl.question(prompt, resolve));
  } finally {
    rl.close();
    process.stderr.write('\n');
  }
}

export async function loginCommand(flags: {
  server: string;
  username: string;
  state?: string;
}): Promise<number> {
  const paths = statePaths(resolveStateDir(flags));
  // Before the password is asked for: a sign-in that cannot be kept is no sign-in.
  requireWritable(paths.root, 'the sign-in');
  const password = await readPassword(`Password for ${flags.username}: `);
  if (!password) throw new DmsError('invalid-input', 'No password given.', { retryable: false });
  const config = loadConfig(paths.config);
  const server = tidyServerUrl(flags.server);
  const api = serverApi({
    serverUrl: server,
    workspaceId: '',
    ...(config.caFile ? { caFile: config.caFile } : {}),
  });
  const result = await api.login(flags.username, password);
  writeTokenFile(paths.token, { server, workspaceId: result.workspace_id, token: result.access_token });
  saveConfig(paths.config, {
    ...config,
    server: { url: server, workspaceId: result.workspace_id },
    useLocalService: false,
  });
  writeLines([`Signed in to ${server} as ${flags.username} (workspace ${result.workspace_id}).`]);
  return 0;
}

/**
 * `logout`: deletes the sign-in `login` stored. The server's address stays in
 * the settings, so `login` asks only for the user name and password again.
 */
export function logoutCommand(flags: { state?: string }): number {
  const paths = statePaths(resolveStateDir(flags));
  const stored = readTokenFile(paths.token);
  if (!stored && !fs.existsSync(paths.token)) {
    writeLines(['Not signed in: there is no stored sign-in to delete.']);
    return 0;
  }
  requireWritable(paths.root, 'the sign-out');
  new TokenFile(paths.token).clear();
  writeLines([
    stored
      ? `Signed out of ${stored.server}: the stored sign-in is deleted. To sign in again: drone-media-sync login --server ${stored.server} --username <name>`
      : 'Signed out: the stored sign-in is deleted.',
  ]);
  return 0;
}
