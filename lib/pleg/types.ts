/**
 * The event PLEG hands to the syncLoop, as upstream's `PodLifecycleEvent`.
 *
 * @module
 */

/**
 * What happened to one container (or sandbox) of a pod between two relists.
 *
 * - `ContainerStarted`: now running.
 * - `ContainerDied`: now exited (also sent before `ContainerRemoved` when a
 *   container vanished without being seen exited).
 * - `ContainerRemoved`: gone from the runtime.
 * - `ContainerChanged`: now in an unknown or created state. Upstream computes it
 *   but never delivers it ("not reliable"); {@link diffPodSnapshots} returns it,
 *   `GenericPleg` filters it out.
 * - `PodSync`: a request to sync the whole pod (used by other event sources).
 */
export type PodLifecycleEventType =
  | "ContainerStarted"
  | "ContainerDied"
  | "ContainerRemoved"
  | "ContainerChanged"
  | "PodSync";

/** One pod lifecycle event. */
export interface PodLifecycleEvent {
  /** The pod's UID. */
  podUID: string;
  type: PodLifecycleEventType;
  /** The container or sandbox id the event is about ("" for `PodSync`). */
  data: string;
}
