/**
 * The container manager's cgroups (upstream pkg/kubelet/cm): cgroup names for
 * the cgroupfs and systemd drivers, a pod's cgroup limits, and the QoS and
 * pod cgroups made, updated and removed with `--cgroups-per-qos`.
 *
 * ```ts
 * const pods = new PodCgroupManager({
 *   cgroupRoot: "/", cgroupDriver: "cgroupfs", cgroupsPerQOS: true, podPidsLimit: -1,
 *   cgroups: new CgroupfsManager(findCgroupHierarchies()), logger,
 * });
 * pods.start();                       // kubepods, kubepods/burstable, kubepods/besteffort
 * pods.ensureExists(pod, () => activePods); // kubepods/burstable/pod<uid> with its limits
 * podCgroupParent(pod, naming);       // the sandbox's CgroupParent
 * ```
 *
 * @module
 */

export {
  type CgroupDriver,
  type CgroupName,
  cgroupNameForDriver,
  cgroupNameToCgroupfs,
  cgroupNameToSystemd,
  childCgroupName,
  parseCgroupfsToCgroupName,
  parseCgroupNameForDriver,
  parseSystemdToCgroupName,
} from "./cgroup_name.ts";
export {
  CgroupfsManager,
  type CgroupHierarchies,
  type CgroupHierarchy,
  findCgroupHierarchies,
} from "./cgroupfs.ts";
export {
  KUBEPODS,
  nodeAllocatableCgroupName,
  nodeAllocatableRoot,
  ORPHAN_FULL_SCAN_ROUNDS,
  PodCgroupManager,
  type PodCgroupManagerOptions,
  podCgroupName,
  type PodCgroupNaming,
  podCgroupParent,
  type QOSCgroupNames,
  qosCgroupNames,
} from "./pod_cgroups.ts";
export {
  cpuWeightFromShares,
  MAX_SHARES,
  milliCPUToQuota,
  milliCPUToShares,
  MIN_SHARES,
  nodeAllocatableResourceConfig,
  type PodResourceOptions,
  QUOTA_PERIOD,
  type ResourceConfig,
  resourceConfigForPod,
} from "./resource_config.ts";
export {
  ENFORCE_KUBE_RESERVED,
  ENFORCE_KUBE_RESERVED_COMPRESSIBLE,
  ENFORCE_PODS,
  ENFORCE_SYSTEM_RESERVED,
  ENFORCE_SYSTEM_RESERVED_COMPRESSIBLE,
  type NodeAllocatableEnforcement,
  nodeAllocatableEnforcement,
  type NodeAllocatableInput,
  reservedCgroupConfig,
  type ReservedCgroupEnforcement,
} from "./node_allocatable.ts";
