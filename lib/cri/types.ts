/**
 * CRI v1 (`runtime.v1`) message shapes as TypeScript sees them.
 *
 * Names are the proto field names in lowerCamelCase (protobufjs' conversion),
 * so `pod_sandbox_id` is `podSandboxId`. int64 fields are plain `number`s:
 * nanosecond timestamps lose precision below ~256 ns, which no caller needs.
 * Enums are numbers with the upstream values. Every field is optional on the
 * way in, as proto3 has no presence for scalars; decoders fill scalar defaults.
 *
 * @module
 */

/** `runtime.v1.PodSandboxState`. */
export const PodSandboxState = { SANDBOX_READY: 0, SANDBOX_NOTREADY: 1 } as const;
/** `runtime.v1.ContainerState`. */
export const ContainerState = {
  CONTAINER_CREATED: 0,
  CONTAINER_RUNNING: 1,
  CONTAINER_EXITED: 2,
  CONTAINER_UNKNOWN: 3,
} as const;
/** `runtime.v1.NamespaceMode`. */
export const NamespaceMode = { POD: 0, CONTAINER: 1, NODE: 2, TARGET: 3 } as const;
/** `runtime.v1.Protocol`. */
export const Protocol = { TCP: 0, UDP: 1, SCTP: 2 } as const;
/** `runtime.v1.MountPropagation`. */
export const MountPropagation = {
  PROPAGATION_PRIVATE: 0,
  PROPAGATION_HOST_TO_CONTAINER: 1,
  PROPAGATION_BIDIRECTIONAL: 2,
} as const;

export interface VersionResponse {
  version: string;
  runtimeName: string;
  runtimeVersion: string;
  runtimeApiVersion: string;
}

export interface NamespaceOption {
  network?: number;
  pid?: number;
  ipc?: number;
  targetId?: string;
}

export interface Int64Value {
  value: number;
}

/** `runtime.v1.SecurityProfile.ProfileType`. */
export const ProfileType = { RuntimeDefault: 0, Unconfined: 1, Localhost: 2 } as const;

/** `runtime.v1.SecurityProfile`: a seccomp or AppArmor profile. */
export interface SecurityProfile {
  profileType?: number;
  localhostRef?: string;
}

/** `runtime.v1.SELinuxOption`. */
export interface SELinuxOption {
  user?: string;
  role?: string;
  type?: string;
  level?: string;
}

export interface LinuxSandboxSecurityContext {
  namespaceOptions?: NamespaceOption;
  selinuxOptions?: SELinuxOption;
  seccomp?: SecurityProfile;
  apparmor?: SecurityProfile;
  runAsUser?: Int64Value;
  runAsGroup?: Int64Value;
  readonlyRootfs?: boolean;
  supplementalGroups?: number[];
  privileged?: boolean;
}

export interface LinuxContainerResources {
  cpuPeriod?: number;
  cpuQuota?: number;
  cpuShares?: number;
  memoryLimitInBytes?: number;
  oomScoreAdj?: number;
  cpusetCpus?: string;
  cpusetMems?: string;
  unified?: Record<string, string>;
  memorySwapLimitInBytes?: number;
}

export interface LinuxPodSandboxConfig {
  cgroupParent?: string;
  securityContext?: LinuxSandboxSecurityContext;
  sysctls?: Record<string, string>;
  overhead?: LinuxContainerResources;
  resources?: LinuxContainerResources;
}

export interface PodSandboxMetadata {
  name: string;
  uid: string;
  namespace: string;
  attempt: number;
}

export interface PortMapping {
  protocol?: number;
  containerPort?: number;
  hostPort?: number;
  hostIp?: string;
}

export interface DNSConfig {
  servers?: string[];
  searches?: string[];
  options?: string[];
}

export interface PodSandboxConfig {
  metadata: PodSandboxMetadata;
  hostname?: string;
  logDirectory?: string;
  dnsConfig?: DNSConfig;
  portMappings?: PortMapping[];
  labels?: Record<string, string>;
  annotations?: Record<string, string>;
  linux?: LinuxPodSandboxConfig;
}

export interface PodSandboxFilter {
  id?: string;
  state?: { state: number };
  labelSelector?: Record<string, string>;
}

export interface PodSandbox {
  id: string;
  metadata: PodSandboxMetadata;
  state: number;
  createdAt: number;
  labels: Record<string, string>;
  annotations: Record<string, string>;
  runtimeHandler: string;
}

export interface PodSandboxNetworkStatus {
  ip: string;
  additionalIps: { ip: string }[];
}

export interface PodSandboxStatus {
  id: string;
  metadata: PodSandboxMetadata;
  state: number;
  createdAt: number;
  network?: PodSandboxNetworkStatus;
  linux?: { namespaces?: { options?: NamespaceOption } };
  labels: Record<string, string>;
  annotations: Record<string, string>;
  runtimeHandler: string;
}

export interface PodSandboxStatusResponse {
  status: PodSandboxStatus;
  info: Record<string, string>;
}

