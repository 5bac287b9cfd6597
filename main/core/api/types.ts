/**
 * Shapes of the service contract (shared/spec) as the engine uses them.
 * Field names are the wire names (snake_case, and the contract's own
 * spellings: `start_lontitude`, `tinny_fingerprint`).
 */

export interface WaylineStartPoint {
  start_latitude?: number;
  start_lontitude?: number;
}

export interface Wayline {
  id?: string;
  name?: string;
  drone_model_key?: string;
  payload_model_keys?: string[];
  template_types?: number[];
  favorited?: boolean;
  action_type?: number;
  update_time?: number;
  user_name?: string;
  start_wayline_point?: WaylineStartPoint;
  /** Real servers add fields (object_key, sign, create_time); kept, never required. */
  [extra: string]: unknown;
}

export interface Pagination {
  page: number;
  page_size: number;
  total: number;
}

export interface WaylinePage {
  list: Wayline[];
  pagination: Pagination;
}

export interface WaylineQuery {
  favorited?: boolean;
  /** "<column> asc|desc"; the client always sends one (real servers require it). */
  order_by?: string;
  page?: number;
  page_size?: number;
  template_type?: number[];
  /** 1 = AI spot-check waylines. */
  action_type?: number;
  drone_model_keys?: string[];
  payload_model_key?: string[];
}

export const STORAGE_PROVIDERS = ['ali', 'aws', 'minio'] as const;
export type StorageProvider = (typeof STORAGE_PROVIDERS)[number];

export interface StsCredentials {
  access_key_id: string;
  access_key_secret: string;
  /** Seconds of remaining validity (service-facts.md). */
  expire: number;
  security_token: string;
}

export interface StsResult {
  bucket: string;
  credentials: StsCredentials;
  endpoint: string;
  object_key_prefix: string;
  provider: StorageProvider;
  region: string;
}

export interface MediaExt {
  file_group_id?: string;
  drone_model_key?: string;
  is_original?: boolean;
  payload_model_key?: string;
  tinny_fingerprint?: string;
  sn?: string;
}

export interface ShootPosition {
  /** Decimal degrees (the contract's table says integer; real servers use doubles). */
  lat?: number;
  lng?: number;
}

export interface MediaMetadata {
  absolute_altitude?: number;
  relative_altitude?: number;
  gimbal_yaw_degree?: number;
  /** `YYYY-MM-DDTHH:mm:ss±hh:mm`, no fractional seconds. */
  created_time?: string;
  shoot_position?: ShootPosition;
}

export interface UploadCallbackInput {
  /** 0 = uploaded to the bucket; non-zero = the client's upload failed. */
  result: number;
  name: string;
  object_key: string;
  ext?: MediaExt;
  fingerprint?: string;
  metadata?: MediaMetadata;
  path?: string;
  /** 0 = normal picture, 1 = panorama. */
  sub_file_type?: number;
}

export interface UploadCallbackOutput {
  object_key: string;
}

export interface FastUploadInput {
  fingerprint: string;
  name?: string;
  path?: string;
  ext?: Omit<MediaExt, 'file_group_id'>;
}

/** fast-upload never throws for "not known": that is the normal fallback path. */
export type FastUploadOutcome = { known: true } | { known: false; code: number | string; message: string };

export interface LoginResult {
  access_token: string;
  workspace_id: string;
  username?: string;
  [extra: string]: unknown;
}
