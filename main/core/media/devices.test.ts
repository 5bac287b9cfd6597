import { describe, expect, it } from 'vitest';
import { normaliseAircraft, normaliseCamera, resolveDeviceKeys } from './devices.js';

describe('resolveDeviceKeys: cameras built into one aircraft', () => {
  // Expected keys copied from docs/service-facts.md ("Fingerprints and device keys").
  const cases: [string, string, string][] = [
    ['M30', '0-67-0', '1-52-0'],
    ['M30T', '0-67-1', '1-53-0'],
    ['M3E', '0-77-0', '1-66-0'],
    ['M3T', '0-77-1', '1-67-0'],
    ['M3M', '0-77-2', '1-68-0'],
    ['M3TA', '0-77-3', '1-129-0'],
    ['M3D', '0-91-0', '1-80-0'],
    ['M3TD', '0-91-1', '1-81-0'],
    ['M4E', '0-99-0', '1-88-0'],
    ['M4T', '0-99-1', '1-89-0'],
    ['M4D', '0-100-0', '1-98-0'],
    ['M4TD', '0-100-1', '1-99-0'],
  ];
  it.each(cases)('EXIF Model %s → %s / %s, whatever the default aircraft', (model, drone, payload) => {
    const r = resolveDeviceKeys({ model, make: 'DJI' }, { aircraftDefault: '0-89-0' });
    expect(r).toMatchObject({ drone_model_key: drone, payload_model_key: payload, aircraftSource: 'camera' });
    expect(r.unsupportedReason).toBeUndefined();
  });
});

describe('resolveDeviceKeys: payload cameras that fit several aircraft', () => {
  it.each([
    ['ZH20', '1-42-0', '0-60-0'],
    ['ZH20T', '1-43-0', '0-60-0'],
    ['ZH20N', '1-61-0', '0-60-0'],
    ['ZH30', '1-82-0', '0-89-0'],
    ['ZH30T', '1-83-0', '0-89-0'],
    ['ZenmuseP1', '1-50-65535', '0-89-0'],
    ['P1', '1-50-65535', '0-89-0'],
  ])('%s without DroneModel or default → payload %s on the assumed aircraft %s', (model, payload, drone) => {
    const r = resolveDeviceKeys({ model, make: 'DJI' });
    expect(r).toEqual({ payload_model_key: payload, drone_model_key: drone, aircraftSource: 'assumed' });
  });

  it('uses the user default aircraft when it can carry the payload', () => {
    expect(resolveDeviceKeys({ model: 'ZH20T' }, { aircraftDefault: '0-89-0' })).toMatchObject({
      drone_model_key: '0-89-0',
      payload_model_key: '1-43-0',
      aircraftSource: 'user-default',
    });
    expect(resolveDeviceKeys({ model: 'ZH30T' }, { aircraftDefault: '0-103-0' })).toMatchObject({
      drone_model_key: '0-103-0',
      aircraftSource: 'user-default',
    });
  });

  it('ignores (with a note) a default that cannot carry the payload or is not a key', () => {
    const m3t = resolveDeviceKeys({ model: 'ZH20T' }, { aircraftDefault: '0-77-1' });
    expect(m3t).toMatchObject({ drone_model_key: '0-60-0', aircraftSource: 'assumed' });
    expect(m3t.note).toMatch(/0-77-1 cannot carry the Zenmuse H20T/);
    // The M400 does not carry the H20 series.
    expect(resolveDeviceKeys({ model: 'ZH20' }, { aircraftDefault: '0-103-0' }).drone_model_key).toBe(
      '0-60-0',
    );
    expect(resolveDeviceKeys({ model: 'P1' }, { aircraftDefault: 'M350' }).aircraftSource).toBe('assumed');
  });

  it('XMP DroneModel wins over the default and the assumption', () => {
    expect(
      resolveDeviceKeys({ model: 'ZH20T', droneModel: 'M350 RTK' }, { aircraftDefault: '0-60-0' }),
    ).toMatchObject({ drone_model_key: '0-89-0', payload_model_key: '1-43-0', aircraftSource: 'xmp' });
    expect(resolveDeviceKeys({ model: 'ZH30T', droneModel: 'Matrice 300 RTK' })).toMatchObject({
      drone_model_key: '0-60-0',
      aircraftSource: 'xmp',
    });
  });
});

