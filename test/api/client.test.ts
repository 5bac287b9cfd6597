import { inspect } from 'node:util';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { startSampleServer } from '../support/sample-server.js';
import type { SampleServer } from '../support/sample-server.js';
import { ApiClient } from '../../main/core/api/client.js';
import type { UploadCallbackInput, Wayline } from '../../main/core/api/types.js';
import { failure } from '../support/harness.js';

/** Against the stand-in of DJI's sample server, over real HTTP. */

const TOKEN = 'sample-token';
const FP = '297F490B0252690D3F93841818567CC6';
const EXT = {
  drone_model_key: '0-67-0',
  is_original: true,
  payload_model_key: '1-52-0',
  tinny_fingerprint: '297f490b0252690d3f93841818567cc6_2022_8_31_15_16_16',
  sn: '1581F5BKD223J00A0010',
};
const CALLBACK: UploadCallbackInput = {
  result: 0,
  name: 'DJI_20220831151616_0004_W.JPG',
  object_key: 'media/flight-1/DJI_20220831151616_0004_W.JPG',
  fingerprint: FP.toLowerCase(),
  path: 'DJI_202208311455_008_Waypoint1',
  sub_file_type: 0,
  metadata: {
    absolute_altitude: 112.6,
    relative_altitude: 40.2,
    gimbal_yaw_degree: -12.3,
    created_time: '2022-08-31T15:16:16+08:00',
    shoot_position: { lat: 22.5, lng: 113.9 },
  },
  ext: { ...EXT, file_group_id: 'job-1' },
};
const WAYLINES: Wayline[] = [
  { id: 'a', name: 'Alpha', favorited: true, template_types: [0], drone_model_key: '0-67-0', update_time: 3 },
  {
    id: 'b',
    name: 'Bravo',
    favorited: false,
    template_types: [1],
    drone_model_key: '0-77-0',
    update_time: 1,
  },
  {
    id: 'c',
    name: 'Charlie',
    favorited: true,
    template_types: [1],
    drone_model_key: '0-67-0',
    update_time: 2,
  },
];

let server: SampleServer;
let client: ApiClient;

beforeEach(async () => {
  server = await startSampleServer({ waylines: WAYLINES });
  client = new ApiClient({ baseUrl: server.baseUrl, workspaceId: server.workspaceId, token: TOKEN });
});
afterEach(async () => {
  await server.close();
});

describe('login and token refresh', () => {
  it('signs in with flag 2 and no token header, then uses the issued token and workspace', async () => {
    const fresh = new ApiClient({ baseUrl: `${server.baseUrl}/` });
    const login = await fresh.login('pilot', 'pilot123');
    expect(login.workspace_id).toBe('ws-1');
    expect(server.calls[0]?.body).toEqual({ username: 'pilot', password: 'pilot123', flag: 2 });
    expect(server.calls[0]?.headers['x-auth-token']).toBeUndefined();
    expect(server.calls[0]?.headers['content-type']).toBe('application/json');
    expect(fresh.workspaceId).toBe('ws-1');
    await fresh.listWaylines();
    expect(server.calls[1]?.headers['x-auth-token']).toBe(login.access_token);
    expect(server.calls[1]?.path).toBe('/wayline/api/v1/workspaces/ws-1/waylines');
  });

  it('reports a wrong password (HTTP 200, code 401) as auth without quoting the password', async () => {
    const err = await failure(client.login('pilot', 'hunter2-wrong'));
    expect(err.kind).toBe('auth');
    expect(err.message).toMatch(/wrong username or password/);
    expect(err.serverCode).toBe(401);
    expect(JSON.stringify(err) + err.message).not.toContain('hunter2-wrong');
  });

  it('reports a -1 login failure as auth too', async () => {
    server.setHook((c) => (c.path.endsWith('/login') ? { body: { code: -1, message: 'bad' } } : undefined));
    expect((await failure(client.login('pilot', 'pilot123'))).kind).toBe('auth');
  });

  it('refreshes the token with the old one in the header and uses the new one afterwards', async () => {
    const next = await client.refreshToken();
    expect(server.calls[0]?.path).toBe('/manage/api/v1/token/refresh');
    expect(server.calls[0]?.headers['x-auth-token']).toBe(TOKEN);
    expect(next).not.toBe(TOKEN);
    await client.getSts();
    expect(server.calls[1]?.headers['x-auth-token']).toBe(next);
  });
});

