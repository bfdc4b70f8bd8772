/**
 * The status manager's rules, as upstream's pkg/kubelet/status/status_manager.go
 * states them: what a new status may not undo, how it is normalized before it
 * is compared, and how it is merged with what the apiserver holds.
 *
 * @module
 */

import type { ContainerStatus, Pod, PodCondition, PodStatus } from "../api/types.ts";
import { compact, jsonEqual } from "../util/json.ts";
import { ConditionReason, KUBELET_CONDITIONS } from "./conditions.ts";
import { isTerminalPhase } from "./phase.ts";

/** Condition types the kubelet writes but others may too (upstream `PodConditionSharedByKubelet`). */
const SHARED_CONDITIONS: readonly string[] = ["DisruptionTarget"];

/**
 * The status fields the kubelet owns. Anything else in the API object's
 * status (nominatedNodeName, resize, resourceClaimStatuses) belongs to other
 * components and is kept as the apiserver has it.
 */
const KUBELET_FIELDS = [
  "observedGeneration",
  "phase",
  "message",
  "reason",
  "hostIP",
  "hostIPs",
  "podIP",
  "podIPs",
  "startTime",
  "initContainerStatuses",
  "containerStatuses",
  "ephemeralContainerStatuses",
  "qosClass",
];

/** A status field by name (the API object may hold fields our type does not declare). */
function field(status: PodStatus | undefined, name: string): unknown {
  return (status as Record<string, unknown> | undefined)?.[name];
}

/** Upstream `MaxPodTerminationMessageLogLength`: shared by all containers of a pod. */
const MAX_POD_TERMINATION_MESSAGE_BYTES = 1024 * 12;

const utf8 = new TextEncoder();

/**
 * The first `max` bytes of a text's UTF-8, as upstream's Go slice
 * `message[:max]` cuts it, except that a character the cut splits is dropped
 * whole (Go would send its stray bytes, which JSON shows as U+FFFD): the
 * result is valid text and cutting it again changes nothing.
 */
function cutUtf8(text: string, max: number): string {
  // Each UTF-16 unit is at most 3 UTF-8 bytes: short texts need no encoding.
  if (text.length * 3 <= max) return text;
  const bytes = utf8.encode(text);
  if (bytes.length <= max) return text;
  let end = max;
  // Back up over continuation bytes (10xxxxxx) to the start of the split character.
  while (end > 0 && (bytes[end]! & 0xc0) === 0x80) end--;
  return new TextDecoder().decode(bytes.subarray(0, end));
}

function isKubeletCondition(type: string): boolean {
  return KUBELET_CONDITIONS.includes(type);
}

/**
 * Rejects a container leaving the terminated state when the restart policy
 * does not allow it (upstream `checkContainerStateTransition`): with `Never`
 * no terminated container runs again, with `OnFailure` one that exited 0
 * does not.
 * @param oldStatuses the statuses last accepted
 * @param newStatuses the proposed statuses
 * @param restartPolicy the pod's restart policy (default Always)
 * @returns an error message naming the container, or undefined when legal
 */
export function checkContainerStateTransition(
  oldStatuses: readonly ContainerStatus[] | undefined,
  newStatuses: readonly ContainerStatus[] | undefined,
  restartPolicy: string | undefined,
): string | undefined {
  if ((restartPolicy ?? "Always") === "Always") return undefined;
  for (const old of oldStatuses ?? []) {
    const term = old.state?.terminated;
    if (!term) continue;
    if (term.exitCode !== 0 && restartPolicy === "OnFailure") continue;
    const next = newStatuses?.find((s) => s.name === old.name);
    if (next && !next.state?.terminated) {
      return `terminated container ${next.name} attempted illegal transition to non-terminated state`;
    }
  }
  return undefined;
}

/**
 * Keeps a condition's `lastTransitionTime` when its status did not change
 * (upstream `updateLastTransitionTime`); a changed or new condition gets `now`.
 * Only the kubelet's own conditions (and the shared DisruptionTarget): the
 * times of conditions others set (readiness gates) are theirs.
 * @param status the status to fix up (modified)
 * @param old the previous status
 * @param now RFC 3339 text of the current time
 */
