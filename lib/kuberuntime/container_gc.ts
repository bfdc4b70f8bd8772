/**
 * Container garbage collection, as upstream's containerGC
 * (pkg/kubelet/kuberuntime/kuberuntime_gc.go with pkg/kubelet/container's
 * GCPolicy): every minute, and on demand from the eviction manager under disk
 * pressure, it removes
 *
 * 1. dead containers: not running and created at least `minAgeMs` ago,
 *    grouped per (pod UID, container name) and sorted newest first. All of a
 *    deleted pod's go; of the others each group keeps `maxPerPodContainer`
 *    (the newest dead one is what `kubectl logs --previous` reads), then the
 *    node keeps `maxContainers`: an equal share per group (at least one),
 *    then the oldest go first;
 * 2. dead sandboxes: not ready and holding no container. A pod that still
 *    exists keeps its newest one; a deleted pod keeps none;
 * 3. the log directories under `podLogsDir` of pods that are gone, and the
 *    /var/log/containers symlinks whose log is gone.
 *
 * A removed container takes its log files and symlink with it
 * (`KubeRuntimeManager.removeContainer`).
 *
 * @module
 */

import type { EventRecorder } from "../events/types.ts";
import { nodeReference } from "../events/recorder.ts";
import { EventReason } from "../events/reasons.ts";
import type { Clock } from "../util/clock.ts";
import { errorText, type Logger } from "../util/log.ts";
import type { RuntimeContainer, RuntimePodStatus } from "./types.ts";

/** Upstream's ContainerGCPeriod. */
export const CONTAINER_GC_PERIOD_MS = 60_000;

/** Upstream's GCPolicy for containers. */
export interface ContainerGCPolicy {
  /** `--minimum-container-ttl-duration`: the least age of a dead container before it may go (0: none). */
  minAgeMs: number;
  /** `--maximum-dead-containers-per-container`: dead instances kept per container (<0: no limit). */
  maxPerPodContainer: number;
  /** `--maximum-dead-containers`: dead containers kept on the node (<0: no limit). */
  maxContainers: number;
}

/** Upstream's defaults of the three flags. */
export const DEFAULT_CONTAINER_GC_POLICY: Readonly<ContainerGCPolicy> = {
  minAgeMs: 0,
  maxPerPodContainer: 1,
  maxContainers: -1,
};

/**
 * What the GC asks about a pod (upstream's podStateProvider, which the pod
 * workers implement). Must not block.
 */
export interface PodStateProvider {
  /** Its logs and dead containers may go: evicted, or deleted and terminated, or unknown once synced. */
  shouldPodContentBeRemoved(uid: string): boolean;
  /** Its containers and sandboxes may go: terminated, or unknown once synced. */
  shouldPodRuntimeBeRemoved(uid: string): boolean;
  /**
   * Resolves when pods are first synced, from when on unknown pods may go:
   * the periodic collection runs then too (see {@link ContainerGC.start}).
   */
  firstSync?(): Promise<void>;
}

/** What the GC needs of the runtime manager (`KubeRuntimeManager` has it). */
export interface ContainerGCRuntime {
  /** Every pod the runtime holds for us, containers and sandboxes newest first. */
  listPods(signal?: AbortSignal): Promise<Map<string, RuntimePodStatus>>;
  /** Removes a container with its logs (stopping an unknown-state one first). */
  removeContainer(
    pod: { name: string; namespace: string },
    container: RuntimeContainer,
  ): Promise<void>;
  /** Stops and removes a sandbox. */
  removeSandbox(id: string): Promise<void>;
  /** Removes /var/log/containers symlinks whose log is gone. */
  cleanLogSymlinks(): Promise<string[]>;
}

