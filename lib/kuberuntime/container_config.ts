/**
 * Container → CRI ContainerConfig, as upstream's generateContainerConfig
 * (kuberuntime_container.go, labels.go, kuberuntime_container_linux.go).
 * Pure: the volume paths, termination-log file and hosts file come in as paths.
 *
 * @module
 */

import type {
  Container,
  ContainerPort,
  LifecycleHandler,
  Pod,
  Quantity,
  VolumeMount,
} from "../api/types.ts";
import type {
  ContainerConfig,
  LinuxContainerResources,
  LinuxContainerSecurityContext,
  Mount,
} from "../cri/types.ts";
import { MountPropagation, NamespaceMode } from "../cri/types.ts";
import { intValue, milliValue } from "../api/quantity.ts";
import { isReadOnlyVolume, type SubPathMount, validateSubPath } from "../volumes/mod.ts";
import { hashContainer } from "./hash.ts";
import { goJson } from "../util/json.ts";
import { Annotations, Labels } from "./types.ts";
import { containerOOMScoreAdj } from "./qos.ts";
import { podNamespaceOptions } from "./sandbox_config.ts";
import {
  containerAppArmor,
  containerSeccompProfile,
  type SeccompSettings,
  selinuxOption,
} from "./security_profiles.ts";
import {
  ContainerConfigError,
  type EnvContext,
  expandCommandAndArgs,
  expandSubPathExpr,
  makeEnvironment,
} from "./env.ts";

/** Upstream's CFS period (100ms, in µs). */
export const CPU_PERIOD_US = 100_000;
const MIN_SHARES = 2;
const MAX_SHARES = 262_144;
const MIN_QUOTA_US = 1000;
const DEFAULT_TERMINATION_MESSAGE_PATH = "/dev/termination-log";

/** Inputs to {@link generateContainerConfig}. */
export interface ContainerConfigInput extends EnvContext {
  pod: Pod;
  container: Container;
  /** Becomes metadata.attempt and the log file name. */
  restartCount: number;
  /** The resolved image reference from the image manager. */
  imageRef: string;
  /** Host path of each pod volume, by volume name (from lib/volumes). */
  volumePaths: ReadonlyMap<string, string>;
  /** Host file bind-mounted at the container's terminationMessagePath. */
  terminationLogPath?: string;
  /** Host file bind-mounted at /etc/hosts (the managed hosts file, lib/volumes/etc_hosts.ts). */
  etcHostsPath?: string;
  /** Node memory in bytes, for the Burstable OOM score. */
  memoryCapacity: number;
  /** The image's user id when known, to enforce runAsNonRoot. */
  imageUid?: number;
  /**
   * The runtime id of an ephemeral container's `targetContainerName`: the
   * container joins that container's process namespace.
   */
  targetContainerId?: string;
  /** seccompDefault and the Localhost profile root; absent = Unconfined by default, `/var/lib/kubelet/seccomp`. */
  seccomp?: SeccompSettings;
}

/** Upstream's seccomp profile root under the default --root-dir. */
const DEFAULT_SECCOMP_SETTINGS: SeccompSettings = { profileRoot: "/var/lib/kubelet/seccomp" };

/**
 * CPU shares for a cpu request in millicores, as upstream's milliCPUToShares.
 * @param milliCPU the request
 * @returns shares, 2..262144
 */
export function milliCPUToShares(milliCPU: number): number {
  if (milliCPU <= 0) return MIN_SHARES;
  const shares = Math.floor((milliCPU * 1024) / 1000);
  return Math.min(MAX_SHARES, Math.max(MIN_SHARES, shares));
}

/**
 * CFS quota for a cpu limit in millicores, as upstream's milliCPUToQuota.
 * @param milliCPU the limit
 * @param periodUs the CFS period
 * @returns quota in µs (0 = none), at least 1000 when set
 */
