/**
 * The kubelet's command-line flags, as data: upstream's names, value types,
 * deprecations and the KubeletConfiguration field each one sets
 * (cmd/kubelet/app/options/options.go, the cAdvisor and klog globals).
 *
 * Flags denolet does not act on are still accepted, so an upstream unit file
 * starts denolet; they add a warning naming the flag.
 *
 * @module
 */

/** How a flag's value is parsed, named after the pflag type it mirrors. */
export type FlagType =
  | "string"
  | "ip"
  | "bool"
  | "int32"
  | "int64"
  | "float64"
  | "duration"
  | "strings"
  | "mapStringString"
  | "mapStringBool"
  | "langleMap"
  | "colonMultimap"
  | "taints"
  | "labels"
  | "level"
  | "version"
  | "help";

/** The values of flags that are not KubeletConfiguration fields (upstream's KubeletFlags). */
export interface FlagValues {
  kubeconfig: string;
  bootstrapKubeconfig: string;
  configFile: string;
  hostnameOverride: string;
  nodeIp: string;
  certDir: string;
  rootDir: string;
  /** `--seccomp-default`, ORed with the config's `seccompDefault` as upstream. */
  seccompDefault: boolean;
  nodeLabels: Record<string, string>;
  housekeepingIntervalMs: number;
  /** `--minimum-container-ttl-duration` (container GC's MinAge). */
  minimumGCAgeMs: number;
  /** `--maximum-dead-containers-per-container` (container GC's MaxPerPodContainer). */
  maxPerPodContainerCount: number;
  /** `--maximum-dead-containers` (container GC's MaxContainers; negative: no limit). */
  maxContainerCount: number;
  /** `--version`'s value: "" (not asked), "true", "raw", or a version to report. */
  version: string;
  help: boolean;
  /** `--sync-trace-depth` (denolet's own): syncs kept per pod by the sync trace; 0 turns it off. */
  syncTraceDepth: number;
}

/** The values of the non-config flags when none is given (upstream's NewKubeletFlags). */
export function defaultFlagValues(): FlagValues {
  return {
    kubeconfig: "",
    bootstrapKubeconfig: "",
    configFile: "",
    hostnameOverride: "",
    nodeIp: "",
    certDir: "/var/lib/kubelet/pki",
    rootDir: "/var/lib/kubelet",
    seccompDefault: false,
    nodeLabels: {},
    housekeepingIntervalMs: 10_000,
    minimumGCAgeMs: 0,
    maxPerPodContainerCount: 1,
    maxContainerCount: -1,
    version: "",
    help: false,
    syncTraceDepth: 20,
  };
}

/** One flag. */
export interface FlagSpec {
  name: string;
  shorthand?: string;
  type: FlagType;
  /** The KubeletConfiguration field path it sets, e.g. "authentication.anonymous.enabled". */
  field?: string;
  /** Or the {@link FlagValues} key it sets. */
  value?: keyof FlagValues;
  usage: string;
  /** pflag's deprecation text, printed when the flag is used. */
  deprecated?: string;
  /** false: accepted, stored where it has a field, and warned about. */
  implemented?: boolean;
}

/** Upstream's deprecation text for every flag that mirrors a config field. */
export const CONFIG_FLAG_DEPRECATION =
  "This parameter should be set via the config file specified by the Kubelet's --config flag. See https://kubernetes.io/docs/tasks/administer-cluster/kubelet-config-file/ for more information.";

const NOT_IMPLEMENTED = { implemented: false } as const;

/** Upstream's deprecation text of the three container GC flags (they still take effect). */
const GC_FLAG_DEPRECATION =
  "Use --eviction-hard or --eviction-soft instead. Will be removed in a future version.";