export interface ImageSpec {
  image: string;
  annotations?: Record<string, string>;
}

export interface KeyValue {
  key: string;
  value: string;
}

export interface Mount {
  containerPath: string;
  hostPath: string;
  readonly?: boolean;
  selinuxRelabel?: boolean;
  propagation?: number;
}

export interface Capability {
  addCapabilities?: string[];
  dropCapabilities?: string[];
}

export interface LinuxContainerSecurityContext {
  capabilities?: Capability;
  privileged?: boolean;
  namespaceOptions?: NamespaceOption;
  runAsUser?: Int64Value;
  runAsGroup?: Int64Value;
  runAsUsername?: string;
  readonlyRootfs?: boolean;
  supplementalGroups?: number[];
  noNewPrivs?: boolean;
  /** Paths masked in the container (upstream sends its defaults unless privileged). */
  maskedPaths?: string[];
  /** Paths made read-only in the container. */
  readonlyPaths?: string[];
  selinuxOptions?: SELinuxOption;
  seccomp?: SecurityProfile;
  apparmor?: SecurityProfile;
  /** The deprecated spelling of {@link apparmor} that older runtimes read. */
  apparmorProfile?: string;
}

export interface LinuxContainerConfig {
  resources?: LinuxContainerResources;
  securityContext?: LinuxContainerSecurityContext;
}

export interface ContainerMetadata {
  name: string;
  attempt: number;
}

export interface ContainerConfig {
  metadata: ContainerMetadata;
  image: ImageSpec;
  command?: string[];
  args?: string[];
  workingDir?: string;
  envs?: KeyValue[];
  mounts?: Mount[];
  labels?: Record<string, string>;
  annotations?: Record<string, string>;
  logPath?: string;
  stdin?: boolean;
  stdinOnce?: boolean;
  tty?: boolean;
  linux?: LinuxContainerConfig;
}

export interface ContainerFilter {
  id?: string;
  state?: { state: number };
  podSandboxId?: string;
  labelSelector?: Record<string, string>;
}

export interface Container {
  id: string;
  podSandboxId: string;
  metadata: ContainerMetadata;
  image: ImageSpec;
  imageRef: string;
  state: number;
  createdAt: number;
  labels: Record<string, string>;
  annotations: Record<string, string>;
}

export interface ContainerStatus {
  id: string;
  metadata: ContainerMetadata;
  state: number;
  createdAt: number;
  startedAt: number;
  finishedAt: number;
  exitCode: number;
  image: ImageSpec;
  imageRef: string;
  reason: string;
  message: string;
  labels: Record<string, string>;
  annotations: Record<string, string>;
  mounts: Mount[];
  logPath: string;
  /**
   * The resources the runtime applied (containerd ≥ 1.6.9 reports them); absent
   * from older runtimes, which the kubelet then fills from its own record.
   */
  resources?: { linux?: LinuxContainerResources };
}

export interface ContainerStatusResponse {
  status: ContainerStatus;
  info: Record<string, string>;
}

export interface ExecSyncResponse {
  stdout: Uint8Array;
  stderr: Uint8Array;
  exitCode: number;
}

/** What CRI Exec runs and which streams it opens (ExecRequest without the id). */
export interface ExecRequest {
  cmd: string[];
  tty: boolean;
  stdin: boolean;
  stdout: boolean;
  stderr: boolean;
}

/** Which streams CRI Attach opens (AttachRequest without the id). */
export interface AttachRequest {
  stdin: boolean;
  tty: boolean;
  stdout: boolean;
  stderr: boolean;
}

export interface UInt64Value {
  value: number;
}

export interface CpuUsage {
  timestamp: number;
  usageCoreNanoSeconds?: UInt64Value;
  usageNanoCores?: UInt64Value;
}

export interface MemoryUsage {
  timestamp: number;
  workingSetBytes?: UInt64Value;
  availableBytes?: UInt64Value;
  usageBytes?: UInt64Value;
  rssBytes?: UInt64Value;
  pageFaults?: UInt64Value;
  majorPageFaults?: UInt64Value;
}

export interface FilesystemIdentifier {
  mountpoint: string;
}

export interface FilesystemUsage {
  timestamp: number;
  fsId?: FilesystemIdentifier;
  usedBytes?: UInt64Value;
  inodesUsed?: UInt64Value;
}

export interface ContainerAttributes {
  id: string;
  metadata: ContainerMetadata;
  labels: Record<string, string>;
  annotations: Record<string, string>;
}

export interface ContainerStats {
  attributes: ContainerAttributes;
  cpu?: CpuUsage;
  memory?: MemoryUsage;
  writableLayer?: FilesystemUsage;
}

export interface RuntimeCondition {
  type: string;
  status: boolean;
  reason: string;
  message: string;
}

export interface StatusResponse {
  status: { conditions: RuntimeCondition[] };
  info: Record<string, string>;
}

export interface Image {
  id: string;
  repoTags: string[];
  repoDigests: string[];
  size: number;
  uid?: Int64Value;
  username: string;
  spec?: ImageSpec;
  pinned: boolean;
}

