/**
 * The desired pods: what the sources say should run on this node, by UID.
 * The pod manager holds specs only; runtime state lives in PLEG's cache and
 * reported status in the status manager (lib/status/status_manager.ts).
 *
 * @module
 */

import type { Pod } from "../api/types.ts";

/** The desired pods, by UID. Callers must not mutate returned pods. */
export class PodManager {
  #pods = new Map<string, Pod>();

  /** Adds or replaces a pod. */
  set(pod: Pod): void {
    this.#pods.set(pod.metadata.uid!, pod);
  }

  /** Removes a pod by UID. */
  delete(uid: string): void {
    this.#pods.delete(uid);
  }

  /** The pod with this UID, if desired. */
  get(uid: string): Pod | undefined {
    return this.#pods.get(uid);
  }

  /**
   * The desired pod with this namespace and name (upstream GetPodByName), for
   * requests that name a pod rather than its UID (`/containerLogs`, `/exec`).
   * An unset namespace is "default", as in lib/api/pod.ts podKey.
   */
  getByName(namespace: string, name: string): Pod | undefined {
    for (const pod of this.#pods.values()) {
      if (pod.metadata.name === name && (pod.metadata.namespace ?? "default") === namespace) {
        return pod;
      }
    }
    return undefined;
  }

  /** Every desired pod. */
  pods(): Pod[] {
    return [...this.#pods.values()];
  }

  /** The UIDs of every desired pod. */
  uids(): Set<string> {
    return new Set(this.#pods.keys());
  }
}
