/**
 * The shape of every upstream KubeletConfiguration field, in upstream's field
 * order (k8s.io/kubelet/config/v1beta1/types.go), as data: the decoder checks
 * types and rejects unknown fields from it, defaulting tells pointer fields
 * from plain ones with it, and /configz orders and omits fields by it.
 *
 * Leaf codes: `s` string, `b` bool, `i` integer, `f` float, `d` Go duration,
 * `dn` duration or integer nanoseconds, `q` quantity, `ss` string list, `is`
 * integer list, `m` string map, `mb` bool map, `mm` string-list map, `qm`
 * quantity map. A trailing `*` marks a Go pointer (a zero value is kept and
 * shown, not defaulted or omitted); `!` marks a field without omitempty.
 *
 * @module
 */

/** A leaf type code, optionally with `*` or `!`. */
export type LeafCode = string;
/** An object's fields. */
export interface ObjectSchema {
  readonly [field: string]: SchemaNode;
}
/** One field: a leaf, an object, or a list of objects (one-element array). */
export type SchemaNode = LeafCode | ObjectSchema | readonly [ObjectSchema];

const TAINT: ObjectSchema = { key: "s!", value: "s", effect: "s!", timeAdded: "s*" };

/** Every field of KubeletConfiguration v1beta1, upstream order. */
export const KUBELET_CONFIG_SCHEMA: ObjectSchema = {
  enableServer: "b*",
  staticPodPath: "s",
  podLogsDir: "s",
  syncFrequency: "d",
  fileCheckFrequency: "d",
  httpCheckFrequency: "d",
  staticPodURL: "s",
  staticPodURLHeader: "mm",
  address: "s",
  port: "i",
  readOnlyPort: "i",
  tlsCertFile: "s",
  tlsPrivateKeyFile: "s",
  tlsCipherSuites: "ss",
  tlsCurvePreferences: "is",
  tlsMinVersion: "s",
  rotateCertificates: "b",
  serverTLSBootstrap: "b",
  authentication: {
    x509: { clientCAFile: "s" },
    webhook: { enabled: "b*", cacheTTL: "d" },
    anonymous: { enabled: "b*" },
  },
  authorization: {
    mode: "s",
    webhook: { cacheAuthorizedTTL: "d", cacheUnauthorizedTTL: "d" },
  },
  registryPullQPS: "i*",
  registryBurst: "i",
  imagePullCredentialsVerificationPolicy: "s",
  preloadedImagesVerificationAllowlist: "ss",
  eventRecordQPS: "i*",
  eventBurst: "i",
  enableDebuggingHandlers: "b*",
  enableContentionProfiling: "b",
  healthzPort: "i*",
  healthzBindAddress: "s",
  oomScoreAdj: "i*",
  clusterDomain: "s",
  clusterDNS: "ss",
  streamingConnectionIdleTimeout: "d",
  nodeStatusUpdateFrequency: "d",
  nodeStatusReportFrequency: "d",
  nodeLeaseDurationSeconds: "i",
  imageMinimumGCAge: "d",
  imageMaximumGCAge: "d",
  imageGCHighThresholdPercent: "i*",
  imageGCLowThresholdPercent: "i*",
  volumeStatsAggPeriod: "d",
  kubeletCgroups: "s",
  systemCgroups: "s",
  cgroupRoot: "s",
  cgroupsPerQOS: "b*",
  cgroupDriver: "s",
  cpuManagerPolicy: "s",
  singleProcessOOMKill: "b*",
  cpuManagerPolicyOptions: "m",
  cpuManagerReconcilePeriod: "d",
  memoryManagerPolicy: "s",
  topologyManagerPolicy: "s",
  topologyManagerScope: "s",
  topologyManagerPolicyOptions: "m",
  qosReserved: "m",
  runtimeRequestTimeout: "d",
  hairpinMode: "s",
  maxPods: "i",
  podCIDR: "s",
  podPidsLimit: "i*",
  resolvConf: "s*",
  runOnce: "b",
  cpuCFSQuota: "b*",
  cpuCFSQuotaPeriod: "d*",
  nodeStatusMaxImages: "i*",
  maxOpenFiles: "i",
  contentType: "s",
  kubeAPIQPS: "i*",
  kubeAPIBurst: "i",
  serializeImagePulls: "b*",
  maxParallelImagePulls: "i*",
  evictionHard: "m",
  evictionSoft: "m",
  evictionSoftGracePeriod: "m",
  evictionPressureTransitionPeriod: "d",
  evictionMaxPodGracePeriod: "i",
  evictionMinimumReclaim: "m",
  mergeDefaultEvictionSettings: "b*",
  podsPerCore: "i",
  enableControllerAttachDetach: "b*",
  protectKernelDefaults: "b",
  makeIPTablesUtilChains: "b*",
  iptablesMasqueradeBit: "i*",
  iptablesDropBit: "i*",
  featureGates: "mb",
  failSwapOn: "b*",
  memorySwap: { swapBehavior: "s" },
  containerLogMaxSize: "q",
  containerLogMaxFiles: "i*",
  containerLogMaxWorkers: "i*",
  containerLogMonitorInterval: "d*",
  configMapAndSecretChangeDetectionStrategy: "s",
  systemReserved: "m",
  kubeReserved: "m",
  reservedSystemCPUs: "s",
  showHiddenMetricsForVersion: "s",
  systemReservedCgroup: "s",
  kubeReservedCgroup: "s",
  enforceNodeAllocatable: "ss",
  allowedUnsafeSysctls: "ss",
  defaultPodSysctls: "m",
  volumePluginDir: "s",
  providerID: "s",
  kernelMemcgNotification: "b",
  logging: {
    format: "s",
    flushFrequency: "dn!",
    verbosity: "i!",
    vmodule: [{ filePattern: "s!", verbosity: "i!" }],
    options: {
      text: { splitStream: "b", infoBufferSize: "q" },
      json: { splitStream: "b", infoBufferSize: "q" },
    },
  },
  enableSystemLogHandler: "b*",
  enableSystemLogQuery: "b*",
  shutdownGracePeriod: "d",
  shutdownGracePeriodCriticalPods: "d",
  shutdownGracePeriodByPodPriority: [{ priority: "i!", shutdownGracePeriodSeconds: "i!" }],
  crashLoopBackOff: { maxContainerRestartPeriod: "d*" },
  reservedMemory: [{ numaNode: "i!", limits: "qm!" }],
  enableProfilingHandler: "b*",
  enableDebugFlagsHandler: "b*",
  seccompDefault: "b*",
  memoryThrottlingFactor: "f*",
  memoryReservationPolicy: "s",
  registerWithTaints: [TAINT],
  registerNode: "b*",
  tracing: { endpoint: "s*", samplingRatePerMillion: "i*" },
  localStorageCapacityIsolation: "b*",
  containerRuntimeEndpoint: "s!",
  imageServiceEndpoint: "s",
  failCgroupV1: "b*",
  userNamespaces: { idsPerPod: "i*" },
};

