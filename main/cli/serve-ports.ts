/**
 * `serve` keeps its ports across restarts: a sign-in saved by `login` (the
 * server's URL) and the bucket credentials it issued (the bucket's URL) still
 * point at it after a restart. They are kept in `<data>/ports.json`; a port
 * that is taken is refused in words, never swapped for another in silence.
 */
import fs from 'node:fs';
import path from 'node:path';
import { DmsError } from '../core/errors.js';

export interface ServePorts {
  api: number;
  /** The embedded bucket's port; absent with an external bucket. */
  bucket?: number;
}

const file = (dataDir: string): string => path.join(dataDir, 'ports.json');

const isPort = (n: unknown): n is number => Number.isInteger(n) && (n as number) > 0 && (n as number) < 65536;

export function savedPorts(dataDir: string): ServePorts | null {
  try {
    const v = JSON.parse(fs.readFileSync(file(dataDir), 'utf8')) as Partial<ServePorts>;
    if (!isPort(v.api)) return null;
    return { api: v.api, ...(isPort(v.bucket) ? { bucket: v.bucket } : {}) };
  } catch {
    return null;
  }
}

export function savePorts(dataDir: string, ports: ServePorts): void {
  fs.writeFileSync(file(dataDir), JSON.stringify(ports) + '\n');
}

/**
 * The ports to listen on: `--port N` for the service (0: any free port, and a
 * new bucket port too), else the ones used last time, else any free ones.
 */
export function portsToUse(
  flag: string | undefined,
  saved: ServePorts | null,
): { api: number; bucket: number } {
  if (flag === undefined) return { api: saved?.api ?? 0, bucket: saved?.bucket ?? 0 };
  const api = Number(flag);
  if (!Number.isInteger(api) || api < 0 || api > 65535)
    throw new DmsError('invalid-input', `--port ${flag}: a port is a whole number from 0 to 65535.`, {
      retryable: false,
    });
  return { api, bucket: api === 0 ? 0 : (saved?.bucket ?? 0) };
}

/** The refusal when a port is taken: which one, why it matters, what to do. */
export function portTakenError(
  err: unknown,
  wanted: { api: number; bucket: number },
  explicit: boolean,
): unknown {
  const e = err as { code?: string; port?: number };
  if (e.code !== 'EADDRINUSE') return err;
  const port = e.port ?? wanted.api;
  const fresh = 'or start with --port 0 to take free ports';
  const message =
    port === wanted.bucket && port !== wanted.api
      ? `The bucket's port ${port}, kept from the last start (upload credentials point there), is in use by another program (another drone-media-sync serve?). Stop it and start again, ${fresh}.`
      : explicit
        ? `Port ${port} is in use by another program. Choose another with --port, or --port 0 for any free one.`
        : `Port ${port}, where this service listened before (saved sign-ins point there), is in use by another program (another drone-media-sync serve?). Stop it and start again, ${fresh} and then sign in again with drone-media-sync login.`;
  return new DmsError('invalid-input', message, { cause: err, retryable: false });
}
