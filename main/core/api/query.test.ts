import { afterEach, describe, expect, it } from 'vitest';
import { startSampleServer } from '../../../test/support/sample-server.js';
import type { SampleServer } from '../../../test/support/sample-server.js';
import { DmsError } from '../errors.js';
import { ApiClient } from './client.js';
import { buildWaylineQuery } from './query.js';

describe('buildWaylineQuery', () => {
  it('always carries order_by, defaulting to update_time desc', () => {
    expect(buildWaylineQuery()).toBe('order_by=update_time%20desc');
    expect(buildWaylineQuery({ order_by: '  ' })).toBe('order_by=update_time%20desc');
    expect(buildWaylineQuery({ order_by: 'name asc' })).toBe('order_by=name%20asc');
  });

  it('repeats array parameters and writes booleans as true/false', () => {
    const qs = buildWaylineQuery({
      favorited: false,
      page: 2,
      page_size: 50,
      action_type: 1,
      template_type: [0, 1],
      drone_model_keys: ['0-67-0', '0-77-0'],
      payload_model_key: ['1-52-0'],
    });
    expect(qs).toBe(
      'order_by=update_time%20desc&page=2&page_size=50&favorited=false&action_type=1' +
        '&template_type=0&template_type=1&drone_model_keys=0-67-0&drone_model_keys=0-77-0&payload_model_key=1-52-0',
    );
  });

  it('leaves out empty arrays', () => {
    expect(buildWaylineQuery({ template_type: [], favorited: true })).toBe(
      'order_by=update_time%20desc&favorited=true',
    );
  });

  it.each([
    { page: 0 },
    { page_size: 1.5 },
    { order_by: 'update_time; drop table' },
    { template_type: [Number.NaN] },
    { drone_model_keys: [''] },
  ])('refuses %j as invalid-input', (q) => {
    let err: unknown;
    try {
      buildWaylineQuery(q);
    } catch (e) {
      err = e;
    }
    expect(err).toBeInstanceOf(DmsError);
    expect((err as DmsError).kind).toBe('invalid-input');
  });
});

describe('the query on the wire', () => {
  let server: SampleServer | undefined;
  afterEach(async () => {
    await server?.close();
  });

  it('reaches the server as repeated parameters with order_by', async () => {
    server = await startSampleServer();
    const client = new ApiClient({ baseUrl: server.baseUrl, workspaceId: 'ws 1/x', token: 'sample-token' });
    await client.listWaylines({ template_type: [2, 3], favorited: true });
    const call = server.calls[0]!;
    // The workspace id is escaped as one path segment.
    expect(call.path).toBe('/wayline/api/v1/workspaces/ws%201%2Fx/waylines');
    expect(call.url).toContain('?order_by=update_time%20desc&favorited=true&template_type=2&template_type=3');
    expect(call.query.getAll('template_type')).toEqual(['2', '3']);
    expect(call.method).toBe('GET');
    expect(call.headers['content-type']).toBeUndefined();
  });
});
