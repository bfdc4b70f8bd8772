/**
 * An EventRecorder that keeps what it is given, for tests that check which
 * events a part records.
 *
 * @module
 */

import type { ObjectReference } from "../../lib/api/cluster_types.ts";
import type { EventRecorder, EventType } from "../../lib/events/types.ts";

/** One recorded event. */
export interface RecordedEvent {
  ref: ObjectReference;
  type: EventType;
  reason: string;
  message: string;
}

/**
 * A recorder whose `got` lists every event, in order.
 * @returns the recorder
 */
export function recordingEvents(): EventRecorder & { got: RecordedEvent[] } {
  const got: RecordedEvent[] = [];
  return {
    got,
    event: (ref, type, reason, message) => void got.push({ ref, type, reason, message }),
  };
}
