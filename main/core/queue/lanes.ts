/**
 * Lanes: what goes first. Every file of the queue has a lane, kept in its
 * row (so the order holds across cards and restarts); due rows are handed
 * out lane by lane, then card by card, then flight by flight.
 */
export const LANE_NAMES = ['first', 'photos', 'videos', 'previews'] as const;
export type LaneName = (typeof LANE_NAMES)[number];
