/**
 * The pod runtime: what runs (read back from CRI), what should change (the
 * pure planner `computePodActions` with restart backoff), and the executor
 * that carries plans out (`KubeRuntimeManager`).
 *
 * ```ts
 * const machine = await readMachineInfo({ rootDir }); // lib/stats, once at start-up
 * const manager = new KubeRuntimeManager({
 *   runtime, clock: realClock, logger, rootDir, nodeName,
 *   memoryCapacity: machine.memoryCapacityBytes,
 *   nodeAllocatable: computeNodeResources(machine, opts).allocatable, // lib/nodestatus
 *   readLogTail, // lib/logs
 * });
 * const status = await manager.getPodStatus(pod.metadata.uid!, signal);
 * const { steps, lastErrors } = await manager.syncPod(pod, status, signal);
 * ```
 *
 * @module
 */

export * from "./types.ts";
export { fnv32a, hashContainer } from "./hash.ts";
export {
  computePodActions,
  type ComputePodActionsInput,
  CRASH_LOOP_BACK_OFF,
  KillReason,
  type ProbeResult,
} from "./compute_pod_actions.ts";
export {
  currentInstance,
  latestExitedInstance,
  podIdentity,
  shouldContainerBeRestarted,
} from "./container_status.ts";
export { KubeRuntimeManager, type KubeRuntimeManagerOptions } from "./runtime_manager.ts";
export {
  CONTAINER_GC_PERIOD_MS,
  ContainerGC,
  type ContainerGCOptions,
  type ContainerGCPolicy,
  type ContainerGCRuntime,
  DEFAULT_CONTAINER_GC_POLICY,
  type PodStateProvider,
  podUIDFromLogsDirectory,
} from "./container_gc.ts";
export type { ProbeResults, SyncPodResult } from "./sync_pod.ts";
export type { PodCgroupResizer, SyncStep } from "./_context.ts";
export { MINIMUM_GRACE_PERIOD_SECONDS, TerminationOrdering } from "./kill_pod.ts";
export {
  type ContainerLogTailReader,
  MAX_TERMINATION_MESSAGE_BYTES,
  MAX_TERMINATION_MESSAGE_LOG_BYTES,
  MAX_TERMINATION_MESSAGE_LOG_LINES,
  terminationMessage,
} from "./termination_message.ts";
export {
  containerFromList,
  containerFromStatus,
  getPodStatus,
  groupPods,
  listPods,
  sandboxFromList,
  sandboxFromStatus,
} from "./runtime_status.ts";
export { runningApiPods } from "./running_pods.ts";
export {
  checkResolvConfLimits,
  type DNSSettings,
  type DNSWarning,
  kernelHostname,
  parseResolvConf,
  podDNS,
  podHostnameAndDomain,
} from "./pod_dns.ts";
export {
  DEFAULT_POD_LOGS_DIR,
  generatePodSandboxConfig,
  podLogsDirectory,
  podNamespaceOptions,
  type SandboxConfigOptions,
  userNamespacesUnsupported,
} from "./sandbox_config.ts";
export {
  appArmorProfileOf,
  containerAppArmor,
  containerSeccompProfile,
  requiresAppArmor,
  type SeccompSettings,
  selinuxOption,
} from "./security_profiles.ts";
export {
  containerAnnotations,
  type ContainerConfigInput,
  containerLabels,
  containerMounts,
  containerResources,
  containerSecurityContext,
  containerSubPaths,
  CPU_PERIOD_US,
  generateContainerConfig,
  milliCPUToQuota,
  milliCPUToShares,
} from "./container_config.ts";
export {
  ContainerConfigError,
  type EnvContext,
  type EnvObjects,
  expandSubPathExpr,
  expandVars,
  fetchEnvObjects,
  makeEnvironment,
} from "./env.ts";
export { containerOOMScoreAdj, isNodeCriticalPod } from "./qos.ts";
export {
  HookAction,
  HookError,
  type HookOutcome,
  HookReason,
  type HookTarget,
  isHookStep,
  runLifecycleHandler,
} from "./lifecycle_hooks.ts";
export {
  cleanDanglingLogSymlinks,
  containerLogsDirFor,
  DEFAULT_CONTAINER_LOGS_DIR,
  logSymlinkPath,
} from "./log_symlink.ts";
export {
  addContainerUpdates,
  computeContainerResize,
  type ContainerResize,
  isPodResizeInProgress,
} from "./resize_action.ts";
export { requirementsFromNumbers, RESIZE_ACTION, RESIZE_ERROR, resizePod } from "./resize_pod.ts";
export { quotaToMilliCPU, runtimeContainerResources, sharesToMilliCPU } from "./runtime_status.ts";
