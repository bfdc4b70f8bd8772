/**
 * The pod phase from its container statuses, as upstream's `getPhase`
 * (pkg/kubelet/kubelet_pods.go) decides it.
 *
 * @module
 */

import { isRestartableInitContainer, isStaticPod, restartPolicyOf } from "../api/pod.ts";
import type { ContainerStatus, Pod, PodPhase, PodStatus } from "../api/types.ts";

/**
 * Whether a phase is terminal (no container will run again).
 * @param phase a pod phase
 * @returns true for Succeeded and Failed
 */
export function isTerminalPhase(phase: PodPhase | undefined): boolean {
  return phase === "Succeeded" || phase === "Failed";
}

/**
 * Whether a pod status is terminal, for the pod workers: such a pod is
 * finished and will not be restarted.
 * @param status a pod status
 * @returns true when its phase is Succeeded or Failed
 */
export function podIsTerminal(status: PodStatus | undefined): boolean {
  return isTerminalPhase(status?.phase);
}

/**
 * Whether any app container has run (upstream `HasAnyRegularContainerStarted`).
 * @param pod the pod
 * @param statuses app container statuses
 * @returns true when one is running or has terminated
 */
export function hasAnyRegularContainerStarted(
  pod: Pod,
  statuses: readonly ContainerStatus[],
): boolean {
  return pod.spec.containers.some((c) => {
    const s = statuses.find((st) => st.name === c.name);
    return s !== undefined && (s.state.running !== undefined || s.state.terminated !== undefined);
  });
}

/**
 * Computes the phase.
 * @param pod the pod
 * @param initStatuses init container statuses
 * @param appStatuses app container statuses
 * @param podIsTerminal true when the pod worker has decided the pod is done
 *   (its containers will not be restarted whatever the policy)
 * @returns the phase
 */
export function getPhase(
  pod: Pod,
  initStatuses: readonly ContainerStatus[],
  appStatuses: readonly ContainerStatus[],
  podIsTerminal: boolean,
): PodPhase {
  const find = (list: readonly ContainerStatus[], name: string) =>
    list.find((s) => s.name === name);
  let pendingInit = 0;
  let failedInit = 0;
  let unknown = 0, running = 0, waiting = 0, stopped = 0, succeeded = 0;
  for (const c of pod.spec.initContainers ?? []) {
    const s = find(initStatuses, c.name);
    if (isRestartableInitContainer(c)) {
      if (s === undefined) unknown++;
      else if (s.state.running) {
        if (s.started !== true) pendingInit++;
        running++;
      } else if (s.state.terminated) {
        // a stopped sidecar does not count towards the phase
      } else if (s.state.waiting) {
        if (!s.lastState.terminated) {
          pendingInit++;
          waiting++;
        }
      } else {
        pendingInit++;
        unknown++;
      }
      continue;
    }
    if (s === undefined || s.state.running) pendingInit++;
    else if (s.state.terminated) {
      if (s.state.terminated.exitCode !== 0) failedInit++;
    } else if (s.state.waiting && s.lastState.terminated) {
      if (s.lastState.terminated.exitCode !== 0) failedInit++;
    } else pendingInit++;
  }
  for (const c of pod.spec.containers) {
    const s = find(appStatuses, c.name);
    if (s === undefined) unknown++;
    else if (s.state.running) running++;
    else if (s.state.terminated) {
      stopped++;
      if (s.state.terminated.exitCode === 0) succeeded++;
    } else if (s.state.waiting) {
      if (s.lastState.terminated) stopped++;
      else waiting++;
    } else unknown++;
  }
  const policy = restartPolicyOf(pod);
  if (failedInit > 0 && policy === "Never") return "Failed";
  if ((pendingInit > 0 && !hasAnyRegularContainerStarted(pod, appStatuses)) || waiting > 0) {
    return "Pending";
  }
  if (running > 0 && unknown === 0) return "Running";
  if (running === 0 && stopped > 0 && unknown === 0) {
    if (podIsTerminal && !isStaticPod(pod)) return stopped === succeeded ? "Succeeded" : "Failed";
    if (policy === "Always") return "Running"; // all are restarting
    if (stopped === succeeded) return "Succeeded";
    if (policy === "Never") return "Failed";
    return "Running"; // OnFailure: the failed ones are restarting
  }
  return "Pending";
}
