import { afterEach, describe, expect, it } from 'vitest';
import { ApiClient } from '../../main/core/api/client.js';
import { startSampleServer } from '../support/sample-server.js';
import type { SampleServer } from '../support/sample-server.js';

// buildWaylineQuery itself: main/core/api/query.test.ts.
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
