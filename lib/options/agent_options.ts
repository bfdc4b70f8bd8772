/**
 * {@link AgentOptions}: the effective settings of one agent run, derived from
 * the effective KubeletConfiguration and the flags that are not config fields.
 * This is what main.ts wires from; durations are milliseconds.
 *
 * @module
 */

import type { Taint } from "../api/cluster_types.ts";
import { parseSignedDuration } from "../util/duration.ts";
import type {
  KubeletAuthentication,
  KubeletAuthorization,
  KubeletConfiguration,
} from "./kubelet_config.ts";
import type { FlagValues } from "./flag_table.ts";

/** The effective options of one agent run. Durations are milliseconds. */
export interface AgentOptions {
  podManifestPath: string;
  manifestUrl: string;
  manifestUrlHeader: Record<string, string[]>;
  containerRuntimeEndpoint: string;
  /** The image endpoint; the runtime endpoint when not set. */
  imageServiceEndpoint: string;
  runtimeRequestTimeoutMs: number;
  fileCheckFrequencyMs: number;
  httpCheckFrequencyMs: number;
  syncFrequencyMs: number;
  housekeepingIntervalMs: number;
  /** `--sync-trace-depth`: syncs kept per pod by the sync trace (lib/trace); 0: off. */
  syncTraceDepth: number;
  /** Bind address of the kubelet's servers (port and read-only port). */
  address: string;
  /** Read-only HTTP port; 0 disables it. 10255 without --config, 0 with one (upstream). */
  readOnlyPort: number;
  healthzPort: number;
  healthzBindAddress: string;
  hostnameOverride: string;
  nodeIp: string;
  rootDir: string;
  podLogsDir: string;
  /** The pod cgroup parent; "/" when cgroupsPerQOS is on and none is set, as upstream. */
  cgroupRoot: string;
  verbosity: number;
  loggingFormat: "text" | "json";

  /** `--kubeconfig`; empty means standalone mode. */
  kubeconfig: string;
  bootstrapKubeconfig: string;
  certDir: string;
  /** `--config`, empty when none. */
  configFile: string;
  nodeLabels: Record<string, string>;
  registerNode: boolean;
  registerWithTaints: Taint[];
  /** The authenticated kubelet port (10250). */
  port: number;
  enableServer: boolean;
  tlsCertFile: string;
  tlsPrivateKeyFile: string;
  authentication: KubeletAuthentication;
  authorization: KubeletAuthorization;
  maxPods: number;
  /** How many images status.images lists (50); -1 for all. */
  nodeStatusMaxImages: number;
  /** -1: no per-pod limit beyond the node's. */
  podPidsLimit: number;
  kubeReserved: Record<string, string>;
  systemReserved: Record<string, string>;
  /** `enforceNodeAllocatable`: `pods`, `system-reserved[-compressible]`, `kube-reserved[-compressible]` or `none`. */
  enforceNodeAllocatable: string[];
  /** `systemReservedCgroup`: the cgroup system-reserved enforcement limits. */
  systemReservedCgroup: string;
  /** `kubeReservedCgroup`: the cgroup kube-reserved enforcement limits. */
  kubeReservedCgroup: string;
  /** `volumeStatsAggPeriod`: how often each pod's volumes are measured; ≤ 0 never. */
  volumeStatsAggPeriodMs: number;
  /** Signal → threshold ("100Mi", "10%"); see parseEvictionThresholds. */
  evictionHard: Record<string, string>;
  evictionSoft: Record<string, string>;
  evictionSoftGracePeriod: Record<string, string>;
  evictionMinimumReclaim: Record<string, string>;
  /** How long a pressure condition stays after its threshold stops being met (5m). */
  evictionPressureTransitionPeriodMs: number;
  /** The longest grace period of a soft eviction, seconds (0). */
  evictionMaxPodGracePeriod: number;
  /**
   * `localStorageCapacityIsolation` (true): ephemeral-storage in the Node's
   * capacity and allocatable, and evictions for emptyDir `sizeLimit` and
   * `ephemeral-storage` limits.
   */
  localStorageCapacityIsolation: boolean;
  nodeStatusUpdateFrequencyMs: number;
  nodeStatusReportFrequencyMs: number;
  nodeLeaseDurationSeconds: number;
  kubeAPIQPS: number;
  kubeAPIBurst: number;
  serializeImagePulls: boolean;
  /** Only meaningful when serializeImagePulls is false; undefined means unlimited. */
  maxParallelImagePulls: number | undefined;
  imageGCHighThresholdPercent: number;
  imageGCLowThresholdPercent: number;
  /** `imageMinimumGCAge` (`--minimum-image-ttl-duration`), ms. */
  imageMinimumGCAgeMs: number;
  /** `imageMaximumGCAge`, ms; 0: no maximum. */
  imageMaximumGCAgeMs: number;
  cgroupDriver: "cgroupfs" | "systemd";
  cgroupsPerQOS: boolean;
  clusterDNS: string[];
  clusterDomain: string;
  resolvConf: string;
  containerLogMaxSize: string;
  containerLogMaxFiles: number;
  /** RuntimeDefault seccomp for containers that name no profile. */
  seccompDefault: boolean;
  /** Sysctls (or `prefix*` patterns) admitted beyond upstream's safe set. */
  allowedUnsafeSysctls: string[];
  /**
   * Container GC's policy, from the deprecated flags: the least age of a dead
   * container (`--minimum-container-ttl-duration`), dead instances kept per
   * container (`--maximum-dead-containers-per-container`) and per node
   * (`--maximum-dead-containers`; negative: no limit).
   */
  containerGC: { minAgeMs: number; maxPerPodContainer: number; maxContainers: number };

