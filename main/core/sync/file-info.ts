import type { FastUploadInput, MediaExt, MediaMetadata, UploadCallbackInput } from '../api/types.js';

/**
 * What the queue keeps of a hashed file (info_json): everything the
 * fast-upload and callback requests need, so a restart never re-reads the
 * card for metadata. No secrets in here.
 */
export interface FileInfo {
  name: string;
  /** Wayline flight folder (`DJI_<YYYYMMDDHHMM>_<NNN>_<name>`) or ''. */
  path: string;
  missionName?: string;
  fileGroupId: string;
  metadata: MediaMetadata;
  subFileType: number;
  droneModelKey?: string;
  payloadModelKey?: string;
  sn?: string;
  isOriginal: boolean;
  cameraModel?: string;
  unsupportedReason?: string;
  warnings?: string[];
}

function deviceExt(info: FileInfo, tiny: string): Omit<MediaExt, 'file_group_id'> {
  const ext: Omit<MediaExt, 'file_group_id'> = { is_original: info.isOriginal, tinny_fingerprint: tiny };
  if (info.droneModelKey) ext.drone_model_key = info.droneModelKey;
  if (info.payloadModelKey) ext.payload_model_key = info.payloadModelKey;
  if (info.sn) ext.sn = info.sn;
  return ext;
}

export function fastUploadBody(info: FileInfo, fingerprint: string, tiny: string): FastUploadInput {
  return { fingerprint, name: info.name, path: info.path, ext: deviceExt(info, tiny) };
}

export function callbackBody(info: FileInfo, fingerprint: string, tiny: string, objectKey: string): UploadCallbackInput {
  return {
    result: 0,
    name: info.name,
    object_key: objectKey,
    fingerprint,
    path: info.path,
    sub_file_type: info.subFileType,
    metadata: info.metadata,
    ext: { ...deviceExt(info, tiny), file_group_id: info.fileGroupId },
  };
}