export function milliCPUToQuota(milliCPU: number, periodUs = CPU_PERIOD_US): number {
  if (milliCPU <= 0) return 0;
  return Math.max(MIN_QUOTA_US, Math.floor((milliCPU * periodUs) / 1000));
}

/**
 * Linux resources for a container: shares from the cpu request (or the limit
 * when no request), quota/period from the cpu limit, memory limit, OOM score.
 * @param pod the pod (for QoS)
 * @param container the container
 * @param memoryCapacity node memory in bytes
 * @returns the CRI resources
 */
export function containerResources(
  pod: Pod,
  container: Container,
  memoryCapacity: number,
): LinuxContainerResources {
  const req = container.resources?.requests ?? {};
  const lim = container.resources?.limits ?? {};
  const q = (v: Quantity | undefined, f: (q: Quantity) => number) => (v === undefined ? 0 : f(v));
  const cpuReq = q(req.cpu, milliValue);
  const cpuLim = q(lim.cpu, milliValue);
  const out: LinuxContainerResources = {
    cpuShares: milliCPUToShares(cpuReq === 0 && cpuLim > 0 ? cpuLim : cpuReq),
    oomScoreAdj: containerOOMScoreAdj(pod, container, memoryCapacity),
  };
  if (cpuLim > 0) {
    out.cpuPeriod = CPU_PERIOD_US;
    out.cpuQuota = milliCPUToQuota(cpuLim);
  }
  const mem = q(lim.memory, intValue);
  if (mem > 0) out.memoryLimitInBytes = mem;
  return out;
}

/**
 * The container's security context: container settings over the pod's, plus
 * the pod's namespaces, seccomp, AppArmor and SELinux (upstream
 * determineEffectiveSecurityContext).
 * @param pod the pod
 * @param container the container
 * @param imageUid the image's user id when known
 * @param seccomp seccompDefault and the Localhost profile root
 * @returns the CRI security context
 * @throws {ContainerConfigError} when runAsNonRoot is violated or a profile is malformed
 */
export function containerSecurityContext(
  pod: Pod,
  container: Container,
  imageUid?: number,
  seccomp: SeccompSettings = DEFAULT_SECCOMP_SETTINGS,
): LinuxContainerSecurityContext {
  const psc = pod.spec.securityContext ?? {};
  const csc = container.securityContext ?? {};
  const runAsUser = csc.runAsUser ?? psc.runAsUser;
  const runAsGroup = csc.runAsGroup ?? psc.runAsGroup;
  const nonRoot = csc.runAsNonRoot ?? psc.runAsNonRoot;
  const uid = runAsUser ?? imageUid;
  if (nonRoot && uid === 0) {
    throw new ContainerConfigError(
      `container "${container.name}" has runAsNonRoot and ${
        runAsUser === undefined ? "image" : "runAsUser"
      } will run as root (uid 0)`,
    );
  }
  // Upstream's order: fsGroup first, then supplementalGroups.
  const groups = [
    ...(psc.fsGroup !== undefined ? [psc.fsGroup] : []),
    ...(psc.supplementalGroups ?? []),
  ];
  const out: LinuxContainerSecurityContext = {
    namespaceOptions: podNamespaceOptions(pod),
    privileged: csc.privileged === true,
    readonlyRootfs: csc.readOnlyRootFilesystem === true,
    // Upstream sets no_new_privs only when allowPrivilegeEscalation is explicitly false.
    noNewPrivs: csc.allowPrivilegeEscalation === false,
    seccomp: containerSeccompProfile(pod, container, seccomp),
  };
  const apparmor = containerAppArmor(pod, container);
  if (apparmor) Object.assign(out, apparmor);
  const selinux = selinuxOption(csc.seLinuxOptions ?? psc.seLinuxOptions);
  if (selinux) out.selinuxOptions = selinux;
  if (runAsUser !== undefined) out.runAsUser = { value: runAsUser };
  if (runAsGroup !== undefined) out.runAsGroup = { value: runAsGroup };
  if (groups.length > 0) out.supplementalGroups = groups;
  if (csc.capabilities) {
    out.capabilities = {
      addCapabilities: csc.capabilities.add ?? [],
      dropCapabilities: csc.capabilities.drop ?? [],
    };
  }
  // containerd applies no masks when these are empty, so send upstream's defaults
  // (procMount Default); procMount Unmasked sends none, and a privileged
  // container sees everything, as upstream.
  if (!out.privileged && csc.procMount !== "Unmasked") {
    out.maskedPaths = [...DEFAULT_MASKED_PATHS];
    out.readonlyPaths = [...DEFAULT_READONLY_PATHS];
  }
  return out;
}

