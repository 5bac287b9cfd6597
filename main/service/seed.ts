import { createHash } from 'node:crypto';
import { AIRCRAFT as A, CAMERAS as C } from '../shared/domain.js';
import type { SqlDb } from './data/sql.js';
import { parseWaylines, writeWaylines, type WaylineImport } from './waylines.js';

/**
 * Demo waylines put into the default workspace on first start, so that a
 * fresh install shows a realistic library. Deterministic (no clock, no
 * randomness): the same data dir content on every machine, stable ids for tests.
 * Model keys are real DJI enums (main/shared/domain.ts); aircraft/payload pairs are real.
 */
export const MODEL_COMBOS: readonly (readonly [string, readonly string[]])[] = [
  [A.M30T.key, [C.M30T.key]],
  [A.M30.key, [C.M30.key]],
  [A.M3T.key, [C.M3T.key]],
  [A.M350.key, [C.H20T.key]],
  [A.M350.key, [C.H30T.key]],
  [A.M300.key, [C.P1.key]],
  [A.M300.key, [C.H20T.key, C.P1.key]], // dual gimbal
  [A.M4T.key, [C.M4T.key]],
];

// [name, template types (0 waypoint, 1 mapping 2D, 2 mapping 3D, 3 mapping strip), action_type]
const DEMO: readonly (readonly [string, readonly number[], number])[] = [
  ['Waypoint1', [0], 0],
  ['Waypoint2', [0], 0],
  ['Waypoint3', [0], 0],
  ['Waypoint4', [0], 0],
  ['Bridge inspection A', [0], 0],
  ['Bridge inspection B', [0, 2], 0],
  ['Solar farm north', [1], 0],
  ['Solar farm south', [1], 0],
  ['Power line tower 12-18', [0], 1],
  ['Rooftop survey block C', [1], 0],
  ['Quarry volume', [2], 0],
  ['Riverbank erosion', [2], 0],
  ['Highway corridor', [3], 0],
  ['Wind turbine T7', [0], 1],
  ['Cell tower inspection', [0], 0],
  ['Pipeline patrol east', [3], 0],
  ['Construction site weekly', [1, 2], 0],
  ['Forest fire watch', [0], 0],
  ['Dam face', [2], 0],
  ['Rail yard mapping', [1], 0],
  ['Substation thermal', [0], 1],
  ['Harbor crane check', [0], 0],
  ['Vineyard survey', [1], 0],
  ['Stadium roof', [2], 0],
  ['Landfill survey', [1], 0],
  ['Coastline strip', [3], 0],
  ['Search grid alpha', [0], 0],
  ['AI spot-check substation', [0], 1],
  ['AI spot-check tower line', [0], 1],
  ['Campus orthomosaic', [1], 0],
];

const USERS = ['pilot', 'alice', 'bob', 'chen'] as const;
const BASE_TIME = Date.UTC(2024, 0, 15, 8, 0, 0);
const DAY = 86_400_000;

/** A UUID-shaped id derived from the index, so demo ids never change. */
function demoId(i: number): string {
  const h = createHash('sha1').update(`dms-demo-wayline-${i}`).digest('hex');
  return `${h.slice(0, 8)}-${h.slice(8, 12)}-5${h.slice(13, 16)}-a${h.slice(17, 20)}-${h.slice(20, 32)}`;
}

export function demoWaylines(workspaceId: string): WaylineImport[] {
  return DEMO.map(([name, templateTypes, actionType], i) => {
    const combo = MODEL_COMBOS[i % MODEL_COMBOS.length] ?? MODEL_COMBOS[0]!;
    // Spread update times over two months, not in insertion order, so ordering is visible.
    const update = BASE_TIME + ((i * 7) % DEMO.length) * DAY + i * 60_000;
    return {
      id: demoId(i),
      workspace_id: workspaceId,
      name,
      drone_model_key: combo[0],
      payload_model_keys: [...combo[1]],
      template_types: [...templateTypes],
      favorited: i % 3 === 0,
      action_type: actionType,
      user_name: USERS[i % USERS.length] ?? 'pilot',
      create_time: update - (i % 5) * DAY,
      update_time: update,
      start_wayline_point: {
        start_latitude: Math.round((22.5 + i * 0.013) * 1e6) / 1e6,
        start_lontitude: Math.round((113.9 + i * 0.021) * 1e6) / 1e6,
      },
    };
  });
}

/** Inside the caller's transaction (the default workspace's creation). */
export async function seedDemoWaylines(t: SqlDb, workspaceId: string): Promise<number> {
  const items = parseWaylines(demoWaylines(workspaceId));
  await writeWaylines(t, workspaceId, items);
  return items.length;
}
