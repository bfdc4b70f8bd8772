/**
 * In-place resize's bookkeeping, as upstream's pkg/kubelet/allocation: what
 * each pod is allocated ({@link AllocationManager}, checkpointed in
 * {@link ResourceState}), the resize requests it admits or leaves pending,
 * and the PodResizePending / PodResizeInProgress conditions
 * ({@link PodResizeConditions}). The runtime manager keeps a second
 * {@link ResourceState}, of what the runtime actuated.
 *
 * @module
 */

export {
  type AdmitFunc,
  type AdmitVerdict,
  AllocationManager,
  type AllocationManagerOptions,
  INITIAL_RETRY_DELAY_MS,
  type PendingResizeHooks,
  podFromAllocation,
  resizeEventMessage,
  resourceInfoForPod,
  RETRY_DELAY_MS,
} from "./allocation_manager.ts";
export { type PodResourceInfo, ResourceState, type ResourceStateOptions } from "./state.ts";
export {
  PodResizeConditions,
  PodResizeInProgress,
  PodResizePending,
  REASON_DEFERRED,
  REASON_ERROR,
  REASON_INFEASIBLE,
} from "./resize_conditions.ts";
