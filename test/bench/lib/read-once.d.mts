// Types of read-once.mjs for the TypeScript tests that use it (test/sync/read-once.peer.test.ts).
export declare const READ_CALLS: string[];
export declare function straceArgs(logFile: string): string[];
export declare function readsUnder(
  logFile: string,
  root: string,
): { files: Map<string, { bytes: number; reads: number }>; mmaps: string[] };
