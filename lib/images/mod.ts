/**
 * Container images: pull policy, pull backoff and reference normalisation.
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
  applyDefaultImageTag,
  type ImageReference,
  normalizeImage,
  parseImageReference,
} from "./reference.ts";