/**
 * Field paths denolet acts on. A path names a whole field (`authentication`)
 * or, inside an object denolet only partly honours, one sub-field
 * (`logging.format`). Any other field set in a file is accepted with a warning.
 * tests/unit/implemented_fields_test.ts fails when a field listed here is read
 * by nothing after lib/options.
 */
export const IMPLEMENTED_FIELDS: ReadonlySet<string> = new Set([
  "staticPodPath",
  "rotateCertificates",
  "serverTLSBootstrap",
  "registerNode",
  "maxParallelImagePulls",
  "podLogsDir",
  "syncFrequency",
  "fileCheckFrequency",
  "httpCheckFrequency",
  "staticPodURL",
  "staticPodURLHeader",
  "address",
  "port",
  "readOnlyPort",
  "enableServer",
  "tlsCertFile",
  "tlsPrivateKeyFile",
  "tlsMinVersion",
  "tlsCipherSuites",
  "authentication",
  "authorization",
  "healthzPort",
  "healthzBindAddress",
  "clusterDomain",
  "clusterDNS",
  "nodeStatusUpdateFrequency",
  "nodeStatusReportFrequency",
  "nodeLeaseDurationSeconds",
  "cgroupRoot",
  "cgroupsPerQOS",
  "cgroupDriver",
  "podPidsLimit",
  "runtimeRequestTimeout",
  "maxPods",
  "nodeStatusMaxImages",
  "resolvConf",
  "kubeAPIQPS",
  "kubeAPIBurst",
  "eventRecordQPS",
  "eventBurst",
  "serializeImagePulls",
  "evictionHard",
  "kernelMemcgNotification",
  "localStorageCapacityIsolation",
  "evictionSoft",
  "evictionSoftGracePeriod",
  "evictionMinimumReclaim",
  "evictionPressureTransitionPeriod",
  "evictionMaxPodGracePeriod",
  "mergeDefaultEvictionSettings",
  "containerLogMaxSize",
  "containerLogMaxFiles",
  "containerLogMonitorInterval",
  "streamingConnectionIdleTimeout",
  "enableDebuggingHandlers",
  "enableSystemLogHandler",
  "enableDebugFlagsHandler",
  "enableProfilingHandler",
  "systemReserved",
  "kubeReserved",
  "enforceNodeAllocatable",
  "systemReservedCgroup",
  "kubeReservedCgroup",
  "volumeStatsAggPeriod",
  "logging.format",
  "logging.verbosity",
  "registerWithTaints",
  "containerRuntimeEndpoint",
  "imageServiceEndpoint",
  "seccompDefault",
  "allowedUnsafeSysctls",
  "imageGCHighThresholdPercent",
  "imageGCLowThresholdPercent",
  "imageMinimumGCAge",
  "imageMaximumGCAge",
]);

/** Splits a leaf code into its type and its pointer / no-omitempty marks. */
export function leafCode(code: LeafCode): { type: string; pointer: boolean; always: boolean } {
  const pointer = code.endsWith("*");
  const always = code.endsWith("!");
  return { type: pointer || always ? code.slice(0, -1) : code, pointer, always };
}

/**
 * Tells whether a decoded value is Go's zero value for its leaf type, which
 * is what upstream's `omitempty` drops and its defaulting overwrites.
 * @param value the decoded value
 * @returns true for "", 0, false, "0s", an empty list or map
 */
export function isZeroValue(value: unknown): boolean {
  if (value === undefined || value === null || value === "" || value === 0) return true;
  if (value === false || value === "0s") return true;
  if (Array.isArray(value)) return value.length === 0;
  return false;
}
