/**
 * Small pure questions about a pod's runtime state that both the planner
 * (`computePodActions`) and status generation ask: which instance of a
 * container is current, should it be restarted, does the pod need a new
 * sandbox. Mirrors upstream's kubecontainer helpers and
 * `runtimeutil.PodSandboxChanged`.
 *
 * @module
 */

import { isRestartableInitContainer, type PodIdentity, restartPolicyOf } from "../api/pod.ts";
import type { Container, Pod } from "../api/types.ts";
import type { RuntimeContainer, RuntimePodStatus } from "./types.ts";

/**
 * The identity fields the backoff key and messages use, defaulted.
 * @param pod the pod
 * @returns name, namespace ("default" when unset) and uid
 */
export function podIdentity(pod: Pod): PodIdentity {
  return {
    name: pod.metadata.name ?? "",
    namespace: pod.metadata.namespace ?? "default",
    uid: pod.metadata.uid ?? "",
  };
}

/**
 * The newest instance of a container in the runtime (upstream
 * `FindContainerStatusByName`), relying on `containers` being newest first.
 * @param status the runtime pod status
 * @param name the container name
 * @returns the current instance, if any
 */
export function currentInstance(
  status: RuntimePodStatus,
  name: string,
): RuntimeContainer | undefined {
  return status.containers.find((c) => c.name === name);
}

/**
 * The newest instance of a container that has exited, which upstream's
 * backoff check uses as the event time.
 * @param status the runtime pod status
 * @param name the container name
 * @returns the latest exited instance, if any
 */
export function latestExitedInstance(
  status: RuntimePodStatus,
  name: string,
): RuntimeContainer | undefined {
  return status.containers.find((c) => c.name === name && c.state === "exited");
}

/**
 * Upstream `ShouldContainerBeRestarted`: a container that never ran, or is
 * created/unknown, is (re)started; an exited sidecar always; any other
 * exited one only as the pod's restart policy allows (Never: no; OnFailure:
 * non-zero exit; Always: yes).
 * @param pod the pod
 * @param container the container spec
 * @param status the runtime pod status
 * @returns true when the next sync should start it
 */
export function shouldContainerBeRestarted(
  pod: Pod,
  container: Container,
  status: RuntimePodStatus,
): boolean {
  // A pod marked for deletion is being torn down; never bring it back.
  if (pod.metadata.deletionTimestamp) return false;
  const current = currentInstance(status, container.name);
  if (current === undefined) return true;
  if (current.state === "running") return false;
  if (current.state === "unknown" || current.state === "created") return true;
  // A sidecar's own restartPolicy (Always) overrides the pod's.
  if (isRestartableInitContainer(container)) return true;
  const policy = restartPolicyOf(pod);
  if (policy === "Never") return false;
  if (policy === "OnFailure") return current.exitCode !== 0;
  return true;
}

/**
 * Upstream `hasAnyRegularContainerCreated`: an app container was created,
 * runs or has exited, so initialization finished at some point.
 * @param pod the pod
 * @param status the runtime pod status
 * @returns true when any app container has a current instance past creation
 */
export function hasAnyRegularContainerCreated(pod: Pod, status: RuntimePodStatus): boolean {
  return pod.spec.containers.some((c) => {
    const state = currentInstance(status, c.name)?.state;
    return state === "created" || state === "running" || state === "exited";
  });
}

/**
 * Upstream `isInitContainerFailed`: an init container failed when it exited
 * non-zero, was OOM-killed, or is in an unknown state.
 * @param container the init container's current instance
 * @returns true when it failed
 */
export function isInitContainerFailed(container: RuntimeContainer): boolean {
  if (container.reason === "OOMKilled") return true;
  if (container.state === "exited" && container.exitCode !== 0) return true;
  return container.state === "unknown";
}

/** Whether the pod needs a new sandbox, and with which attempt number. */
export interface SandboxDecision {
  /** True when the pod must be killed and its sandbox re-created. */
  changed: boolean;
  /** The attempt for a new sandbox, or the newest sandbox's attempt. */
  attempt: number;
  /** The sandbox to use or to replace ("" when none applies). */
  sandboxId: string;
  /** Why, in words (for logs); "" when unchanged. */
  reason: string;
}

/**
 * Upstream `PodSandboxChanged`: a new sandbox is needed when there is none,
 * more than one is ready, the newest is not ready, or its network mode no
 * longer matches `spec.hostNetwork`.
 *
 * Upstream also replaces a pod-network sandbox that has no IP; our
 * `RuntimeSandbox.ip` is "" both for "no IP" and "unknown", so that rule is
 * left out rather than risk killing healthy sandboxes in a loop.
 * @param pod the pod
 * @param status the runtime pod status
 * @returns the decision
 */
export function podSandboxChanged(pod: Pod, status: RuntimePodStatus): SandboxDecision {
  const newest = status.sandboxes[0];
  if (newest === undefined) {
    return { changed: true, attempt: 0, sandboxId: "", reason: "no sandbox" };
  }
  const ready = status.sandboxes.filter((s) => s.state === "ready").length;
  const maxAttempt = Math.max(...status.sandboxes.map((s) => s.attempt));
  if (ready > 1) {
    return {
      changed: true,
      attempt: maxAttempt + 1,
      sandboxId: newest.id,
      reason: "multiple sandboxes are ready",
    };
  }
  if (newest.state !== "ready") {
    return {
      changed: true,
      attempt: maxAttempt + 1,
      sandboxId: newest.id,
      reason: "no ready sandbox",
    };
  }
  if (newest.hostNetwork !== (pod.spec.hostNetwork === true)) {
    return {
      changed: true,
      attempt: maxAttempt + 1,
      sandboxId: "",
      reason: "network namespace changed",
    };
  }
  return { changed: false, attempt: maxAttempt, sandboxId: newest.id, reason: "" };
}
