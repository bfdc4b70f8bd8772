/**
 * The `KubeletConfiguration` object (kubelet.config.k8s.io/v1beta1) as the
 * upstream kubelet serializes it, and upstream's defaults for it.
 *
 * Values keep their wire form: durations are Go strings ("1m0s"), quantities
 * are strings, so the object round-trips to `/configz` unchanged. Field names
 * and JSON tags follow k8s.io/kubelet/config/v1beta1/types.go; defaults follow
 * pkg/kubelet/apis/config/v1beta1/defaults.go and pkg/kubelet/eviction.
 *
 * @module
 */

import type { Taint } from "../api/cluster_types.ts";

/** The only apiVersion a KubeletConfiguration file may carry. */
export const KUBELET_CONFIG_API_VERSION = "kubelet.config.k8s.io/v1beta1";
/** The kind a KubeletConfiguration file must carry. */
export const KUBELET_CONFIG_KIND = "KubeletConfiguration";

/** `authentication` of the kubelet's server. */
export interface KubeletAuthentication {
  x509?: { clientCAFile?: string };
  webhook?: { enabled?: boolean; cacheTTL?: string };
  anonymous?: { enabled?: boolean };
}

/** `authorization` of the kubelet's server. */
export interface KubeletAuthorization {
  mode?: "AlwaysAllow" | "Webhook" | string;
  webhook?: { cacheAuthorizedTTL?: string; cacheUnauthorizedTTL?: string };
}

/** `logging` (k8s.io/component-base/logs/api/v1 LoggingConfiguration). */
export interface LoggingConfiguration {
  format?: string;
  flushFrequency?: string | number;
  verbosity?: number;
  vmodule?: { filePattern?: string; verbosity?: number }[];
  options?: {
    text?: { splitStream?: boolean; infoBufferSize?: string };
    json?: { splitStream?: boolean; infoBufferSize?: string };
  };
}

/**
 * A KubeletConfiguration. Every upstream field is listed so a file written for
 * the upstream kubelet decodes; see {@link IMPLEMENTED_FIELDS} in schema.ts for
 * what denolet acts on.
 */
