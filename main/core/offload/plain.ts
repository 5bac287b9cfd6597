/** Moved to core/plain.ts (shared by the copies and the offload verdicts); kept for existing imports. */
export * from '../plain.js';
