/**
 * The Node's status as a pure function of the machine, the configuration,
 * the previous status and "now": upstream's status setters
 * (pkg/kubelet/nodestatus/setters.go) folded into one call that also says
 * which events the change warrants.
 *
 * Condition rules, as upstream:
 * - MemoryPressure/DiskPressure/PIDPressure are added as Unknown, and their
 *   status, reason, message and lastTransitionTime only change when the
 *   status flips (each flip records a `NodeHas…` event, so the first status
 *   a kubelet posts records NodeHasSufficientMemory and its siblings).
 * - Ready is recomputed every time; lastTransitionTime is kept while the
 *   status stays, and a flip records NodeReady or NodeNotReady.
 * - Every condition we own gets lastHeartbeatTime = now; conditions we do
 *   not own (NetworkUnavailable, node-problem-detector's) are left alone,
 *   and Ready stays last.
 *
 * @module
 */

import type { ContainerImage, NodeCondition, NodeStatus } from "../api/cluster_types.ts";
import type { EventType } from "../events/types.ts";
import { jsonEqual } from "../util/json.ts";
import { metaTime } from "../util/time.ts";
import { type AllocatableOptions, computeNodeResources, sameQuantity } from "./allocatable.ts";
import type { MachineInfo } from "../stats/mod.ts";
import type { Image } from "../cri/types.ts";

/** The Kubernetes release whose kubelet denolet stands in for. */
export const KUBERNETES_COMPAT_VERSION = "1.34.0";

/** Upstream's nodeStatusMaxImages default. */
export const DEFAULT_MAX_IMAGES = 50;

/** Upstream's MaxNamesPerImageInNodeStatus. */
const MAX_NAMES_PER_IMAGE = 5;

/**
 * The kubeletVersion a denolet node reports: a semver whose core is the
 * Kubernetes release it is compatible with and whose pre-release tag says
 * denolet and its own version ("v1.34.0-denolet.0.1.0").
 * @param denoletVersion lib/util/version.ts's VERSION, already in that form
 *   ("v1.34.0-denolet.0.1.0": its own version is the part after "denolet."), or
 *   denolet's version alone ("v0.1.0")
 * @param kubernetesVersion the compatible release
 * @returns the version string
 */
export function kubeletVersionString(
  denoletVersion: string,
  kubernetesVersion = KUBERNETES_COMPAT_VERSION,
): string {
  const own = /-denolet\.(\d+\.\d+\.\d+)/.exec(denoletVersion)?.[1];
  const core = own ?? /(\d+\.\d+\.\d+)/.exec(denoletVersion)?.[1] ?? "0.0.0";
  return `v${kubernetesVersion.replace(/^v/, "")}-denolet.${core}`;
}

/** An event the status change warrants, recorded against the Node. */
export interface NodeStatusEvent {
  type: EventType;
  reason: string;
  message: string;
}

/** Everything {@link buildNodeStatus} needs. */
export interface NodeStatusInput extends AllocatableOptions {
  nodeName: string;
  machine: MachineInfo;
  /** The status the apiserver holds now (undefined for a new Node). */
  previous?: NodeStatus | undefined;
  /** Epoch ms. */
  now: number;
  /** Node IPs (`--node-ip`, or detected; dual-stack gives two); may be empty. */
  nodeIPs: readonly string[];
  /** The Hostname address (the hostname, or `--hostname-override`). */
  hostname: string;
  /** `--port` (10250). */
  kubeletPort: number;
  /** `containerd://1.6.20`, or `<type>://Unknown` when the runtime did not answer. */
  containerRuntimeVersion: string;
  /** See {@link kubeletVersionString}. */
  kubeletVersion: string;
  /**
   * Why the node is not ready, in upstream's words ("container runtime is
   * down", "PLEG is not healthy: …", "container runtime network not ready:
   * …"); empty when ready.
   */
  notReadyReasons: readonly string[];
  /** The eviction manager's verdicts; false when absent. */
  pressure?: { memory?: boolean; disk?: boolean; pid?: boolean };
  /** Images on the node, largest first; undefined keeps the previous list. */
  images?: readonly ContainerImage[] | undefined;
  /** `nodeStatusMaxImages`; -1 for no cap. */
  maxImages?: number;
}

/** What {@link buildNodeStatus} returns. */
export interface BuiltNodeStatus {
  status: NodeStatus;
  events: NodeStatusEvent[];
}

