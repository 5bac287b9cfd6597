import { rmSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CODES } from '../../main/service/index.js';
import { call, md5Hex, paths, putObject, startTemp } from './helpers.js';

let s: Awaited<ReturnType<typeof startTemp>>;
let p: ReturnType<typeof paths>;
beforeAll(async () => {
  s = await startTemp();
  p = paths(s.workspaceId);
});
afterAll(async () => {
  await s.stop();
});

const NAME = 'DJI_20220831151616_0004_W_Waypoint4.JPG';
// The MD5 of what putObject() stores for NAME, in capitals as some clients send it.
const FP = md5Hex(`content of ${NAME}`).toUpperCase();
const callback = (body: unknown) => call(s, 'POST', p.callback, { body });
const fastUpload = (body: unknown) => call(s, 'POST', p.fastUpload, { body });
const fullCallback = (key: string, extra: Record<string, unknown> = {}) => ({
  result: 0,
  name: 'DJI_20220831151616_0004_W_Waypoint4.JPG',
  object_key: key,
  fingerprint: FP,
  path: 'DJI_202208311455_008_Waypoint1',
  sub_file_type: 0,
  ext: {
    file_group_id: 'job-1',
    drone_model_key: '0-67-1',
    is_original: true,
    payload_model_key: '1-53-0',
    tinny_fingerprint: 't',
    sn: 'SN1',
  },
  metadata: {
    absolute_altitude: 112.5,
    relative_altitude: 80.2,
    gimbal_yaw_degree: -12.3,
    created_time: '2022-08-31T15:16:16+08:00',
    shoot_position: { lat: 22.5791, lng: 113.9377 },
  },
  ...extra,
});

describe('upload-callback validation', () => {
  it.each([
    [{ name: 'a', object_key: 'k' }, 'result is required (integer).'],
    [{ result: 0, object_key: 'k' }, 'name is required (string).'],
    [{ result: 0, name: 'a' }, 'object_key is required (string).'],
    [{ result: '0', name: 'a', object_key: 'k' }, 'result must be an integer.'],
    [{ result: 0.5, name: 'a', object_key: 'k' }, 'result must be an integer.'],
    [{ result: 0, name: 42, object_key: 'k' }, 'name must be a string.'],
    [{ result: 0, name: '', object_key: 'k' }, 'name must not be empty.'],
    [{ result: 0, name: 'x'.repeat(256), object_key: 'k' }, 'name must be at most 255 characters long.'],
    [{ result: 0, name: 'a', object_key: 'k', fingerprint: 7 }, 'fingerprint must be a string.'],
    [{ result: 0, name: 'a', object_key: 'k', sub_file_type: 2 }, 'sub_file_type must be at most 1.'],
    [
      { result: 0, name: 'a', object_key: 'k', metadata: { shoot_position: { lat: 'n' } } },
      'metadata.shoot_position.lat must be a number.',
    ],
    [
      { result: 0, name: 'a', object_key: 'k', metadata: { shoot_position: { lat: 91 } } },
      'metadata.shoot_position.lat must be at most 90.',
    ],
    [
      { result: 0, name: 'a', object_key: 'k', ext: { is_original: 'yes' } },
      'ext.is_original must be a boolean.',
    ],
    [
      { result: 0, name: 'a', object_key: 'k', metadata: { created_time: '2022-08-31T15:16:16.123Z' } },
      'metadata.created_time is not valid: use the form 2023-11-22T10:30:15+08:00.',
    ],
    [{ result: 0, name: 'a', object_key: 'k', ext: 'x' }, 'ext must be an object.'],
  ])('%j -> %s', async (body, message) => {
    const r = await callback(body);
    expect(r.status).toBe(400);
    expect(r.body).toEqual({ code: CODES.INVALID_REQUEST, message });
  });

  it('requires the key to be under the workspace prefix, without . or .. segments', async () => {
    let r = await callback({ result: 0, name: 'a.jpg', object_key: 'elsewhere/a.jpg' });
    expect(r.status).toBe(400);
    expect(r.body.code).toBe(CODES.OBJECT_KEY_OUTSIDE_PREFIX);
    expect(r.body.message).toContain(`"${s.bucket.objectKeyPrefix}/"`);
    r = await callback({ result: 0, name: 'a.jpg', object_key: `${s.bucket.objectKeyPrefix}/../x/a.jpg` });
    expect(r.body.message).toBe('object_key is not valid: it must not contain . or .. segments.');
  });

  it('accepts null for optional fields and ignores unknown fields', async () => {
    const r = await callback({
      result: 3,
      name: 'n.jpg',
      object_key: `${s.workspaceId}/n.jpg`,
      ext: null,
      metadata: null,
      path: null,
      extra: 1,
    });
    expect(r.body).toEqual({ code: 0, message: 'success', data: { object_key: `${s.workspaceId}/n.jpg` } });
  });
});