describe('authentication failures', () => {
  it('turns HTTP 401 with an empty body into auth, and never leaks the token', async () => {
    const secret = 'eyJhbGciOiJIUzI1NiJ9.secret-token-value.sig';
    client.setToken(secret);
    const err = await failure(client.fastUpload({ fingerprint: FP, name: 'x.JPG', ext: EXT }));
    expect(err.kind).toBe('auth');
    expect(err.status).toBe(401);
    expect(err.method).toBe('POST');
    expect(err.path).toBe('/media/api/v1/workspaces/ws-1/fast-upload');
    for (const text of [JSON.stringify(err), err.message, err.stack ?? '', inspect(err, { depth: 5 })]) {
      expect(text).not.toContain(secret);
    }
  });

  it('trims a token read from a file and treats an empty one as not signed in', async () => {
    const fromFile = new ApiClient({ baseUrl: server.baseUrl, workspaceId: 'ws-1', token: `${TOKEN}\n` });
    await fromFile.getSts();
    expect(server.calls[0]?.headers['x-auth-token']).toBe(TOKEN);
    fromFile.setToken('');
    expect(fromFile.hasToken).toBe(false);
  });

  it('an expired token (removed by the server) gives auth', async () => {
    server.tokens.clear();
    expect((await failure(client.getSts())).kind).toBe('auth');
  });

  it('refuses to call without a token, before any request', async () => {
    const anon = new ApiClient({ baseUrl: server.baseUrl, workspaceId: 'ws-1' });
    expect((await failure(anon.getSts())).kind).toBe('auth');
    expect(server.calls).toHaveLength(0);
  });
});

describe('waylines', () => {
  it('always sends order_by and the filters; reads list and pagination', async () => {
    const page = await client.listWaylines({ favorited: true, template_type: [0, 1], page_size: 1 });
    expect(server.calls[0]?.query.get('order_by')).toBe('update_time desc');
    expect(server.calls[0]?.query.getAll('template_type')).toEqual(['0', '1']);
    expect(page.list.map((w) => w.id)).toEqual(['a']);
    expect(page.pagination).toEqual({ page: 1, page_size: 1, total: 2 });
  });

  it('the stand-in refuses a query without order_by, like the sample server', async () => {
    const res = await fetch(`${server.baseUrl}/wayline/api/v1/workspaces/ws-1/waylines`, {
      headers: { 'x-auth-token': TOKEN },
    });
    expect(await res.json()).toEqual({ code: -1, message: expect.stringContaining('order_by') });
  });

  it('tolerates a missing pagination and keeps extra item fields', async () => {
    server.setHook(() => ({
      body: { code: '0', data: { list: [{ id: 'z', object_key: 'k', update_time: '5' }] } },
    }));
    const page = await client.listWaylines({ page: 2, page_size: 10 });
    expect(page.list[0]).toMatchObject({ id: 'z', object_key: 'k', update_time: 5 });
    expect(page.pagination).toEqual({ page: 2, page_size: 10, total: 11 });
  });

  it('treats a missing list as malformed', async () => {
    server.setHook(() => ({ body: { code: 0, message: 'success', data: { pagination: { total: 0 } } } }));
    const err = await failure(client.listWaylines());
    expect(err.kind).toBe('malformed-response');
    expect(err.message).toContain('data.list');
  });
});

