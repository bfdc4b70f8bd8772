/**
 * The subset of Kubernetes core/v1 object shapes denolet reads and writes.
 *
 * Field names and JSON shapes follow k8s.io/api/core/v1 exactly so that a
 * manifest written for the upstream kubelet parses here unchanged, and so that
 * the PodList we serve at `/pods` decodes into upstream types. Optional fields
 * are optional here too; nothing is defaulted in these types (see `defaults.ts`).
 *
 * @module
 */

/** A resource quantity as written in a manifest ("100m", "128Mi", 2). */
export type Quantity = string | number;

/** `metadata.ownerReferences[]`. */
export interface OwnerReference {
  apiVersion: string;
  kind: string;
  name: string;
  uid: string;
  controller?: boolean;
  blockOwnerDeletion?: boolean;
}

/** `metadata`. */
export interface ObjectMeta {
  name?: string;
  generateName?: string;
  namespace?: string;
  uid?: string;
  resourceVersion?: string;
  generation?: number;
  creationTimestamp?: string;
  deletionTimestamp?: string;
  deletionGracePeriodSeconds?: number;
  labels?: Record<string, string>;
  annotations?: Record<string, string>;
  ownerReferences?: OwnerReference[];
}

/** `env[].valueFrom`. */
export interface EnvVarSource {
  fieldRef?: { apiVersion?: string; fieldPath: string };
  resourceFieldRef?: { containerName?: string; resource: string; divisor?: Quantity };
  configMapKeyRef?: { name?: string; key: string; optional?: boolean };
  secretKeyRef?: { name?: string; key: string; optional?: boolean };
}

/** `containers[].env[]`. */
export interface EnvVar {
  name: string;
  value?: string;
  valueFrom?: EnvVarSource;
}

/** `containers[].envFrom[]`. */
export interface EnvFromSource {
  prefix?: string;
  configMapRef?: { name?: string; optional?: boolean };
  secretRef?: { name?: string; optional?: boolean };
}

/** `containers[].ports[]`. */
export interface ContainerPort {
  name?: string;
  containerPort: number;
  hostPort?: number;
  protocol?: "TCP" | "UDP" | "SCTP";
  hostIP?: string;
}

/** `containers[].resources`. */
export interface ResourceRequirements {
  limits?: Record<string, Quantity>;
  requests?: Record<string, Quantity>;
}

/** `containers[].volumeMounts[]`. */
export interface VolumeMount {
  name: string;
  mountPath: string;
  readOnly?: boolean;
  subPath?: string;
  subPathExpr?: string;
  mountPropagation?: "None" | "HostToContainer" | "Bidirectional";
}

/** An exec action (probe or hook). */
export interface ExecAction {
  command?: string[];
}

/** An HTTP GET action (probe or hook). */
export interface HTTPGetAction {
  path?: string;
  port: number | string;
  host?: string;
  scheme?: "HTTP" | "HTTPS";
  httpHeaders?: { name: string; value: string }[];
}

/** A TCP socket action (probe). */
export interface TCPSocketAction {
  port: number | string;
  host?: string;
}

/** A gRPC action (probe). */
export interface GRPCAction {
  port: number;
  service?: string;
}

/** `livenessProbe`, `readinessProbe`, `startupProbe`. */
export interface Probe {
  exec?: ExecAction;
  httpGet?: HTTPGetAction;
  tcpSocket?: TCPSocketAction;
  grpc?: GRPCAction;
  initialDelaySeconds?: number;
  timeoutSeconds?: number;
  periodSeconds?: number;
  successThreshold?: number;
  failureThreshold?: number;
  terminationGracePeriodSeconds?: number;
}

/** A lifecycle hook handler. */
export interface LifecycleHandler {
  exec?: ExecAction;
  httpGet?: HTTPGetAction;
  tcpSocket?: TCPSocketAction;
  sleep?: { seconds: number };
}

/** `containers[].lifecycle`. */
export interface Lifecycle {
  postStart?: LifecycleHandler;
  preStop?: LifecycleHandler;
}

/** `containers[].securityContext` (the parts we pass to CRI). */
export interface SecurityContext {
  privileged?: boolean;
  runAsUser?: number;
  runAsGroup?: number;
  runAsNonRoot?: boolean;
  readOnlyRootFilesystem?: boolean;
  allowPrivilegeEscalation?: boolean;
  capabilities?: { add?: string[]; drop?: string[] };
  seccompProfile?: SeccompProfile;
  appArmorProfile?: AppArmorProfile;
  seLinuxOptions?: SELinuxOptions;
  /** "Default" masks upstream's /proc paths; "Unmasked" masks none. */
  procMount?: "Default" | "Unmasked";
}

/** `securityContext.seccompProfile` (pod or container). */
export interface SeccompProfile {
  type: "RuntimeDefault" | "Unconfined" | "Localhost";
  /** With Localhost: a path under the kubelet's `<root-dir>/seccomp`. */
  localhostProfile?: string;
}

