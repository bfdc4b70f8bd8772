/**
 * `spec.activeDeadlineSeconds`, as upstream's activeDeadlineHandler
 * (pkg/kubelet/active_deadline.go) enforces it: once the pod has been active
 * on the node (since its status `startTime`) for that long, the sync loop
 * syncs it (`ShouldSync`, checked every sync tick) and the sync reports it
 * Failed with reason DeadlineExceeded (`ShouldEvict`), which makes the pod
 * worker stop its containers. The deadline is read from the latest spec, so
 * an update through the apiserver takes effect at the next tick.
 *
 * @module
 */

import type { Pod, PodStatus } from "../api/types.ts";
import { EventMessage, EventReason } from "../events/reasons.ts";

/** The status reason and message of a pod past its deadline (upstream's). */
export const DEADLINE_EXCEEDED = {
  reason: EventReason.deadlineExceeded,
  message: EventMessage.deadlineExceeded(),
} as const;

/**
 * Upstream `pastActiveDeadline`: whether the pod has been active longer
 * than its `activeDeadlineSeconds`.
 * @param pod the pod (its latest spec)
 * @param status the status manager's status for it, else the API object's
 * @param now epoch ms
 * @returns false without a deadline or a start time
 */
export function pastActiveDeadline(pod: Pod, status: PodStatus | undefined, now: number): boolean {
  const seconds = pod.spec.activeDeadlineSeconds;
  if (seconds === undefined) return false;
  const start = Date.parse(status?.startTime ?? "");
  if (Number.isNaN(start)) return false;
  return now - start >= seconds * 1000;
}
