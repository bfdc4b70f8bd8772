/**
 * The QoS and pod cgroups upstream's container manager keeps with
 * `--cgroups-per-qos` (pkg/kubelet/cm: qos_container_manager_linux.go,
 * pod_container_manager_linux.go, node_container_manager_linux.go):
 *
 * ```
 * <cgroupRoot>/kubepods                 Guaranteed pods' parent, limited to the node's
 *                                       allocatable (cpu.shares, memory, pids)
 *             /kubepods/burstable       cpu.shares = the Burstable pods' summed cpu requests
 *             /kubepods/besteffort      cpu.shares = 2
 *             /kubepods[/<qos>]/pod<uid>  the pod's limits (resourceConfigForPod) and
 *                                         podPidsLimit; the sandbox's CgroupParent
 * ```
 *
 * Names are formed for either driver; with the systemd driver they are the
 * slices `kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod<uid>.slice`.
 * Only the cgroupfs driver's cgroups are made here: the systemd driver would
 * make them as systemd units over D-Bus, which denolet does not do (the
 * runtime's runc creates the slices when it starts the pod's scopes).
 *
 * @module
 */

import { podQOSClass } from "../api/qos.ts";
import { podRequests } from "../api/scheduling.ts";
import type { Pod } from "../api/types.ts";
import { EventMessage, EventReason } from "../events/reasons.ts";
import type { EventType } from "../events/types.ts";
import type { Clock, Timer } from "../util/clock.ts";
import type { Logger } from "../util/log.ts";
import {
  type CgroupDriver,
  type CgroupName,
  cgroupNameForDriver,
  cgroupNameToCgroupfs,
  childCgroupName,
  parseCgroupfsToCgroupName,
} from "./cgroup_name.ts";
import type { CgroupfsManager } from "./cgroupfs.ts";
import { enforceReservedCgroup, type ReservedCgroupEnforcement } from "./node_allocatable.ts";
import {
  milliCPUToShares,
  MIN_SHARES,
  type ResourceConfig,
  resourceConfigForPod,
} from "./resource_config.ts";

/** Records an event about the Node. */
export type NodeEventSink = (type: EventType, reason: string, message: string) => void;

/** Upstream retries a refused kubepods limit every minute. */
const ENFORCEMENT_RETRY_MS = 60_000;

/** Upstream's node allocatable cgroup under the cgroup root. */
export const KUBEPODS = "kubepods";
const POD_PREFIX = "pod";

/**
 * Housekeeping rounds (2 s apart) from one orphan scan of every hierarchy to
 * the next; the rounds between list the memory hierarchy alone, where every
 * pod cgroup made here is. A cgroup left in some hierarchies only (a removal
 * that failed half-way, or made by hand) is found within 30 s, not 2 s.
 */
export const ORPHAN_FULL_SCAN_ROUNDS = 15;

/** The node's cgroup settings. */
export interface PodCgroupNaming {
  /** `--cgroup-root` in cgroupfs form; "/" by default. */
  cgroupRoot: string;
  /** `--cgroup-driver`. */
  cgroupDriver: CgroupDriver;
  /** `--cgroups-per-qos`. */
  cgroupsPerQOS: boolean;
}

/** The QoS classes' cgroups (upstream QOSContainersInfo). */
export interface QOSCgroupNames {
  guaranteed: CgroupName;
  burstable: CgroupName;
  bestEffort: CgroupName;
}

/**
 * The node allocatable cgroup, parent of all pods: `<root>/kubepods` with
 * cgroupsPerQOS, else the root (upstream NodeAllocatableRoot's name).
 * @param naming root and cgroupsPerQOS
 * @returns the name
 */
export function nodeAllocatableCgroupName(naming: PodCgroupNaming): CgroupName {
  const root = parseCgroupfsToCgroupName(naming.cgroupRoot || "/");
  return naming.cgroupsPerQOS ? childCgroupName(root, KUBEPODS) : root;
}