export interface KubeletConfiguration {
  apiVersion: typeof KUBELET_CONFIG_API_VERSION;
  kind: typeof KUBELET_CONFIG_KIND;
  enableServer?: boolean;
  staticPodPath?: string;
  podLogsDir?: string;
  syncFrequency?: string;
  fileCheckFrequency?: string;
  httpCheckFrequency?: string;
  staticPodURL?: string;
  staticPodURLHeader?: Record<string, string[]>;
  address?: string;
  port?: number;
  readOnlyPort?: number;
  tlsCertFile?: string;
  tlsPrivateKeyFile?: string;
  tlsCipherSuites?: string[];
  tlsCurvePreferences?: number[];
  tlsMinVersion?: string;
  rotateCertificates?: boolean;
  serverTLSBootstrap?: boolean;
  authentication?: KubeletAuthentication;
  authorization?: KubeletAuthorization;
  registryPullQPS?: number;
  registryBurst?: number;
  imagePullCredentialsVerificationPolicy?: string;
  preloadedImagesVerificationAllowlist?: string[];
  eventRecordQPS?: number;
  eventBurst?: number;
  enableDebuggingHandlers?: boolean;
  enableContentionProfiling?: boolean;
  healthzPort?: number;
  healthzBindAddress?: string;
  oomScoreAdj?: number;
  clusterDomain?: string;
  clusterDNS?: string[];
  streamingConnectionIdleTimeout?: string;
  nodeStatusUpdateFrequency?: string;
  nodeStatusReportFrequency?: string;
  nodeLeaseDurationSeconds?: number;
  imageMinimumGCAge?: string;
  imageMaximumGCAge?: string;
  imageGCHighThresholdPercent?: number;
  imageGCLowThresholdPercent?: number;
  volumeStatsAggPeriod?: string;
  kubeletCgroups?: string;
  systemCgroups?: string;
  cgroupRoot?: string;
  cgroupsPerQOS?: boolean;
  cgroupDriver?: string;
  cpuManagerPolicy?: string;
  singleProcessOOMKill?: boolean;
  cpuManagerPolicyOptions?: Record<string, string>;
  cpuManagerReconcilePeriod?: string;
  memoryManagerPolicy?: string;
  topologyManagerPolicy?: string;
  topologyManagerScope?: string;
  topologyManagerPolicyOptions?: Record<string, string>;
  qosReserved?: Record<string, string>;
  runtimeRequestTimeout?: string;
  hairpinMode?: string;
  maxPods?: number;
  podCIDR?: string;
  podPidsLimit?: number;
  resolvConf?: string;
  runOnce?: boolean;
  cpuCFSQuota?: boolean;
  cpuCFSQuotaPeriod?: string;
  nodeStatusMaxImages?: number;
  maxOpenFiles?: number;
  contentType?: string;
  kubeAPIQPS?: number;
  kubeAPIBurst?: number;
  serializeImagePulls?: boolean;
  maxParallelImagePulls?: number;
  evictionHard?: Record<string, string>;
  evictionSoft?: Record<string, string>;
  evictionSoftGracePeriod?: Record<string, string>;
  evictionPressureTransitionPeriod?: string;
  evictionMaxPodGracePeriod?: number;
  evictionMinimumReclaim?: Record<string, string>;
  mergeDefaultEvictionSettings?: boolean;
  podsPerCore?: number;
  enableControllerAttachDetach?: boolean;
  protectKernelDefaults?: boolean;
  makeIPTablesUtilChains?: boolean;
  iptablesMasqueradeBit?: number;
  iptablesDropBit?: number;
  featureGates?: Record<string, boolean>;
  failSwapOn?: boolean;
  memorySwap?: { swapBehavior?: string };
  containerLogMaxSize?: string;
  containerLogMaxFiles?: number;
  containerLogMaxWorkers?: number;
  containerLogMonitorInterval?: string;
  configMapAndSecretChangeDetectionStrategy?: string;
  systemReserved?: Record<string, string>;
  kubeReserved?: Record<string, string>;
  reservedSystemCPUs?: string;
  showHiddenMetricsForVersion?: string;
  systemReservedCgroup?: string;
  kubeReservedCgroup?: string;
  enforceNodeAllocatable?: string[];
  allowedUnsafeSysctls?: string[];
  defaultPodSysctls?: Record<string, string>;
  volumePluginDir?: string;
  providerID?: string;
  kernelMemcgNotification?: boolean;
  logging?: LoggingConfiguration;
  enableSystemLogHandler?: boolean;
  enableSystemLogQuery?: boolean;
  shutdownGracePeriod?: string;
  shutdownGracePeriodCriticalPods?: string;
  shutdownGracePeriodByPodPriority?: { priority?: number; shutdownGracePeriodSeconds?: number }[];
  crashLoopBackOff?: { maxContainerRestartPeriod?: string };
  reservedMemory?: { numaNode?: number; limits?: Record<string, string> }[];
  enableProfilingHandler?: boolean;
  enableDebugFlagsHandler?: boolean;
  seccompDefault?: boolean;
  memoryThrottlingFactor?: number;
  memoryReservationPolicy?: string;
  registerWithTaints?: Taint[];
  registerNode?: boolean;
  tracing?: { endpoint?: string; samplingRatePerMillion?: number };
  localStorageCapacityIsolation?: boolean;
  containerRuntimeEndpoint?: string;
  imageServiceEndpoint?: string;
  failCgroupV1?: boolean;
  userNamespaces?: { idsPerPod?: number };
}

/**
 * Upstream's Linux hard eviction thresholds, used when `evictionHard` is not
 * set at all (a partial map replaces them unless mergeDefaultEvictionSettings).
 */
export const DEFAULT_EVICTION_HARD: Readonly<Record<string, string>> = Object.freeze({
  "memory.available": "100Mi",
  "nodefs.available": "10%",
  "nodefs.inodesFree": "5%",
  "imagefs.available": "15%",
});

/**
 * Upstream's v1beta1 defaults: what a file that sets nothing decodes to.
 * @returns a fresh object the caller may mutate
 */
