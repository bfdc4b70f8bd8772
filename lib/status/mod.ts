/**
 * Pod status generation: turns the pod spec, the runtime's view of the pod
 * and the last sync's outcome into the `status` the kubelet reports (phase,
 * conditions, container statuses, IPs, QoS class), as upstream does.
 *
 * ```ts
 * const status = generatePodStatus({ pod, runtime, inBackoff: plan.inBackoff, now: clock.now() });
 * if (podIsTerminal(status)) { ... }
 * ```
 *
 * @module
 */

export { generatePodStatus, type GeneratePodStatusInput } from "./generate.ts";
export {
  getPhase,
  hasAnyRegularContainerStarted,
  isStaticPod,
  isTerminalPhase,
  podIsTerminal,
} from "./phase.ts";
export {
  ConditionReason,
  containersReadyCondition,
  initializedCondition,
  KUBELET_CONDITIONS,
  podReadyCondition,
  withTransitionTimes,
} from "./conditions.ts";
export {
  apiContainerId,
  CONTAINER_STATUS_UNKNOWN,
  convertContainerStatuses,
  type ConvertOptions,
  RUNTIME_NAME,
  type StartFailures,
  WaitingReason,
} from "./container_statuses.ts";
export { podQOSClass, type QOSClass } from "./qos.ts";
export { optionalRfc3339, rfc3339 } from "./_time.ts";