/**
 * The node allocatable cgroup in the driver's form (upstream NodeAllocatableRoot).
 * @param naming root, driver and cgroupsPerQOS
 * @returns e.g. "/kubepods" or "/kubepods.slice"
 */
export function nodeAllocatableRoot(naming: PodCgroupNaming): string {
  return cgroupNameForDriver(nodeAllocatableCgroupName(naming), naming.cgroupDriver);
}

/**
 * The QoS classes' cgroups: Guaranteed pods sit right under kubepods.
 * @param naming root and cgroupsPerQOS
 * @returns the names
 */
export function qosCgroupNames(naming: PodCgroupNaming): QOSCgroupNames {
  const kubepods = nodeAllocatableCgroupName(naming);
  return {
    guaranteed: kubepods,
    burstable: childCgroupName(kubepods, "burstable"),
    bestEffort: childCgroupName(kubepods, "besteffort"),
  };
}

/**
 * The pod's cgroup (upstream GetPodContainerName): `pod<uid>` under its QoS class's cgroup.
 * @param pod the pod
 * @param naming root and cgroupsPerQOS (true)
 * @returns the name
 */
export function podCgroupName(pod: Pod, naming: PodCgroupNaming): CgroupName {
  const qos = qosCgroupNames(naming);
  const parent =
    { Guaranteed: qos.guaranteed, Burstable: qos.burstable, BestEffort: qos.bestEffort }[
      podQOSClass(pod)
    ];
  return childCgroupName(parent, `${POD_PREFIX}${pod.metadata.uid ?? ""}`);
}

/**
 * The sandbox's CgroupParent as upstream hands it to CRI (GetPodCgroupParent):
 * the pod cgroup in the driver's form, `/kubepods/burstable/pod<uid>` or
 * `/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod<uid_>.slice`.
 * Without cgroupsPerQOS upstream leaves it empty (the runtime's default
 * place); denolet hands the cgroup root instead, so that pods stay under it.
 * @param pod the pod
 * @param naming root, driver and cgroupsPerQOS
 * @returns the cgroup parent
 */
export function podCgroupParent(pod: Pod, naming: PodCgroupNaming): string {
  if (!naming.cgroupsPerQOS) {
    return cgroupNameToCgroupfs(parseCgroupfsToCgroupName(naming.cgroupRoot || "/"));
  }
  return cgroupNameForDriver(podCgroupName(pod, naming), naming.cgroupDriver);
}

/** What {@link PodCgroupManager} needs. */
export interface PodCgroupManagerOptions extends PodCgroupNaming {
  /** The cgroupfs writer; with the systemd driver it is not used. */
  cgroups: CgroupfsManager;
  /** `podPidsLimit`: > 0 sets the pod cgroup's pids.max. */
  podPidsLimit: number;
  /**
   * kubepods' limits (node_allocatable.ts: the node's allocatable with
   * `enforceNodeAllocatable: [pods]`, else its capacity); none when unset.
   */
  nodeAllocatable?: ResourceConfig;
  /** The system-reserved / kube-reserved cgroups `enforceNodeAllocatable` limits. */
  reservedCgroups?: readonly ReservedCgroupEnforcement[];
  logger: Logger;
}

/**
 * Makes, updates and removes the QoS and pod cgroups (cgroupfs driver with
 * cgroupsPerQOS); with the systemd driver or without cgroupsPerQOS every
 * method but the names does nothing, as upstream's no-op managers.
 */
export class PodCgroupManager {
  readonly #opts: PodCgroupManagerOptions;
  readonly #qos: QOSCgroupNames;
  readonly #log: Logger;
  #kubepodsError: unknown;
  #retry: Timer | undefined;
  #orphanRounds = 0;

  /** @param opts settings, the cgroupfs writer and a logger */
  constructor(opts: PodCgroupManagerOptions) {
    this.#opts = opts;
    this.#qos = qosCgroupNames(opts);
    this.#log = opts.logger.with({ component: "cgroups" });
  }