/** Upstream's default masked paths (pkg/securitycontext). */
export const DEFAULT_MASKED_PATHS: readonly string[] = [
  "/proc/asound",
  "/proc/acpi",
  "/proc/kcore",
  "/proc/keys",
  "/proc/latency_stats",
  "/proc/timer_list",
  "/proc/timer_stats",
  "/proc/sched_debug",
  "/proc/scsi",
  "/sys/firmware",
  "/sys/devices/virtual/powercap",
];

/** Upstream's default read-only paths (pkg/securitycontext). */
export const DEFAULT_READONLY_PATHS: readonly string[] = [
  "/proc/bus",
  "/proc/fs",
  "/proc/irq",
  "/proc/sys",
  "/proc/sysrq-trigger",
];

const PROPAGATION: Record<string, number> = {
  None: MountPropagation.PROPAGATION_PRIVATE,
  HostToContainer: MountPropagation.PROPAGATION_HOST_TO_CONTAINER,
  Bidirectional: MountPropagation.PROPAGATION_BIDIRECTIONAL,
};

/**
 * A volumeMount's subPath as upstream's makeMounts resolves it: subPathExpr
 * expanded from the container's environment, then checked to be relative and
 * without `..`.
 * @param container the container, for errors
 * @param vm the volumeMount
 * @param env the container's environment (the CRI envs)
 * @returns the subPath, or undefined when the mount has none
 * @throws {ContainerConfigError} for a variable without a value or a bad path
 */
function resolveSubPath(
  container: Container,
  vm: VolumeMount,
  env: readonly { key: string; value: string }[],
): string | undefined {
  try {
    const subPath = vm.subPathExpr ? expandSubPathExpr(vm.subPathExpr, env) : vm.subPath;
    if (subPath) validateSubPath(subPath);
    return subPath || undefined;
  } catch (err) {
    throw new ContainerConfigError(
      `volume "${vm.name}" of container "${container.name}": ${(err as Error).message}`,
      { cause: err },
    );
  }
}

/**
 * The subPaths of a container's volumeMounts, resolved as {@link containerMounts}
 * mounts them, for lib/volumes prepareSubPaths to create and check on disk.
 * @param container the container
 * @param env the container's environment (the CRI envs)
 * @returns one entry per volumeMount with a subPath or subPathExpr
 * @throws {ContainerConfigError} for a variable without a value or a bad path
 */
export function containerSubPaths(
  container: Container,
  env: readonly { key: string; value: string }[],
): SubPathMount[] {
  const out: SubPathMount[] = [];
  for (const vm of container.volumeMounts ?? []) {
    const subPath = resolveSubPath(container, vm, env);
    if (subPath !== undefined) out.push({ volumeName: vm.name, subPath });
  }
  return out;
}

/**
 * The container's mounts: its volumeMounts, the termination-log file and the
 * managed /etc/hosts unless the container mounts /etc/hosts itself.
 * configMap, secret, downwardAPI and projected volumes are always read-only,
 * as upstream mounts them. subPaths must already exist (lib/volumes
 * prepareSubPaths creates and checks them); here subPathExpr is expanded from
 * `env` and the result's spelling is checked.
 * @param input the container, volume paths and extra files
 * @param env the container's environment, for subPathExpr
 * @returns CRI mounts
 * @throws {ContainerConfigError} for an unknown volume, a subPathExpr variable
 *   without a value, a bad subPath or Bidirectional without privileged
 */