/**
 * The Ready condition's message: upstream aggregates the errors, printing a
 * single one as is and several as `[a, b]`.
 * @param reasons the errors
 * @returns the message, or upstream's ready message when there are none
 */
export function readyMessage(reasons: readonly string[]): string {
  const unique = [...new Set(reasons.filter((r) => r !== ""))];
  if (unique.length === 0) return "kubelet is posting ready status";
  if (unique.length === 1) return unique[0]!;
  return `[${unique.join(", ")}]`;
}

interface PressureSpec {
  type: string;
  under: boolean;
  yes: [reason: string, message: string, event: string];
  no: [reason: string, message: string, event: string];
}

function pressureSpecs(p: NodeStatusInput["pressure"]): PressureSpec[] {
  return [{
    type: "MemoryPressure",
    under: p?.memory ?? false,
    yes: [
      "KubeletHasInsufficientMemory",
      "kubelet has insufficient memory available",
      "NodeHasInsufficientMemory",
    ],
    no: [
      "KubeletHasSufficientMemory",
      "kubelet has sufficient memory available",
      "NodeHasSufficientMemory",
    ],
  }, {
    type: "DiskPressure",
    under: p?.disk ?? false,
    yes: ["KubeletHasDiskPressure", "kubelet has disk pressure", "NodeHasDiskPressure"],
    no: ["KubeletHasNoDiskPressure", "kubelet has no disk pressure", "NodeHasNoDiskPressure"],
  }, {
    type: "PIDPressure",
    under: p?.pid ?? false,
    yes: [
      "KubeletHasInsufficientPID",
      "kubelet has insufficient PID available",
      "NodeHasInsufficientPID",
    ],
    no: ["KubeletHasSufficientPID", "kubelet has sufficient PID available", "NodeHasSufficientPID"],
  }];
}

/** Upstream's recordNodeStatusEvent wording. */
function statusEvent(nodeName: string, reason: string): NodeStatusEvent {
  return { type: "Normal", reason, message: `Node ${nodeName} status is now: ${reason}` };
}

function buildConditions(
  input: NodeStatusInput,
  heartbeat: string,
  events: NodeStatusEvent[],
): NodeCondition[] {
  const conditions = (input.previous?.conditions ?? []).map((c) => ({ ...c }));
  const find = (type: string) => conditions.find((c) => c.type === type);
  for (const spec of pressureSpecs(input.pressure)) {
    let c = find(spec.type);
    if (!c) {
      c = { type: spec.type, status: "Unknown" };
      conditions.push(c);
    }
    c.lastHeartbeatTime = heartbeat;
    const want = spec.under ? "True" : "False";
    if (c.status === want) continue;
    const [reason, message, event] = spec.under ? spec.yes : spec.no;
    Object.assign(c, { status: want, reason, message, lastTransitionTime: heartbeat });
    events.push(statusEvent(input.nodeName, event));
  }

  const readyIdx = conditions.findIndex((c) => c.type === "Ready");
  const old = readyIdx >= 0 ? conditions.splice(readyIdx, 1)[0] : undefined;
  const ok = input.notReadyReasons.every((r) => r === "");
  const ready: NodeCondition = {
    type: "Ready",
    status: ok ? "True" : "False",
    lastHeartbeatTime: heartbeat,
    lastTransitionTime: heartbeat,
    reason: ok ? "KubeletReady" : "KubeletNotReady",
    message: readyMessage(input.notReadyReasons),
  };
  if (old?.status === ready.status && old.lastTransitionTime) {
    ready.lastTransitionTime = old.lastTransitionTime;
  } else if (old) {
    events.push(statusEvent(input.nodeName, ok ? "NodeReady" : "NodeNotReady"));
  }
  // Ready goes last: version-skewed components once read only the last condition.
  conditions.push(ready);
  return conditions;
}

/**
 * The runtime's images as status.images lists them (upstream's image list
 * and Images setter): largest first (ties by ID, descending), each named by
 * its repo digests and then its repo tags.
 * @param images the CRI ListImages answer
 * @returns the list, uncapped (buildNodeStatus caps it)
 */
export function nodeImages(images: readonly Image[]): ContainerImage[] {
  const sorted = [...images].sort((a, b) =>
    a.size !== b.size ? b.size - a.size : a.id < b.id ? 1 : a.id > b.id ? -1 : 0
  );
  return sorted.map((img) => ({
    names: [...img.repoDigests, ...img.repoTags],
    sizeBytes: img.size,
  }));
}

