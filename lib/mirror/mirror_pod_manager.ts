/**
 * Keeps one mirror pod in the apiserver for each static pod, the way the
 * upstream kubelet does from syncPod (create, delete-and-recreate) and from
 * housekeeping (orphans):
 *
 * - no mirror pod → create it (only while the Node is known and not being deleted);
 * - a mirror pod with another hash, or one being deleted → delete it
 *   (grace 0, UID precondition) and create it again;
 * - a mirror pod whose static pod is gone → delete it (only once every pod
 *   source has been seen, so a restart does not wipe them all).
 *
 * Upstream runs this inside each static pod's sync; here the kubelet calls
 * {@link MirrorPodManager.reconcile} on every sync tick and source change.
 * Passes run in the background, one at a time; calls during a pass coalesce
 * into one more pass with the latest static pods. A failure is logged with
 * the pod's name and that pod is retried after a growing delay (1s → 1m), so
 * a refused mirror pod does not log every second.
 *
 * @module
 */

import type { Node } from "../api/cluster_types.ts";
import { isMirrorPod, isStaticPod, podKey } from "../api/pod.ts";
import type { Pod } from "../api/types.ts";
import {
  ApiError,
  isAlreadyExists,
  isConflict,
  isNotFound,
  type KubeClient,
} from "../kubeapi/types.ts";
import type { Clock } from "../util/clock.ts";
import { realClock } from "../util/clock.ts";
import type { Logger } from "../util/log.ts";
import { silentLogger } from "../util/log.ts";
import { buildMirrorPod, isMirrorPodOf, ownerUID } from "./mirror_pod.ts";

/** Retry delays after a failed create or delete for one pod. */
export const MIRROR_RETRY = { initialMs: 1000, maxMs: 60_000 } as const;

/** Options for {@link MirrorPodManager}. */
export interface MirrorPodManagerOptions {
  /** The apiserver, authenticated as the node. */
  client: KubeClient;
  /** The node's name, for the owner reference. */
  nodeName: string;
  /** The Node as last read from the apiserver (its UID goes into the owner reference). */
  node: () => Node | undefined;
  /**
   * True once every pod source has delivered; orphans are deleted only then.
   * Default: always true.
   */
  sourcesReady?: () => boolean;
  logger?: Logger;
  /** For retry delays after failures. */
  clock?: Clock;
}

interface Failure {
  count: number;
  notBefore: number;
}

function podPath(namespace: string, name?: string): string {
  const base = `/api/v1/namespaces/${encodeURIComponent(namespace)}/pods`;
  return name === undefined ? base : `${base}/${encodeURIComponent(name)}`;
}

/** Creates, recreates and removes mirror pods; see the module doc. */
export class MirrorPodManager {
  readonly #opts: MirrorPodManagerOptions;
  readonly #log: Logger;
  readonly #clock: Clock;
  readonly #stop = new AbortController();
  /** namespace/name → the mirror pod as the apiserver last showed it (or as we created it). */
  #mirrors = new Map<string, Pod>();
  /** Until the apiserver source delivered once, nothing is known about existing mirror pods. */
  #mirrorsKnown = false;
  #failures = new Map<string, Failure>();
  #pending: Pod[] | undefined;
  #draining: Promise<void> | undefined;

  /** @param opts client, node name and getter, logger and clock */
  constructor(opts: MirrorPodManagerOptions) {
    this.#opts = opts;
    this.#log = opts.logger ?? silentLogger;
    this.#clock = opts.clock ?? realClock;
  }

  /**
   * Takes the apiserver source's current mirror pods (the config mux's
   * `onMirrorPods`). Does not reconcile by itself.
   * @param pods every mirror pod bound to this node; not kept
   */
  setMirrorPods(pods: Pod[]): void {
    const next = new Map<string, Pod>();
    for (const pod of pods) if (isMirrorPod(pod)) next.set(podKey(pod), structuredClone(pod));
    this.#mirrors = next;
    this.#mirrorsKnown = true;
  }

  /**
   * The mirror pods as currently known.
   * @returns copies
   */
  mirrorPods(): Pod[] {
    return [...this.#mirrors.values()].map((p) => structuredClone(p));
  }

  /**
   * The current mirror pod of a static pod (same namespace/name, same hash,
   * not being deleted), so its status can be written to the mirror's UID.
   * @param staticPod a static pod
   * @returns the mirror pod (not to be mutated), or undefined while there is none
   */
  mirrorPodFor(staticPod: Pod): Pod | undefined {
    const mirror = this.#mirrors.get(podKey(staticPod));
    return mirror && isMirrorPodOf(mirror, staticPod) ? mirror : undefined;
  }

  /**
   * Brings the mirror pods in line with `staticPods` in the background.
   * Never throws; errors are logged per pod. May be called often: calls made
   * while a pass runs fold into one more pass with the latest arguments.
   * @param staticPods the node's desired pods; those not from a file or URL source are ignored
   * @param mirrorPods the apiserver's mirror pods, if the caller holds them
   *   (else the set from {@link setMirrorPods})
   * @returns resolves when the passes started or queued by this call are done
   */
  reconcile(staticPods: Pod[], mirrorPods?: Pod[]): Promise<void> {
    if (mirrorPods) this.setMirrorPods(mirrorPods);
    this.#pending = staticPods;
    this.#draining ??= this.#drain();
    return this.#draining;
  }

  /** Stops further passes and aborts requests in flight. */
  stop(): void {
    this.#stop.abort(new Error("mirror pod manager stopped"));
    this.#pending = undefined;
  }

  async #drain(): Promise<void> {
    try {
      while (this.#pending && !this.#stop.signal.aborted) {
        const pods = this.#pending;
        this.#pending = undefined;
        await this.#pass(pods);
      }
    } finally {
      this.#draining = undefined;
    }
  }

