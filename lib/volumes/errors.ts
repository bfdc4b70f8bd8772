/**
 * The errors volume operations throw.
 *
 * @module
 */

import type { UnsupportedVolume } from "./plugins.ts";
import { noPluginMessage } from "./plugins.ts";

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

/**
 * Some volume a container uses has a source with no plugin here: the pod must
 * not start (upstream's "no volume plugin matched").
 */
export class NoVolumePluginError extends Error {
  /** `namespace/name` of the pod. */
  readonly pod: string;
  /** The volumes refused, in spec order. */
  readonly volumes: readonly UnsupportedVolume[];

  /**
   * @param pod `namespace/name`
   * @param volumes the volumes without a plugin (at least one)
   */
  constructor(pod: string, volumes: readonly UnsupportedVolume[]) {
    super(`pod "${pod}": ${volumes.map(noPluginMessage).join("; ")}`);
    this.name = "NoVolumePluginError";
    this.pod = pod;
    this.volumes = volumes;
  }

  /** The volume names, sorted as upstream lists them. */
  get volumeNames(): string[] {
    return this.volumes.map((v) => v.name).sort();
  }

  /** Upstream's joined reasons, one per volume. */
  get reasons(): string {
    return this.volumes.map(noPluginMessage).join("; ");
  }
}