/** Options for {@link ContainerGC}. */
export interface ContainerGCOptions {
  runtime: ContainerGCRuntime;
  /** The pod workers (`PodWorkers` has both methods). */
  podState: PodStateProvider;
  /** True once every pod source has delivered its first set (the Kubelet's `sourcesReady`). */
  sourcesReady: () => boolean;
  /** The root of the pod log directories (`podLogsDir`). */
  podLogsDir: string;
  /** Upstream's defaults when unset. */
  policy?: ContainerGCPolicy;
  clock: Clock;
  logger: Logger;
  /** Where a failed periodic collection's Warning `ContainerGCFailed` goes; dropped when unset. */
  events?: EventRecorder;
  /** The node the event is about. */
  nodeName?: string;
  /** Between periodic collections (default upstream's 1 min). */
  periodMs?: number;
}

/** One dead container considered for removal, with its pod's name for the log symlink. */
interface DeadContainer {
  pod: RuntimePodStatus;
  container: RuntimeContainer;
}

function newestFirst(a: DeadContainer, b: DeadContainer): number {
  return b.container.createdAt - a.container.createdAt;
}

/**
 * The pod UID of a pod log directory: `<namespace>_<name>_<uid>`, or a bare
 * `<uid>` (the older layout), as upstream's parsePodUIDFromLogsDirectory.
 * @param name the directory's name
 * @returns the UID
 */
export function podUIDFromLogsDirectory(name: string): string {
  return name.slice(name.lastIndexOf("_") + 1);
}

/** Removes dead containers, dead sandboxes and the logs of gone pods. */
export class ContainerGC {
  readonly #opts: ContainerGCOptions;
  readonly #policy: ContainerGCPolicy;
  readonly #log: Logger;
  /** Collections run one at a time (the periodic one and the eviction manager's). */
  #last: Promise<void> = Promise.resolve();
  #loop: { abort: AbortController; done: Promise<void> } | undefined;

  /**
   * @param opts the runtime manager, pod state, policy, clock and logger
   * @throws {RangeError} for a negative minimum age, as upstream's NewContainerGC
   */
  constructor(opts: ContainerGCOptions) {
    this.#opts = opts;
    this.#policy = opts.policy ?? DEFAULT_CONTAINER_GC_POLICY;
    if (this.#policy.minAgeMs < 0) {
      throw new RangeError(`invalid minimum garbage collection age: ${this.#policy.minAgeMs}ms`);
    }
    this.#log = opts.logger.with({ component: "container-gc" });
  }

  /**
   * One collection by the policy (upstream's GarbageCollect): what belongs to
   * pods still wanted follows the caps; deleted pods lose everything.
   * @param signal stops between removals
   * @throws {Error} listing what failed (the other steps still ran)
   */
  garbageCollect(signal?: AbortSignal): Promise<void> {
    return this.#serialized(() => this.#collect(false, signal));
  }

  /**
   * The node-level reclaim of the eviction manager (upstream's
   * DeleteAllUnusedContainers): as {@link ContainerGC.garbageCollect}, and
   * every container and sandbox of a pod that is terminated, deleted or not,
   * goes too.
   * @param signal stops between removals
   * @throws {Error} listing what failed
   */
  deleteAllUnusedContainers(signal?: AbortSignal): Promise<void> {
    this.#log.info("Attempting to delete unused containers");
    return this.#serialized(() => this.#collect(true, signal));
  }