export function defaultKubeletConfiguration(): KubeletConfiguration {
  return {
    apiVersion: KUBELET_CONFIG_API_VERSION,
    kind: KUBELET_CONFIG_KIND,
    enableServer: true,
    podLogsDir: "/var/log/pods",
    syncFrequency: "1m0s",
    fileCheckFrequency: "20s",
    httpCheckFrequency: "20s",
    address: "0.0.0.0",
    port: 10250,
    authentication: {
      x509: {},
      webhook: { enabled: true, cacheTTL: "2m0s" },
      anonymous: { enabled: false },
    },
    authorization: {
      mode: "Webhook",
      webhook: { cacheAuthorizedTTL: "5m0s", cacheUnauthorizedTTL: "30s" },
    },
    registryPullQPS: 5,
    registryBurst: 10,
    eventRecordQPS: 50,
    eventBurst: 100,
    enableDebuggingHandlers: true,
    healthzPort: 10248,
    healthzBindAddress: "127.0.0.1",
    oomScoreAdj: -999,
    streamingConnectionIdleTimeout: "4h0m0s",
    nodeStatusUpdateFrequency: "10s",
    nodeStatusReportFrequency: "5m0s",
    nodeLeaseDurationSeconds: 40,
    imageMinimumGCAge: "2m0s",
    imageGCHighThresholdPercent: 85,
    imageGCLowThresholdPercent: 80,
    volumeStatsAggPeriod: "1m0s",
    cgroupsPerQOS: true,
    cgroupDriver: "cgroupfs",
    cpuManagerPolicy: "none",
    cpuManagerReconcilePeriod: "10s",
    memoryManagerPolicy: "None",
    topologyManagerPolicy: "none",
    topologyManagerScope: "container",
    runtimeRequestTimeout: "2m0s",
    hairpinMode: "promiscuous-bridge",
    maxPods: 110,
    podPidsLimit: -1,
    resolvConf: "/etc/resolv.conf",
    cpuCFSQuota: true,
    cpuCFSQuotaPeriod: "100ms",
    nodeStatusMaxImages: 50,
    maxOpenFiles: 1000000,
    contentType: "application/vnd.kubernetes.protobuf",
    kubeAPIQPS: 50,
    kubeAPIBurst: 100,
    serializeImagePulls: true,
    evictionPressureTransitionPeriod: "5m0s",
    mergeDefaultEvictionSettings: false,
    enableControllerAttachDetach: true,
    makeIPTablesUtilChains: true,
    iptablesMasqueradeBit: 14,
    iptablesDropBit: 15,
    failSwapOn: true,
    containerLogMaxSize: "10Mi",
    containerLogMaxFiles: 5,
    containerLogMaxWorkers: 1,
    containerLogMonitorInterval: "10s",
    configMapAndSecretChangeDetectionStrategy: "Watch",
    enforceNodeAllocatable: ["pods"],
    volumePluginDir: "/usr/libexec/kubernetes/kubelet-plugins/volume/exec/",
    logging: {
      format: "text",
      flushFrequency: "5s",
      verbosity: 0,
      options: { text: { infoBufferSize: "0" }, json: { infoBufferSize: "0" } },
    },
    enableSystemLogHandler: true,
    enableProfilingHandler: true,
    enableDebugFlagsHandler: true,
    seccompDefault: false,
    memoryThrottlingFactor: 0.9,
    registerNode: true,
    localStorageCapacityIsolation: true,
    containerRuntimeEndpoint: "unix:///run/containerd/containerd.sock",
    failCgroupV1: false,
  };
}

/**
 * The baseline when no `--config` is given: v1beta1 defaults plus the legacy
 * values upstream keeps so the command line behaves as it always did
 * (cmd/kubelet/app/options applyLegacyDefaults): anonymous auth on, no token
 * webhook, AlwaysAllow, and the read-only port on 10255.
 * @returns a fresh object the caller may mutate
 */
export function flagOnlyKubeletConfiguration(): KubeletConfiguration {
  const kc = defaultKubeletConfiguration();
  kc.authentication = {
    ...kc.authentication,
    anonymous: { enabled: true },
    webhook: { ...kc.authentication?.webhook, enabled: false },
  };
  kc.authorization = { ...kc.authorization, mode: "AlwaysAllow" };
  kc.readOnlyPort = 10255;
  return kc;
}
