import fs from 'node:fs';
import tls from 'node:tls';
import type { Dispatcher } from 'undici';
import { DmsError } from './errors.js';
import { undici } from './undici.js';

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
    throw new DmsError(
      'invalid-input',
      `The CA certificate file ${file} cannot be read: ${(err as Error).message}`,
      { retryable: false },
    );
  }
  if (!pem.includes('-----BEGIN CERTIFICATE-----')) {
    throw new DmsError(
      'invalid-input',
      `The CA certificate file ${file} holds no PEM certificate (-----BEGIN CERTIFICATE-----).`,
      { retryable: false },
    );
  }
  return pem;
}

/**
 * An undici dispatcher (the API client's HTTP pool) that trusts the system
 * CAs plus the given ones.
 */
export function dispatcherWithCa(extraCa: string): Dispatcher {
  return new (undici().Agent)({
    connect: { ca: trustedCas(extraCa) },
    keepAliveTimeout: 10_000,
    allowH2: false,
  });
}

/** Node's default CA list plus the extra one: a `ca` option replaces the defaults otherwise. */
export function trustedCas(extraCa: string): string[] {
  return [...tls.rootCertificates, extraCa];
}
