/**
 * The lane kinds of the timeline, one module each. The table's order is the order of a
 * rank's lanes, top to bottom; a slot's `kind` is its key here.
 */
import { foldLane } from "./fold";
import { headerLane } from "./header";
import type { LaneKind } from "./kind";
import { memoryLane } from "./memory";
import { rowLane } from "./row";

export const LANE_KINDS = {
  header: headerLane,
  row: rowLane,
  fold: foldLane,
  memory: memoryLane,
} satisfies Record<string, LaneKind>;

/** The name of a lane kind (a key of `LANE_KINDS`). */
export type LaneKindName = keyof typeof LANE_KINDS;

/** The kind of `slot`. */
export function laneKind(slot: { kind: LaneKindName }): LaneKind {
  return LANE_KINDS[slot.kind];
}

export type { LaneKind } from "./kind";
