/** The media layer: find files on a card, fingerprint them, read what the server needs. */
export type { CaptureTime } from './capture-time.js';
export { formatCreatedTime } from './capture-time.js';
export type { DeviceInput, DeviceKeys, DeviceOptions } from './devices.js';
export { AIRCRAFT, aircraftByKey, resolveDeviceKeys } from './devices.js';
export type { DiscoveredFile, DiscoverOptions, DiscoverWarning } from './discover.js';
export {
  DEFAULT_MEDIA_EXTENSIONS,
  NEVER_MEDIA_EXTENSIONS,
  VIDEO_EXTENSIONS,
  discoverMedia,
} from './discover.js';
export type { CaptureTimeLike, Md5Options } from './fingerprint.js';
export { md5File, tinyFingerprint } from './fingerprint.js';
export type { FlightFolder } from './flight.js';
export { flightFolderOf } from './flight.js';
export type { MediaInfo, ReadMediaOptions } from './metadata.js';
export { readMediaInfo } from './metadata.js';
