/**
 * The scheduling facts of a pod that the kubelet checks again when it admits
 * it: its resource requests as the scheduler adds them up, whether a Node
 * matches its nodeSelector and required node affinity, whether it tolerates a
 * taint, and the host ports it takes. Upstream's counterparts are
 * component-helpers' `resource.PodRequests`, `scheduling/corev1/nodeaffinity`
 * and `ToleratesTaint`, and the scheduler's nodeports plugin.
 *
 * @module
 */

import type { Node, Taint } from "./cluster_types.ts";
import { isRestartableInitContainer } from "./pod.ts";
import { intValue, isValidQuantity, milliValue } from "./quantity.ts";
import type {
  NodeSelectorRequirement,
  NodeSelectorTerm,
  Pod,
  Quantity,
  Toleration,
} from "./types.ts";

/** Resource name → amount in the scheduler's units: cpu in millicores, the rest as integers. */
export type ResourceAmounts = Map<string, number>;

/**
 * A resource list in the scheduler's units; unparsable quantities (refused
 * by validation before a pod gets here) count as zero.
 * @param list a `requests`, `limits` or `overhead` list
 * @returns the amounts
 */
export function resourceAmounts(list: Record<string, Quantity> | undefined): ResourceAmounts {
  const out: ResourceAmounts = new Map();
  for (const [name, q] of Object.entries(list ?? {})) {
    if (!isValidQuantity(q)) continue;
    out.set(name, name === "cpu" ? milliValue(q) : intValue(q));
  }
  return out;
}

function addInto(total: ResourceAmounts, part: ResourceAmounts): void {
  for (const [name, v] of part) total.set(name, (total.get(name) ?? 0) + v);
}

function maxInto(total: ResourceAmounts, part: ResourceAmounts): void {
  for (const [name, v] of part) total.set(name, Math.max(total.get(name) ?? 0, v));
}

/**
 * The containers' amounts of one list (`requests` or `limits`) as upstream's
 * aggregateContainerResourcesByFn adds them up: the containers' sum, sidecars
 * (restartable init containers) added to it, raised to what the largest init
 * container needs while the sidecars started before it run.
 */
function aggregateContainers(pod: Pod, list: "requests" | "limits"): ResourceAmounts {
  const total: ResourceAmounts = new Map();
  for (const c of pod.spec.containers) addInto(total, resourceAmounts(c.resources?.[list]));
  const sidecars: ResourceAmounts = new Map();
  const initPeak: ResourceAmounts = new Map();
  for (const c of pod.spec.initContainers ?? []) {
    const own = resourceAmounts(c.resources?.[list]);
    if (isRestartableInitContainer(c)) {
      addInto(total, own);
      addInto(sidecars, own);
      maxInto(initPeak, sidecars);
    } else {
      const during = new Map(own);
      addInto(during, sidecars);
      maxInto(initPeak, during);
    }
  }
  maxInto(total, initPeak);
  return total;
}

/** Pod-level cpu and memory amounts, when set, replace the containers' (upstream applyPodLevelResources). */
function applyPodLevel(total: ResourceAmounts, list: Record<string, Quantity> | undefined): void {
  const podLevel = resourceAmounts(list);
  for (const name of ["cpu", "memory"]) {
    const v = podLevel.get(name);
    if (v !== undefined) total.set(name, v);
  }
}

/**
 * The pod's requests as the scheduler and the kubelet's admission count them
 * (upstream `PodRequests`): the containers' aggregate (see aggregateContainers),
 * pod-level cpu and memory requests in their place when set, plus the pod's overhead.
 * @param pod the pod (requests already defaulted from limits)
 * @returns resource → amount
 */
export function podRequests(pod: Pod): ResourceAmounts {
  const total = aggregateContainers(pod, "requests");
  applyPodLevel(total, pod.spec.resources?.requests);
  addInto(total, resourceAmounts(pod.spec.overhead));
  return total;
}

/**
 * The pod's limits as upstream's `PodLimits` counts them for the pod cgroup:
 * the containers' aggregate, pod-level cpu and memory limits in their place
 * when set, and the pod's overhead added to each non-zero limit only.
 * @param pod the pod
 * @returns resource → amount (cpu in millicores, memory in bytes)
 */
export function podLimits(pod: Pod): ResourceAmounts {
  const total = aggregateContainers(pod, "limits");
  applyPodLevel(total, pod.spec.resources?.limits);
  for (const [name, v] of resourceAmounts(pod.spec.overhead)) {
    const limit = total.get(name);
    if (limit !== undefined && limit !== 0) total.set(name, limit + v);
  }
  return total;
}

