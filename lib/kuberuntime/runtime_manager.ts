/**
 * The pod runtime executor: `KubeRuntimeManager` syncs, kills and removes
 * pods through CRI and reads back what runs. One instance per node; its
 * methods may be called concurrently for different pods, but the caller (the
 * pod workers) must not sync the same pod twice at once.
 *
 * @module
 */

import type { Pod, ResourceRequirements } from "../api/types.ts";
import type { RuntimeService } from "../cri/types.ts";
import { ImageManager, NodeDockerConfig } from "../images/mod.ts";
import type { PodObjects } from "../kubeobjects/mod.ts";
import {
  hostMounter,
  type Mounter,
  type NodeAllocatable,
  tearDownPodVolumes,
} from "../volumes/mod.ts";
import type { Clock } from "../util/clock.ts";
import type { Logger } from "../util/log.ts";
import type { ManagerContext, PodCgroupResizer, SyncStep } from "./_context.ts";
import { BackoffStore } from "../util/backoff.ts";
import { killPod, removeContainer, removePod, removeSandbox } from "./kill_pod.ts";
import { currentSync } from "../trace/mod.ts";
import { getPodStatus, listPods } from "./runtime_status.ts";
import { DEFAULT_POD_LOGS_DIR } from "./sandbox_config.ts";
import { cleanDanglingLogSymlinks, DEFAULT_CONTAINER_LOGS_DIR } from "./log_symlink.ts";
import { type ProbeResults, syncPod, type SyncPodResult } from "./sync_pod.ts";
import type { RuntimeContainer, RuntimePodStatus } from "./types.ts";
import { isPodResizeInProgress } from "./resize_action.ts";
import type { ContainerLogTailReader } from "./termination_message.ts";
import { discardEvents, type EventRecorder } from "../events/types.ts";
import { recordStepEvent } from "./_events.ts";
import { nodeReference } from "../events/recorder.ts";
import { checkResolvConfLimits } from "./pod_dns.ts";
import { ResourceState } from "../allocation/mod.ts";

/** Options for {@link KubeRuntimeManager}. */
export interface KubeRuntimeManagerOptions {
  /** Where pod events go; dropped when unset. */
  events?: EventRecorder;
  runtime: RuntimeService;
  clock: Clock;
  logger: Logger;
  /** `--root-dir` (upstream default /var/lib/kubelet). */
  rootDir: string;
  /** Root of pod log directories (default /var/log/pods). */
  podLogsDir?: string;
  /** Where container log symlinks go (default /var/log/containers). */
  containerLogsDir?: string;
  /** `--cgroup-root` (default "/"). */
  cgroupRoot?: string;
  /** `--cgroup-driver` (default "cgroupfs"). */
  cgroupDriver?: "cgroupfs" | "systemd";
  /** `--cgroups-per-qos` (default true). */
  cgroupsPerQOS?: boolean;
  nodeName: string;
  /** The node's IPs, used as pod IPs of host-network pods. */
  hostIPs?: string[];
  /** Container restart backoff; a fresh store by default. */
  backoff?: BackoffStore;
  /** Image manager; one with upstream defaults over `runtime` by default. */
  images?: ImageManager;
  /** `serializeImagePulls` for the default image manager (default true, as upstream). */
  serializeImagePulls?: boolean;
  /** `maxParallelImagePulls` for the default image manager (unset: no limit). */
  maxParallelImagePulls?: number | undefined;
  /** `--resolv-conf` (default /etc/resolv.conf; "" for none). */
  resolvConf?: string;
  /** `--cluster-dns`. */
  clusterDNS?: string[];
  /** `--cluster-domain`. */
  clusterDomain?: string;
  /** The IPs given with `--node-ip` (pods without a resolv.conf get 127.0.0.1 or ::1 by them). */
  nodeIPs?: string[];
  /** The machine's memory in bytes, for OOM scores (lib/stats `MachineInfo`). */
  memoryCapacity: number;
  /**
   * Node allocatable as the Node reports it (lib/nodestatus
   * `computeNodeResources`): capacity less reservations and hard eviction
   * thresholds. The default of a container's unset limits (downward API) and
   * the tmpfs size cap, as upstream's.
   */
  nodeAllocatable: NodeAllocatable;
  /**
   * ConfigMaps, Secrets, Services and service-account tokens (lib/kubeobjects
   * `ApiPodObjects`); omit in standalone mode, where pods referencing them
   * fail with "no apiserver".
   */
  objects?: PodObjects;
  /** tmpfs mounter for memory-backed volumes; the host's mount(8) by default. */
  mounter?: Mounter;
  /**
   * Reads the end of a container's log, for FallbackToLogsOnError
   * termination messages (lib/logs `readLogTail`).
   */
  readLogTail: ContainerLogTailReader;
  /** `seccompDefault`: RuntimeDefault seccomp where a pod names no profile (default false). */
  seccompDefault?: boolean;
  /**
   * What the runtime actuated per container (in-place resize); checkpointed
   * as `denolet_actuated_pods_state` under the root dir by main.ts, in memory by default.
   */
  actuated?: ResourceState;
  /** The pod cgroups, resized around the containers of an in-place resize. */
  podCgroup?: PodCgroupResizer;
  /**
   * Removes a container's live and rotated log files before the container
   * is removed (lib/logs `cleanContainerLogs`); unset, they stay until the
   * pod's log directory is removed.
   */
  cleanContainerLogs?: (logPath: string) => Promise<void>;
  /** Counts an HTTPS httpGet hook that passed over HTTP (lib/metrics); unset, nothing counts. */
  countHookHttpFallback?: () => void;
}

