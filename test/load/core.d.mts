// Types of core.mjs (plain JavaScript, run by node without a build), for load.slow.test.ts.
import type { ChildProcess } from 'node:child_process';
import type { WaylineQuery } from '../../main/core/api/types.js';

export type ScenarioName = 'waylines' | 'fast-upload' | 'bad-token';

export interface LoadOptions {
  /** Seconds per endpoint (default 10). */
  duration?: number;
  /** Concurrent connections (default 50). */
  connections?: number;
  /** Unmeasured warm-up seconds per endpoint (default 1; 0 = none). */
  warmup?: number;
  /** Waylines imported before the start, on top of the 30 demo ones (default 1000). */
  waylines?: number;
  /** Media uploaded before the runs (fast-upload hits); as many unknown fingerprints (default 20). */
  known?: number;
  /** The service's DMS_LOG_LEVEL (default warn). */
  logLevel?: string;
  /** Node options of the service process, e.g. ['--cpu-prof']. */
  serviceNodeArgs?: string[];
  scenarios?: ScenarioName[];
  /** Keep the temp dir (service data and log). */
  keep?: boolean;
  /** Progress lines. */
  log?: (message: string) => void;
}

export const DEFAULTS: Readonly<
  Required<
    Pick<LoadOptions, 'duration' | 'connections' | 'warmup' | 'waylines' | 'known' | 'logLevel' | 'scenarios'>
  >
>;
export const REPO: string;
export const BIN: string;

export type { WaylineQuery };
export const WAYLINE_QUERIES: readonly WaylineQuery[];

/** JSON answers as the test reads them: loose on purpose, the assertions check the shape. */
// eslint-disable-next-line @typescript-eslint/no-explicit-any
export type Loose = any;

export interface ServiceProcess {
  child: ChildProcess;
  pid: number;
  baseUrl: string;
  workspaceId: string;
  token: string;
  logFile: string;
  alive(): boolean;
  stop(): Promise<void>;
}

export interface SeededMedia {
  fingerprint: string;
  name: string;
  path: string;
  objectKey?: string;
}

export interface WrongAnswer {
  kind: ScenarioName;
  reason: string;
  status: number;
  body: string;
}

export interface RunResult {
  name: ScenarioName;
  endpoint: string;
  connections: number;
  durationS: number;
  requestsPerSec: number | null;
  latencyMs: {
    mean: number | null;
    p50: number | null;
    p90: number | null;
    p99: number | null;
    max: number | null;
  };
  /** Completed requests (autocannon's count). */
  requests: number;
  /** Answers by status, summed. */
  answered: number;
  errors: number;
  timeouts: number;
  non2xx: number;
  status5xx: number;
  statusCodes: Record<string, number>;
  expectStatus: number;
  unexpectedStatus: number;
  envelope: {
    /** Answers whose envelope code was checked (all of them). */
    checked: number;
    /** Answers parsed and checked in full. */
    fullyChecked: number;
    wrong: number;
    examples: WrongAnswer[];
    hits?: number;
    misses?: number;
  };
  /**
   * One answer per kind, as received under load. waylines: keyed by the index
   * in WAYLINE_QUERIES ({query, qs, status, body}); fast-upload: `known`,
   * `unknown` ({request, status, body}); bad-token: `waylines`, `fast-upload`.
   */
  samples: Record<string, Loose>;
  service: { cpuS: number | null; cores: number | null; peakRssMiB: number | null; peakRssScope: string };
  loaderCpuS: number | null;
  problems: string[];
}

export interface LoadReport {
  machine: { cpus: number; loadavg: number[]; node: string };
  settings: {
    connections: number;
    duration: number;
    warmup: number;
    waylines: number;
    known: number;
    unknown: number;
    logLevel: string;
  };
  service: {
    pid: number;
    baseUrl: string;
    alive: boolean;
    answering: boolean;
    logErrors: { count: number; examples: string[] };
    /** Last lines of the service log when something went wrong, else empty. */
    logTail: string[];
    /** Set with `keep`: where the log stays. */
    logFile: string | null;
  };
  runs: RunResult[];
  problems: string[];
  ok: boolean;
}

export interface LoadSession {
  service: ServiceProcess;
  seeds: { known: SeededMedia[]; unknown: SeededMedia[] };
  codes: Record<string, number>;
  tmp: string;
  run(options?: LoadOptions): Promise<LoadReport>;
  close(): Promise<void>;
}

export function openSession(options?: LoadOptions): Promise<LoadSession>;
export function runLoad(options?: LoadOptions): Promise<LoadReport>;
export function formatReport(report: LoadReport): string;
export function runProblems(run: RunResult): string[];
export function waylinePageProblem(query: WaylineQuery, body: Loose): string | null;
export function loadWaylines(n: number, combos: readonly (readonly [string, readonly string[]])[]): Loose[];
export function startServiceProcess(opts: {
  dataDir: string;
  logFile: string;
  logLevel?: string;
  nodeArgs?: string[];
}): Promise<ServiceProcess>;
export function paths(ws: string): { waylines: string; sts: string; callback: string; fastUpload: string };
export function call(
  svc: { baseUrl: string; token: string },
  method: string,
  urlPath: string,
  opts?: { body?: unknown; token?: string | null },
): Promise<{ status: number; body: Loose }>;