  /** True when this manager makes cgroups (cgroupfs driver, cgroupsPerQOS). */
  get enabled(): boolean {
    return this.#opts.cgroupsPerQOS && this.#opts.cgroupDriver === "cgroupfs";
  }

  #path(name: CgroupName): string {
    return cgroupNameToCgroupfs(name);
  }

  /**
   * Start-up (upstream's container manager Start): the cgroup root must
   * exist; kubepods, kubepods/burstable and kubepods/besteffort (cpu.shares 2)
   * are made or updated. On cgroup v2 memory protection is reset as upstream
   * does with MemoryQoS off (memory.min/low 0 on kubepods, memory.low 0 on burstable).
   * Then the reserved cgroups `enforceNodeAllocatable` names get their limits
   * (upstream enforceExistingCgroup): each must exist already.
   * @throws {Error} when the root is missing, a cgroup cannot be made, or a
   *   reserved cgroup is missing, unset or refuses its limits
   */
  start(): void {
    const reserved = this.#opts.reservedCgroups ?? [];
    if (reserved.length > 0 && this.#opts.cgroupDriver === "systemd") {
      throw new Error(
        `enforceNodeAllocatable ${
          reserved.map((r) => r.key).join(", ")
        }: denolet cannot limit cgroups through systemd (cgroupDriver systemd)`,
      );
    }
    if (this.#opts.cgroupsPerQOS && this.#opts.cgroupDriver === "systemd") {
      this.#log.warn(
        "cgroupDriver systemd: the runtime gets systemd slice names, but denolet does not create " +
          "the QoS and pod slices through systemd nor set their limits (pod cgroup limits, " +
          "podPidsLimit, QoS cpu shares are not applied)",
      );
    }
    if (!this.enabled) return;
    const root = parseCgroupfsToCgroupName(this.#opts.cgroupRoot || "/");
    const cg = this.#opts.cgroups;
    if (!cg.exists(this.#path(root))) {
      throw new Error(
        `invalid configuration: cgroup-root ${
          JSON.stringify(this.#opts.cgroupRoot)
        } does not exist`,
      );
    }
    const v2 = cg.hierarchies.mode === "v2";
    const kubepods = this.#path(this.#qos.guaranteed);
    // Upstream's createNodeAllocatableCgroups, then enforceNodeAllocatableCgroups.
    const allocatable = this.#opts.nodeAllocatable ?? {};
    if (!cg.exists(kubepods)) cg.create(kubepods, allocatable);
    this.#kubepodsError = this.#updateKubepods();
    const qos: [CgroupName, ResourceConfig][] = [
      [this.#qos.burstable, v2 ? { unified: { "memory.low": "0" } } : {}],
      [this.#qos.bestEffort, { cpuShares: MIN_SHARES }],
    ];
    for (const [name, config] of qos) {
      const path = this.#path(name);
      if (cg.exists(path)) cg.update(path, config);
      else cg.create(path, config);
    }
    if (v2) {
      try {
        cg.update(kubepods, { unified: { "memory.min": "0", "memory.low": "0" } });
      } catch (err) {
        this.#log.error("Failed to reset memory protection on root cgroup", err);
      }
    }
    this.#log.info("QoS cgroups ready", { kubepods, mode: cg.hierarchies.mode });
    for (const r of reserved) {
      enforceReservedCgroup(cg, r);
      this.#log.info(`Updated limits on ${r.title.toLowerCase()} cgroup`, { cgroup: r.cgroup });
    }
  }

  /** Sets kubepods' limits. @returns the error, or undefined when the kernel took them */
  #updateKubepods(): unknown {
    const kubepods = this.#path(this.#qos.guaranteed);
    try {
      this.#opts.cgroups.update(kubepods, this.#opts.nodeAllocatable ?? {});
      return undefined;
    } catch (err) {
      this.#log.error("Failed to update Node Allocatable Limits", err, { cgroup: kubepods });
      return err ?? new Error("unknown error");
    }
  }

  /**
   * Reports node allocatable enforcement as upstream's Node events, once a
   * recorder exists (start() runs before it): the kubepods limits
   * (NodeAllocatableEnforced, or FailedNodeAllocatableEnforcement and a retry
   * every minute until the kernel takes them: a memory limit below the pods'
   * usage is refused until evictions bring it down), then each reserved cgroup.
   * @param clock for the retries
   * @param record records an event about the Node
   */
  reportNodeAllocatable(clock: Clock, record: NodeEventSink): void {
    if (!this.enabled) return;
    const name = `[${this.#qos.guaranteed.map((c) => JSON.stringify(c)).join(" ")}]`;
    const outcome = (err: unknown) => {
      if (err === undefined) {
        record("Normal", EventReason.nodeAllocatableEnforced, EventMessage.allocatableEnforced());
        return;
      }
      const why = err instanceof Error ? err.message : String(err);
      record(
        "Warning",
        EventReason.failedNodeAllocatableEnforcement,
        `Failed to update Node Allocatable Limits ${name}: ${why}`,
      );
      this.#retry = clock.setTimeout(() => outcome(this.#updateKubepods()), ENFORCEMENT_RETRY_MS);
    };
    outcome(this.#kubepodsError);
    for (const r of this.#opts.reservedCgroups ?? []) {
      const which = r.title.startsWith("System") ? "system" : "kube";
      record(
        "Normal",
        EventReason.nodeAllocatableEnforced,
        `Updated limits on ${which} reserved cgroup ${r.cgroup}`,
      );
    }
  }

  /** Stops retrying the kubepods limits. */
  stop(): void {
    this.#retry?.cancel();
  }

  /**
   * The QoS cgroups' cpu.shares from the active pods (upstream UpdateCgroups,
   * run before a pod cgroup is made, after a pod is killed and every minute):
   * Burstable gets its pods' summed cpu requests, BestEffort the minimum.
   * @param activePods the pods that count (not terminated)
   */
  updateQOSCgroups(activePods: readonly Pod[]): void {
    if (!this.enabled) return;
    let burstableMilliCPU = 0;
    for (const pod of activePods) {
      if (podQOSClass(pod) === "Burstable") burstableMilliCPU += podRequests(pod).get("cpu") ?? 0;
    }
    const cg = this.#opts.cgroups;
    cg.update(this.#path(this.#qos.bestEffort), { cpuShares: MIN_SHARES });
    cg.update(this.#path(this.#qos.burstable), {
      cpuShares: milliCPUToShares(burstableMilliCPU),
    });
  }

  /**
   * Whether the pod's cgroup exists (always true when no cgroups are made).
   * @param pod the pod
   */
  exists(pod: Pod): boolean {
    return !this.enabled || this.#opts.cgroups.exists(this.#path(podCgroupName(pod, this.#opts)));
  }

  /** The pod cgroup's limits: upstream's ResourceConfigForPod plus podPidsLimit when > 0. */
  podResourceConfig(pod: Pod): ResourceConfig {
    const config = resourceConfigForPod(pod);
    if (this.#opts.podPidsLimit > 0) config.pidsLimit = this.#opts.podPidsLimit;
    return config;
  }

  /**
   * Makes the pod's cgroup with its limits unless it exists (upstream
   * EnsureExists, preceded as in SyncPod by a QoS update).
   * @param pod the pod
   * @param activePods the node's active pods, for the QoS update (asked only when the cgroup is made)
   * @throws {Error} when the cgroup cannot be made
   */
  ensureExists(pod: Pod, activePods: () => readonly Pod[]): void {
    if (this.exists(pod)) return;
    try {
      this.updateQOSCgroups(activePods());
    } catch (err) {
      this.#log.error("Failed to update QoS cgroups while syncing pod", err);
    }
    const path = this.#path(podCgroupName(pod, this.#opts));
    try {
      this.#opts.cgroups.create(path, this.podResourceConfig(pod));
    } catch (cause) {
      throw new Error(`failed to create container for ${path}`, { cause });
    }
  }

  /**
   * Sets the pod cgroup's limits for an in-place resize (upstream's
   * SetPodCgroupConfig in doPodResizeAction): with `floor` (the pod as in
   * force) before the containers' updates, so a limit that grows is raised
   * first and one that shrinks is kept; without it after them, so what shrinks
   * is lowered last. A child's CFS quota or memory use may not pass its parent's.
   * @param pod the pod with its new resources
   * @param floor the pod with the resources in force
   */
  resizePodCgroup(pod: Pod, floor?: Pod): void {
    if (!this.enabled) return;
    const next = this.podResourceConfig(pod);
    this.#opts.cgroups.update(
      this.#path(podCgroupName(pod, this.#opts)),
      floor ? higherLimits(next, this.podResourceConfig(floor)) : next,
    );
  }

  /**
   * The pod cgroups under the QoS cgroups, by pod UID (upstream
   * GetAllPodsFromCgroups: a pod cgroup in any hierarchy counts).
   * @param from every hierarchy, or the memory hierarchy alone (v2: the one tree)
   * @returns UID → cgroupfs path
   */
  podsFromCgroups(from: "all" | "primary" = "all"): Map<string, string> {
    const out = new Map<string, string>();
    if (!this.enabled) return out;
    for (const qos of [this.#qos.bestEffort, this.#qos.burstable, this.#qos.guaranteed]) {
      const parent = this.#path(qos);
      for (const child of this.#opts.cgroups.children(parent, from)) {
        if (!child.startsWith(POD_PREFIX) || child.length === POD_PREFIX.length) continue;
        out.set(child.slice(POD_PREFIX.length), `${parent === "/" ? "" : parent}/${child}`);
      }
    }
    return out;
  }

  /**
   * Kills what is left in the pod's cgroup and removes it (upstream Destroy,
   * from SyncTerminatedPod).
   * @param pod the pod
   * @throws {Error} when it cannot be removed
   */
  destroy(pod: Pod): void {
    if (!this.enabled) return;
    this.#opts.cgroups.destroy(this.#path(podCgroupName(pod, this.#opts)));
  }

  /**
   * Removes the cgroups of pods that are not possibly running (upstream
   * cleanupOrphanedPodCgroups, from housekeeping). The first round and every
   * {@link ORPHAN_FULL_SCAN_ROUNDS}th list every hierarchy, the others the
   * memory hierarchy alone (on v1 a tenth of the listing, at 110 pods the
   * housekeeping's largest allocation); an orphan found is removed from all.
   * @param possiblyRunning UIDs of pods the workers or the runtime still have
   */
  cleanupOrphans(possiblyRunning: ReadonlySet<string>): void {
    const from = this.#orphanRounds++ % ORPHAN_FULL_SCAN_ROUNDS === 0 ? "all" : "primary";
    for (const [uid, path] of this.podsFromCgroups(from)) {
      if (possiblyRunning.has(uid)) continue;
      this.#log.info("Orphaned pod found, removing pod cgroups", { podUID: uid });
      try {
        this.#opts.cgroups.destroy(path);
      } catch (err) {
        this.#log.error("Failed to destroy orphaned pod cgroup", err, { podUID: uid });
      }
    }
  }
}

/** Each limit of `a` and `b`, the higher (unlimited above all: quota -1, memory 0). */
function higherLimits(a: ResourceConfig, b: ResourceConfig): ResourceConfig {
  const unlimitedHigh = (x: number | undefined, y: number | undefined, none: number) =>
    x === undefined || y === undefined ? x ?? y : x === none || y === none ? none : Math.max(x, y);
  const out: ResourceConfig = { ...a };
  const shares = unlimitedHigh(a.cpuShares, b.cpuShares, Infinity);
  const quota = unlimitedHigh(a.cpuQuota, b.cpuQuota, -1);
  const memory = unlimitedHigh(a.memory, b.memory, 0);
  if (shares !== undefined) out.cpuShares = shares;
  if (quota !== undefined) out.cpuQuota = quota;
  if (memory !== undefined) out.memory = memory;
  return out;
}
