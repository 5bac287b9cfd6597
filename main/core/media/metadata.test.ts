import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { readMediaInfo } from './metadata.js';

const DJI = fileURLToPath(new URL('../../../test/fixtures/dji/', import.meta.url));

/** Decimal degrees of an exiftool DMS print ("35 deg 18' 1.92\" S"). */
const dms = (d: number, m: number, s: number, neg = false): number =>
  (neg ? -1 : 1) * (d + m / 60 + s / 3600);

/*
 * Expected values come from the files, never from our code:
 * - "dump": the exiftool dump shipped next to the file (ZH20T/*.txt);
 * - "xmp": the raw XMP text in the JPG (`grep -a -o 'drone-dji:[A-Za-z]*="[^"]*"' FILE`);
 * - "exif": EXIF strings in the JPG (`strings FILE`: Model, dates, serials).
 */
describe('readMediaInfo on real DJI files', () => {
  it('ZH20T/DJI_20220902151742_0028_T.JPG (H20T, old firmware, dashed dates, RTK)', async () => {
    const info = await readMediaInfo(join(DJI, 'ZH20T/DJI_20220902151742_0028_T.JPG'), {
      timeZoneOffsetMinutes: -240, // the file has no offset; Chile was at -04:00 on 2 Sept 2022
    });
    const m = info.metadata;
    // xmp: GpsLatitude="-35.3005329" GpsLongitude="-71.5280942"
    expect(m.shoot_position).toEqual({ lat: -35.3005329, lng: -71.5280942 });
    // dump: GPS Latitude 35 deg 18' 1.92" S, GPS Longitude 71 deg 31' 41.14" W (rounded to 0.01")
    expect(m.shoot_position?.lat).toBeCloseTo(dms(35, 18, 1.92, true), 5);
    expect(m.shoot_position?.lng).toBeCloseTo(dms(71, 31, 41.14, true), 5);
    expect(m.absolute_altitude).toBe(205.57); // dump: Absolute Altitude +205.570
    expect(m.relative_altitude).toBe(39.436); // dump: Relative Altitude +39.436
    expect(m.gimbal_yaw_degree).toBe(90.2); // dump: Gimbal Yaw Degree +90.20
    // dump: Date/Time Original 2022-09-02 15:17:42 (dashes: older H20T firmware)
    expect(info.captureTime).toEqual({ year: 2022, month: 9, day: 2, hour: 15, minute: 17, second: 42 });
    expect(m.created_time).toBe('2022-09-02T15:17:42-04:00');
    expect(info.cameraModel).toBe('ZH20T'); // dump: Camera Model Name ZH20T
    // Payload camera, no DroneModel in the XMP: payload H20T, aircraft = documented M300 assumption.
    expect(info.payloadModelKey).toBe('1-43-0');
    expect(info.droneModelKey).toBe('0-60-0');
    // dump: Serial Number 1W9DH9R001H494 is the camera's (also the DJI "Sensor ID"): not an aircraft sn.
    expect(info.sn).toBeUndefined();
    expect(info.cameraSerial).toBe('1W9DH9R001H494');
    expect(info.subFileType).toBe(0);
    expect(info.isOriginal).toBe(true);
    expect(info.unsupportedReason).toBeUndefined();
    expect(info.warnings).toEqual([]);
  });

  it('ZH20T/DJI_H20T.jpg (H20T, newer firmware, colon dates)', async () => {
    const info = await readMediaInfo(join(DJI, 'ZH20T/DJI_H20T.jpg'), { timeZoneOffsetMinutes: -240 });
    const m = info.metadata;
    // xmp: GpsLatitude="+40.5637811" GpsLongitude="-79.7649628"
    expect(m.shoot_position).toEqual({ lat: 40.5637811, lng: -79.7649628 });
    expect(m.absolute_altitude).toBe(221.404); // xmp: AbsoluteAltitude="+221.404"
    expect(m.relative_altitude).toBe(16.508); // xmp: RelativeAltitude="+16.508"
    expect(m.gimbal_yaw_degree).toBe(32.5); // xmp: GimbalYawDegree="+32.50"
    expect(m.created_time).toBe('2021-05-28T10:33:46-04:00'); // exif: "2021:05:28 10:33:46"
    expect(info.cameraModel).toBe('ZH20T'); // exif: "ZH20T"
    expect(info.payloadModelKey).toBe('1-43-0');
    expect(info.droneModelKey).toBe('0-60-0');
    expect(info.sn).toBeUndefined(); // no DroneSerialNumber in the XMP
    expect(info.cameraSerial).toBe('1W9DH8R000003K'); // exif: "[sensor_id:1W9DH8R000003K" / SerialNumber
  });

  it('ZH20T with a user default aircraft uses it (M350 carries the H20T)', async () => {
    const info = await readMediaInfo(join(DJI, 'ZH20T/DJI_H20T.jpg'), { aircraftDefault: '0-89-0' });
    expect(info.droneModelKey).toBe('0-89-0');
    expect(info.payloadModelKey).toBe('1-43-0');
  });

  it('M30T/M30T_IR.JPG (XMP DroneModel, DroneSerialNumber, xmp:CreateDate offset)', async () => {
    // No timeZoneOffsetMinutes: the offset must come from the file itself.
    const info = await readMediaInfo(join(DJI, 'M30T/M30T_IR.JPG'));
    const m = info.metadata;
    // xmp: GpsLatitude="+50.850354243" GpsLongitude="+4.362636270"
    expect(m.shoot_position).toEqual({ lat: 50.850354243, lng: 4.36263627 });
    expect(m.absolute_altitude).toBe(126.078); // xmp: AbsoluteAltitude="+126.078"
    expect(m.relative_altitude).toBe(29.046); // xmp: RelativeAltitude="+29.046"
    expect(m.gimbal_yaw_degree).toBe(170.4); // xmp: GimbalYawDegree="+170.40"
    // exif DateTimeOriginal "2024:04:24 14:46:12"; xmp:CreateDate="2024-04-24T14:46:12+02:00"
    expect(m.created_time).toBe('2024-04-24T14:46:12+02:00');
    expect(info.cameraModel).toBe('M30T');
    // xmp: DroneModel="M30T" → aircraft M30T 0-67-1, camera 1-53-0 (service-facts.md)
    expect(info.droneModelKey).toBe('0-67-1');
    expect(info.payloadModelKey).toBe('1-53-0');
    // xmp: DroneSerialNumber="1581F62HD232T00CPV1Q" (EXIF SerialNumber is the same, truncated by one char)
    expect(info.sn).toBe('1581F62HD232T00CPV1Q');
    expect(info.cameraSerial).toBe('4XAGKAL02AA003'); // xmp: CameraSerialNumber
    expect(info.isOriginal).toBe(true);
  });

  it('M3T/M3T_IR.JPG (RTK, XMP DroneModel, user default ignored for a built-in camera)', async () => {
    const info = await readMediaInfo(join(DJI, 'M3T/M3T_IR.JPG'), { aircraftDefault: '0-89-0' });
    const m = info.metadata;
    // xmp: GpsLatitude="+50.688176398" GpsLongitude="+4.524341654"
    expect(m.shoot_position).toEqual({ lat: 50.688176398, lng: 4.524341654 });
    expect(m.absolute_altitude).toBe(174.767); // xmp: AbsoluteAltitude="+174.767"
    expect(m.relative_altitude).toBe(10.351); // xmp: RelativeAltitude="+10.351"
    expect(m.gimbal_yaw_degree).toBe(9.9); // xmp: GimbalYawDegree="+9.90"
    // exif "2023:07:07 09:39:34"; xmp:CreateDate="2023-07-07T09:39:34+02:00"; consistent with
    // xmp UTCAtExposure="2023-07-07T07:39:52.944920" (GPS time; the camera clock is 18 s behind).
    expect(m.created_time).toBe('2023-07-07T09:39:34+02:00');
    expect(info.captureTime).toEqual({ year: 2023, month: 7, day: 7, hour: 9, minute: 39, second: 34 });
    expect(info.droneModelKey).toBe('0-77-1'); // xmp: DroneModel="M3T"
    expect(info.payloadModelKey).toBe('1-67-0');
    expect(info.sn).toBe('1581F5FJD22BR00C8V55'); // xmp: DroneSerialNumber
    expect(info.cameraSerial).toBe('5L4SK9P02AA0C3'); // xmp: CameraSerialNumber
  });

  it('M2EA/M2EA_IR.JPG (Mavic 2 Enterprise Advanced: not in the cloud list)', async () => {
    const info = await readMediaInfo(join(DJI, 'M2EA/M2EA_IR.JPG'), { timeZoneOffsetMinutes: 60 });
    const m = info.metadata;
    // xmp: GpsLatitude="+50.4411828" GpsLongitude="+4.9833475"
    expect(m.shoot_position).toEqual({ lat: 50.4411828, lng: 4.9833475 });
    expect(m.absolute_altitude).toBe(217.6); // xmp: AbsoluteAltitude="+217.60"
    expect(m.relative_altitude).toBe(25.63); // xmp: RelativeAltitude="+25.63"
    expect(m.gimbal_yaw_degree).toBe(-21.3); // xmp: GimbalYawDegree="-21.30"
    // exif "2023:02:15 07:39:33"; xmp:CreateDate="2023-02-15" has no time, so the option's offset applies
    expect(m.created_time).toBe('2023-02-15T07:39:33+01:00');
    expect(info.cameraModel).toBe('MAVIC2-ENTERPRISE-ADVANCED');
    expect(info.droneModelKey).toBeUndefined();
    expect(info.payloadModelKey).toBeUndefined();
    expect(info.unsupportedReason).toBe(
      "Mavic 2 Enterprise Advanced is not in DJI's cloud device list; servers like DJI's sample server will refuse it",
    );
    expect(info.sn).toBeUndefined(); // no DroneSerialNumber, no EXIF SerialNumber
  });
});