describe('resolveDeviceKeys: XMP DroneModel', () => {
  it('the fixture values (M30T, M3T) agree with the camera', () => {
    expect(resolveDeviceKeys({ model: 'M30T', droneModel: 'M30T' })).toEqual({
      drone_model_key: '0-67-1',
      payload_model_key: '1-53-0',
      aircraftSource: 'xmp',
    });
    expect(resolveDeviceKeys({ model: 'M3T', droneModel: 'M3T' }).drone_model_key).toBe('0-77-1');
  });

  it('alone gives both keys for an aircraft with a built-in camera', () => {
    expect(resolveDeviceKeys({ droneModel: 'Matrice 4T' })).toMatchObject({
      drone_model_key: '0-99-1',
      payload_model_key: '1-89-0',
    });
  });

  it('a conflicting camera keeps the XMP aircraft and says so', () => {
    const r = resolveDeviceKeys({ model: 'M3T', droneModel: 'M30T' });
    expect(r).toMatchObject({
      drone_model_key: '0-67-1',
      payload_model_key: '1-67-0',
      aircraftSource: 'xmp',
    });
    expect(r.note).toBeDefined();
  });
});

describe('resolveDeviceKeys: cameras outside the cloud list', () => {
  it('Mavic 2 Enterprise Advanced: no keys, a clear reason', () => {
    const r = resolveDeviceKeys({ model: 'MAVIC2-ENTERPRISE-ADVANCED', make: 'DJI' });
    expect(r.drone_model_key).toBeUndefined();
    expect(r.payload_model_key).toBeUndefined();
    expect(r.unsupportedReason).toBe(
      "Mavic 2 Enterprise Advanced is not in DJI's cloud device list; servers like DJI's sample server will refuse it",
    );
  });

  it('FC6310 (Phantom 4 Pro) and unknown models are named in the reason', () => {
    expect(resolveDeviceKeys({ model: 'FC6310', make: 'DJI' }).unsupportedReason).toMatch(
      /^Phantom 4 Pro is not/,
    );
    expect(resolveDeviceKeys({ model: 'XYZ-123' }).unsupportedReason).toMatch(
      /Camera "XYZ-123" is not in DJI's/,
    );
    expect(resolveDeviceKeys({ model: 'EOS R5', make: 'Canon' }).unsupportedReason).toMatch(
      /not a DJI camera/,
    );
    expect(resolveDeviceKeys({}).unsupportedReason).toMatch(/does not say which camera/);
  });

  it('a known aircraft with an unknown payload keeps the aircraft key but is unsupported', () => {
    const r = resolveDeviceKeys({ model: 'ZXT2', droneModel: 'M300' });
    expect(r.drone_model_key).toBe('0-60-0');
    expect(r.payload_model_key).toBeUndefined();
    expect(r.unsupportedReason).toMatch(/Zenmuse XT2/);
  });
});

describe('normalisation', () => {
  it.each([
    ['ZH20T', 'H20T'],
    ['Zenmuse H20T', 'H20T'],
    ['ZenmuseP1', 'P1'],
    ['m3t', 'M3T'],
    ['MAVIC2-ENTERPRISE-ADVANCED', 'MAVIC2ENTERPRISEADVANCED'],
  ])('camera %s → %s', (raw, code) => expect(normaliseCamera(raw)).toBe(code));
  it.each([
    ['Matrice 300 RTK', 'M300'],
    ['M350 RTK', 'M350'],
    ['Matrice 30T', 'M30T'],
    ['Mavic 3T', 'M3T'],
    ['DJI Matrice 4TD', 'M4TD'],
  ])('aircraft %s → %s', (raw, code) => expect(normaliseAircraft(raw)).toBe(code));
});