function capImages(images: readonly ContainerImage[], max: number): ContainerImage[] {
  const list = max >= 0 ? images.slice(0, max) : [...images];
  return list.map((img) => {
    const out: ContainerImage = { ...img };
    if (img.names) out.names = img.names.slice(0, MAX_NAMES_PER_IMAGE);
    return out;
  });
}

/**
 * Computes the Node's status.
 * @param input machine facts, configuration, previous status, readiness, now
 * @returns the status and the events the change warrants (record them once
 *   the status is written)
 * @throws {Error} naming the field when a reservation or threshold is malformed
 */
export function buildNodeStatus(input: NodeStatusInput): BuiltNodeStatus {
  const events: NodeStatusEvent[] = [];
  const heartbeat = metaTime(input.now);
  const m = input.machine;
  const prev = input.previous;
  const prevBootID = prev?.nodeInfo?.bootID;
  if (prevBootID && prevBootID !== m.bootID) {
    events.push({
      type: "Warning",
      reason: "Rebooted",
      message: `Node ${input.nodeName} has been rebooted, boot id: ${m.bootID}`,
    });
  }

  const resources = computeNodeResources(m, input);
  // Keep capacities someone else advertises (extended resources), as upstream does.
  const capacity = { ...prev?.capacity, ...resources.capacity };
  const allocatable = { ...prev?.allocatable, ...resources.allocatable };
  for (const [k, v] of Object.entries(capacity)) {
    if (!(k in resources.capacity) && !(k in allocatable)) allocatable[k] = v;
  }

  const addresses: NonNullable<NodeStatus["addresses"]> = input.nodeIPs
    .filter((ip) => ip !== "")
    .map((ip) => ({ type: "InternalIP" as const, address: ip }));
  if (input.hostname) addresses.push({ type: "Hostname", address: input.hostname });

  const status: NodeStatus = {
    capacity,
    allocatable,
    conditions: buildConditions(input, heartbeat, events),
    addresses,
    daemonEndpoints: { kubeletEndpoint: { Port: input.kubeletPort } },
    nodeInfo: {
      // Fields a newer kubelet wrote (swap, ...) stay: a strategic merge could not remove them anyway.
      ...prev?.nodeInfo,
      machineID: m.machineID,
      systemUUID: m.systemUUID,
      bootID: m.bootID,
      kernelVersion: m.kernelVersion,
      osImage: m.osImage,
      containerRuntimeVersion: input.containerRuntimeVersion,
      kubeletVersion: input.kubeletVersion,
      // DisableNodeKubeProxyVersion: the field is deprecated and left empty.
      kubeProxyVersion: "",
      operatingSystem: m.operatingSystem,
      architecture: m.architecture,
    },
  };
  if (input.images !== undefined) {
    status.images = capImages(input.images, input.maxImages ?? DEFAULT_MAX_IMAGES);
  } else if (prev?.images !== undefined) status.images = prev.images;
  // Keep any other status field the apiserver holds (volumesInUse, features, ...).
  return { status: { ...prev, ...status }, events };
}

function withoutHeartbeats(status: NodeStatus | undefined): unknown {
  const conds = (status?.conditions ?? []).map(({ lastHeartbeatTime: _, ...rest }) => rest);
  conds.sort((a, b) => a.type.localeCompare(b.type));
  return { ...status, conditions: conds, capacity: undefined, allocatable: undefined };
}

function sameResources(
  a: Record<string, string | number> | undefined,
  b: Record<string, string | number> | undefined,
): boolean {
  const keys = new Set([...Object.keys(a ?? {}), ...Object.keys(b ?? {})]);
  for (const k of keys) if (!sameQuantity(a?.[k], b?.[k])) return false;
  return true;
}

/**
 * Compares two statuses the way upstream's nodeStatusHasChanged does:
 * heartbeat times do not count, quantities compare by value, condition
 * order does not matter.
 * @param a one status
 * @param b the other
 * @returns true when something other than a heartbeat differs
 */
export function nodeStatusChanged(a: NodeStatus | undefined, b: NodeStatus | undefined): boolean {
  if (!sameResources(a?.capacity, b?.capacity)) return true;
  if (!sameResources(a?.allocatable, b?.allocatable)) return true;
  return !jsonEqual(withoutHeartbeats(a), withoutHeartbeats(b));
}