export function containerMounts(
  input: ContainerConfigInput,
  env: readonly { key: string; value: string }[] = [],
): Mount[] {
  const { container } = input;
  const mounts: Mount[] = [];
  for (const vm of container.volumeMounts ?? []) {
    const where = `volume "${vm.name}" of container "${container.name}"`;
    const host = input.volumePaths.get(vm.name);
    if (host === undefined) {
      throw new ContainerConfigError(`cannot find ${where} among the pod's volumes`);
    }
    const subPath = resolveSubPath(container, vm, env);
    const hostPath = subPath ? `${host.replace(/\/+$/, "")}/${subPath}` : host;
    const volume = input.pod.spec.volumes?.find((v) => v.name === vm.name);
    const mustBeReadOnly = volume !== undefined && isReadOnlyVolume(volume);
    const propagation = PROPAGATION[vm.mountPropagation ?? "None"] ??
      MountPropagation.PROPAGATION_PRIVATE;
    if (
      propagation === MountPropagation.PROPAGATION_BIDIRECTIONAL &&
      container.securityContext?.privileged !== true
    ) {
      throw new ContainerConfigError(
        `${where}: Bidirectional mount propagation is available only to privileged containers`,
      );
    }
    mounts.push({
      containerPath: vm.mountPath,
      hostPath,
      readonly: vm.readOnly === true || mustBeReadOnly,
      propagation,
    });
  }
  if (input.terminationLogPath) {
    mounts.push({
      containerPath: container.terminationMessagePath ?? DEFAULT_TERMINATION_MESSAGE_PATH,
      hostPath: input.terminationLogPath,
    });
  }
  // Upstream's makeHostsMount: writable, relabelled; never over a container's own /etc/hosts.
  if (input.etcHostsPath && !mounts.some((m) => m.containerPath === "/etc/hosts")) {
    mounts.push({
      containerPath: "/etc/hosts",
      hostPath: input.etcHostsPath,
      selinuxRelabel: true,
    });
  }
  return mounts;
}

/**
 * The labels on a container: the pod's identity and the container name.
 * @param pod the pod
 * @param container the container
 * @returns the container labels
 */
export function containerLabels(pod: Pod, container: Container): Record<string, string> {
  return {
    [Labels.podName]: pod.metadata.name ?? "",
    [Labels.podNamespace]: pod.metadata.namespace ?? "default",
    [Labels.podUID]: pod.metadata.uid ?? "",
    [Labels.containerName]: container.name,
  };
}

/**
 * The annotations on a container, from which a restarted denolet rebuilds
 * what it needs (hash, restart count, grace periods, preStop hook).
 * @param pod the pod
 * @param container the container
 * @param restartCount the restart count of this instance
 * @returns the container annotations
 */
export function containerAnnotations(
  pod: Pod,
  container: Container,
  restartCount: number,
): Record<string, string> {
  const out: Record<string, string> = {
    [Annotations.containerHash]: hashContainer(container),
    [Annotations.restartCount]: String(restartCount),
    [Annotations.terminationMessagePath]: container.terminationMessagePath ??
      DEFAULT_TERMINATION_MESSAGE_PATH,
    [Annotations.terminationMessagePolicy]: container.terminationMessagePolicy ?? "File",
  };
  if (pod.metadata.deletionGracePeriodSeconds !== undefined) {
    out[Annotations.podDeletionGracePeriod] = String(pod.metadata.deletionGracePeriodSeconds);
  }
  if (pod.spec.terminationGracePeriodSeconds !== undefined) {
    out[Annotations.terminationGracePeriod] = String(pod.spec.terminationGracePeriodSeconds);
  }
  if (container.lifecycle?.preStop) {
    out[Annotations.preStopHandler] = goJson(goOrderedHandler(container.lifecycle.preStop));
  }
  if ((container.ports ?? []).length > 0) {
    out[Annotations.containerPorts] = goJson(container.ports!.map(goOrderedPort));
  }
  return out;
}