export interface AuthConfig {
  username?: string;
  password?: string;
  auth?: string;
  serverAddress?: string;
  identityToken?: string;
  registryToken?: string;
}

export interface ImageFsInfoResponse {
  imageFilesystems: FilesystemUsage[];
  containerFilesystems: FilesystemUsage[];
}

/** Options every call accepts. */
export interface CallOptions {
  /**
   * A bound of the caller's own, in ms from now. Like a Go context's deadline
   * it can shorten the deadline the client gives the call, never lengthen it:
   * the client owns deadlines, so callers leave this unset unless they need
   * an answer sooner than the runtime request timeout allows.
   */
  timeoutMs?: number;
  /** Cancels the call. */
  signal?: AbortSignal;
}

/**
 * The CRI RuntimeService and ImageService, one method per RPC we use.
 *
 * Contract: every method may be called concurrently and repeatedly; returned
 * objects belong to the caller. Errors are {@link CriError}s naming the call and
 * the object. NotFound on stop/remove is reported as such (see `isNotFound`)
 * so that teardown can be idempotent.
 */
export interface RuntimeService {
  version(opts?: CallOptions): Promise<VersionResponse>;
  /** With `verbose`, `info` holds the runtime's own details (containerd: its CRI `config`). */
  status(opts?: CallOptions & { verbose?: boolean }): Promise<StatusResponse>;

  runPodSandbox(
    config: PodSandboxConfig,
    runtimeHandler?: string,
    opts?: CallOptions,
  ): Promise<string>;
  stopPodSandbox(podSandboxId: string, opts?: CallOptions): Promise<void>;
  removePodSandbox(podSandboxId: string, opts?: CallOptions): Promise<void>;
  podSandboxStatus(podSandboxId: string, opts?: CallOptions): Promise<PodSandboxStatusResponse>;
  listPodSandbox(filter?: PodSandboxFilter, opts?: CallOptions): Promise<PodSandbox[]>;

  createContainer(
    podSandboxId: string,
    config: ContainerConfig,
    sandboxConfig: PodSandboxConfig,
    opts?: CallOptions,
  ): Promise<string>;
  startContainer(containerId: string, opts?: CallOptions): Promise<void>;
  /** Stops with SIGTERM, then SIGKILL after `timeoutSeconds`. */
  stopContainer(containerId: string, timeoutSeconds: number, opts?: CallOptions): Promise<void>;
  removeContainer(containerId: string, opts?: CallOptions): Promise<void>;
  listContainers(filter?: ContainerFilter, opts?: CallOptions): Promise<Container[]>;
  containerStatus(containerId: string, opts?: CallOptions): Promise<ContainerStatusResponse>;
  execSync(
    containerId: string,
    cmd: string[],
    timeoutSeconds: number,
    opts?: CallOptions,
  ): Promise<ExecSyncResponse>;
  /**
   * Prepares a streaming exec; returns the URL on the runtime's streaming
   * server that the client's upgraded connection is proxied to.
   */
  exec(containerId: string, request: ExecRequest, opts?: CallOptions): Promise<string>;
  /** Prepares a streaming attach; returns the streaming server URL. */
  attach(containerId: string, request: AttachRequest, opts?: CallOptions): Promise<string>;
  /**
   * Prepares a port forward into the sandbox's network namespace; returns the
   * streaming server URL. `ports` may be empty: the client names them later.
   */
  portForward(podSandboxId: string, ports: number[], opts?: CallOptions): Promise<string>;
  containerStats(containerId: string, opts?: CallOptions): Promise<ContainerStats>;
  listContainerStats(
    filter?: { id?: string; podSandboxId?: string; labelSelector?: Record<string, string> },
    opts?: CallOptions,
  ): Promise<ContainerStats[]>;

  /**
   * Asks the runtime to reopen the container's log file at its log path,
   * after the kubelet renamed the old one away (log rotation).
   */
  reopenContainerLog(containerId: string, opts?: CallOptions): Promise<void>;

  /**
   * Applies new cgroup resources to a running container (in-place resize);
   * the runtime rejects values the container cannot take.
   */
  updateContainerResources(
    containerId: string,
    linux: LinuxContainerResources,
    opts?: CallOptions,
  ): Promise<void>;

  listImages(filter?: { image?: ImageSpec }, opts?: CallOptions): Promise<Image[]>;
  /** Returns undefined when the image is not present. */
  imageStatus(image: ImageSpec, opts?: CallOptions): Promise<Image | undefined>;
  /** Returns the image reference (digest-qualified id). */
  pullImage(
    image: ImageSpec,
    auth?: AuthConfig,
    sandboxConfig?: PodSandboxConfig,
    opts?: CallOptions,
  ): Promise<string>;
  removeImage(image: ImageSpec, opts?: CallOptions): Promise<void>;
  imageFsInfo(opts?: CallOptions): Promise<ImageFsInfoResponse>;

  /** Closes the connection; further calls fail. */
  close(): void;
}
