/**
 * The error every volume operation throws.
 *
 * @module
 */

/** A volume could not be set up or torn down; names the pod and volume. */
export class VolumeError extends Error {
  /** `namespace/name` of the pod. */
  readonly pod: string;
  /** The volume name, "" for pod-level directories. */
  readonly volume: string;

  /**
   * @param pod `namespace/name`
   * @param volume the volume name
   * @param message what failed
   * @param options the underlying error
   */
  constructor(pod: string, volume: string, message: string, options?: ErrorOptions) {
    super(
      volume ? `volume "${volume}" of pod "${pod}": ${message}` : `pod "${pod}": ${message}`,
      options,
    );
    this.name = "VolumeError";
    this.pod = pod;
    this.volume = volume;
  }
}
