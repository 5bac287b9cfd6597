/**
 * The bodies of fast-upload and upload-callback, with every field DJI's
 * sample server requires (`@NotNull` in its request classes, see
 * shared/docs/service-facts.md) always present:
 *   fast-upload: fingerprint, name, ext {drone_model_key, payload_model_key,
 *     is_original, tinny_fingerprint, sn}
 *   callback: fingerprint, name, object_key, sub_file_type, metadata, ext
 *     {the same + file_group_id}
 * Model keys and metadata come from the file; a camera outside DJI's list
 * has no keys, and the server's refusal of the fast-upload stops it before
 * any byte is sent.
 */
import type { FastUploadInput, MediaExt, UploadCallbackInput } from '../api/types.js';
import type { Config } from '../config.js';
import type { FileInfo } from '../queue/file-info.js';
import type { Queue } from '../queue/queue.js';
import type { Identity } from '../queue/rows.js';
import { sourceOf } from '../sources/source.js';

/** What a request about one file is built from. */
export interface FileRef extends Identity {
  sourceId: string;
}

/**
 * `sn` is the aircraft's serial. In order: the file's own (XMP
 * DroneSerialNumber); the one another file of the same flight on the same
 * card carries; the one the crew set for this card, then the default one in
 * the settings; else "" (an empty string passes the sample server's
 * `@NotNull`, a missing key does not).
 */
export function aircraftSerial(file: FileRef, queue: Pick<Queue, 'flights'>, config: Config): string {
  if (file.info.sn) return file.info.sn;
  const flight = queue.flights.serial(file.sourceId, file.info.fileGroupId);
  if (flight) return flight;
  const source = sourceOf(file.sourceId);
  const card = source.kind === 'card' ? config.cards[source.cardId]?.aircraftSerial : undefined;
  return card ?? config.aircraftSerial ?? '';
}

function deviceExt(info: FileInfo, tiny: string, sn: string): Omit<MediaExt, 'file_group_id'> {
  return {
    ...(info.droneModelKey ? { drone_model_key: info.droneModelKey } : {}),
    ...(info.payloadModelKey ? { payload_model_key: info.payloadModelKey } : {}),
    is_original: info.isOriginal,
    tinny_fingerprint: tiny,
    sn,
  };
}

export function fastUploadBody(file: FileRef, sn: string): FastUploadInput {
  return {
    fingerprint: file.fingerprint,
    name: file.info.name,
    path: file.info.path,
    ext: deviceExt(file.info, file.tinyFingerprint, sn),
  };
}

export function callbackBody(file: FileRef, sn: string, objectKey: string): UploadCallbackInput {
  const { info } = file;
  return {
    result: 0,
    name: info.name,
    object_key: objectKey,
    fingerprint: file.fingerprint,
    path: info.path,
    sub_file_type: info.subFileType,
    metadata: info.metadata,
    ext: { ...deviceExt(info, file.tinyFingerprint, sn), file_group_id: info.fileGroupId },
  };
}
