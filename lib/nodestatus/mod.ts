/**
 * The Node on the apiserver side: registration (create or adopt), the
 * status (capacity, allocatable, conditions, addresses, nodeInfo) written
 * every `nodeStatusUpdateFrequency` when it changed or every
 * `nodeStatusReportFrequency` anyway, and the heartbeat Lease in
 * kube-node-lease.
 *
 * ```ts
 * // Read once at start-up (lib/stats) and shared with the runtime manager and the stats.
 * const machineInfo = await readMachineInfo({ rootDir: "/var/lib/kubelet" });
 * const nodes = new NodeStatusManager({
 *   client, nodeName, clock: realClock, logger, events, machineInfo, nodeIP,
 *   runtimeReady: () => ({ ok: !health.problem(), message: health.problem() ?? "" }),
 *   runtimeVersion: () => runtime.version(),
 * });
 * nodes.start();
 * const node = await nodes.registered;
 * ```
 *
 * @module
 */

export {
  DEFAULT_NODE_STATUS_SETTINGS,
  NodeStatusManager,
  type NodeStatusManagerOptions,
  type NodeStatusSettings,
  type RuntimeReadiness,
} from "./manager.ts";
export {
  type AllocatableOptions,
  computeNodeResources,
  type EnforcementAmounts,
  enforcementAmounts,
  formatBinarySI,
  formatDecimalSIMilli,
  hugePageResourceName,
  nodeAllocatableAbsolute,
  type NodeResources,
} from "./allocatable.ts";
export {
  buildNodeStatus,
  type BuiltNodeStatus,
  DEFAULT_MAX_IMAGES,
  kubeletVersionString,
  KUBERNETES_COMPAT_VERSION,
  nodeImages,
  nodeStatusChanged,
  type NodeStatusEvent,
  type NodeStatusInput,
  readyMessage,
} from "./node_status.ts";
export { nodePatch, nodeStatusPatch } from "./patch.ts";
export {
  CONTROLLER_MANAGED_ATTACH_DETACH,
  DEFAULT_NODE_LABELS,
  initialNode,
  type InitialNodeOptions,
  NodeLabelError,
  NODES_PATH,
  reconcileExistingNode,
  type RegisteredNode,
  registerNode,
  type RegisterNodeOptions,
  restrictedNodeLabels,
  tryRegisterNode,
} from "./registration.ts";
export {
  NODE_STATUS_UPDATE_RETRY,
  nodeReference,
  NodeStatusUpdater,
  type NodeStatusUpdaterOptions,
  recordNodeEvents,
  type UpdateOutcome,
} from "./status_updater.ts";
export { NODE_LEASE_NAMESPACE, NodeLeaseController, type NodeLeaseOptions } from "./lease.ts";
