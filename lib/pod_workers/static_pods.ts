/**
 * Start ordering for static pods (upstream `allowStaticPodStart`): two static
 * pods with the same full name (a manifest edited in place gets a new UID) never
 * run at once; the newer one waits until the older one has terminated, and
 * waiting pods start in the order they were first seen.
 *
 * @module
 */

import type { Pod } from "../api/types.ts";

/** `name_namespace`, as upstream's `BuildPodFullName`. */
export function podFullName(pod: Pod): string {
  return `${pod.metadata.name ?? ""}_${pod.metadata.namespace ?? ""}`;
}

/** Which static pod of each full name runs, and which wait. */
export class StaticPodGate {
  #started = new Map<string, string>();
  #waiting = new Map<string, string[]>();

  /** Records that `uid` wants to start (called once, when its worker is created). */
  enqueue(fullname: string, uid: string): void {
    const list = this.#waiting.get(fullname) ?? [];
    list.push(uid);
    this.#waiting.set(fullname, list);
  }

  /**
   * Lets `uid` start if no other pod of its name runs and it is first in line.
   * @param fullname the pod's full name
   * @param uid the pod
   * @param gone true for a waiting UID that will never start (terminating or unknown)
   * @returns whether it may start now
   */
  tryStart(fullname: string, uid: string, gone: (uid: string) => boolean): boolean {
    const started = this.#started.get(fullname);
    if (started !== undefined) return started === uid;
    let waiting = this.#waiting.get(fullname) ?? [];
    for (let i = 0; i < waiting.length; i++) {
      const next = waiting[i]!;
      if (gone(next)) continue;
      if (next !== uid) {
        this.#waiting.set(fullname, waiting.slice(i));
        return false;
      }
      waiting = waiting.slice(i + 1);
      break;
    }
    if (waiting.length > 0) this.#waiting.set(fullname, waiting);
    else this.#waiting.delete(fullname);
    this.#started.set(fullname, uid);
    return true;
  }

  /** Frees the name if `uid` holds it. */
  release(fullname: string, uid: string): void {
    if (this.#started.get(fullname) === uid) this.#started.delete(fullname);
  }
}
