/**
 * The pure half of PLEG: the events between two runtime snapshots.
 *
 * Each container id (sandboxes included: upstream treats them as containers in
 * the relist) is mapped to a PLEG state, then the pair (old, new) is turned into
 * events by upstream's `generateEvents` table:
 *
 * ```
 *   old \ new      running   exited   unknown   non-existent
 *   non-existent   Started   Died     Changed   -
 *   running        -         Died     Changed   Died+Removed
 *   exited         Started   -        Changed   Removed
 *   unknown        Started   Died     -         Died+Removed
 * ```
 *
 * CRI "created" counts as unknown, as upstream's `convertState` does. A ready
 * sandbox counts as running and a not-ready one as exited.
 *
 * @module
 */

import type { RuntimePodStatus } from "../kuberuntime/types.ts";
import type { PodLifecycleEvent } from "./types.ts";

/** A container's state as PLEG compares it. */
export type PlegContainerState = "running" | "exited" | "unknown" | "non-existent";

/**
 * The events one container's state change produces (upstream `generateEvents`).
 * @param podUID the pod
 * @param id the container or sandbox id
 * @param oldState its state in the previous snapshot
 * @param newState its state now
 * @returns zero, one or two events
 */
export function generateEvents(
  podUID: string,
  id: string,
  oldState: PlegContainerState,
  newState: PlegContainerState,
): PodLifecycleEvent[] {
  if (oldState === newState) return [];
  switch (newState) {
    case "running":
      return [{ podUID, type: "ContainerStarted", data: id }];
    case "exited":
      return [{ podUID, type: "ContainerDied", data: id }];
    case "unknown":
      return [{ podUID, type: "ContainerChanged", data: id }];
    case "non-existent":
      // An exited container already had its ContainerDied; anything else
      // vanished between relists and must still be reported as dead.
      if (oldState === "exited") return [{ podUID, type: "ContainerRemoved", data: id }];
      return [
        { podUID, type: "ContainerDied", data: id },
        { podUID, type: "ContainerRemoved", data: id },
      ];
  }
}

function stateIn(pod: RuntimePodStatus | undefined, id: string): PlegContainerState {
  if (!pod) return "non-existent";
  const container = pod.containers.find((c) => c.id === id);
  if (container) {
    switch (container.state) {
      case "running":
        return "running";
      case "exited":
        return "exited";
      default:
        // "created" is not used by the kubelet yet; upstream folds it into unknown.
        return "unknown";
    }
  }
  const sandbox = pod.sandboxes.find((s) => s.id === id);
  if (sandbox) return sandbox.state === "ready" ? "running" : "exited";
  return "non-existent";
}

/** Container then sandbox ids of both snapshots, old first, each once. */
function idsOf(...pods: (RuntimePodStatus | undefined)[]): string[] {
  const ids = new Set<string>();
  for (const pod of pods) {
    if (!pod) continue;
    for (const c of pod.containers) ids.add(c.id);
    for (const s of pod.sandboxes) ids.add(s.id);
  }
  return [...ids];
}

/**
 * True when both snapshots hold the same containers and sandboxes in the same
 * order and states: no events, which is every pod at most relists, found
 * without the set of ids and the lookups a change needs.
 */
function sameStates(old: RuntimePodStatus, current: RuntimePodStatus): boolean {
  const oc = old.containers;
  const cc = current.containers;
  const os = old.sandboxes;
  const cs = current.sandboxes;
  if (oc.length !== cc.length || os.length !== cs.length) return false;
  for (let i = 0; i < oc.length; i++) {
    if (oc[i]!.id !== cc[i]!.id || oc[i]!.state !== cc[i]!.state) return false;
  }
  for (let i = 0; i < os.length; i++) {
    if (os[i]!.id !== cs[i]!.id || os[i]!.state !== cs[i]!.state) return false;
  }
  return true;
}

/**
 * The events for one pod between two snapshots of it.
 * @param podUID the pod
 * @param old the pod in the previous snapshot, if it was there
 * @param current the pod now, if it is there
 * @returns events in container order (old snapshot's ids first)
 */
export function diffPod(
  podUID: string,
  old: RuntimePodStatus | undefined,
  current: RuntimePodStatus | undefined,
): PodLifecycleEvent[] {
  if (old !== undefined && current !== undefined && sameStates(old, current)) return [];
  const events: PodLifecycleEvent[] = [];
  for (const id of idsOf(old, current)) {
    events.push(...generateEvents(podUID, id, stateIn(old, id), stateIn(current, id)));
  }
  return events;
}

/**
 * All lifecycle events between two runtime snapshots. Pure: the inputs are not
 * modified. `ContainerChanged` events are included; the relist loop drops them
 * before delivery, as upstream does.
 * @param old the previous snapshot, by pod UID
 * @param current the new snapshot, by pod UID
 * @returns events, pods of `current` first, then pods that disappeared
 */
export function diffPodSnapshots(
  old: ReadonlyMap<string, RuntimePodStatus>,
  current: ReadonlyMap<string, RuntimePodStatus>,
): PodLifecycleEvent[] {
  const events: PodLifecycleEvent[] = [];
  for (const [uid, pod] of current) events.push(...diffPod(uid, old.get(uid), pod));
  for (const [uid, pod] of old) {
    if (!current.has(uid)) events.push(...diffPod(uid, pod, undefined));
  }
  return events;
}
