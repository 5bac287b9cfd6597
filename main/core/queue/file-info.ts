import type { z as Z } from 'zod';
import { lazySchema } from '../zod.js';

/**
 * What the queue keeps of a hashed file (info_json): everything the
 * fast-upload and callback requests need, so a restart never re-reads the
 * card for metadata. No secrets in here. Parsed (and so checked) once, when
 * a row is read.
 */
const buildFileInfoSchema = (z: typeof Z) => {
  const Position = z.object({ lat: z.number().optional(), lng: z.number().optional() });
  return z.object({
    name: z.string(),
    /** Wayline flight folder (`DJI_<YYYYMMDDHHMM>_<NNN>_<name>`) or ''. */
    path: z.string(),
    missionName: z.string().optional(),
    fileGroupId: z.string(),
    metadata: z.object({
      absolute_altitude: z.number().optional(),
      relative_altitude: z.number().optional(),
      gimbal_yaw_degree: z.number().optional(),
      created_time: z.string().optional(),
      shoot_position: Position.optional(),
    }),
    subFileType: z.number().int(),
    droneModelKey: z.string().optional(),
    payloadModelKey: z.string().optional(),
    /** The aircraft serial the file itself carries (XMP DroneSerialNumber); see requests.ts for the fallbacks. */
    sn: z.string().optional(),
    /** The camera's own serial, for the manifest and support (never sent as `sn`). */
    cameraSerial: z.string().optional(),
    isOriginal: z.boolean(),
    cameraModel: z.string().optional(),
    unsupportedReason: z.string().optional(),
    warnings: z.array(z.string()).optional(),
    /** What the photo says of its own usefulness (media/frame.ts), for the offload's frame and clock checks. */
    frame: z
      .object({
        gimbalPitch: z.number().optional(),
        rtkFlag: z.number().optional(),
        gps: z.enum(['zero', 'missing']).optional(),
        gnssUtc: z.string().optional(),
        gnssFrom: z.enum(['UTCAtExposure', 'GPSDateTime']).optional(),
        zoneInFile: z.boolean().optional(),
        preview: z
          .object({
            width: z.number(),
            height: z.number(),
            mean: z.number(),
            dark: z.number(),
            bright: z.number(),
            sharpness: z.number(),
          })
          .optional(),
      })
      .optional(),
  });
};

/** Built at its first use (zod.ts): a re-inserted card of done files reads no file info. */
export const fileInfoSchema = lazySchema(buildFileInfoSchema);

export type FileInfo = Z.infer<ReturnType<typeof buildFileInfoSchema>>;
