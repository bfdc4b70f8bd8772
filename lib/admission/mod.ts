/**
 * Pod admission on the node, as upstream's kubelet admit handlers: each new
 * pod is checked before it is handed to a pod worker; a refused pod goes
 * Failed with the handler's reason and a Warning event, and is never started.
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
export {
  SUPPLEMENTAL_GROUPS_POLICY_NOT_SUPPORTED,
  SupplementalGroupsPolicyAdmitHandler,
} from "./supplemental_groups.ts";
export { canAdmitPod } from "./admit.ts";