  /**
   * Collects now and then every period after the previous one ended (upstream's
   * StartGarbageCollection); a failure is logged and recorded as a Warning
   * `ContainerGCFailed` event on the node. Idempotent.
   *
   * Unlike upstream, it also collects as soon as the pod state's
   * `firstSync` resolves. The collection at start comes before pods are
   * synced, when nothing of an unknown pod may go, so upstream leaves what
   * pods deleted while the agent was down hold in the runtime (an exited
   * container, a stopped sandbox: no orphan for housekeeping to kill) for a
   * period; an agent restarted more often than that would never collect them.
   */
  start(): void {
    if (this.#loop) return;
    const abort = new AbortController();
    const { clock, periodMs = CONTAINER_GC_PERIOD_MS } = this.#opts;
    let firstSync = this.#opts.podState.firstSync?.();
    const done = (async () => {
      let failedBefore = false;
      while (!abort.signal.aborted) {
        try {
          await this.garbageCollect(abort.signal);
          this.#log.v(failedBefore ? 1 : 4).info("Container garbage collection succeeded");
          failedBefore = false;
        } catch (err) {
          if (abort.signal.aborted) break;
          failedBefore = true;
          this.#log.error("Container garbage collection failed", err);
          this.#opts.events?.event(
            nodeReference(this.#opts.nodeName ?? ""),
            "Warning",
            EventReason.containerGCFailed,
            errorText(err),
          );
        }
        if (!firstSync) {
          await clock.sleep(periodMs, abort.signal).catch(() => {});
          continue;
        }
        const nap = new AbortController();
        const slept = clock.sleep(periodMs, AbortSignal.any([abort.signal, nap.signal]));
        await Promise.race([slept, firstSync]).catch(() => {});
        nap.abort();
        await slept.catch(() => {});
        firstSync = undefined;
      }
    })();
    this.#loop = { abort, done };
  }

  /** Stops the periodic collections and waits for a running one. */
  async stop(): Promise<void> {
    const loop = this.#loop;
    this.#loop = undefined;
    if (!loop) return;
    loop.abort.abort(new Error("container GC stopped"));
    await loop.done;
  }

  #serialized(run: () => Promise<void>): Promise<void> {
    const next = this.#last.then(run, run);
    this.#last = next.catch(() => {});
    return next;
  }

  async #collect(evictNonDeletedPods: boolean, signal?: AbortSignal): Promise<void> {
    const errors: string[] = [];
    const allSourcesReady = this.#opts.sourcesReady();
    const step = async (what: string, fn: () => Promise<void>) => {
      if (signal?.aborted) return;
      try {
        await fn();
      } catch (err) {
        errors.push(`${what}: ${errorText(err)}`);
      }
    };
    await step(
      "evicting containers",
      () => this.#evictContainers(allSourcesReady, evictNonDeletedPods, signal),
    );
    await step("evicting sandboxes", () => this.#evictSandboxes(evictNonDeletedPods, signal));
    await step(
      "evicting pod log directories",
      () => this.#evictPodLogDirs(allSourcesReady, signal),
    );
    if (errors.length > 0) throw new Error(errors.join("; "));
  }

