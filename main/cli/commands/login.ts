import readline from 'node:readline';
import { loadConfig, saveConfig } from '../../core/config.js';
import { DmsError } from '../../core/errors.js';
import { statePaths } from '../../core/paths.js';
import { serverApi } from '../../core/session/connection.js';
import { tidyServerUrl } from '../../core/session/target.js';
import { writeTokenFile } from '../../core/session/token-file.js';
import { resolveStateDir } from '../context.js';

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
  process.stdout.write(`Signed in to ${server} as ${flags.username} (workspace ${result.workspace_id}).\n`);
  return 0;
}