/** `securityContext.appArmorProfile` (pod or container). */
export interface AppArmorProfile {
  type: "RuntimeDefault" | "Unconfined" | "Localhost";
  /** With Localhost: the name of a profile loaded on the node. */
  localhostProfile?: string;
}

/** `securityContext.seLinuxOptions` (pod or container). */
export interface SELinuxOptions {
  user?: string;
  role?: string;
  type?: string;
  level?: string;
}

/** Pull policies, as upstream spells them. */
export type PullPolicy = "Always" | "IfNotPresent" | "Never";

/** `spec.containers[]` and `spec.initContainers[]`. */
/** `spec.containers[].resizePolicy[]`. */
export interface ContainerResizePolicy {
  resourceName: string;
  restartPolicy: "NotRequired" | "RestartContainer";
}

export interface Container {
  name: string;
  image?: string;
  command?: string[];
  args?: string[];
  workingDir?: string;
  ports?: ContainerPort[];
  env?: EnvVar[];
  envFrom?: EnvFromSource[];
  resources?: ResourceRequirements;
  /**
   * Whether a change of a resource's requests or limits restarts the
   * container (`RestartContainer`) or is applied in place (`NotRequired`,
   * the default).
   */
  resizePolicy?: ContainerResizePolicy[];
  volumeMounts?: VolumeMount[];
  /** Raw block devices; only a persistentVolumeClaim can back one, so lib/volumes refuses them. */
  volumeDevices?: { name: string; devicePath: string }[];
  livenessProbe?: Probe;
  readinessProbe?: Probe;
  startupProbe?: Probe;
  lifecycle?: Lifecycle;
  terminationMessagePath?: string;
  terminationMessagePolicy?: "File" | "FallbackToLogsOnError";
  imagePullPolicy?: PullPolicy;
  securityContext?: SecurityContext;
  /** Only on init containers: "Always" makes it a sidecar. */
  restartPolicy?: "Always";
  stdin?: boolean;
  stdinOnce?: boolean;
  tty?: boolean;
}

/**
 * `spec.ephemeralContainers[]`: a container added to a running pod through the
 * `ephemeralcontainers` subresource (`kubectl debug`). Its fields are a
 * Container's (the apiserver forbids ports, probes, lifecycle, resources).
 */
export interface EphemeralContainer extends Container {
  /** Runs in this container's process namespace instead of its own. */
  targetContainerName?: string;
}

/** The hostPath types, "" meaning no check. */
export type HostPathType =
  | ""
  | "DirectoryOrCreate"
  | "Directory"
  | "FileOrCreate"
  | "File"
  | "Socket"
  | "CharDevice"
  | "BlockDevice";

/** `spec.volumes[]` (the sources denolet knows; others are rejected by validation). */
export interface Volume {
  name: string;
  emptyDir?: { medium?: "" | "Memory"; sizeLimit?: Quantity };
  hostPath?: { path: string; type?: HostPathType };
  configMap?: Record<string, unknown>;
  secret?: Record<string, unknown>;
  downwardAPI?: Record<string, unknown>;
  projected?: Record<string, unknown>;
  /**
   * Every other upstream source (persistentVolumeClaim, csi, nfs, ...) has no plugin here:
   * lib/volumes/plugins.ts refuses it as upstream's FailedMount.
   */
  persistentVolumeClaim?: Record<string, unknown>;
}

/** Restart policies, as upstream spells them. */
export type RestartPolicy = "Always" | "OnFailure" | "Never";

/** `spec.securityContext` (pod level, the parts we use). */
export interface PodSecurityContext {
  runAsUser?: number;
  runAsGroup?: number;
  runAsNonRoot?: boolean;
  supplementalGroups?: number[];
  fsGroup?: number;
  /** How fsGroup is applied to volumes: "Always" (default) or "OnRootMismatch". */
  fsGroupChangePolicy?: "Always" | "OnRootMismatch";
  /** "Merge" (default) or "Strict"; admission refuses Strict (containerd 1.6 cannot). */
  supplementalGroupsPolicy?: "Merge" | "Strict";
  sysctls?: { name: string; value: string }[];
  seccompProfile?: SeccompProfile;
  appArmorProfile?: AppArmorProfile;
  seLinuxOptions?: SELinuxOptions;
}

/** `spec.tolerations[]`. */
export interface Toleration {
  key?: string;
  operator?: "Exists" | "Equal";
  value?: string;
  effect?: string;
  tolerationSeconds?: number;
}

/** A `nodeSelectorTerms[]` requirement: `matchExpressions[]` or `matchFields[]`. */
export interface NodeSelectorRequirement {
  key: string;
  operator: "In" | "NotIn" | "Exists" | "DoesNotExist" | "Gt" | "Lt";
  values?: string[];
}

/** `nodeSelectorTerms[]`: its requirements are ANDed, the terms ORed. */
export interface NodeSelectorTerm {
  matchExpressions?: NodeSelectorRequirement[];
  matchFields?: NodeSelectorRequirement[];
}

