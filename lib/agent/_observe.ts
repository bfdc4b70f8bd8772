/**
 * What the sync loop measures about pods besides syncing them: the running
 * pod and container gauges, and the pod start SLI.
 *
 * @module
 */

import type { PodStatus } from "../api/types.ts";
import type { RuntimePodStatus } from "../kuberuntime/mod.ts";

/**
 * Counts what runs, for `kubelet_running_pods` and `kubelet_running_containers`.
 * @param running the runtime's pods
 * @returns pods with a ready sandbox, and containers by state
 */
export function runningCounts(
  running: readonly RuntimePodStatus[],
): { pods: number; containersByState: Record<string, number> } {
  const containersByState: Record<string, number> = {};
  let pods = 0;
  for (const p of running) {
    if (p.sandboxes.some((s) => s.state === "ready")) pods++;
    for (const c of p.containers) {
      containersByState[c.state] = (containersByState[c.state] ?? 0) + 1;
    }
  }
  return { pods, containersByState };
}

/** The pod start SLI: from when a pod is first seen until every container runs. */
export class PodStartTracker {
  #firstSeen = new Map<string, number>();

  /**
   * Notes a pod's arrival; a pod seen before keeps its first time.
   * @param uid the pod
   * @param now epoch ms
   */
  seen(uid: string, now: number): void {
    if (!this.#firstSeen.has(uid)) this.#firstSeen.set(uid, now);
  }

  /** Forgets a pod that went away before it started. */
  forget(uid: string): void {
    this.#firstSeen.delete(uid);
  }

  /**
   * Checks a pod's new status; once every container runs, reports the pod's
   * start duration, once.
   * @param uid the pod
   * @param status its new status
   * @param now epoch ms
   * @returns ms since the pod was first seen, or undefined
   */
  started(uid: string, status: PodStatus, now: number): number | undefined {
    const first = this.#firstSeen.get(uid);
    if (first === undefined) return undefined;
    const all = status.containerStatuses ?? [];
    if (all.length === 0 || !all.every((c) => c.state.running)) return undefined;
    this.#firstSeen.delete(uid);
    return now - first;
  }
}
