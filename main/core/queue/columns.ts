/**
 * A typed row back to the columns of `files`: what the store writes after a
 * transition. Only the columns that changed are written (so a concurrent
 * change of another column, such as the path a card is mounted at, is kept),
 * and the JSON columns are serialised only when their value is a new object.
 */
import type { QueueRow, RowPatch } from './rows.js';

interface Columns {
  state: QueueRow['state'];
  resume_state: QueueRow['resumeState'];
  fingerprint: string | null;
  tiny_fingerprint: string | null;
  info: object | null;
  object_key: string | null;
  upload_id: string | null;
  part_size: number | null;
  outcome: string | null;
  callback_unknown: number;
  bytes_sent: number;
  attempts: number;
  next_attempt_at: number;
  error_kind: string | null;
  error_message: string | null;
  done_at: number | null;
  verified: object | null;
  server_key: string | null;
}

function columnsOf(r: QueueRow): Columns {
  const multipart = 'multipart' in r ? r.multipart : null;
  return {
    state: r.state,
    resume_state: r.resumeState,
    fingerprint: ('fingerprint' in r && r.fingerprint) || null,
    tiny_fingerprint: ('tinyFingerprint' in r && r.tinyFingerprint) || null,
    info: ('info' in r && r.info) || null,
    object_key: 'objectKey' in r ? r.objectKey : null,
    upload_id: multipart?.uploadId ?? null,
    part_size: multipart?.partSize ?? null,
    outcome: r.state === 'done' ? r.outcome : null,
    callback_unknown: 'callbackUnknown' in r && r.callbackUnknown ? 1 : 0,
    bytes_sent: r.bytesSent,
    attempts: r.attempts,
    next_attempt_at: r.nextAttemptAt,
    error_kind: r.errorKind,
    error_message: r.errorMessage,
    done_at: r.state === 'done' ? r.doneAt : null,
    verified: r.verified,
    server_key: r.state === 'done' ? r.serverKey : null,
  };
}

/** The columns `next` changes relative to `prev`. */
export function changedColumns(prev: QueueRow, next: QueueRow): RowPatch {
  const a = columnsOf(prev);
  const b = columnsOf(next);
  const patch: Record<string, unknown> = {};
  for (const key of Object.keys(b) as Array<keyof Columns>) {
    if (a[key] === b[key]) continue;
    if (key === 'info') patch.info_json = b.info === null ? null : JSON.stringify(b.info);
    else if (key === 'verified')
      patch.verified_json = b.verified === null ? null : JSON.stringify(b.verified);
    else patch[key] = b[key];
  }
  return patch;
}