// Flags of KubeletFlags and the globals: not deprecated, but for the container GC ones.
const PLAIN_FLAGS: FlagSpec[] = [
  {
    name: "config",
    type: "string",
    value: "configFile",
    usage:
      "The Kubelet will load its initial configuration from this file. The path may be absolute or relative; relative paths start at the Kubelet's current working directory. Omit this flag to use the built-in default configuration values. Command-line flags override configuration from this file.",
  },
  {
    name: "config-dir",
    type: "string",
    usage: "Path to a directory of KubeletConfiguration drop-ins applied after --config.",
    ...NOT_IMPLEMENTED,
  },
  {
    name: "kubeconfig",
    type: "string",
    value: "kubeconfig",
    usage:
      "Path to a kubeconfig file, specifying how to connect to the API server. Providing --kubeconfig enables API server mode, omitting --kubeconfig enables standalone mode.",
  },
  {
    name: "bootstrap-kubeconfig",
    type: "string",
    value: "bootstrapKubeconfig",
    usage:
      "Path to a kubeconfig file used to request a client certificate for the kubelet when the file named by --kubeconfig does not exist; the resulting kubeconfig is written to --kubeconfig and the certificate and key to --cert-dir.",
  },
  {
    name: "hostname-override",
    type: "string",
    value: "hostnameOverride",
    usage: "If non-empty, will use this string as identification instead of the actual hostname.",
  },
  {
    name: "node-ip",
    type: "string",
    value: "nodeIp",
    usage:
      "IP address (or comma-separated dual-stack IP addresses) of the node. If unset, kubelet will use the node's default IPv4 address, if any, or its default IPv6 address if it has no IPv4 addresses.",
  },
  {
    name: "cert-dir",
    type: "string",
    value: "certDir",
    usage:
      "The directory where the TLS certs are located. If --tls-cert-file and --tls-private-key-file are provided, this flag will be ignored.",
  },
  {
    name: "root-dir",
    type: "string",
    value: "rootDir",
    usage: "Directory path for managing kubelet files (volume mounts,etc).",
  },
  {
    name: "seccomp-default",
    type: "bool",
    value: "seccompDefault",
    usage: "Enable the use of `RuntimeDefault` as the default seccomp profile for all workloads.",
  },
  {
    name: "node-labels",
    type: "labels",
    value: "nodeLabels",
    usage:
      "Labels to add when registering the node in the cluster.  Labels must be key=value pairs separated by ','. Labels in the 'kubernetes.io' namespace must begin with an allowed prefix (kubelet.kubernetes.io, node.kubernetes.io) or be in the specifically allowed set (kubernetes.io/hostname, kubernetes.io/os, kubernetes.io/arch, topology.kubernetes.io/zone, topology.kubernetes.io/region, node.kubernetes.io/instance-type, ...)",
  },
  {
    name: "cloud-provider",
    type: "string",
    usage: "The provider for cloud services.",
    ...NOT_IMPLEMENTED,
  },
  {
    name: "lock-file",
    type: "string",
    usage: "<Warning: Alpha feature> The path to file for kubelet to use as a lock file.",
    ...NOT_IMPLEMENTED,
  },
  {
    name: "exit-on-lock-contention",
    type: "bool",
    usage: "Whether kubelet should exit upon lock-file contention.",
    ...NOT_IMPLEMENTED,
  },
  {
    name: "runtime-cgroups",
    type: "string",
    usage: "Optional absolute name of cgroups to create and run the runtime in.",
    ...NOT_IMPLEMENTED,
  },
  {
    name: "image-credential-provider-config",
    type: "string",
    usage: "The path to the credential provider plugin config file.",
    ...NOT_IMPLEMENTED,
  },
  {
    name: "image-credential-provider-bin-dir",
    type: "string",
    usage: "The path to the directory where credential provider plugin binaries are located.",
    ...NOT_IMPLEMENTED,
  },
  {
    name: "housekeeping-interval",
    type: "duration",
    value: "housekeepingIntervalMs",
    usage: "Interval between container housekeepings",
  },
  {
    name: "minimum-container-ttl-duration",
    type: "duration",
    value: "minimumGCAgeMs",
    usage:
      "Minimum age for a finished container before it is garbage collected.  Examples: '300ms', '10s' or '2h45m'",
    deprecated: GC_FLAG_DEPRECATION,
  },
  {
    name: "maximum-dead-containers-per-container",
    type: "int32",
    value: "maxPerPodContainerCount",
    usage:
      "Maximum number of old instances to retain per container.  Each container takes up some disk space.",
    deprecated: GC_FLAG_DEPRECATION,
  },
  {
    name: "maximum-dead-containers",
    type: "int32",
    value: "maxContainerCount",
    usage:
      "Maximum number of old instances of containers to retain globally.  Each container takes up some disk space. To disable, set to a negative number.",
    deprecated: GC_FLAG_DEPRECATION,
  },
  {
    // denolet's own (issue #20): upstream has no such flag, so a unit file that sets only
    // upstream flags keeps its meaning, and this one is not deprecated in favour of --config.
    name: "sync-trace-depth",
    type: "int32",
    value: "syncTraceDepth",
    usage:
      "(denolet) Syncs kept per pod by the sync trace served at /debug/pods/{namespace}/{name}/syncs and read by `denolet explain`; 0 (or less) turns the trace off.",
  },
  {
    name: "v",
    shorthand: "v",
    type: "level",
    field: "logging.verbosity",
    usage: "number for the log level verbosity",
  },
  {
    name: "vmodule",
    type: "string",
    usage:
      "comma-separated list of pattern=N settings for file-filtered logging (only works for text log format)",
    ...NOT_IMPLEMENTED,
  },
  {
    name: "log-flush-frequency",
    type: "duration",
    field: "logging.flushFrequency",
    usage: "Maximum number of seconds between log flushes",
    ...NOT_IMPLEMENTED,
  },
  {
    name: "version",
    type: "version",
    value: "version",
    usage:
      "--version, --version=raw prints version information and quits; --version=vX.Y.Z... sets the reported version",
  },
  { name: "help", shorthand: "h", type: "help", value: "help", usage: "help for denolet" },
];

