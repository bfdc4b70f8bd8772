/**
 * Kubernetes API objects as denolet sees them: the core/v1 Pod shapes, resource
 * quantities, the apiserver's pod defaults and upstream-worded pod validation,
 * and the pod concepts every subsystem shares (static and mirror pods, the
 * `namespace/name` key, the QoS class).
 *
 * ```ts
 * import { applyPodDefaults, validatePod } from "./lib/api/mod.ts";
 * const errors = validatePod(applyPodDefaults(pod)); // [] when the pod is runnable
 * ```
 *
 * @module
 */

export type * from "./types.ts";
export {
  intValue,
  isValidQuantity,
  milliValue,
  parseQuantity,
  QUANTITY_FORMAT_HINT,
  QuantityError,
} from "./quantity.ts";
export {
  applyPodDefaults,
  DEFAULT_TERMINATION_GRACE_PERIOD_SECONDS,
  DEFAULT_TERMINATION_MESSAGE_PATH,
  defaultPullPolicy,
} from "./defaults.ts";
export {
  API_SOURCE,
  ConfigAnnotations,
  configSeenTimestamp,
  FILE_SOURCE,
  formatPod,
  HTTP_SOURCE,
  isMirrorPod,
  isRestartableInitContainer,
  isStaticPod,
  type PodIdentity,
  podKey,
  type PodName,
  restartPolicyOf,
} from "./pod.ts";
export { podQOSClass, type QOSClass } from "./qos.ts";
export { validateDNS1123Label, validateDNS1123Subdomain, validatePod } from "./validation.ts";
export { IMPLEMENTED_VOLUME_SOURCES, UPSTREAM_VOLUME_SOURCES } from "./volume_sources.ts";
