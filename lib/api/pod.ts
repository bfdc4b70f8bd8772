/**
 * What a pod is to the kubelet beyond its API shape: where it came from (the
 * `kubernetes.io/config.*` annotations the config mux stamps), whether it is a
 * static or a mirror pod, the `namespace/name` key that names it in logs and
 * ties a static pod to its mirror, and the spec defaults every subsystem reads
 * the same way (upstream kubetypes and podutil).
 *
 * @module
 */

import type { Container, Pod, RestartPolicy } from "./types.ts";

/** Pods read from `--pod-manifest-path` (the `kubernetes.io/config.source` value). */
export const FILE_SOURCE = "file";
/** Pods read from `--manifest-url`. */
export const HTTP_SOURCE = "http";
/** Pods from the kube-apiserver. */
export const API_SOURCE = "api";

/** The annotations the kubelet keeps on the pods it runs (upstream kubetypes). */
export const ConfigAnnotations = {
  /** Where the pod came from: {@link FILE_SOURCE}, {@link HTTP_SOURCE} or {@link API_SOURCE}. */
  source: "kubernetes.io/config.source",
  /** A static pod's content hash, which is also its UID. */
  hash: "kubernetes.io/config.hash",
  /** When the kubelet first saw the pod, RFC 3339. */
  seen: "kubernetes.io/config.seen",
  /** On a mirror pod: the hash of the static pod it stands for. */
  mirror: "kubernetes.io/config.mirror",
} as const;

/**
 * The `kubernetes.io/config.seen` value for a pod first seen at `ms`: when
 * the node first learnt of it, as a timestamp with sub-second precision.
 * @param ms epoch ms
 * @returns the annotation's value
 */
export function configSeenTimestamp(ms: number): string {
  return new Date(ms).toISOString();
}

/**
 * Tells whether the pod came from a file or URL rather than the apiserver
 * (upstream kubetypes.IsStaticPod: a config source other than "api").
 * @param pod a pod as the config mux hands it on
 * @returns true for a static pod
 */
export function isStaticPod(pod: Pod): boolean {
  const source = pod.metadata.annotations?.[ConfigAnnotations.source];
  return source !== undefined && source !== API_SOURCE;
}

/**
 * Tells whether a pod is a mirror pod: the API object a kubelet keeps for
 * one of its static pods (upstream kubetypes.IsMirrorPod).
 * @param pod any pod; its metadata may be missing (an apiserver object not yet checked)
 * @returns true when it carries the `kubernetes.io/config.mirror` annotation
 */
export function isMirrorPod(pod: Pod): boolean {
  return pod.metadata?.annotations?.[ConfigAnnotations.mirror] !== undefined;
}

/** Priority at and above which a pod is system-critical (upstream scheduling.SystemCriticalPriority). */
export const SYSTEM_CRITICAL_PRIORITY = 2_000_000_000;

/**
 * Whether the kubelet must keep the pod running for the node's sake
 * (upstream kubetypes.IsCriticalPod): a static pod, a mirror pod, or a
 * priority at or above system-critical. Eviction never picks one, and
 * admission under node pressure still lets one in.
 * @param pod the pod
 * @returns true when critical
 */
export function isCriticalPod(pod: Pod): boolean {
  if (isStaticPod(pod) || isMirrorPod(pod)) return true;
  return (pod.spec.priority ?? 0) >= SYSTEM_CRITICAL_PRIORITY;
}

/** The naming fields of a pod, where a caller holds them without the Pod. */
export interface PodName {
  namespace?: string | undefined;
  name?: string | undefined;
}

/**
 * `namespace/name`, upstream's klog.KObj form: the key that names a pod in
 * logs and messages, and ties a static pod to its mirror pod (their UIDs
 * differ). An unset namespace is "default", as the apiserver defaults it.
 * @param pod a pod (its metadata may be missing), or its name and namespace
 * @returns e.g. "kube-system/etcd-node1"
 */
export function podKey(pod: Pod | PodName): string {
  const meta: PodName | undefined = "metadata" in pod ? pod.metadata : pod;
  return `${meta?.namespace ?? "default"}/${meta?.name ?? ""}`;
}

/** The fields that identify a pod in the runtime and in upstream's messages. */
export interface PodIdentity {
  name: string;
  namespace: string;
  uid: string;
}

/**
 * Upstream's format.Pod: `name_namespace(uid)`, as kubelet messages and
 * events name a pod. An unset namespace is "default".
 * @param pod a pod, or its identity
 * @returns e.g. "web_default(8c1f...)"
 */
export function formatPod(pod: Pod | PodIdentity): string {
  if ("metadata" in pod) {
    const meta = pod.metadata;
    return `${meta.name ?? ""}_${meta.namespace ?? "default"}(${meta.uid ?? ""})`;
  }
  return `${pod.name}_${pod.namespace}(${pod.uid})`;
}

/**
 * The pod's restart policy, defaulted as the apiserver does.
 * @param pod the pod
 * @returns Always, OnFailure or Never
 */
export function restartPolicyOf(pod: Pod): RestartPolicy {
  return pod.spec.restartPolicy ?? "Always";
}

/**
 * Whether an init container is a sidecar (`restartPolicy: Always`).
 * @param container an init container spec
 * @returns true for a restartable init container
 */
export function isRestartableInitContainer(container: Container): boolean {
  return container.restartPolicy === "Always";
}

/** The list of the pod spec a container is declared in. */
export type ContainerKind = "containers" | "initContainers" | "ephemeralContainers";

/**
 * A container of the pod by name, from any of its three lists (upstream
 * `podutil.VisitContainers` over all container types).
 * @param pod the pod
 * @param name the container name
 * @returns the spec and the list it is declared in, or undefined
 */
export function findContainer(
  pod: Pod,
  name: string,
): { spec: Container; kind: ContainerKind } | undefined {
  for (const kind of ["containers", "initContainers", "ephemeralContainers"] as const) {
    const spec = (pod.spec[kind] ?? []).find((c: Container) => c.name === name);
    if (spec) return { spec, kind };
  }
  return undefined;
}

/**
 * The one user every container of the pod runs as, when they agree (upstream
 * volume util's FsUserFrom): each container's runAsUser, else the pod's; none
 * when a container has neither or two differ. A projected token file is then
 * that user's.
 * @param pod the pod
 * @returns the shared uid, or undefined
 */
export function podFsUser(pod: Pod): number | undefined {
  const spec = pod.spec;
  let user: number | undefined;
  for (
    const c of [
      ...(spec.initContainers ?? []),
      ...spec.containers,
      ...(spec.ephemeralContainers ?? []),
    ]
  ) {
    const uid = c.securityContext?.runAsUser ?? spec.securityContext?.runAsUser;
    if (uid === undefined || (user !== undefined && user !== uid)) return undefined;
    user = uid;
  }
  return user;
}
