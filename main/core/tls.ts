import fs from 'node:fs';
import tls from 'node:tls';
import { Agent, fetch as undiciFetch } from 'undici';
import { DmsError } from './errors.js';

/**
 * Reads the PEM file of a custom certificate authority (self-hosted servers
 * with their own CA). Certificate errors are never ignored: a server whose
 * certificate does not chain to the system CAs or to this file is refused.
 */
export function loadCaFile(file: string): string {
  let pem: string;
  try {
    pem = fs.readFileSync(file, 'utf8');
  } catch (err) {
    throw new DmsError('invalid-input', `The CA certificate file ${file} cannot be read: ${(err as Error).message}`, { retryable: false });
  }
  if (!pem.includes('-----BEGIN CERTIFICATE-----')) {
    throw new DmsError('invalid-input', `The CA certificate file ${file} holds no PEM certificate (-----BEGIN CERTIFICATE-----).`, { retryable: false });
  }
  return pem;
}

/**
 * A fetch that trusts the system CAs plus the given ones (undici, the same
 * HTTP client as Node's own fetch, with a dispatcher of its own).
 */
export function fetchWithCa(extraCa: string): typeof fetch {
  // Node's default CA list plus the extra one: `ca` replaces the defaults otherwise.
  const ca = [...tls.rootCertificates, extraCa];
  const dispatcher = new Agent({ connect: { ca } });
  type UndiciInit = Parameters<typeof undiciFetch>[1];
  return ((input: Parameters<typeof fetch>[0], init?: RequestInit) =>
    undiciFetch(input as Parameters<typeof undiciFetch>[0], { ...init, dispatcher } as UndiciInit)) as unknown as typeof fetch;
}