describe('upload-callback and fast-upload', () => {
  it('refuses a success report for an object that is not in the bucket', async () => {
    const key = `${s.workspaceId}/never-uploaded.jpg`;
    const r = await callback(fullCallback(key));
    expect(r.status).toBe(200);
    expect(r.body).toEqual({
      code: CODES.OBJECT_NOT_FOUND,
      message: `object_key ${key} was not found in the bucket; upload it first.`,
    });
    expect((await s.admin.mediaRecords()).filter((m) => m.object_key === key)).toEqual([]);
  });

  it('records a failed upload (result != 0) without making the fingerprint known', async () => {
    const key = `${s.workspaceId}/failed.jpg`;
    const body = fullCallback(key, { result: 1, fingerprint: 'aaaabbbbccccddddeeeeffff00001111' });
    expect((await callback(body)).body).toEqual({ code: 0, message: 'success', data: { object_key: key } });
    expect((await callback(body)).body.code).toBe(0);
    const rows = (await s.admin.mediaRecords(s.workspaceId)).filter((m) => m.object_key === key);
    expect(rows).toHaveLength(1);
    expect(rows[0]!.result).toBe(1);
    expect((await fastUpload({ fingerprint: 'aaaabbbbccccddddeeeeffff00001111' })).body.code).toBe(
      CODES.FINGERPRINT_UNKNOWN,
    );
  });

  it('fast-upload of an unknown fingerprint asks for the upload', async () => {
    const r = await fastUpload({ fingerprint: FP, name: 'a.jpg' });
    expect(r.status).toBe(200);
    expect(r.body).toEqual({
      code: CODES.FINGERPRINT_UNKNOWN,
      message: `Fingerprint ${FP} is not known in this workspace; upload the file.`,
    });
  });

  it('records an uploaded file once however often the callback comes, then knows its fingerprint', async () => {
    const key = await putObject(s, NAME);
    const first = await callback(fullCallback(key));
    expect(first.body).toEqual({ code: 0, message: 'success', data: { object_key: key } });
    expect((await callback(fullCallback(key))).body).toEqual(first.body);
    const rows = (await s.admin.mediaRecords()).filter((m) => m.object_key === key);
    expect(rows).toHaveLength(1);
    expect(rows[0]).toMatchObject({
      fingerprint: FP.toLowerCase(),
      path: 'DJI_202208311455_008_Waypoint1',
      result: 0,
      source: 'callback',
      metadata: { shoot_position: { lat: 22.5791, lng: 113.9377 } },
      ext: { file_group_id: 'job-1' },
    });

    // Known now, in any letter case; records the copy once, pointing at the same object.
    const copy = { fingerprint: FP.toLowerCase(), name: 'copy.JPG', path: 'DJI_202209011000_009_Waypoint1' };
    expect((await fastUpload(copy)).body).toEqual({ code: 0, message: 'success', data: {} });
    expect((await fastUpload({ ...copy, fingerprint: FP })).body.code).toBe(0);
    const copies = (await s.admin.mediaRecords()).filter((m) => m.name === 'copy.JPG');
    expect(copies).toHaveLength(1);
    expect(copies[0]).toMatchObject({ object_key: key, source: 'fast-upload', result: 0, path: copy.path });
  });

  it('does not know a fingerprint of another workspace', async () => {
    const other = await s.admin.createWorkspace('Elsewhere');
    const token = await s.admin.createToken({ workspaceId: other });
    const r = await call(s, 'POST', paths(other).fastUpload, { token, body: { fingerprint: FP } });
    expect(r.body.code).toBe(CODES.FINGERPRINT_UNKNOWN);
  });

  it('forgets a fingerprint whose object was replaced by other content', async () => {
    const key = await putObject(s, 'to-replace.jpg');
    const fp = md5Hex('content of to-replace.jpg');
    expect((await callback(fullCallback(key, { fingerprint: fp, name: 'to-replace.jpg' }))).body.code).toBe(
      0,
    );
    expect((await fastUpload({ fingerprint: fp })).body.code).toBe(0);
    await putObject(s, 'to-replace.jpg', 'other bytes');
    expect((await fastUpload({ fingerprint: fp })).body.code).toBe(CODES.FINGERPRINT_UNKNOWN);
  });

  it("forgets a fingerprint whose object's file was deleted from the bucket folder", async () => {
    const ws = await s.admin.createWorkspace('Cleaned by hand');
    const token = await s.admin.createToken({ workspaceId: ws });
    const sw = { ...s, workspaceId: ws, token };
    const key = await putObject(sw, 'to-delete.jpg');
    const fp = md5Hex('content of to-delete.jpg');
    const body = fullCallback(key, { fingerprint: fp, name: 'to-delete.jpg' });
    expect((await call(sw, 'POST', paths(ws).callback, { body })).body.code).toBe(0);
    expect((await call(sw, 'POST', paths(ws).fastUpload, { body: { fingerprint: fp } })).body.code).toBe(0);
    // An operator frees space: the workspace's folder of object files goes.
    rmSync(join(s.bucket.dataDir, 'objects', ws), { recursive: true });
    const after = await call(sw, 'POST', paths(ws).fastUpload, { body: { fingerprint: fp } });
    expect(after.body.code).toBe(CODES.FINGERPRINT_UNKNOWN);
  });

  it('validates fast-upload input', async () => {
    let r = await fastUpload({ name: 'a.jpg' });
    expect(r.body).toEqual({ code: CODES.INVALID_REQUEST, message: 'fingerprint is required (string).' });
    r = await fastUpload({ fingerprint: 'f'.repeat(129) });
    expect(r.body.message).toBe('fingerprint must be at most 128 characters long.');
    r = await fastUpload({ fingerprint: 'abc', ext: { sn: 5 } });
    expect(r.body.message).toBe('ext.sn must be a string.');
  });
});