  /** May everything of this pod go? */
  #podGone(uid: string, evictNonDeletedPods: boolean): boolean {
    const state = this.#opts.podState;
    return state.shouldPodContentBeRemoved(uid) ||
      (evictNonDeletedPods && state.shouldPodRuntimeBeRemoved(uid));
  }

  async #evictContainers(
    allSourcesReady: boolean,
    evictNonDeletedPods: boolean,
    signal?: AbortSignal,
  ): Promise<void> {
    const pods = await this.#opts.runtime.listPods(signal);
    const newestGCTime = this.#opts.clock.now() - this.#policy.minAgeMs;
    // Per (pod UID, container name): its dead instances old enough to go.
    const units = new Map<string, { uid: string; dead: DeadContainer[] }>();
    for (const pod of pods.values()) {
      for (const container of pod.containers) {
        if (container.state === "running" || container.createdAt > newestGCTime) continue;
        const key = `${pod.uid}/${container.name}`;
        let unit = units.get(key);
        if (!unit) units.set(key, unit = { uid: pod.uid, dead: [] });
        unit.dead.push({ pod, container });
      }
    }
    if (allSourcesReady) {
      for (const [key, unit] of units) {
        if (!this.#podGone(unit.uid, evictNonDeletedPods)) continue;
        await this.#removeOldest(unit.dead, unit.dead.length, signal);
        units.delete(key);
      }
    }
    const { maxPerPodContainer, maxContainers } = this.#policy;
    const enforcePerUnit = async (keep: number) => {
      for (const unit of units.values()) {
        if (unit.dead.length > keep) {
          unit.dead = await this.#removeOldest(unit.dead, unit.dead.length - keep, signal);
        }
      }
    };
    const total = () => [...units.values()].reduce((n, u) => n + u.dead.length, 0);
    if (maxPerPodContainer >= 0) await enforcePerUnit(maxPerPodContainer);
    if (maxContainers < 0 || total() <= maxContainers) return;
    // An equal share per unit (at least one), then the oldest of all go.
    await enforcePerUnit(Math.max(1, Math.floor(maxContainers / units.size)));
    const left = total();
    if (left > maxContainers) {
      const flattened = [...units.values()].flatMap((u) => u.dead);
      await this.#removeOldest(flattened, left - maxContainers, signal);
    }
  }

  /**
   * Removes the `count` oldest of `dead` (upstream's removeOldestN); a
   * failed removal is logged and counted as done, so one stuck container
   * does not make the GC remove more than the policy says.
   * @returns the ones kept, newest first
   */
  async #removeOldest(
    dead: DeadContainer[],
    count: number,
    signal?: AbortSignal,
  ): Promise<DeadContainer[]> {
    const sorted = [...dead].sort(newestFirst);
    const keep = sorted.length - count;
    for (let i = sorted.length - 1; i >= keep && i >= 0; i--) {
      if (signal?.aborted) break;
      const { pod, container } = sorted[i]!;
      try {
        await this.#opts.runtime.removeContainer(pod, container);
      } catch (err) {
        this.#log.error("Failed to remove container", err, {
          pod: `${pod.namespace}/${pod.name}`,
          podUID: pod.uid,
          containerID: container.id,
        });
      }
    }
    return sorted.slice(0, Math.max(keep, 0));
  }

  async #evictSandboxes(evictNonDeletedPods: boolean, signal?: AbortSignal): Promise<void> {
    const pods = await this.#opts.runtime.listPods(signal);
    const holding = new Set<string>();
    for (const pod of pods.values()) for (const c of pod.containers) holding.add(c.sandboxId);
    for (const pod of pods.values()) {
      // Newest first already; a pod still wanted keeps its newest sandbox, dead or not.
      const candidates = this.#podGone(pod.uid, evictNonDeletedPods)
        ? pod.sandboxes
        : pod.sandboxes.slice(1);
      for (const sandbox of [...candidates].reverse()) {
        if (signal?.aborted) return;
        if (sandbox.state === "ready" || holding.has(sandbox.id)) continue;
        try {
          await this.#opts.runtime.removeSandbox(sandbox.id);
        } catch (err) {
          this.#log.error("Failed to remove sandbox", err, {
            pod: `${pod.namespace}/${pod.name}`,
            podUID: pod.uid,
            sandboxID: sandbox.id,
          });
        }
      }
    }
  }

  async #evictPodLogDirs(allSourcesReady: boolean, signal?: AbortSignal): Promise<void> {
    const root = this.#opts.podLogsDir.replace(/\/+$/, "");
    // Only once every source has been seen: before, a wanted pod may look unknown.
    if (allSourcesReady) {
      let entries: Deno.DirEntry[] = [];
      try {
        entries = await Array.fromAsync(Deno.readDir(root));
      } catch (err) {
        if (!(err instanceof Deno.errors.NotFound)) {
          throw new Error(`failed to read podLogsDirectory "${root}"`, { cause: err });
        }
      }
      for (const e of entries) {
        if (signal?.aborted) return;
        const uid = podUIDFromLogsDirectory(e.name);
        if (!this.#opts.podState.shouldPodContentBeRemoved(uid)) continue;
        this.#log.v(4).info("Removing pod logs", { podUID: uid });
        await Deno.remove(`${root}/${e.name}`, { recursive: true }).catch((err) => {
          if (!(err instanceof Deno.errors.NotFound)) {
            this.#log.error("Failed to remove pod logs directory", err, { path: e.name });
          }
        });
      }
    }
    await this.#opts.runtime.cleanLogSymlinks();
  }
}
