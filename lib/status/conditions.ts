/**
 * The kubelet-owned pod conditions (upstream pkg/kubelet/status/generate.go)
 * and the status manager's rule for `lastTransitionTime`: kept from the
 * previous status while a condition's status does not change.
 *
 * @module
 */

import { isRestartableInitContainer } from "../api/pod.ts";
import type { ContainerStatus, Pod, PodCondition, PodPhase } from "../api/types.ts";
import { hasAnyRegularContainerStarted } from "./phase.ts";

/** Condition types the kubelet owns (upstream `PodConditionByKubelet`). */
export const KUBELET_CONDITIONS: readonly string[] = [
  "PodScheduled",
  "Ready",
  "Initialized",
  "ContainersReady",
  "PodReadyToStartContainers",
  "PodResizePending",
  "PodResizeInProgress",
];

/** Condition reasons, as upstream spells them. */
export const ConditionReason = {
  unknownContainerStatuses: "UnknownContainerStatuses",
  podCompleted: "PodCompleted",
  podFailed: "PodFailed",
  containersNotReady: "ContainersNotReady",
  containersNotInitialized: "ContainersNotInitialized",
  readinessGatesNotReady: "ReadinessGatesNotReady",
} as const;

/** Go's `%s` of a []string: "[a b]". */
function goList(names: readonly string[]): string {
  return `[${names.join(" ")}]`;
}

function condition(
  type: string,
  ok: boolean,
  reason?: string,
  message?: string,
): PodCondition {
  const c: PodCondition = { type, status: ok ? "True" : "False" };
  if (reason) c.reason = reason;
  if (message) c.message = message;
  return c;
}

/**
 * `ContainersReady`: true when every app container (and sidecar) is ready.
 * @param pod the pod
 * @param statuses init and app container statuses together
 * @param phase the pod phase
 * @returns the condition (no times)
 */
export function containersReadyCondition(
  pod: Pod,
  statuses: readonly ContainerStatus[],
  phase: PodPhase,
): PodCondition {
  const unknown: string[] = [];
  const unready: string[] = [];
  const watched = [
    ...(pod.spec.initContainers ?? []).filter(isRestartableInitContainer),
    ...pod.spec.containers,
  ];
  for (const c of watched) {
    const s = statuses.find((st) => st.name === c.name);
    if (s === undefined) unknown.push(c.name);
    else if (!s.ready) unready.push(c.name);
  }
  if ((phase === "Succeeded" && unknown.length === 0) || phase === "Failed") {
    const reason = phase === "Failed" ? ConditionReason.podFailed : ConditionReason.podCompleted;
    return condition("ContainersReady", false, reason);
  }
  const messages: string[] = [];
  if (unknown.length > 0) messages.push(`containers with unknown status: ${goList(unknown)}`);
  if (unready.length > 0) messages.push(`containers with unready status: ${goList(unready)}`);
  if (messages.length > 0) {
    return condition(
      "ContainersReady",
      false,
      ConditionReason.containersNotReady,
      messages.join(", "),
    );
  }
  return condition("ContainersReady", true);
}

/**
 * `Ready` (upstream `GeneratePodReadyCondition`): ContainersReady's status,
 * reason and message while it is not True; then False with
 * ReadinessGatesNotReady while any of `spec.readinessGates` has no True
 * condition among `conditions`; else True.
 * @param pod the pod (its readiness gates)
 * @param containersReady the ContainersReady condition
 * @param conditions the pod's other conditions, those set by others included
 * @returns the Ready condition (no times)
 */
export function podReadyCondition(
  pod: Pod,
  containersReady: PodCondition,
  conditions: readonly PodCondition[],
): PodCondition {
  if (containersReady.status !== "True") return { ...containersReady, type: "Ready" };
  const unready: string[] = [];
  for (const gate of pod.spec.readinessGates ?? []) {
    const type = gate.conditionType;
    const c = conditions.find((x) => x.type === type);
    if (c === undefined) {
      unready.push(
        `corresponding condition of pod readiness gate ${goQuote(type)} does not exist.`,
      );
    } else if (c.status !== "True") {
      unready.push(
        `the status of pod readiness gate ${goQuote(type)} is not "True", but ${c.status}`,
      );
    }
  }
  if (unready.length > 0) {
    return condition("Ready", false, ConditionReason.readinessGatesNotReady, unready.join(", "));
  }
  return condition("Ready", true);
}

/** Go's `%q` of a string (JSON escaping is the same for what condition types may hold). */
function goQuote(s: string): string {
  return JSON.stringify(s);
}

/**
 * `Initialized`: true when every init container has succeeded (or, for a
 * sidecar, started), or once any app container has run.
 * @param pod the pod
 * @param initStatuses init container statuses
 * @param appStatuses app container statuses
 * @param phase the pod phase
 * @returns the condition (no times)
 */
export function initializedCondition(
  pod: Pod,
  initStatuses: readonly ContainerStatus[],
  appStatuses: readonly ContainerStatus[],
  phase: PodPhase,
): PodCondition {
  const unknown: string[] = [];
  const incomplete: string[] = [];
  for (const c of pod.spec.initContainers ?? []) {
    const s = initStatuses.find((st) => st.name === c.name);
    if (s === undefined) unknown.push(c.name);
    else if (isRestartableInitContainer(c) ? s.started !== true : !s.ready) incomplete.push(c.name);
  }
  if (phase === "Succeeded" && unknown.length === 0) {
    return condition("Initialized", true, ConditionReason.podCompleted);
  }
  if (hasAnyRegularContainerStarted(pod, appStatuses)) return condition("Initialized", true);
  const messages: string[] = [];
  if (unknown.length > 0) messages.push(`containers with unknown status: ${goList(unknown)}`);
  if (incomplete.length > 0) {
    messages.push(`containers with incomplete status: ${goList(incomplete)}`);
  }
  if (messages.length > 0) {
    return condition(
      "Initialized",
      false,
      ConditionReason.containersNotInitialized,
      messages.join(", "),
    );
  }
  return condition("Initialized", true);
}

/**
 * Sets each condition's `lastTransitionTime` (and `lastProbeTime: null`, as
 * the API server shows it): the previous time when the same type had the
 * same status, else `now`.
 * @param conditions the new conditions (not mutated)
 * @param previous the conditions last reported
 * @param nowText the current time, RFC 3339
 * @returns the conditions with times
 */
export function withTransitionTimes(
  conditions: readonly PodCondition[],
  previous: readonly PodCondition[] | undefined,
  nowText: string,
): PodCondition[] {
  return conditions.map((c) => {
    const old = previous?.find((p) => p.type === c.type);
    const since = old !== undefined && old.status === c.status && old.lastTransitionTime
      ? old.lastTransitionTime
      : nowText;
    const timed: PodCondition = {
      type: c.type,
      ...(c.observedGeneration !== undefined ? { observedGeneration: c.observedGeneration } : {}),
      status: c.status,
      lastProbeTime: null,
      lastTransitionTime: since,
    };
    if (c.observedGeneration !== undefined) timed.observedGeneration = c.observedGeneration;
    if (c.reason) timed.reason = c.reason;
    if (c.message) timed.message = c.message;
    return timed;
  });
}
