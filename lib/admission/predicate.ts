/**
 * The predicate admit handler: before a new pod starts, the kubelet checks
 * again what the scheduler checked, against the pods it already admitted
 * (upstream's predicateAdmitHandler, pkg/kubelet/lifecycle/predicate.go). A pod that
 * does not fit is rejected with the first failure's reason — OutOfcpu,
 * OutOfmemory, OutOfpods, NodeAffinity, NodeName, NodePorts,
 * TaintToleration, PodOSSelectorNodeLabelDoesNotMatch, PodOSNotSupported,
 * SupplementalGroupsPolicyNotSupported —
 * and goes Failed with "Pod was rejected: <message>"; the other pods are
 * untouched.
 *
 * Not done, as upstream does it: the critical-pod failure handler (which
 * evicts lower-priority pods to make room for a static or system-critical
 * pod) — such a pod is rejected like any other.
 *
 * @module
 */

import type { Node } from "../api/cluster_types.ts";
import { isStaticPod } from "../api/pod.ts";
import {
  findUntoleratedTaint,
  hostPortsConflict,
  matchesNodeSelectorAndAffinity,
  podHostPorts,
  podRequests,
  resourceAmounts,
} from "../api/scheduling.ts";
import type { Pod } from "../api/types.ts";
import type { PodAdmitHandler, PodAdmitResult } from "./types.ts";

type AdmitResult = PodAdmitResult;

/** Upstream's InsufficientResourcePrefix: "OutOf" + the resource name. */
const INSUFFICIENT_PREFIX = "OutOf";

/** The OS this node runs (Go's runtime.GOOS). */
const NODE_OS = "linux";

const NATIVE_RESOURCES = new Set(["cpu", "memory", "ephemeral-storage"]);

/** Upstream's IsExtendedResourceName: not native and not a quota `requests.` name. */
function isExtendedResource(name: string): boolean {
  const native = !name.includes("/") || name.includes("kubernetes.io/");
  return !native && !name.startsWith("requests.");
}

function rejected(reason: string, message: string): AdmitResult {
  return { admit: false, reason, message };
}

function predicateFailed(name: string, description: string): AdmitResult {
  return rejected(name, `Predicate ${name} failed: ${description}`);
}

function insufficient(name: string, requested: number, used: number, capacity: number) {
  return rejected(
    `${INSUFFICIENT_PREFIX}${name}`,
    `Node didn't have enough resource: ${name}, requested: ${requested}, used: ${used}, capacity: ${capacity}`,
  );
}

/** The noderesources fit check: pods first, then cpu, memory, storage, the rest. */
function checkResources(pod: Pod, others: readonly Pod[], node: Node): AdmitResult | undefined {
  const allocatable = resourceAmounts(node.status?.allocatable);
  const maxPods = allocatable.get("pods") ?? 0;
  if (others.length + 1 > maxPods) return insufficient("pods", 1, others.length, maxPods);

  const request = podRequests(pod);
  const used = new Map<string, number>();
  for (const other of others) {
    for (const [name, v] of podRequests(other)) used.set(name, (used.get(name) ?? 0) + v);
  }
  const names = [
    ...NATIVE_RESOURCES,
    ...[...request.keys()].filter((n) => !NATIVE_RESOURCES.has(n) && n !== "pods"),
  ];
  for (const name of names) {
    const want = request.get(name) ?? 0;
    if (want <= 0) continue;
    // Extended resources the node does not advertise are left to cluster-level
    // managers, as upstream's removeMissingExtendedResources does.
    if (isExtendedResource(name) && !allocatable.has(name)) continue;
    const capacity = allocatable.get(name) ?? 0;
    const inUse = used.get(name) ?? 0;
    if (want > capacity - inUse) return insufficient(name, want, inUse, capacity);
  }
  return undefined;
}

/**
 * Decides whether a pod may start on this node (upstream's
 * predicateAdmitHandler.Admit); only the first failure is reported.
 * @param pod the pod to admit
 * @param others the pods already admitted and still active
 * @param node the Node as last known (or as denolet would register it)
 * @returns admit, or the reason and message to reject it with
 */
export function admitPod(pod: Pod, others: readonly Pod[], node: Node): AdmitResult {
  const podOS = pod.metadata.labels?.["kubernetes.io/os"];
  if (podOS !== undefined && podOS !== NODE_OS) {
    return rejected(
      "PodOSSelectorNodeLabelDoesNotMatch",
      "Failed to admit pod as the `kubernetes.io/os` label doesn't match node label",
    );
  }
  if (pod.spec.os && pod.spec.os.name !== NODE_OS) {
    return rejected(
      "PodOSNotSupported",
      "Failed to admit pod as the OS field doesn't match node OS",
    );
  }
  // A runtime that cannot enforce Strict (containerd 1.6 does not say it can) gets no such pod.
  if (
    pod.spec.securityContext?.supplementalGroupsPolicy === "Strict" &&
    node.status?.features?.supplementalGroupsPolicy !== true
  ) {
    return rejected(
      "SupplementalGroupsPolicyNotSupported",
      "SupplementalGroupsPolicy=Strict is not supported in this node",
    );
  }
  const fit = checkResources(pod, others, node);
  if (fit) return fit;
  if (!matchesNodeSelectorAndAffinity(pod, node)) {
    return predicateFailed("NodeAffinity", "node(s) didn't match Pod's node affinity/selector");
  }
  if (pod.spec.nodeName && pod.spec.nodeName !== node.metadata.name) {
    return predicateFailed("NodeName", "node(s) didn't match the requested node name");
  }
  const taken = others.flatMap(podHostPorts);
  if (podHostPorts(pod).some((p) => taken.some((t) => hostPortsConflict(p, t)))) {
    return predicateFailed(
      "NodePorts",
      "node(s) didn't have free ports for the requested pod ports",
    );
  }
  // Static pods run whatever the node's taints say; the kubelet cares only about NoExecute.
  if (!isStaticPod(pod)) {
    const untolerated = findUntoleratedTaint(
      node.spec?.taints ?? [],
      pod.spec.tolerations ?? [],
      (t) => t.effect === "NoExecute",
    );
    if (untolerated) {
      return predicateFailed("TaintToleration", "node(s) had taints that the pod didn't tolerate");
    }
  }
  return { admit: true };
}

/** {@link admitPod} against the Node as last known; every pod is admitted before there is one. */
export class PredicateAdmitHandler implements PodAdmitHandler {
  readonly #node: () => Node | undefined;

  /** @param node the registered Node, or the one denolet would register (standalone) */
  constructor(node: () => Node | undefined) {
    this.#node = node;
  }

  /**
   * @param pod the pod being admitted
   * @param otherPods the pods already admitted and still active
   * @returns the first predicate that fails, or admitted
   */
  admit(pod: Pod, otherPods: readonly Pod[]): PodAdmitResult {
    const node = this.#node();
    return node ? admitPod(pod, otherPods, node) : { admit: true };
  }
}
