/** How a lane runs (the upload lane, the copy lane): once until idle (`sync`), or until stopped. */
export interface RunOptions {
  signal?: AbortSignal;
  /** 'until-idle' returns when nothing is left to do now; 'forever' keeps waiting for work. */
  mode: 'until-idle' | 'forever';
  /** until-idle: tries per file in this run before leaving it for the next run (which tries it again). */
  maxAttempts?: number;
}

/** Tries per file in a one-shot run (`sync`) before it is left for the next run. */
export const ONE_SHOT_TRIES = 4;
