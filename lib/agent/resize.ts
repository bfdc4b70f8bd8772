/**
 * The kubelet's part of in-place resize after a pod's sync (upstream
 * SyncPod's resize bookkeeping): a failed resize step sets
 * PodResizeInProgress with reason Error and a ResizeError event; a resize
 * the runtime has fully actuated clears PodResizeInProgress with a
 * ResizeCompleted event; one still under way keeps (or sets) it.
 *
 * Upstream checks "in progress" against the runtime state the sync started
 * from and reports the outcome on the next sync; denolet checks after its
 * sync (the actuated record is already updated), so a resize that went
 * through is reported complete by the same sync.
 *
 * @module
 */

import { type AllocationManager, REASON_ERROR, resizeEventMessage } from "../allocation/mod.ts";
import type { Pod } from "../api/types.ts";
import { EventReason, type EventRecorder, podReference } from "../events/mod.ts";
import {
  type KubeRuntimeManager,
  RESIZE_ACTION,
  type RuntimePodStatus,
  type SyncStep,
} from "../kuberuntime/mod.ts";

/** What {@link reportResize} works with. */
export interface ResizeReporter {
  allocation: AllocationManager;
  runtime: KubeRuntimeManager;
  events: EventRecorder | undefined;
}

/**
 * Updates the pod's PodResizeInProgress condition after a sync.
 * @param r the allocation manager, runtime manager and event recorder
 * @param pod the allocated pod
 * @param observed the runtime status after the sync
 * @param steps the sync's steps
 */
export function reportResize(
  r: ResizeReporter,
  pod: Pod,
  observed: RuntimePodStatus,
  steps: readonly SyncStep[],
): void {
  const uid = pod.metadata.uid!;
  const generation = pod.metadata.generation ?? 0;
  const conditions = r.allocation.conditions;
  const failed = steps.find((s) => s.action === RESIZE_ACTION && s.error);
  if (failed) {
    const message = failed.error!.message;
    const set = conditions.setInProgress(uid, REASON_ERROR, message, generation);
    if (set.changed) {
      r.events?.event(
        podReference(pod),
        "Warning",
        EventReason.resizeError,
        resizeEventMessage("Pod resize error", pod, set.generation, message),
      );
    }
    return;
  }
  if (r.runtime.isPodResizeInProgress(pod, observed)) {
    conditions.setInProgress(uid, "", "", generation);
    return;
  }
  const cleared = conditions.clearInProgress(uid);
  if (cleared !== undefined) {
    r.events?.event(
      podReference(pod),
      "Normal",
      EventReason.resizeCompleted,
      resizeEventMessage("Pod resize completed", pod, cleared),
    );
  }
}