export function keepTransitionTimes(
  status: PodStatus,
  old: PodStatus | undefined,
  now: string,
): void {
  for (const c of status.conditions ?? []) {
    if (!isKubeletCondition(c.type) && !SHARED_CONDITIONS.includes(c.type)) continue;
    const prev = old?.conditions?.find((o) => o.type === c.type);
    c.lastTransitionTime = prev && prev.status === c.status && prev.lastTransitionTime
      ? prev.lastTransitionTime
      : now;
  }
}

/**
 * Normalizes a status before it is stored or compared (upstream
 * `normalizeStatus`): termination messages cut to the pod's share of 12 KiB
 * (in UTF-8 bytes),
 * container and ephemeral container statuses sorted by name, init container
 * statuses in spec order.
 * Times are already whole seconds in denolet.
 * @param pod the pod (for its container count and init order)
 * @param status the status (modified)
 * @returns the same status
 */
export function normalizeStatus(pod: Pod, status: PodStatus): PodStatus {
  const containers = pod.spec.containers.length + (pod.spec.initContainers?.length ?? 0) +
    (pod.spec.ephemeralContainers?.length ?? 0);
  const budget = containers > 0
    ? Math.floor(MAX_POD_TERMINATION_MESSAGE_BYTES / containers)
    : MAX_POD_TERMINATION_MESSAGE_BYTES;
  const cut = (s: ContainerStatus) => {
    for (const st of [s.state, s.lastState]) {
      const msg = st?.terminated?.message;
      if (msg !== undefined) st!.terminated!.message = cutUtf8(msg, budget);
    }
  };
  status.containerStatuses?.forEach(cut);
  status.initContainerStatuses?.forEach(cut);
  status.ephemeralContainerStatuses?.forEach(cut);
  const byName = (a: ContainerStatus, b: ContainerStatus) =>
    a.name < b.name ? -1 : a.name > b.name ? 1 : 0;
  status.containerStatuses?.sort(byName);
  status.ephemeralContainerStatuses?.sort(byName);
  const order = (pod.spec.initContainers ?? []).map((c) => c.name);
  status.initContainerStatuses?.sort((a, b) => order.indexOf(a.name) - order.indexOf(b.name));
  return status;
}

/**
 * Whether two statuses are the same as far as the kubelet is concerned
 * (upstream `isPodStatusByKubeletEqual`): kubelet conditions compare by
 * status, reason and message only (not times); other conditions and fields
 * the kubelet does not own are ignored.
 * @param old the status the apiserver (or the cache) has
 * @param next the kubelet's status
 * @returns true when nothing needs writing
 */
export function isPodStatusByKubeletEqual(old: PodStatus | undefined, next: PodStatus): boolean {
  // A kubelet condition that went away (a resize condition cleared) is a change too.
  const owned = (s: PodStatus | undefined) =>
    (s?.conditions ?? []).filter((c) =>
      isKubeletCondition(c.type) || SHARED_CONDITIONS.includes(c.type)
    ).length;
  if (owned(old) !== owned(next)) return false;
  for (const c of next.conditions ?? []) {
    if (!isKubeletCondition(c.type) && !SHARED_CONDITIONS.includes(c.type)) continue;
    const o = old?.conditions?.find((x) => x.type === c.type);
    if (
      !o || o.status !== c.status || (o.reason ?? "") !== (c.reason ?? "") ||
      (o.message ?? "") !== (c.message ?? "")
    ) return false;
  }
  return KUBELET_FIELDS.every((f) => jsonEqual(compact(field(old, f)), compact(field(next, f))));
}

function terminalReadyCondition(type: string, phase: string, now: string): PodCondition {
  return {
    type,
    status: "False",
    reason: phase === "Failed" ? ConditionReason.podFailed : ConditionReason.podCompleted,
    lastProbeTime: null,
    lastTransitionTime: now,
  };
}

/**
 * Merges the kubelet's status into the API object's (upstream
 * `mergePodStatus`): conditions the kubelet does not own are kept from the
 * apiserver, as are status fields it does not own; a terminal phase never
 * shows Ready or ContainersReady true.
 * @param apiStatus the status the apiserver has
 * @param ours the kubelet's status
 * @param now RFC 3339 text of the current time
 * @returns the status to write (new object)
 */