/** Syncs, kills and removes pods through CRI, and reads back what runs. */
export class KubeRuntimeManager {
  readonly #ctx: ManagerContext;
  readonly #readLogTail: ContainerLogTailReader;

  /** @param opts runtime, clock, logger, directories and node settings */
  constructor(opts: KubeRuntimeManagerOptions) {
    const backoff = opts.backoff ?? new BackoffStore();
    this.#readLogTail = opts.readLogTail;
    this.#ctx = {
      runtime: opts.runtime,
      clock: opts.clock,
      logger: opts.logger,
      rootDir: opts.rootDir,
      seccomp: {
        seccompDefault: opts.seccompDefault ?? false,
        profileRoot: `${opts.rootDir.replace(/\/+$/, "")}/seccomp`,
      },
      podLogsDir: opts.podLogsDir ?? DEFAULT_POD_LOGS_DIR,
      containerLogsDir: opts.containerLogsDir ?? DEFAULT_CONTAINER_LOGS_DIR,
      nodeName: opts.nodeName,
      hostIPs: opts.hostIPs ?? [],
      backoff,
      images: opts.images ??
        new ImageManager({
          runtime: opts.runtime,
          clock: opts.clock,
          logger: opts.logger,
          events: opts.events ?? discardEvents,
          serializeImagePulls: opts.serializeImagePulls ?? true,
          nodeCredentials: new NodeDockerConfig({
            rootDir: opts.rootDir,
            clock: opts.clock,
            logger: opts.logger,
          }),
          ...(opts.maxParallelImagePulls === undefined
            ? {}
            : { maxParallelImagePulls: opts.maxParallelImagePulls }),
        }),
      sandbox: {
        cgroupRoot: opts.cgroupRoot ?? "/",
        cgroupDriver: opts.cgroupDriver ?? "cgroupfs",
        cgroupsPerQOS: opts.cgroupsPerQOS ?? true,
        clusterDomain: opts.clusterDomain ?? "",
      },
      dns: {
        clusterDNS: opts.clusterDNS ?? [],
        clusterDomain: opts.clusterDomain ?? "",
        resolvConf: opts.resolvConf ?? "/etc/resolv.conf",
        nodeIPs: opts.nodeIPs ?? [],
      },
      memoryCapacity: opts.memoryCapacity,
      nodeAllocatable: opts.nodeAllocatable,
      objects: opts.objects,
      mounter: opts.mounter ?? hostMounter,
      events: opts.events ?? discardEvents,
      actuated: opts.actuated ?? new ResourceState(),
      ...(opts.podCgroup ? { podCgroup: opts.podCgroup } : {}),
      ...(opts.cleanContainerLogs ? { cleanContainerLogs: opts.cleanContainerLogs } : {}),
      ...(opts.countHookHttpFallback ? { countHookHttpFallback: opts.countHookHttpFallback } : {}),
    };
  }

  /**
   * Whether an allocated resize still waits for the runtime (upstream
   * `IsPodResizeInProgress`).
   * @param pod the allocated pod
   * @param status what the runtime holds for it
   * @returns true while some running container's actuated resources differ
   */
  isPodResizeInProgress(pod: Pod, status: RuntimePodStatus): boolean {
    const uid = pod.metadata.uid!;
    return isPodResizeInProgress(pod, status, (name) => this.#ctx.actuated.getContainer(uid, name));
  }

  /**
   * What the runtime actuated for a container, the fallback of its status
   * resources when the runtime reports none.
   * @param uid the pod UID
   * @param name the container name
   * @returns the resources, or undefined when none were recorded
   */
  actuatedResources(uid: string, name: string): ResourceRequirements | undefined {
    return this.#ctx.actuated.getContainer(uid, name);
  }

  /**
   * Forgets the actuated resources of pods not in `keep` (upstream removes
   * them with the pod).
   * @param keep the UIDs still known
   */
  removeOrphanedActuated(keep: ReadonlySet<string>): void {
    this.#ctx.actuated.removeOrphans(keep);
  }

  /** The container restart backoff table (the planner reads its state). */
  get backoff(): BackoffStore {
    return this.#ctx.backoff;
  }

  /** The image manager. */
  get images(): ImageManager {
    return this.#ctx.images;
  }

  /**
   * Warns (an event about the node, and the log) when the host's resolv.conf
   * is over the limits a pod's resolv.conf must fit, as upstream's
   * CheckLimitsForResolvConf does once as its sync loop starts. Nothing to do
   * with resolvConf "". Never throws.
   */
  async checkResolvConfLimits(): Promise<void> {
    const dns = this.#ctx.dns;
    if (dns.resolvConf === "") return;
    const text = await Deno.readTextFile(dns.resolvConf).catch((err: unknown) =>
      err instanceof Error ? err : new Error(String(err))
    );
    const warning = checkResolvConfLimits(dns, text);
    if (!warning) return;
    const ref = nodeReference(this.#ctx.nodeName);
    this.#ctx.events.event(ref, "Warning", warning.reason, warning.message);
    this.#ctx.logger.warn(warning.message, { reason: warning.reason, file: dns.resolvConf });
  }

  /**
   * Syncs a pod towards its spec; see sync_pod.ts for the steps.
   * @param pod the desired pod
   * @param status its full runtime status, from {@link KubeRuntimeManager.getPodStatus}
   * @param signal stops the sync between CRI calls
   * @param probes liveness/startup verdicts by container id
   * @returns the plan, steps and per-container errors; never throws for a failing pod
   */
  syncPod(
    pod: Pod,
    status: RuntimePodStatus,
    signal: AbortSignal,
    probes?: ProbeResults,
  ): Promise<SyncPodResult> {
    return syncPod(this.#ctx, pod, status, signal, probes);
  }

  /**
   * Stops every container (in parallel, each with its grace period) and then
   * every sandbox of a pod. NotFound counts as stopped.
   * @param pod the pod spec when known (grace periods, preStop); else read from annotations
   * @param running what the runtime holds for the pod
   * @param gracePeriodSeconds overrides every container's grace period
   * @param signal checked before sandboxes are stopped
   * @returns the steps; failed ones carry an error
   */
  async killPod(
    pod: Pod | undefined,
    running: RuntimePodStatus,
    gracePeriodSeconds?: number,
    signal?: AbortSignal,
  ): Promise<SyncStep[]> {
    const steps = await killPod(this.#ctx, pod, running, gracePeriodSeconds, signal);
    if (pod) { for (const step of steps) recordStepEvent(this.#ctx.events, pod, step); }
    const trace = currentSync();
    for (const step of steps) trace?.step(step);
    return steps;
  }

  /**
   * Removes a pod's containers, sandboxes, directories and logs; for pods gone for good.
   * @param running what the runtime holds for the pod
   * @param signal stops between calls
   * @returns the steps; failed ones carry an error
   */
  async removePod(running: RuntimePodStatus, signal?: AbortSignal): Promise<SyncStep[]> {
    const steps = await removePod(this.#ctx, running, signal);
    const trace = currentSync();
    for (const step of steps) trace?.step(step);
    return steps;
  }

  /**
   * Unmounts and removes a terminated pod's volumes (upstream's volume manager
   * once the pod's runtime may be removed), and forgets the objects they were
   * made from, as upstream unregisters the pod from its secret and configMap
   * managers after the unmount. The pod dir stays until {@link removePod}.
   * @param uid the pod UID
   * @throws {Error} naming the pod UID when an unmount or a removal fails
   */
  async tearDownPodVolumes(uid: string): Promise<void> {
    await tearDownPodVolumes(this.#ctx.rootDir, uid, this.#ctx.mounter);
    this.#ctx.objects?.forgetPod(uid);
  }

  /**
   * Removes one container with its log files and symlink (a container in an
   * unknown state is stopped first), as upstream's removeContainer.
   * @param pod the pod's name and namespace (for the symlink)
   * @param container the container
   * @throws {Error} naming the container when a step fails (not for NotFound)
   */
  removeContainer(
    pod: { name: string; namespace: string },
    container: RuntimeContainer,
  ): Promise<void> {
    return removeContainer(this.#ctx, pod, container);
  }

  /**
   * Stops and removes one sandbox (NotFound counts as done).
   * @param id the sandbox id
   * @throws {Error} naming the sandbox when the runtime fails
   */
  removeSandbox(id: string): Promise<void> {
    return removeSandbox(this.#ctx, id);
  }

  /** The root of the pod log directories (`podLogsDir`). */
  get podLogsDir(): string {
    return this.#ctx.podLogsDir;
  }

  /**
   * The cheap snapshot PLEG relists: every pod from two list calls.
   * @param signal cancels the calls
   * @returns pod UID → runtime status (exit codes and times other than createdAt are 0)
   */
  listPods(signal?: AbortSignal): Promise<Map<string, RuntimePodStatus>> {
    return listPods(this.#ctx.runtime, signal);
  }

  /**
   * Removes container log symlinks whose log is gone, as upstream's
   * container GC does (container_gc.ts calls it every run).
   * @returns the links removed
   */
  cleanLogSymlinks(): Promise<string[]> {
    return cleanDanglingLogSymlinks(
      this.#ctx.containerLogsDir,
      this.#ctx.runtime,
      this.#ctx.logger,
    );
  }

  /**
   * The full runtime status of one pod, an exited container's termination
   * message read as upstream reads it.
   * @param uid the pod UID
   * @param signal cancels the calls
   * @returns its sandboxes and containers, newest first
   */
  getPodStatus(uid: string, signal?: AbortSignal): Promise<RuntimePodStatus> {
    return getPodStatus(this.#ctx.runtime, uid, this.#readLogTail, signal);
  }
}
