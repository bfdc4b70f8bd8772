/**
 * The values that flow between the runtime reader, the pure planner
 * (`computePodActions`), the executor (`syncPod`), PLEG and status generation.
 *
 * Everything here is plain data: no methods, no I/O.
 *
 * @module
 */

/** CRI labels and annotations the upstream kubelet puts on sandboxes and containers. */
export const Labels = {
  podName: "io.kubernetes.pod.name",
  podNamespace: "io.kubernetes.pod.namespace",
  podUID: "io.kubernetes.pod.uid",
  containerName: "io.kubernetes.container.name",
} as const;

/** CRI annotations the upstream kubelet puts on containers. */
export const Annotations = {
  containerHash: "io.kubernetes.container.hash",
  restartCount: "io.kubernetes.container.restartCount",
  terminationMessagePath: "io.kubernetes.container.terminationMessagePath",
  terminationMessagePolicy: "io.kubernetes.container.terminationMessagePolicy",
  terminationGracePeriod: "io.kubernetes.pod.terminationGracePeriod",
  podDeletionGracePeriod: "io.kubernetes.pod.deletionGracePeriod",
  preStopHandler: "io.kubernetes.container.preStopHandler",
  containerPorts: "io.kubernetes.container.ports",
} as const;

/** A container's state as CRI reports it, in words. */
export type RuntimeContainerState = "created" | "running" | "exited" | "unknown";

/** One container of a pod as the runtime sees it (CRI ContainerStatus + our labels). */
export interface RuntimeContainer {
  id: string;
  sandboxId: string;
  /** `io.kubernetes.container.name`. */
  name: string;
  state: RuntimeContainerState;
  /** Epoch ms; 0 when unknown. */
  createdAt: number;
  startedAt: number;
  finishedAt: number;
  exitCode: number;
  /** CRI's reason ("Completed", "Error", "OOMKilled", ...). */
  reason: string;
  message: string;
  /** The image the spec asked for. */
  image: string;
  /** The resolved image id/digest. */
  imageRef: string;
  /** From the `io.kubernetes.container.restartCount` annotation. */
  restartCount: number;
  /** From the `io.kubernetes.container.hash` annotation. */
  hash: string;
  /**
   * The cgroup resources the runtime reports the container runs with
   * (CRI ContainerStatus.resources, in the API's units); absent when it
   * reports none (list calls, older runtimes).
   */
  resources?: RuntimeContainerResources;
}

/**
 * A container's resources as read back from the runtime (upstream
 * `kubecontainer.ContainerResources`): cpu in millicores from the shares and
 * the CFS quota, memory in bytes; each absent when not set.
 */
export interface RuntimeContainerResources {
  cpuRequest?: number;
  cpuLimit?: number;
  memoryLimit?: number;
}

/** A pod sandbox as the runtime sees it. */
export interface RuntimeSandbox {
  id: string;
  state: "ready" | "notready";
  /** CRI metadata.attempt. */
  attempt: number;
  /** Epoch ms. */
  createdAt: number;
  /** Primary pod IP, "" for host-network or unknown. */
  ip: string;
  additionalIps: string[];
  /** True when the sandbox uses the node's network namespace. */
  hostNetwork: boolean;
}

/**
 * Everything the runtime holds for one pod UID.
 *
 * Invariant: `sandboxes` is sorted newest first; `containers` is sorted newest
 * first (by createdAt), so the first entry with a given name is that
 * container's current instance and the next one is its previous.
 */
export interface RuntimePodStatus {
  uid: string;
  name: string;
  namespace: string;
  sandboxes: RuntimeSandbox[];
  containers: RuntimeContainer[];
}

/** One container the planner wants killed, and why. */
export interface ContainerToKill {
  containerId: string;
  name: string;
  /** Machine-readable reason, e.g. "SpecChanged", "Unhealthy", "NotInSpec". */
  reason: string;
  message: string;
  /**
   * The grace period for this kill when it is not the pod's: a failed
   * liveness or startup probe's own `terminationGracePeriodSeconds`.
   */
  gracePeriodSeconds?: number;
}

/** A container the planner wanted to start but cannot yet because of backoff. */
export interface ContainerInBackoff {
  name: string;
  /** "CrashLoopBackOff" (or "ImagePullBackOff" when decided by the executor). */
  reason: string;
  message: string;
  /** Epoch ms when the backoff ends. */
  until: number;
}

import type { ResourceNumbers } from "../api/resources.ts";

/** One running container whose cgroup resources are changed in place (in-place resize). */
export interface ContainerToUpdate {
  /** The container's name in the spec. */
  name: string;
  /** The running instance. */
  containerId: string;
  /** An init container (else an app container). */
  isInit: boolean;
  /** The allocated values. */
  desired: ResourceNumbers;
  /** The actuated values before this update. */
  current: ResourceNumbers;
}

/** The resources a resize updates, in the order they are applied. */
export type ResizeResource = "memory" | "cpu";

/** Per resource, the containers to update, decreases before increases. */
export type ContainersToUpdate = Record<ResizeResource, ContainerToUpdate[]>;

/**
 * The plan for one sync of one pod, as upstream's `podActions`.
 *
 * The executor carries these out in order: kill pod (all containers, then the
 * sandbox) if `killPod`; create sandbox if `createSandbox`; kill
 * `containersToKill`; start `ephemeralContainersToStart`; start
 * `initContainersToStart` (next init container); start `containersToStart`.
 */
export interface PodActions {
  killPod: boolean;
  createSandbox: boolean;
  /** The sandbox to use when not creating one ("" if none). */
  sandboxId: string;
  /** The CRI attempt number for a new sandbox. */
  attempt: number;
  /** Indexes into `spec.initContainers` to start now (at most one unless sidecars). */
  initContainersToStart: number[];
  /** Indexes into `spec.containers` to start now. */
  containersToStart: number[];
  /** Indexes into `spec.ephemeralContainers` to start now (each once, ever). */
  ephemeralContainersToStart: number[];
  containersToKill: ContainerToKill[];
  /** Containers held back by CrashLoopBackOff; reported in status, not started. */
  inBackoff: ContainerInBackoff[];
  /**
   * Running containers whose cgroup resources change in place (in-place
   * resize), per resource; absent when none do. Applied after the kills,
   * before any start.
   */
  containersToUpdate?: ContainersToUpdate;
}

/**
 * Backoff key for a container, as upstream keys it (pod name, namespace, uid,
 * container name, spec hash), so a changed spec starts with no backoff.
 */
export function backoffKey(
  pod: { name: string; namespace: string; uid: string },
  containerName: string,
  hash: string,
): string {
  return `${pod.name}_${pod.namespace}_${pod.uid}_${containerName}_${hash}`;
}