function requirementMatches(req: NodeSelectorRequirement, value: string | undefined): boolean {
  const values = req.values ?? [];
  switch (req.operator) {
    case "In":
      return value !== undefined && values.includes(value);
    case "NotIn":
      return value === undefined || !values.includes(value);
    case "Exists":
      return value !== undefined;
    case "DoesNotExist":
      return value === undefined;
    case "Gt":
    case "Lt": {
      if (value === undefined || values.length !== 1) return false;
      if (!/^-?\d+$/.test(value) || !/^-?\d+$/.test(values[0]!)) return false;
      const have = BigInt(value);
      const want = BigInt(values[0]!);
      return req.operator === "Gt" ? have > want : have < want;
    }
    default:
      return false;
  }
}

function termMatches(term: NodeSelectorTerm, node: Node): boolean {
  const exprs = term.matchExpressions ?? [];
  const fields = term.matchFields ?? [];
  // An empty term matches no node.
  if (exprs.length === 0 && fields.length === 0) return false;
  const labels = node.metadata.labels ?? {};
  for (const req of exprs) {
    if (!requirementMatches(req, labels[req.key])) return false;
  }
  for (const req of fields) {
    // metadata.name with In or NotIn is the only field selector upstream supports.
    if (req.key !== "metadata.name" || (req.operator !== "In" && req.operator !== "NotIn")) {
      return false;
    }
    if (!requirementMatches(req, node.metadata.name)) return false;
  }
  return true;
}

/**
 * Whether the Node satisfies the pod's `nodeSelector` and its required node
 * affinity (upstream `GetRequiredNodeAffinity(pod).Match(node)`).
 * @param pod the pod
 * @param node the Node
 * @returns true when both match (an absent one matches)
 */
export function matchesNodeSelectorAndAffinity(pod: Pod, node: Node): boolean {
  const labels = node.metadata.labels ?? {};
  for (const [k, v] of Object.entries(pod.spec.nodeSelector ?? {})) {
    if (labels[k] !== v) return false;
  }
  const required = pod.spec.affinity?.nodeAffinity?.requiredDuringSchedulingIgnoredDuringExecution;
  if (!required) return true;
  return required.nodeSelectorTerms.some((term) => termMatches(term, node));
}

/**
 * Whether a toleration tolerates a taint (upstream `ToleratesTaint`): an
 * empty effect or key matches any, `Exists` any value, `Equal` (the default)
 * the same value.
 * @param t the toleration
 * @param taint the taint
 * @returns true when tolerated
 */
export function toleratesTaint(t: Toleration, taint: Taint): boolean {
  if (t.effect && t.effect !== taint.effect) return false;
  if (t.key && t.key !== taint.key) return false;
  if (t.operator === "Exists") return true;
  return (t.value ?? "") === (taint.value ?? "");
}

/**
 * The first taint no toleration of the pod tolerates, among those `filter` keeps.
 * @param taints the Node's taints
 * @param tolerations the pod's tolerations
 * @param filter which taints count
 * @returns that taint, or undefined
 */
export function findUntoleratedTaint(
  taints: readonly Taint[],
  tolerations: readonly Toleration[],
  filter: (t: Taint) => boolean,
): Taint | undefined {
  return taints.find((taint) =>
    filter(taint) && !tolerations.some((t) => toleratesTaint(t, taint))
  );
}

/** A host port a pod takes: protocol, host IP ("0.0.0.0" for all) and port. */
export interface HostPort {
  protocol: string;
  ip: string;
  port: number;
}

/**
 * The host ports of the pod's containers and init containers (ports with a
 * hostPort), as the scheduler's nodeports plugin lists them.
 * @param pod the pod
 * @returns its host ports
 */
export function podHostPorts(pod: Pod): HostPort[] {
  const out: HostPort[] = [];
  for (const c of [...pod.spec.containers, ...(pod.spec.initContainers ?? [])]) {
    for (const p of c.ports ?? []) {
      if (!p.hostPort || p.hostPort <= 0) continue;
      out.push({ protocol: p.protocol ?? "TCP", ip: p.hostIP || "0.0.0.0", port: p.hostPort });
    }
  }
  return out;
}

/**
 * Whether two host ports clash: same protocol and port, and the same IP or
 * either on every address (0.0.0.0).
 * @param a one port
 * @param b the other
 * @returns true when they cannot both be bound
 */
export function hostPortsConflict(a: HostPort, b: HostPort): boolean {
  if (a.protocol !== b.protocol || a.port !== b.port) return false;
  return a.ip === b.ip || a.ip === "0.0.0.0" || b.ip === "0.0.0.0";
}
