/**
 * Pod admission on the node, as upstream's kubelet admit handlers: each new
 * pod is checked, in creation order, against the node and the pods already
 * admitted, before it is handed to a pod worker; a refused pod goes Failed
 * with the handler's reason and a Warning event, and is never started. The
 * handlers, in upstream's order: the eviction manager (lib/eviction, refusing
 * pods under node pressure), {@link SysctlAllowlist}, the predicate
 * handler ({@link PredicateAdmitHandler}: resources, node affinity, node
 * name, host ports, NoExecute taints, OS, `supplementalGroupsPolicy`),
 * {@link AppArmorAdmitHandler}.
 *
 * @module
 */

export type { PodAdmitHandler, PodAdmitResult } from "./types.ts";
export { safeSysctls, SYSCTL_FORBIDDEN_REASON, SysctlAllowlist } from "./sysctl.ts";
export {
  APPARMOR_NOT_ADMITTED_REASON,
  AppArmorAdmitHandler,
  hostAppArmorEnabled,
} from "./apparmor.ts";
export { admitPod, PredicateAdmitHandler } from "./predicate.ts";
export { canAdmitPod } from "./admit.ts";