describe('sts', () => {
  it('reads the sample answer (minio, expire in seconds)', async () => {
    const sts = await client.getSts();
    expect(sts.provider).toBe('minio');
    expect(sts.credentials.expire).toBe(3300);
    expect(server.calls[0]?.method).toBe('POST');
  });

  it('accepts "code":"0" and a numeric-string expire', async () => {
    server.setStyle({ stringCode: true });
    server.setSts({
      bucket: 'drone-media',
      endpoint: 'https://s3.us-east-1.amazonaws.com',
      provider: 'aws',
      region: 'us-east-1',
      object_key_prefix: 'p',
      credentials: { access_key_id: 'AK', access_key_secret: 'SK', expire: '900', security_token: 'T' },
    });
    expect((await client.getSts()).credentials.expire).toBe(900);
  });

  it('code 0 without credentials is a server fault, with a clear message', async () => {
    server.setSts('no-credentials');
    const err = await failure(client.getSts());
    expect(err.kind).toBe('server');
    expect(err.message).toMatch(/returned no storage credentials; its storage is probably misconfigured/);
  });

  it('an unknown provider is malformed and the secret is not quoted', async () => {
    server.setSts({
      bucket: 'b',
      endpoint: 'e',
      provider: 'gcs',
      credentials: { access_key_id: 'AK', access_key_secret: 'TOPSECRET', expire: 1 },
    });
    const err = await failure(client.getSts());
    expect(err.kind).toBe('malformed-response');
    expect(err.message).toContain('data.provider');
    expect(err.message).not.toContain('TOPSECRET');
  });
});

describe('fast-upload and upload-callback', () => {
  it('unknown fingerprint is an outcome; known after a callback; duplicate callbacks break it', async () => {
    const input = { fingerprint: FP, name: CALLBACK.name, path: CALLBACK.path, ext: EXT };
    expect(await client.fastUpload(input)).toEqual({ known: false, code: -1, message: `${FP}don't exist.` });

    const out = await client.uploadCallback(CALLBACK);
    expect(out).toEqual({ object_key: CALLBACK.object_key }); // data was the bare key string
    expect(server.media).toHaveLength(1);
    // Matching is case-insensitive: the callback sent lowercase, fast-upload uppercase.
    expect(await client.fastUpload(input)).toEqual({ known: true });

    await client.uploadCallback(CALLBACK);
    expect(await client.fastUpload(input)).toMatchObject({ known: false, code: -1 });
  });

  it('accepts "code":"0" with data "" and a missing data on success', async () => {
    await client.uploadCallback(CALLBACK);
    server.setStyle({ stringCode: true, emptyData: '' });
    expect(await client.fastUpload({ fingerprint: FP })).toMatchObject({ known: false }); // ext missing: -1
    expect(await client.fastUpload({ fingerprint: FP, name: 'n', ext: EXT })).toEqual({ known: true });
    server.setStyle({ emptyData: 'missing' });
    expect(await client.fastUpload({ fingerprint: FP, name: 'n', ext: EXT })).toEqual({ known: true });
  });

  it('callback answers {object_key}, "" or nothing fall back sensibly', async () => {
    server.setStyle({ callbackData: 'object' });
    expect((await client.uploadCallback(CALLBACK)).object_key).toBe(CALLBACK.object_key);
    for (const data of ['', {}, undefined]) {
      server.setHook(() => ({
        body: { code: 0, message: 'success', ...(data === undefined ? {} : { data }) },
      }));
      expect((await client.uploadCallback(CALLBACK)).object_key).toBe(CALLBACK.object_key);
    }
  });

  it('a refused callback (code -1, no data key) is rejected with the server message', async () => {
    const { metadata: _dropped, ...noMetadata } = CALLBACK;
    const err = await failure(client.uploadCallback(noMetadata));
    expect(err.kind).toBe('rejected');
    expect(err.serverCode).toBe(-1);
    // The sample server joins the field path and the message without a space (service-facts.md).
    expect(err.serverMessage).toBe('metadatamust not be null');
    expect(err.path).toBe('/media/api/v1/workspaces/ws-1/upload-callback');
    expect(server.media).toHaveLength(0);
  });

  it('a code 401 envelope at HTTP 200 on fast-upload is auth, not "unknown"', async () => {
    server.setHook(() => ({ body: { code: 401, message: 'token expired' } }));
    expect((await failure(client.fastUpload({ fingerprint: FP }))).kind).toBe('auth');
  });
});
