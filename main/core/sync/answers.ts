/**
 * What a fast-upload answer says about a fingerprint. Servers word it
 * differently (service-facts.md); the verdicts the engine acts on:
 * - known: code 0 — or the sample server's "found: 2" (the fingerprint is
 *   recorded twice: it certainly holds the file; never post again);
 * - unknown: a definite "not known" (the reference service's 404001, the
 *   sample server's "<fingerprint>don't exist.");
 * - refused: the server refuses the request as described (its validation:
 *   a required field missing, a device key outside its list) — it will
 *   refuse the callback too, so nothing is uploaded;
 * - unclear: anything else (a server error wrapped in an envelope).
 */
import type { FastUploadOutcome } from '../api/types.js';

export type FastUploadVerdict = 'known' | 'unknown' | 'refused' | 'unclear';

const HELD_TWICE = /found:\s*\d+|TooManyResults|Expected one result/i;
const UNKNOWN = /don'?t exist|does not exist|not (be )?found|not known|unknown fingerprint/i;
const VALIDATION =
  /must not be (null|blank|empty)|Cannot deserialize|not one of the values accepted|No enum constant|DeviceEnum|JSON parse error|Required request body|is required|is invalid/i;

export function fastUploadVerdict(answer: FastUploadOutcome): FastUploadVerdict {
  if (answer.known) return 'known';
  const code = Number(answer.code);
  if (HELD_TWICE.test(answer.message)) return 'known';
  if (code === 404001 || UNKNOWN.test(answer.message)) return 'unknown';
  if (code === 400001 || VALIDATION.test(answer.message)) return 'refused';
  return 'unclear';
}
