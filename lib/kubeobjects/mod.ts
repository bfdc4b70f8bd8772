/**
 * The API objects pods reference, read through a `KubeClient` and cached:
 * ConfigMaps and Secrets (TTL cache, upstream's `Cache` strategy), Services
 * (watched, for service-link env vars) and bound service-account tokens (refreshed at
 * 80% of their TTL or after 24 h, as upstream's token manager).
 *
 * ```ts
 * const objects = new ApiPodObjects({ client, clock: realClock, logger });
 * const cm = await objects.getConfigMap("default", "settings", { podUID });
 * ```
 *
 * In standalone mode there is no source: callers get `undefined` and fail
 * pods that need one with a {@link NoApiServerError}.
 *
 * @module
 */

export {
  type GetObjectOptions,
  isObjectNotFound,
  NoApiServerError,
  ObjectNotFoundError,
  type PodObjects,
  type ServiceAccountToken,
  type ServiceAccountTokenRequest,
} from "./types.ts";
export { ApiPodObjects, type ApiPodObjectsOptions, DEFAULT_OBJECT_TTL_MS } from "./api_objects.ts";
export {
  type CachedToken,
  MAX_TOKEN_JITTER_MS,
  MAX_TOKEN_TTL_MS,
  TokenManager,
  type TokenManagerOptions,
  tokenRequiresRefresh,
} from "./token_manager.ts";
export {
  serviceEnvMap,
  serviceEnvVars,
  SERVICES_NOT_SYNCED,
  servicesForPod,
} from "./service_links.ts";