  async #pass(pods: Pod[]): Promise<void> {
    if (!this.#mirrorsKnown) return;
    const wanted = new Map<string, Pod>();
    for (const pod of pods) if (isStaticPod(pod)) wanted.set(podKey(pod), pod);
    const jobs: Promise<void>[] = [];
    for (const [key, pod] of wanted) {
      if (this.#due(key)) jobs.push(this.#guard(key, () => this.#ensure(key, pod)));
    }
    if (this.#opts.sourcesReady?.() ?? true) {
      for (const [key, mirror] of this.#mirrors) {
        if (wanted.has(key) || !this.#due(key)) continue;
        jobs.push(this.#guard(key, () => this.#removeOrphan(key, mirror)));
      }
    }
    await Promise.all(jobs);
    // Forget retry state of pods that are neither wanted nor mirrored any more.
    for (const key of this.#failures.keys()) {
      if (!wanted.has(key) && !this.#mirrors.has(key)) this.#failures.delete(key);
    }
  }

  /** Ensures one static pod has its current mirror pod. */
  async #ensure(key: string, pod: Pod): Promise<void> {
    const mirror = this.#mirrors.get(key);
    if (mirror && isMirrorPodOf(mirror, pod)) return;
    if (mirror) {
      // Outdated (another hash) or being deleted: replace it. It comes back on a later pass.
      this.#log.info("Trying to delete pod", { pod: key, podUID: mirror.metadata.uid });
      if (!(await this.#delete(key, mirror))) return;
      this.#log.info("Deleted mirror pod because it is outdated", { pod: key });
    }
    const owner = ownerUID(this.#opts.node());
    if ("reason" in owner) {
      this.#log.v(4).info(`No need to create a mirror pod, since ${owner.reason}`, {
        node: this.#opts.nodeName,
        pod: key,
      });
      return;
    }
    this.#log.v(4).info("Creating a mirror pod for static pod", { pod: key });
    await this.#create(key, pod, owner.uid);
  }

  async #removeOrphan(key: string, mirror: Pod): Promise<void> {
    this.#log.info("Deleting orphaned mirror pod", { pod: key, podUID: mirror.metadata.uid });
    await this.#delete(key, mirror);
  }

  async #create(key: string, pod: Pod, nodeUID: string): Promise<void> {
    const body = buildMirrorPod(pod, { name: this.#opts.nodeName, uid: nodeUID });
    const namespace = body.metadata.namespace!;
    const signal = this.#stop.signal;
    try {
      const created = await this.#opts.client.create<Pod>(podPath(namespace), body, { signal });
      // The watch will bring it too; until then this is what we know.
      this.#mirrors.set(key, created ?? body);
      return;
    } catch (err) {
      if (!isAlreadyExists(err)) {
        throw new Error(`failed to create mirror pod "${key}"`, { cause: err });
      }
    }
    // The watch has not shown our earlier create yet, or someone else holds the name.
    const existing = await this.#opts.client.get<Pod>(podPath(namespace, body.metadata.name), {
      signal,
    }).catch((err) => {
      throw new Error(`failed to read existing pod "${key}"`, { cause: err });
    });
    if (!isMirrorPod(existing)) {
      // Never touch an ordinary pod that happens to share the name.
      throw new ApiError(
        `pod "${key}" already exists in the apiserver and is not a mirror pod`,
        409,
        "AlreadyExists",
      );
    }
    this.#mirrors.set(key, existing);
  }

  /**
   * Deletes a mirror pod with grace 0 and a UID precondition.
   * @returns true when it is gone (deleted now or already)
   */
  async #delete(key: string, mirror: Pod): Promise<boolean> {
    const uid = mirror.metadata.uid;
    const path = podPath(mirror.metadata.namespace ?? "default", mirror.metadata.name);
    try {
      await this.#opts.client.delete(
        path,
        { gracePeriodSeconds: 0, ...(uid ? { preconditions: { uid } } : {}) },
        { signal: this.#stop.signal },
      );
    } catch (err) {
      if (isConflict(err)) {
        // Another object holds the name now; the watch will show it.
        this.#log.v(2).info("Mirror pod changed before delete, waiting for the watch", {
          pod: key,
          podUID: uid,
        });
        return false;
      }
      if (!isNotFound(err)) throw new Error(`failed to delete mirror pod "${key}"`, { cause: err });
    }
    if (this.#mirrors.get(key)?.metadata.uid === uid) this.#mirrors.delete(key);
    return true;
  }

  #due(key: string): boolean {
    const failure = this.#failures.get(key);
    return !failure || this.#clock.now() >= failure.notBefore;
  }

  /** Runs one pod's job; records success or failure for its retry delay. Never throws. */
  async #guard(key: string, job: () => Promise<void>): Promise<void> {
    try {
      await job();
      this.#failures.delete(key);
    } catch (err) {
      if (this.#stop.signal.aborted) return;
      const count = (this.#failures.get(key)?.count ?? 0) + 1;
      const delay = Math.min(MIRROR_RETRY.initialMs * 2 ** (count - 1), MIRROR_RETRY.maxMs);
      this.#failures.set(key, { count, notBefore: this.#clock.now() + delay });
      this.#log.error("Failed to sync mirror pod", err, { pod: key, retryInMs: delay });
    }
  }
}
