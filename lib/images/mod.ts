/**
 * Container images: pull policy, pull backoff, reference normalisation and the
 * registry credentials of a pod's pull secrets.
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
