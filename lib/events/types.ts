/**
 * The contract for recording Kubernetes Events (what `kubectl describe`
 * shows). Callers never wait on it: recording queues the event and returns.
 *
 * @module
 */

import type { ObjectReference } from "../api/cluster_types.ts";

/** Normal or Warning, as upstream's `v1.EventTypeNormal`/`EventTypeWarning`. */
export type EventType = "Normal" | "Warning";

/** Records events about pods and the node; never blocks and never throws. */
export interface EventRecorder {
  /**
   * Queues an event about `object` (a Pod reference with namespace/name/uid,
   * optionally `fieldPath: spec.containers{NAME}`, or the Node).
   */
  event(object: ObjectReference, type: EventType, reason: string, message: string): void;
}

/** A recorder that drops everything (standalone mode without an apiserver). */
export const discardEvents: EventRecorder = { event: () => {} };