  /** Warnings to log at start-up: deprecated flags, fields and flags denolet ignores. */
  warnings: string[];
  /** The effective configuration, as /configz shows it. */
  config: KubeletConfiguration;
}

function ms(d: string | undefined, fallback: number): number {
  return d === undefined ? fallback : parseSignedDuration(d);
}

/**
 * Derives the agent's options from a validated configuration and flag values.
 * @param kc the effective KubeletConfiguration
 * @param flags the values of the non-config flags
 * @param warnings the warnings gathered while parsing
 * @returns the options main.ts wires from
 */
export function toAgentOptions(
  kc: KubeletConfiguration,
  flags: FlagValues,
  warnings: string[],
): AgentOptions {
  const cgroupsPerQOS = kc.cgroupsPerQOS ?? true;
  const runtime = kc.containerRuntimeEndpoint ?? "unix:///run/containerd/containerd.sock";
  return {
    podManifestPath: kc.staticPodPath ?? "",
    manifestUrl: kc.staticPodURL ?? "",
    manifestUrlHeader: structuredClone(kc.staticPodURLHeader ?? {}),
    containerRuntimeEndpoint: runtime,
    imageServiceEndpoint: kc.imageServiceEndpoint || runtime,
    runtimeRequestTimeoutMs: ms(kc.runtimeRequestTimeout, 120_000),
    fileCheckFrequencyMs: ms(kc.fileCheckFrequency, 20_000),
    httpCheckFrequencyMs: ms(kc.httpCheckFrequency, 20_000),
    syncFrequencyMs: ms(kc.syncFrequency, 60_000),
    housekeepingIntervalMs: flags.housekeepingIntervalMs,
    syncTraceDepth: Math.max(0, flags.syncTraceDepth),
    address: kc.address ?? "0.0.0.0",
    readOnlyPort: kc.readOnlyPort ?? 0,
    healthzPort: kc.healthzPort ?? 10248,
    healthzBindAddress: kc.healthzBindAddress ?? "127.0.0.1",
    hostnameOverride: flags.hostnameOverride,
    nodeIp: flags.nodeIp,
    rootDir: flags.rootDir,
    podLogsDir: kc.podLogsDir ?? "/var/log/pods",
    // Upstream: "--cgroups-per-qos enabled, but --cgroup-root was not specified. defaulting to /".
    cgroupRoot: kc.cgroupRoot || (cgroupsPerQOS ? "/" : ""),
    verbosity: kc.logging?.verbosity ?? 0,
    loggingFormat: kc.logging?.format === "json" ? "json" : "text",
    kubeconfig: flags.kubeconfig,
    bootstrapKubeconfig: flags.bootstrapKubeconfig,
    certDir: flags.certDir,
    configFile: flags.configFile,
    nodeLabels: { ...flags.nodeLabels },
    registerNode: kc.registerNode ?? true,
    registerWithTaints: structuredClone(kc.registerWithTaints ?? []),
    port: kc.port ?? 10250,
    enableServer: kc.enableServer ?? true,
    tlsCertFile: kc.tlsCertFile ?? "",
    tlsPrivateKeyFile: kc.tlsPrivateKeyFile ?? "",
    authentication: structuredClone(kc.authentication ?? {}),
    authorization: structuredClone(kc.authorization ?? {}),
    maxPods: kc.maxPods ?? 110,
    nodeStatusMaxImages: kc.nodeStatusMaxImages ?? 50,
    podPidsLimit: kc.podPidsLimit ?? -1,
    kubeReserved: { ...kc.kubeReserved },
    systemReserved: { ...kc.systemReserved },
    enforceNodeAllocatable: [...(kc.enforceNodeAllocatable ?? ["pods"])],
    systemReservedCgroup: kc.systemReservedCgroup ?? "",
    kubeReservedCgroup: kc.kubeReservedCgroup ?? "",
    volumeStatsAggPeriodMs: ms(kc.volumeStatsAggPeriod, 60_000),
    evictionHard: { ...kc.evictionHard },
    localStorageCapacityIsolation: kc.localStorageCapacityIsolation ?? true,
    evictionSoft: { ...kc.evictionSoft },
    evictionSoftGracePeriod: { ...kc.evictionSoftGracePeriod },
    evictionMinimumReclaim: { ...kc.evictionMinimumReclaim },
    evictionPressureTransitionPeriodMs: ms(kc.evictionPressureTransitionPeriod, 300_000),
    evictionMaxPodGracePeriod: kc.evictionMaxPodGracePeriod ?? 0,
    nodeStatusUpdateFrequencyMs: ms(kc.nodeStatusUpdateFrequency, 10_000),
    nodeStatusReportFrequencyMs: ms(kc.nodeStatusReportFrequency, 300_000),
    nodeLeaseDurationSeconds: kc.nodeLeaseDurationSeconds ?? 40,
    kubeAPIQPS: kc.kubeAPIQPS ?? 50,
    kubeAPIBurst: kc.kubeAPIBurst ?? 100,
    serializeImagePulls: kc.serializeImagePulls ?? true,
    maxParallelImagePulls: kc.maxParallelImagePulls,
    imageGCHighThresholdPercent: kc.imageGCHighThresholdPercent ?? 85,
    imageGCLowThresholdPercent: kc.imageGCLowThresholdPercent ?? 80,
    imageMinimumGCAgeMs: ms(kc.imageMinimumGCAge, 120_000),
    imageMaximumGCAgeMs: ms(kc.imageMaximumGCAge, 0),
    cgroupDriver: kc.cgroupDriver === "systemd" ? "systemd" : "cgroupfs",
    cgroupsPerQOS,
    clusterDNS: [...(kc.clusterDNS ?? [])],
    clusterDomain: kc.clusterDomain ?? "",
    resolvConf: kc.resolvConf ?? "/etc/resolv.conf",
    containerLogMaxSize: kc.containerLogMaxSize ?? "10Mi",
    containerLogMaxFiles: kc.containerLogMaxFiles ?? 5,
    seccompDefault: flags.seccompDefault || (kc.seccompDefault ?? false),
    allowedUnsafeSysctls: [...(kc.allowedUnsafeSysctls ?? [])],
    containerGC: {
      minAgeMs: flags.minimumGCAgeMs,
      maxPerPodContainer: flags.maxPerPodContainerCount,
      maxContainers: flags.maxContainerCount,
    },
    warnings,
    config: kc,
  };
}