/** `spec.affinity` (the node affinity part; the kubelet's admission reads only the required one). */
export interface Affinity {
  nodeAffinity?: {
    requiredDuringSchedulingIgnoredDuringExecution?: { nodeSelectorTerms: NodeSelectorTerm[] };
  };
}

/** `spec.dnsConfig.options[]`. */
export interface PodDNSConfigOption {
  name: string;
  value?: string;
}

/** `spec.dnsConfig`: merged into the resolv.conf the dnsPolicy gives. */
export interface PodDNSConfig {
  nameservers?: string[];
  searches?: string[];
  options?: PodDNSConfigOption[];
}

/** `spec.hostAliases[]`: extra lines of the managed /etc/hosts. */
export interface HostAlias {
  ip: string;
  hostnames?: string[];
}

/** `spec`. */
export interface PodSpec {
  containers: Container[];
  initContainers?: Container[];
  /** Added after creation only; started once, never restarted (lib/kuberuntime). */
  ephemeralContainers?: EphemeralContainer[];
  volumes?: Volume[];
  restartPolicy?: RestartPolicy;
  terminationGracePeriodSeconds?: number;
  activeDeadlineSeconds?: number;
  /** Condition types (set by others in status.conditions) that must be True for Ready. */
  readinessGates?: { conditionType: string }[];
  dnsPolicy?: string;
  nodeName?: string;
  nodeSelector?: Record<string, string>;
  serviceAccountName?: string;
  /** Secrets with registry credentials for the pod's images (lib/images/credentials.ts). */
  imagePullSecrets?: { name?: string }[];
  /** The RuntimeClass whose handler runs the pod's sandbox (lib/kuberuntime/runtime_class.ts). */
  runtimeClassName?: string;
  hostNetwork?: boolean;
  hostPID?: boolean;
  hostIPC?: boolean;
  hostname?: string;
  subdomain?: string;
  /** The hostname as is, without a domain (GA and locked on in v1.37). */
  hostnameOverride?: string;
  setHostnameAsFQDN?: boolean;
  dnsConfig?: PodDNSConfig;
  hostAliases?: HostAlias[];
  securityContext?: PodSecurityContext;
  /** false asks for a user namespace, which the runtime here cannot give (refused). */
  hostUsers?: boolean;
  priority?: number;
  priorityClassName?: string;
  /** Defaulted to `default-scheduler`, as upstream; the kubelet does not read it. */
  schedulerName?: string;
  tolerations?: Toleration[];
  enableServiceLinks?: boolean;
  affinity?: Affinity;
  /** The RuntimeClass's overhead, added to the pod's requests. */
  overhead?: Record<string, Quantity>;
  /** The OS the pod needs (`linux`, `windows`). */
  os?: { name: string };
  /** Pod-level requests and limits (PodLevelResources). */
  resources?: ResourceRequirements;
}

/** The pod phases. */
export type PodPhase = "Pending" | "Running" | "Succeeded" | "Failed" | "Unknown";

/** `status.conditions[]`. */
export interface PodCondition {
  type: string;
  /** The pod's `metadata.generation` this condition was computed from. */
  observedGeneration?: number;
  status: "True" | "False" | "Unknown";
  lastProbeTime?: string | null;
  lastTransitionTime?: string;
  reason?: string;
  message?: string;
}

/** A container state: exactly one of the three is set. */
export interface ContainerState {
  waiting?: { reason?: string; message?: string };
  running?: { startedAt?: string };
  terminated?: {
    exitCode: number;
    signal?: number;
    reason?: string;
    message?: string;
    startedAt?: string;
    finishedAt?: string;
    containerID?: string;
  };
}

/** `status.containerStatuses[]`. */
export interface ContainerStatus {
  name: string;
  state: ContainerState;
  lastState: ContainerState;
  ready: boolean;
  restartCount: number;
  image: string;
  imageID: string;
  containerID?: string;
  started?: boolean;
  /** The resources the container runs with (in-place resize). */
  resources?: ResourceRequirements;
  /** The requests the kubelet allocated to it (in-place resize). */
  allocatedResources?: Record<string, Quantity>;
}

/** `status`. */
export interface PodStatus {
  /** The pod's `metadata.generation` the kubelet last acted on (PodObservedGenerationTracking). */
  observedGeneration?: number;
  phase?: PodPhase;
  conditions?: PodCondition[];
  message?: string;
  reason?: string;
  hostIP?: string;
  hostIPs?: { ip: string }[];
  podIP?: string;
  podIPs?: { ip: string }[];
  startTime?: string;
  initContainerStatuses?: ContainerStatus[];
  containerStatuses?: ContainerStatus[];
  ephemeralContainerStatuses?: ContainerStatus[];
  qosClass?: "Guaranteed" | "Burstable" | "BestEffort";
}

/** A Pod. */
export interface Pod {
  apiVersion?: string;
  kind?: string;
  metadata: ObjectMeta;
  spec: PodSpec;
  status?: PodStatus;
}

/** A PodList, as served at `/pods`. */
export interface PodList {
  kind: "PodList";
  apiVersion: "v1";
  metadata: Record<string, unknown>;
  items: Pod[];
}
