import { describe, expect, it } from 'vitest';
import { DmsError } from '../errors.js';
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
