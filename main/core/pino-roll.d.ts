// pino-roll 4 ships no types. Only what log-file.ts uses is declared.
declare module 'pino-roll' {
  interface PinoRollOptions {
    file: string;
    size?: string | number;
    frequency?: 'daily' | 'hourly' | number;
    extension?: string;
    limit?: { count?: number; removeOtherLogFiles?: boolean };
    symlink?: boolean;
    mkdir?: boolean;
    sync?: boolean;
  }
  /** A SonicBoom stream writing to the current file, rolled by size and time. */
  interface RollStream extends NodeJS.EventEmitter {
    write(line: string): boolean;
    flushSync(): void;
    end(): void;
  }
  function pinoRoll(opts: PinoRollOptions): Promise<RollStream>;
  export = pinoRoll;
}
