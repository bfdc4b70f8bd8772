/**
 * Container images: pull policy, pull backoff, reference normalisation, the
 * registry credentials of a pod's pull secrets, and image garbage collection
 * (`image_gc.ts`).
 *
 * ```ts
 * const images = new ImageManager({ runtime, clock: realClock });
 * const { imageRef } = await images.ensureImage(pod, container, signal);
 * ```
 *
 * @module
 */

export {
  type EnsuredImage,
  ImageError,
  type ImageErrorReason,
  ImageManager,
  type ImageManagerOptions,
} from "./image_manager.ts";
export {
  formatSize,
  IMAGE_GC_PERIOD_MS,
  type ImageFsStats,
  ImageGC,
  ImageGCError,
  type ImageGCOptions,
  type ImageGCPolicy,
  type ImageGCReason,
  type ImageGCRuntime,
  validateImageGCPolicy,
} from "./image_gc.ts";
export {
  DockerConfigError,
  dockerConfigOfSecret,
  DockerKeyring,
  isDefaultRegistryMatch,
  parseDockerConfigEntries,
  pullCredentials,
  type RegistryCredential,
  SECRET_TYPE_DOCKER_CONFIG_JSON,
  SECRET_TYPE_DOCKERCFG,
  urlsMatch,
} from "./credentials.ts";
export { NodeDockerConfig, type NodeDockerConfigOptions } from "./node_credentials.ts";
export {
  applyDefaultImageTag,
  type ImageReference,
  normalizeImage,
  parseImageReference,
} from "./reference.ts";
