/**
 * A loopback port that refuses every connection and stays so for the whole
 * test file: a TCP socket bound to it but never listening (Python's socket
 * module; Node cannot bind without listening). A port merely taken and freed
 * again can be handed to another test's server a moment later (a CI run got
 * an S3 server's XML 404s instead of refusals), so no test uses that.
 *
 * The holders are killed after the test file's last test, and end by
 * themselves after 600 s at most.
 */
import { spawn } from 'node:child_process';
import { afterAll } from 'vitest';

const holders = new Set<ReturnType<typeof spawn>>();
// Imported at a test file's top level: this hook ends the file's holders.
afterAll(() => releaseRefusingPorts());

export async function refusingPort(): Promise<number> {
  const holder = spawn(
    'python3',
    [
      '-c',
      "import socket,time\ns=socket.socket()\ns.bind(('127.0.0.1',0))\nprint(s.getsockname()[1],flush=True)\ntime.sleep(600)",
    ],
    { stdio: ['ignore', 'pipe', 'inherit'] },
  );
  holders.add(holder);
  holder.once('exit', () => holders.delete(holder));
  const port = await new Promise<number>((resolve, reject) => {
    holder.stdout.once('data', (d: Buffer) => resolve(Number(String(d).trim())));
    holder.once('error', reject);
  });
  // Neither the holder nor its pipe keeps the worker alive; the pipe stays
  // open (closing it would end the holder at its next write and free the port).
  holder.unref();
  (holder.stdout as unknown as { unref(): void }).unref();
  return port;
}

/** Kills every holder this test file started. */
export function releaseRefusingPorts(): void {
  for (const h of holders) h.kill('SIGKILL');
  holders.clear();
}