/** Keeps the members Go's `omitempty` keeps (set, non-zero, non-empty). */
function present(entries: [string, unknown][]): Record<string, unknown> {
  return Object.fromEntries(
    entries.filter(([, v]) =>
      v !== undefined && v !== null && v !== "" && v !== 0 && !(Array.isArray(v) && v.length === 0)
    ),
  );
}

/**
 * A port as upstream's json.Marshal writes it: v1.ContainerPort's field
 * order, `containerPort` always, the rest only when set.
 */
function goOrderedPort(p: ContainerPort): Record<string, unknown> {
  const head = present([["name", p.name], ["hostPort", p.hostPort]]);
  const tail = present([["protocol", p.protocol], ["hostIP", p.hostIP]]);
  return { ...head, containerPort: p.containerPort, ...tail };
}

/** A lifecycle handler in v1.LifecycleHandler's field order, as upstream's json.Marshal writes it. */
function goOrderedHandler(h: LifecycleHandler): Record<string, unknown> {
  const get = h.httpGet;
  return present([
    ["exec", h.exec && present([["command", h.exec.command]])],
    [
      "httpGet",
      get && {
        ...present([["path", get.path]]),
        port: get.port,
        ...present([
          ["host", get.host],
          ["scheme", get.scheme],
          ["httpHeaders", get.httpHeaders?.map((x) => ({ name: x.name, value: x.value }))],
        ]),
      },
    ],
    [
      "tcpSocket",
      h.tcpSocket && { port: h.tcpSocket.port, ...present([["host", h.tcpSocket.host]]) },
    ],
    ["sleep", h.sleep && { seconds: h.sleep.seconds }],
  ]);
}

/**
 * Points the pid namespace at a target container (upstream
 * generateLinuxContainerConfig's nsTarget): only where the container would
 * otherwise get its own, since a pod sharing one namespace (or the host's)
 * already sees the target's processes.
 * @param sc the security context (modified)
 * @param targetId the target container's runtime id, if any
 * @returns the same security context
 */
function targetPidNamespace(
  sc: LinuxContainerSecurityContext,
  targetId: string | undefined,
): LinuxContainerSecurityContext {
  const ns = sc.namespaceOptions;
  if (targetId !== undefined && ns !== undefined && ns.pid === NamespaceMode.CONTAINER) {
    sc.namespaceOptions = { ...ns, pid: NamespaceMode.TARGET, targetId };
  }
  return sc;
}

/**
 * Builds the CRI ContainerConfig for one start of a container.
 * @param input pod, container, restart count, image ref, paths and node facts
 * @returns the CRI config
 * @throws {ContainerConfigError} naming the container when the spec cannot be honoured here
 */
export function generateContainerConfig(input: ContainerConfigInput): ContainerConfig {
  const { pod, container, restartCount } = input;
  const envs = makeEnvironment(pod, container, input);
  const { command, args } = expandCommandAndArgs(container, envs);
  const config: ContainerConfig = {
    metadata: { name: container.name, attempt: restartCount },
    image: { image: input.imageRef },
    envs,
    mounts: containerMounts(input, envs),
    labels: containerLabels(pod, container),
    annotations: containerAnnotations(pod, container, restartCount),
    logPath: `${container.name}/${restartCount}.log`,
    stdin: container.stdin === true,
    stdinOnce: container.stdinOnce === true,
    tty: container.tty === true,
    linux: {
      resources: containerResources(pod, container, input.memoryCapacity),
      securityContext: targetPidNamespace(
        containerSecurityContext(pod, container, input.imageUid, input.seccomp),
        input.targetContainerId,
      ),
    },
  };
  if (command) config.command = command;
  if (args) config.args = args;
  if (container.workingDir) config.workingDir = container.workingDir;
  return config;
}
