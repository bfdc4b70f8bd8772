/**
 * A runtime the test fills by hand: the two reads the PLEG and the sync loop make
 * (`listPods`, `getPodStatus`) over a map of pods, with injectable failures and a record
 * of the calls.
 *
 * @module
 */

import type { RuntimePodStatus } from "../../lib/kuberuntime/types.ts";

/** What {@link fakePodRuntime} returns: its state, its call record and the two reads. */
export interface FakePodRuntime {
  /** The pods it lists, by uid; the test edits this map. */
  pods: Map<string, RuntimePodStatus>;
  /** How often `listPods` was called. */
  listCalls: number;
  /** The uids `getPodStatus` was asked for, in order. */
  statusCalls: string[];
  /** When set, `listPods` rejects with it. */
  listError: Error | undefined;
  /** Per uid, the error `getPodStatus` rejects with. */
  statusError: Map<string, Error>;
  /** A copy of `pods` (or `listError`). */
  listPods(signal?: AbortSignal): Promise<Map<string, RuntimePodStatus>>;
  /**
   * A deep copy of the pod (or its `statusError`); for a pod it does not hold, see
   * {@link FakePodRuntimeOptions.unknownPod}.
   */
  getPodStatus(uid: string, signal?: AbortSignal): Promise<RuntimePodStatus>;
}

/** Options for {@link fakePodRuntime}. */
export interface FakePodRuntimeOptions {
  /** The map it serves as `pods` (default a new, empty one); the test may keep editing it. */
  pods?: Map<string, RuntimePodStatus>;
  /**
   * What `getPodStatus` does for a uid it does not hold: "reject" (the default), or
   * "empty", answering a status with that uid and nothing else as the real runtime
   * manager does for a pod with no sandbox or container left.
   */
  unknownPod?: "reject" | "empty";
}

/**
 * A {@link FakePodRuntime}, holding no pods unless given a map.
 *
 * @param options the map of pods to serve and what to answer for a uid not in it
 */
export function fakePodRuntime(options: FakePodRuntimeOptions = {}): FakePodRuntime {
  const rt: FakePodRuntime = {
    pods: options.pods ?? new Map(),
    listCalls: 0,
    statusCalls: [],
    listError: undefined,
    statusError: new Map(),
    listPods() {
      rt.listCalls++;
      if (rt.listError) return Promise.reject(rt.listError);
      return Promise.resolve(new Map(rt.pods));
    },
    getPodStatus(uid) {
      rt.statusCalls.push(uid);
      const err = rt.statusError.get(uid);
      if (err) return Promise.reject(err);
      const p = rt.pods.get(uid);
      if (!p && options.unknownPod === "empty") {
        return Promise.resolve({ uid, name: "", namespace: "", sandboxes: [], containers: [] });
      }
      if (!p) return Promise.reject(new Error(`pod ${uid} not found`));
      return Promise.resolve(structuredClone(p));
    },
  };
  return rt;
}
