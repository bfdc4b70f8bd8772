/**
 * What the executor's operations (sync, kill, remove) share: the runtime,
 * node settings and the mutable backoff tables. Built once by
 * `KubeRuntimeManager`.
 *
 * @module
 */

import type { RuntimeService } from "../cri/types.ts";
import type { ImageManager } from "../images/mod.ts";
import type { PodObjects } from "../kubeobjects/mod.ts";
import type { Mounter, NodeAllocatable } from "../volumes/mod.ts";
import type { Clock } from "../util/clock.ts";
import type { Logger } from "../util/log.ts";
import type { BackoffStore } from "../util/backoff.ts";
import type { SandboxConfigOptions } from "./sandbox_config.ts";
import type { SeccompSettings } from "./security_profiles.ts";
import type { DNSSettings } from "./pod_dns.ts";
import type { EventRecorder } from "../events/types.ts";
import type { ResourceState } from "../allocation/mod.ts";
import type { Pod } from "../api/types.ts";

/** Shared dependencies of the executor's operations. */
export interface ManagerContext {
  runtime: RuntimeService;
  clock: Clock;
  logger: Logger;
  rootDir: string;
  /** seccompDefault and `<rootDir>/seccomp`, where Localhost profiles live. */
  seccomp: SeccompSettings;
  podLogsDir: string;
  /** Where the `<pod>_<namespace>_<container>-<id>.log` symlinks go. */
  containerLogsDir: string;
  nodeName: string;
  /** The node's IPs: the pod IPs of host-network pods. */
  hostIPs: string[];
  backoff: BackoffStore;
  images: ImageManager;
  /** Sandbox settings except the pod's DNS config, formed per sandbox. */
  sandbox: Omit<SandboxConfigOptions, "dnsConfig" | "attempt">;
  /** clusterDNS, clusterDomain, resolvConf and --node-ip: the pods' resolv.conf. */
  dns: DNSSettings;
  memoryCapacity: number;
  /** Node allocatable: downward-API defaults and the tmpfs size cap. */
  nodeAllocatable: NodeAllocatable;
  /** ConfigMaps, Secrets, Services and tokens; undefined in standalone mode. */
  objects: PodObjects | undefined;
  /** Mounts tmpfs volumes; the host's mount(8) unless a test injects one. */
  mounter: Mounter;
  /** Pod events (Created, Started, Killing, BackOff, FailedMount, ...). */
  events: EventRecorder;
  /**
   * What the runtime actuated for each container (in-place resize): set when
   * a container is created and after each UpdateContainerResources.
   */
  actuated: ResourceState;
  /** The pod's cgroup around an in-place resize (lib/cm); unset without pod cgroups. */
  podCgroup?: PodCgroupResizer;
  /**
   * Removes a container's log files, the live one and its rotated ones
   * (lib/logs `cleanContainerLogs`), before the container is removed; unset,
   * they stay until the pod's log directory goes.
   */
  cleanContainerLogs?: (logPath: string) => Promise<void>;
  /**
   * Counts an HTTPS httpGet hook that passed over HTTP
   * (`kubelet_lifecycle_handler_http_fallbacks_total`); unset, nothing counts.
   */
  countHookHttpFallback?: () => void;
}

/** What an in-place resize needs of the pod cgroups (lib/cm's PodCgroupManager). */
export interface PodCgroupResizer {
  /**
   * Writes the pod cgroup's limits for `pod`, none of them below `floor`'s.
   * @param pod the pod with the resources it is being resized to
   * @param floor the pod with the resources in force: before the containers' updates
   *   this raises what grows and keeps what shrinks; without it, the limits are `pod`'s
   */
  resizePodCgroup(pod: Pod, floor?: Pod): void;
}

/** One carried-out step of a sync, kill or remove, as upstream's SyncResult. */
export interface SyncStep {
  /** "KillPod", "KillContainer", "CreatePodSandbox", "StartContainer", ... */
  action: string;
  /**
   * The container name, sandbox id or pod the step was about (for a
   * LifecycleHTTPFallback step, the hook's host:port).
   */
  target: string;
  /** Set when the step failed: upstream's reason and the message users see. */
  error?: { reason: string; message: string };
}
