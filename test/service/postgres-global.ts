import type { TestProject } from 'vitest/node';
import { startPostgres, type PgCluster } from '../support/postgres.js';

let cluster: PgCluster | null = null;

declare module 'vitest' {
  export interface ProvidedContext {
    /** postgres://postgres@127.0.0.1:<port> (no database, no password). */
    pgUrl: string;
    pgPassword: string;
  }
}

/** One cluster for the whole run; its address reaches the test files through inject(). */
export async function setup(project: TestProject): Promise<void> {
  cluster = await startPostgres();
  project.provide('pgUrl', cluster.url('').replace(/\/$/, ''));
  project.provide('pgPassword', cluster.password);
}

export async function teardown(): Promise<void> {
  await cluster?.stop();
}
