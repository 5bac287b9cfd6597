/**
 * Where the service keeps its tables: the data dir's SQLite file (default) or
 * a PostgreSQL server. The PostgreSQL password is never part of the URL (a URL
 * ends up on command lines and in logs): it comes from a settings file, from
 * PGPASSWORD, or from the standard ~/.pgpass file (PGPASSFILE), which the
 * client library reads by itself.
 */
import { z } from 'zod';
import { parseOrThrow } from '../envelope.js';

export interface PostgresConfig {
  kind: 'postgres';
  /** postgres://user@host:port/database, without a password. */
  url: string;
  password?: string;
  /** Connections of this instance's pool, default 10. */
  maxConnections?: number;
}

export type DatabaseConfig = { kind: 'sqlite' } | PostgresConfig;

const pgUrl = z
  .string()
  .max(1024)
  .refine((s) => /^postgres(ql)?:\/\/[^/?#]+/.test(s) && URL.canParse(s), 'must be a postgres://host URL')
  .refine(
    (s) =>
      !URL.canParse(s) ||
      ['', 'disable', 'require', 'verify-full'].includes(new URL(s).searchParams.get('sslmode') ?? ''),
    'sslmode may be disable, require or verify-full',
  )
  .refine(
    (s) => !URL.canParse(s) || new URL(s).password === '',
    'must not hold the password: put it in the settings file ("password"), in PGPASSWORD or in ~/.pgpass',
  );

const schema = z.object({
  url: pgUrl,
  password: z.string().min(1).max(1024).optional(),
  maxConnections: z.int().min(1).max(1000).optional(),
});

/** Throws an Error naming the wrong field; the password never appears in it. */
export function validateDatabaseConfig(input: unknown): PostgresConfig {
  try {
    return { kind: 'postgres', ...parseOrThrow(schema, input, 'database config') };
  } catch (err) {
    throw new Error(`database: ${(err as Error).message}`, { cause: err });
  }
}

/** user@host:port/database, for logs and messages: never a password. */
export function describeDatabase(url: string): string {
  try {
    const u = new URL(url);
    const user = u.username ? `${decodeURIComponent(u.username)}@` : '';
    return `postgres://${user}${u.host}${u.pathname}`;
  } catch {
    return 'postgres://(unreadable URL)';
  }
}

/**
 * The client's connection settings from the URL and the password. Not pg's
 * own connectionString: it would let the URL's (absent) password override the
 * one given apart. sslmode=require encrypts; verify-full also checks the
 * server's certificate against the system's CAs.
 */
export function connectionOptions(config: PostgresConfig): {
  host: string;
  port: number;
  user?: string;
  database?: string;
  password?: string;
  ssl?: { rejectUnauthorized: boolean };
} {
  const u = new URL(config.url);
  const sslmode = u.searchParams.get('sslmode');
  const database = decodeURIComponent(u.pathname.replace(/^\//, ''));
  return {
    host: decodeURIComponent(u.hostname).replace(/^\[(.*)\]$/, '$1'),
    port: u.port ? Number(u.port) : 5432,
    ...(u.username ? { user: decodeURIComponent(u.username) } : {}),
    ...(database ? { database } : {}),
    ...(config.password !== undefined ? { password: config.password } : {}),
    ...(sslmode === 'require' || sslmode === 'verify-full'
      ? { ssl: { rejectUnauthorized: sslmode === 'verify-full' } }
      : {}),
  };
}
