import { DmsError } from '../errors.js';
import type { WaylineQuery } from './types.js';

/**
 * The query string of GET .../waylines.
 *
 * - `order_by` is always sent: the sample server answers -1 without it.
 * - Arrays are REPEATED parameters (`template_type=0&template_type=1`), the
 *   form Spring binds to a List; a comma-joined value would be one element.
 * - Spaces are `%20`, not `+`: every server decodes `%20` as a space, while
 *   `+` is only form-encoding and some frameworks keep it literally.
 */

export const DEFAULT_ORDER_BY = 'update_time desc';

const ORDER_BY = /^[A-Za-z_][A-Za-z0-9_]*\s+(asc|desc)$/i;

function invalid(message: string): DmsError {
  return new DmsError('invalid-input', message, { retryable: false });
}

function positiveInt(name: string, v: number | undefined): number | undefined {
  if (v === undefined) return undefined;
  if (!Number.isInteger(v) || v < 1)
    throw invalid(`Wayline query: ${name} must be a whole number of at least 1.`);
  return v;
}

function ints(name: string, v: readonly number[] | undefined): readonly number[] {
  if (v === undefined) return [];
  for (const n of v)
    if (!Number.isInteger(n)) throw invalid(`Wayline query: ${name} must hold whole numbers.`);
  return v;
}

function strings(name: string, v: readonly string[] | undefined): readonly string[] {
  if (v === undefined) return [];
  for (const s of v)
    if (typeof s !== 'string' || s.trim() === '')
      throw invalid(`Wayline query: ${name} must hold non-empty text.`);
  return v;
}

/** Builds `a=1&b=2` (no leading `?`) in a stable order. Throws `invalid-input` for a bad query. */
export function buildWaylineQuery(query: WaylineQuery = {}): string {
  const orderBy =
    query.order_by === undefined || query.order_by.trim() === '' ? DEFAULT_ORDER_BY : query.order_by.trim();
  if (!ORDER_BY.test(orderBy))
    throw invalid('Wayline query: order_by must look like "<column> asc" or "<column> desc".');
  if (query.action_type !== undefined && !Number.isInteger(query.action_type)) {
    throw invalid('Wayline query: action_type must be a whole number.');
  }

  const pairs: [string, string][] = [];
  const add = (k: string, v: string | number | boolean | undefined) => {
    if (v !== undefined) pairs.push([k, String(v)]);
  };
  add('order_by', orderBy.replace(/\s+/g, ' '));
  add('page', positiveInt('page', query.page));
  add('page_size', positiveInt('page_size', query.page_size));
  add('favorited', query.favorited);
  add('action_type', query.action_type);
  for (const t of ints('template_type', query.template_type)) add('template_type', t);
  for (const k of strings('drone_model_keys', query.drone_model_keys)) add('drone_model_keys', k);
  for (const k of strings('payload_model_key', query.payload_model_key)) add('payload_model_key', k);

  return pairs.map(([k, v]) => `${encodeURIComponent(k)}=${encodeURIComponent(v)}`).join('&');
}
