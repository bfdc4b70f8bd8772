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
 * {@link StatusManager} caches each pod's status, the one the sync loop,
 * `/pods` and the apiserver all see; with an apiserver, {@link ApiStatusWriter}
 * patches `pods/NAME/status` only on change, reconciling every 10s.
 *
 * @module
 */

export { generatePodStatus, type GeneratePodStatusInput } from "./generate.ts";
export {
  getPhase,
  hasAnyRegularContainerStarted,
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
export {
  StatusManager,
  type StatusManagerOptions,
  type StatusSink,
  type VersionedStatus,
} from "./status_manager.ts";
export {
  type ApiPodRef,
  ApiStatusWriter,
  type ApiStatusWriterOptions,
} from "./api_status_writer.ts";
export {
  checkContainerStateTransition,
  isPodStatusByKubeletEqual,
  mergePodStatus,
  normalizeStatus,
  terminatedStatus,
} from "./_status_rules.ts";
export { type PodStatusPatch, podStatusPatch } from "./_status_patch.ts";