type ConfigFlag = [name: string, type: FlagType, field: string, usage: string, implemented?: false];

// Flags that set a KubeletConfiguration field: all deprecated upstream in favour of --config.
// deno-fmt-ignore
const CONFIG_FLAGS: ConfigFlag[] = [
  ["enable-server", "bool", "enableServer", "Enable the Kubelet's server"],
  ["fail-swap-on", "bool", "failSwapOn", "Makes the Kubelet fail to start if swap is enabled on the node.", false],
  ["pod-manifest-path", "string", "staticPodPath", "Path to the directory containing static pod files to run, or the path to a single static pod file. Files starting with dots will be ignored."],
  ["pod-logs-dir", "string", "podLogsDir", "(denolet) Directory for container logs; the podLogsDir field."],
  ["sync-frequency", "duration", "syncFrequency", "Max period between synchronizing running containers and config"],
  ["file-check-frequency", "duration", "fileCheckFrequency", "Duration between checking config files for new data"],
  ["http-check-frequency", "duration", "httpCheckFrequency", "Duration between checking http for new data"],
  ["manifest-url", "string", "staticPodURL", "URL for accessing additional Pod specifications to run"],
  ["manifest-url-header", "colonMultimap", "staticPodURLHeader", "Comma-separated list of HTTP headers to use when accessing the url provided to --manifest-url. Multiple headers with the same name will be added in the same order provided. This flag can be repeatedly invoked. For example: --manifest-url-header 'a:hello,b:again,c:world' --manifest-url-header 'b:beautiful'"],
  ["address", "ip", "address", "The IP address for the Kubelet to serve on (set to '0.0.0.0' or '::' for listening on all interfaces and IP address families)"],
  ["port", "int32", "port", "The port for the Kubelet to serve on."],
  ["read-only-port", "int32", "readOnlyPort", "The read-only port for the Kubelet to serve on with no authentication/authorization (set to 0 to disable)"],
  ["container-runtime-endpoint", "string", "containerRuntimeEndpoint", "The endpoint of container runtime service. Unix Domain Sockets are supported on Linux. Examples:'unix:///path/to/runtime.sock'"],
  ["image-service-endpoint", "string", "imageServiceEndpoint", "The endpoint of container image service. If not specified, it will be the same with --container-runtime-endpoint by default."],
  ["anonymous-auth", "bool", "authentication.anonymous.enabled", "Enables anonymous requests to the Kubelet server."],
  ["authentication-token-webhook", "bool", "authentication.webhook.enabled", "Use the TokenReview API to determine authentication for bearer tokens."],
  ["authentication-token-webhook-cache-ttl", "duration", "authentication.webhook.cacheTTL", "The duration to cache responses from the webhook token authenticator."],
  ["client-ca-file", "string", "authentication.x509.clientCAFile", "If set, any request presenting a client certificate signed by one of the authorities in the client-ca-file is authenticated with an identity corresponding to the CommonName of the client certificate."],
  ["authorization-mode", "string", "authorization.mode", "Authorization mode for Kubelet server. Valid options are AlwaysAllow or Webhook. Webhook mode uses the SubjectAccessReview API to determine authorization."],
  ["authorization-webhook-cache-authorized-ttl", "duration", "authorization.webhook.cacheAuthorizedTTL", "The duration to cache 'authorized' responses from the webhook authorizer."],
  ["authorization-webhook-cache-unauthorized-ttl", "duration", "authorization.webhook.cacheUnauthorizedTTL", "The duration to cache 'unauthorized' responses from the webhook authorizer."],
  ["tls-cert-file", "string", "tlsCertFile", "File containing x509 Certificate used for serving HTTPS (with intermediate certs, if any, concatenated after server cert)."],
  ["tls-private-key-file", "string", "tlsPrivateKeyFile", "File containing x509 private key matching --tls-cert-file."],
  ["rotate-server-certificates", "bool", "serverTLSBootstrap", "Auto-request and rotate the kubelet serving certificates."],
  ["tls-cipher-suites", "strings", "tlsCipherSuites", "Comma-separated list of cipher suites for the server."],
  ["tls-min-version", "string", "tlsMinVersion", "Minimum TLS version supported."],
  ["rotate-certificates", "bool", "rotateCertificates", "Auto rotate the kubelet client certificates."],
  ["registry-qps", "int32", "registryPullQPS", "If > 0, limit registry pull QPS to this value.  If 0, unlimited.", false],
  ["registry-burst", "int32", "registryBurst", "Maximum size of a bursty pulls.", false],
  ["event-qps", "int32", "eventRecordQPS", "QPS to limit event creations. The number must be >= 0."],
  ["event-burst", "int32", "eventBurst", "Maximum size of a bursty event records."],
  ["enable-debugging-handlers", "bool", "enableDebuggingHandlers", "Enables server endpoints for log collection and local running of containers and commands"],
  ["contention-profiling", "bool", "enableContentionProfiling", "Enable block profiling, if profiling is enabled", false],
  ["healthz-port", "int32", "healthzPort", "The port of the localhost healthz endpoint (set to 0 to disable)"],
  ["healthz-bind-address", "ip", "healthzBindAddress", "The IP address for the healthz server to serve on (set to '0.0.0.0' or '::' for listening on all interfaces and IP address families)"],
  ["oom-score-adj", "int32", "oomScoreAdj", "The oom-score-adj value for kubelet process. Values must be within the range [-1000, 1000]", false],
  ["cluster-domain", "string", "clusterDomain", "Domain for this cluster.  If set, kubelet will configure all containers to search this domain in addition to the host's search domains"],
  ["volume-plugin-dir", "string", "volumePluginDir", "The full path of the directory in which to search for additional third party volume plugins", false],
  ["cluster-dns", "strings", "clusterDNS", 'Comma-separated list of DNS server IP address.  This value is used for containers DNS server in case of Pods with "dnsPolicy=ClusterFirst".'],
  ["streaming-connection-idle-timeout", "duration", "streamingConnectionIdleTimeout", "Maximum time a streaming connection can be idle before the connection is automatically closed."],
  ["node-status-update-frequency", "duration", "nodeStatusUpdateFrequency", "Specifies how often kubelet posts node status to master. Note: be cautious when changing the constant, it must work with nodeMonitorGracePeriod in nodecontroller."],
  ["minimum-image-ttl-duration", "duration", "imageMinimumGCAge", "Minimum age for an unused image before it is garbage collected."],
  ["image-gc-high-threshold", "int32", "imageGCHighThresholdPercent", "The percent of disk usage after which image garbage collection is always run. Values must be within the range [0, 100], To disable image garbage collection, set to 100. "],
  ["image-gc-low-threshold", "int32", "imageGCLowThresholdPercent", "The percent of disk usage before which image garbage collection is never run. Lowest disk usage to garbage collect to. Values must be within the range [0, 100] and must be less than that of --image-gc-high-threshold."],
  ["volume-stats-agg-period", "duration", "volumeStatsAggPeriod", "Specifies interval for kubelet to calculate and cache the volume disk usage for all pods and volumes."],
  ["feature-gates", "mapStringBool", "featureGates", "A set of key=value pairs that describe feature gates for alpha/experimental features.", false],
  ["kubelet-cgroups", "string", "kubeletCgroups", "Optional absolute name of cgroups to create and run the Kubelet in.", false],
  ["system-cgroups", "string", "systemCgroups", "Optional absolute name of cgroups in which to place all non-kernel processes that are not already inside a cgroup under '/'.", false],
  ["provider-id", "string", "providerID", "Unique identifier for identifying the node in a machine database, i.e cloudprovider", false],
  ["cgroups-per-qos", "bool", "cgroupsPerQOS", "Enable creation of QoS cgroup hierarchy, if true top level QoS and pod cgroups are created."],
  ["cgroup-driver", "string", "cgroupDriver", "Driver that the kubelet uses to manipulate cgroups on the host.  Possible values: 'cgroupfs', 'systemd'"],
  ["cgroup-root", "string", "cgroupRoot", "Optional root cgroup to use for pods. This is handled by the container runtime on a best effort basis. Default: '', which means use the container runtime default."],
  ["cpu-manager-policy", "string", "cpuManagerPolicy", "CPU Manager policy to use. Possible values: 'none', 'static'.", false],
  ["cpu-manager-reconcile-period", "duration", "cpuManagerReconcilePeriod", "<Warning: Alpha feature> CPU Manager reconciliation period.", false],
  ["qos-reserved", "mapStringString", "qosReserved", "<Warning: Alpha feature> A set of ResourceName=Percentage (e.g. memory=50%) pairs.", false],
  ["topology-manager-policy", "string", "topologyManagerPolicy", "Topology Manager policy to use.", false],
  ["runtime-request-timeout", "duration", "runtimeRequestTimeout", "Timeout of all runtime requests except long running request - pull, logs, exec and attach. When timeout exceeded, kubelet will cancel the request, throw out an error and retry later."],
  ["hairpin-mode", "string", "hairpinMode", "How should the kubelet setup hairpin NAT.", false],
  ["max-pods", "int32", "maxPods", "Number of Pods that can run on this Kubelet."],
  ["pod-cidr", "string", "podCIDR", "The CIDR to use for pod IP addresses, only used in standalone mode.", false],
  ["pod-max-pids", "int64", "podPidsLimit", "Set the maximum number of processes per pod.  If -1, the kubelet defaults to the node allocatable pid capacity."],
  ["resolv-conf", "string", "resolvConf", "Resolver configuration file used as the basis for the container DNS resolution configuration."],
  ["runonce", "bool", "runOnce", "If true, exit after spawning pods from static pod files or remote urls.", false],
  ["cpu-cfs-quota", "bool", "cpuCFSQuota", "Enable CPU CFS quota enforcement for containers that specify CPU limits", false],
  ["cpu-cfs-quota-period", "duration", "cpuCFSQuotaPeriod", "Sets CPU CFS quota period value, cpu.cfs_period_us.", false],
  ["enable-controller-attach-detach", "bool", "enableControllerAttachDetach", "Enables the Attach/Detach controller to manage attachment/detachment of volumes scheduled to this node.", false],
  ["make-iptables-util-chains", "bool", "makeIPTablesUtilChains", "If true, kubelet will ensure iptables utility rules are present on host.", false],
  ["container-log-max-size", "string", "containerLogMaxSize", "<Warning: Beta feature> Set the maximum size (e.g. 10Mi) of container log file before it is rotated."],
  ["container-log-max-files", "int32", "containerLogMaxFiles", "<Warning: Beta feature> Set the maximum number of container log files that can be present for a container. The number must be >= 2."],
  ["allowed-unsafe-sysctls", "strings", "allowedUnsafeSysctls", "Comma-separated whitelist of unsafe sysctls or unsafe sysctl patterns (ending in *)."],
  ["node-status-max-images", "int32", "nodeStatusMaxImages", "The maximum number of images to report in Node.Status.Images."],
  ["kernel-memcg-notification", "bool", "kernelMemcgNotification", "If enabled, the kubelet will integrate with the kernel memcg notification."],
  ["local-storage-capacity-isolation", "bool", "localStorageCapacityIsolation", "If true, local ephemeral storage isolation is enabled. Otherwise, local storage isolation feature will be disabled"],
  ["max-open-files", "int64", "maxOpenFiles", "Number of files that can be opened by Kubelet process.", false],
  ["kube-api-content-type", "string", "contentType", "Content type of requests sent to apiserver.", false],
  ["kube-api-qps", "int32", "kubeAPIQPS", "QPS to use while talking with kubernetes apiserver. The number must be >= 0. If 0 will use DefaultQPS: 50. Doesn't cover events and node heartbeat apis which rate limiting is controlled by a different set of flags"],
  ["kube-api-burst", "int32", "kubeAPIBurst", "Burst to use while talking with kubernetes apiserver. The number must be >= 0. If 0 will use DefaultBurst: 100. Doesn't cover events and node heartbeat apis which rate limiting is controlled by a different set of flags"],
  ["serialize-image-pulls", "bool", "serializeImagePulls", "Pull images one at a time."],
  ["eviction-hard", "langleMap", "evictionHard", "A set of eviction thresholds (e.g. memory.available<1Gi) that if met would trigger a pod eviction."],
  ["eviction-soft", "langleMap", "evictionSoft", "A set of eviction thresholds (e.g. memory.available<1.5Gi) that if met over a corresponding grace period would trigger a pod eviction."],
  ["eviction-soft-grace-period", "mapStringString", "evictionSoftGracePeriod", "A set of eviction grace periods (e.g. memory.available=1m30s) that correspond to how long a soft eviction threshold must hold before triggering a pod eviction."],
  ["eviction-pressure-transition-period", "duration", "evictionPressureTransitionPeriod", "Duration for which the kubelet has to wait before transitioning out of an eviction pressure condition."],
  ["eviction-max-pod-grace-period", "int32", "evictionMaxPodGracePeriod", "Maximum allowed grace period (in seconds) to use when terminating pods in response to a soft eviction threshold being met."],
  ["eviction-minimum-reclaim", "mapStringString", "evictionMinimumReclaim", "A set of minimum reclaims (e.g. imagefs.available=2Gi)."],
  ["pods-per-core", "int32", "podsPerCore", "Number of Pods per core that can run on this Kubelet.", false],
  ["protect-kernel-defaults", "bool", "protectKernelDefaults", "Default kubelet behaviour for kernel tuning.", false],
  ["reserved-cpus", "string", "reservedSystemCPUs", "A comma-separated list of CPUs or CPU ranges that are reserved for system and kubernetes usage.", false],
  ["topology-manager-scope", "string", "topologyManagerScope", "Scope to which topology hints applied.", false],
  ["system-reserved", "mapStringString", "systemReserved", "A set of ResourceName=ResourceQuantity (e.g. cpu=200m,memory=500Mi,ephemeral-storage=1Gi,pid=1000) pairs that describe resources reserved for non-kubernetes components. Currently only cpu, memory, pid and local ephemeral storage for root file system are supported. [default=none]"],
  ["kube-reserved", "mapStringString", "kubeReserved", "A set of ResourceName=ResourceQuantity (e.g. cpu=200m,memory=500Mi,ephemeral-storage=1Gi,pid=1000) pairs that describe resources reserved for kubernetes system components. Currently only cpu, memory, pid and local ephemeral storage for root file system are supported. [default=none]"],
  ["enforce-node-allocatable", "strings", "enforceNodeAllocatable", "A comma separated list of levels of node allocatable enforcement to be enforced by kubelet."],
  ["system-reserved-cgroup", "string", "systemReservedCgroup", "Absolute name of the top level cgroup that is used to manage non-kubernetes components."],
  ["kube-reserved-cgroup", "string", "kubeReservedCgroup", "Absolute name of the top level cgroup that is used to manage kubernetes components."],
  ["logging-format", "string", "logging.format", 'Sets the log format. Permitted formats: "json", "text".'],
  ["memory-manager-policy", "string", "memoryManagerPolicy", "Memory Manager policy to use. Possible values: 'None', 'Static'.", false],
  ["register-node", "bool", "registerNode", "Register the node with the apiserver. If --kubeconfig is not provided, this flag is irrelevant, as the Kubelet won't have an apiserver to register with."],
  ["register-with-taints", "taints", "registerWithTaints", 'Register the node with the given list of taints (comma separated "<key>=<value>:<effect>"). No-op if register-node is false.'],
];

/** Every flag denolet accepts, upstream's and its own. */
export const FLAGS: readonly FlagSpec[] = [
  ...PLAIN_FLAGS,
  ...CONFIG_FLAGS.map(([name, type, field, usage, implemented]): FlagSpec => ({
    name,
    type,
    field,
    usage,
    // --pod-logs-dir is denolet's own (upstream has only the field), so nothing deprecates it.
    ...(name === "pod-logs-dir" ? {} : { deprecated: CONFIG_FLAG_DEPRECATION }),
    ...(implemented === false ? NOT_IMPLEMENTED : {}),
  })),
];
