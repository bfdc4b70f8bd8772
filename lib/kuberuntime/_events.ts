/**
 * The pod events a sync produces (what `kubectl describe pod` lists), derived
 * from the steps syncPod records so each step kind maps to its event in one
 * place. Image events (Pulling, Pulled, Failed, BackOff) come from the image
 * manager, which knows whether it pulled; Killing from killContainer, as the
 * kill begins (its step is recorded only once the container stopped).
 *
 * @module
 */

import { podKey } from "../api/pod.ts";
import type { Pod } from "../api/types.ts";
import type { EventRecorder } from "../events/types.ts";
import { EventMessage, EventReason } from "../events/reasons.ts";
import { nodeReference, podReference } from "../events/recorder.ts";
import type { Logger } from "../util/log.ts";
import type { DNSWarning } from "./pod_dns.ts";
import type { SyncStep } from "./_context.ts";
import { HookAction } from "./lifecycle_hooks.ts";

/** Start failures whose events the image manager already recorded. */
const IMAGE_REASONS = new Set([
  "ErrImagePull",
  "ImagePullBackOff",
  "ErrImageNeverPull",
  "InvalidImageName",
  "ImageInspectError",
]);

/**
 * Records the event(s) upstream emits for one sync step.
 * @param events the recorder
 * @param pod the pod the step belongs to
 * @param step the step
 */
export function recordStepEvent(events: EventRecorder, pod: Pod, step: SyncStep): void {
  const container = (name: string) => podReference(pod, { name });
  const { action, target, error } = step;
  switch (action) {
    case "StartContainer":
      if (!error) {
        events.event(
          container(target),
          "Normal",
          EventReason.created,
          EventMessage.created(target),
        );
        events.event(
          container(target),
          "Normal",
          EventReason.started,
          EventMessage.started(target),
        );
      } else if (!IMAGE_REASONS.has(error.reason) && error.reason !== "PostStartHookError") {
        events.event(
          container(target),
          "Warning",
          EventReason.failed,
          EventMessage.error(error.message),
        );
      }
      return;
    case HookAction.postStart:
    case HookAction.preStop:
      if (error) {
        const reason = action === HookAction.postStart
          ? EventReason.failedPostStartHook
          : EventReason.failedPreStopHook;
        events.event(container(target), "Warning", reason, error.message);
      }
      return;
    case HookAction.httpFallback:
      // Upstream records it about the pod; the target is the hook's host:port.
      events.event(
        podReference(pod),
        "Warning",
        EventReason.lifecycleHTTPFallback,
        EventMessage.lifecycleHTTPFallback(target),
      );
      return;
    case "MountVolume":
      if (error) events.event(podReference(pod), "Warning", EventReason.failedMount, error.message);
      return;
    case "CreatePodSandbox":
      if (error) {
        events.event(
          podReference(pod),
          "Warning",
          EventReason.failedCreatePodSandBox,
          error.message,
        );
      }
      return;
  }
}

/**
 * Records the BackOff event of a container held in CrashLoopBackOff.
 * @param events the recorder
 * @param pod the pod
 * @param name the container
 */
export function recordBackOffEvent(events: EventRecorder, pod: Pod, name: string): void {
  const { name: podName = "", namespace = "default", uid = "" } = pod.metadata;
  events.event(
    podReference(pod, { name }),
    "Warning",
    EventReason.backOff,
    EventMessage.backOffRestart(name, { name: podName, namespace, uid }),
  );
}

/**
 * Records the warnings met while forming a pod's resolv.conf, about the pod
 * or the node as upstream's dns.Configurer does, and logs them.
 * @param events the recorder
 * @param logger the logger
 * @param nodeName the node, for warnings about it
 * @param pod the pod
 * @param warnings from pod_dns.ts' podDNS
 */
export function recordDNSWarnings(
  events: EventRecorder,
  logger: Logger,
  nodeName: string,
  pod: Pod,
  warnings: readonly DNSWarning[],
): void {
  for (const w of warnings) {
    const ref = w.about === "node" ? nodeReference(nodeName) : podReference(pod);
    events.event(ref, "Warning", w.reason, w.message);
    logger.warn(w.message, { pod: podKey(pod), reason: w.reason });
  }
}