export function mergePodStatus(
  apiStatus: PodStatus | undefined,
  ours: PodStatus,
  now: string,
): PodStatus {
  const merged: Record<string, unknown> = { ...(apiStatus ?? {}) };
  for (const f of KUBELET_FIELDS) {
    const value = field(ours, f);
    if (value === undefined) delete merged[f];
    else merged[f] = structuredClone(value);
  }
  const conditions: PodCondition[] = (apiStatus?.conditions ?? [])
    .filter((c) => !isKubeletCondition(c.type))
    .map((c) => ({ ...c }));
  for (const c of ours.conditions ?? []) {
    if (isKubeletCondition(c.type)) conditions.push({ ...c });
  }
  // A shared condition (an eviction's DisruptionTarget) is sent, replacing the API's, only
  // with the move to a terminal phase once no container runs (upstream mergePodStatus).
  const toTerminal = ours.phase !== undefined && isTerminalPhase(ours.phase) &&
    !isTerminalPhase(apiStatus?.phase);
  const running = [...(ours.containerStatuses ?? []), ...(ours.initContainerStatuses ?? [])]
    .some((s) => s.state?.running !== undefined);
  for (const c of ours.conditions ?? []) {
    if (!SHARED_CONDITIONS.includes(c.type) || !toTerminal || running) continue;
    const i = conditions.findIndex((x) => x.type === c.type);
    if (i >= 0) conditions[i] = { ...c };
    else conditions.push({ ...c });
  }
  const phase = ours.phase;
  if (phase !== undefined && isTerminalPhase(phase)) {
    for (const type of ["ContainersReady", "Ready"]) {
      const i = conditions.findIndex((c) => c.type === type);
      const c = conditions[i];
      if (c !== undefined && c.status === "True") {
        conditions[i] = terminalReadyCondition(type, phase, now);
        if (c.observedGeneration !== undefined) {
          conditions[i]!.observedGeneration = c.observedGeneration;
        }
      }
    }
  }
  if (conditions.length > 0) merged.conditions = conditions;
  else delete merged.conditions;
  return merged as PodStatus;
}

const UNKNOWN_TERMINATION = {
  exitCode: 137,
  reason: "ContainerStatusUnknown",
  message: "The container could not be located when the pod was terminated",
};

/** True when the pod shows any evidence of having initialized (upstream `hasPodInitialized`). */
function hasPodInitialized(pod: Pod, status: PodStatus): boolean {
  if ((pod.spec.initContainers ?? []).length === 0) return true;
  for (const s of status.containerStatuses ?? []) {
    if (s.lastState?.terminated || !s.state?.waiting) return true;
  }
  const last = status.initContainerStatuses?.at(-1);
  return last?.lastState?.terminated?.exitCode === 0 || last?.state?.terminated?.exitCode === 0;
}

/**
 * The final status of a pod whose containers are all gone (upstream
 * `TerminatePod`): a container still shown running or waiting is reported
 * terminated with ContainerStatusUnknown (exit 137), init containers that
 * never started are left alone, and a non-static pod gets a terminal phase
 * (Failed unless already Succeeded).
 * @param pod the pod
 * @param status its last status (not modified)
 * @param isStatic whether the pod is a static pod (its phase is kept)
 * @returns the terminal status
 */
export function terminatedStatus(pod: Pod, status: PodStatus, isStatic: boolean): PodStatus {
  const out = structuredClone(status);
  if (hasPodInitialized(pod, status)) {
    for (const s of out.containerStatuses ?? []) {
      if (!s.state?.terminated) s.state = { terminated: { ...UNKNOWN_TERMINATION } };
    }
  }
  const inits = out.initContainerStatuses ?? [];
  // Only the init containers up to the last one that ever ran count as started.
  let lastStarted = 0;
  inits.forEach((s, i) => {
    if (!s.state?.waiting || s.lastState?.terminated) lastStarted = i;
  });
  inits.slice(0, lastStarted + 1).forEach((s) => {
    if (!s.state?.terminated) s.state = { terminated: { ...UNKNOWN_TERMINATION } };
  });
  if (!isStatic && !isTerminalPhase(out.phase)) out.phase = "Failed";
  return out;
}
