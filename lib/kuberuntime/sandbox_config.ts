/**
 * Pod → CRI PodSandboxConfig, as upstream's generatePodSandboxConfig
 * (kuberuntime_sandbox.go). Pure: the pod's DNS config comes in formed (pod_dns.ts).
 *
 * @module
 */

import type { Pod, PodSpec } from "../api/types.ts";
import type { DNSConfig, NamespaceOption, PodSandboxConfig, PortMapping } from "../cri/types.ts";
import { NamespaceMode, ProfileType, Protocol } from "../cri/types.ts";
import { selinuxOption } from "./security_profiles.ts";
import { Labels } from "./types.ts";
import { podCgroupParent } from "../cm/mod.ts";
import { kernelHostname, podHostnameAndDomain } from "./pod_dns.ts";

/** Upstream's podLogsRootDirectory, where each pod gets a log directory. */
export const DEFAULT_POD_LOGS_DIR = "/var/log/pods";

/** PodSpec fields the sandbox reads beyond lib/api/types.ts. */
export type PodSpecWithExtras = PodSpec & {
  shareProcessNamespace?: boolean;
};

/**
 * Upstream's error for `hostUsers: false` on a runtime without user
 * namespaces. containerd 1.6 reports no user-namespace support for any
 * handler, so denolet refuses every such pod at sandbox creation, as upstream.
 */
export function userNamespacesUnsupported(runtimeHandler: string): string {
  return runtimeHandler === ""
    ? "can't set `spec.hostUsers: false`, runtime does not support user namespaces"
    : `can't set \`spec.hostUsers: false\`, RuntimeClass handler "${runtimeHandler}" does not support user namespaces`;
}

/** Node-level inputs to {@link generatePodSandboxConfig}. */
export interface SandboxConfigOptions {
  /** Root of per-pod log directories; default {@link DEFAULT_POD_LOGS_DIR}. */
  podLogsDir?: string;
  /** `--cgroup-root`; default "/". */
  cgroupRoot?: string;
  /** `--cgroup-driver`; default "cgroupfs". */
  cgroupDriver?: "cgroupfs" | "systemd";
  /** `--cgroups-per-qos`; default true. */
  cgroupsPerQOS?: boolean;
  /** The pod's DNS config, from pod_dns.ts' podDNS; absent = the runtime's default. */
  dnsConfig?: DNSConfig;
  /** `--cluster-domain`: the domain of a pod with a subdomain. */
  clusterDomain?: string;
  /** CRI metadata.attempt. */
  attempt?: number;
  /** The runtime handler the sandbox runs under ("" = the runtime's default). */
  runtimeHandler?: string;
}

/**
 * `<podLogsDir>/<namespace>_<name>_<uid>`, upstream's BuildPodLogsDirectory.
 * @param podLogsDir root of pod log directories
 * @param pod namespace, name and uid
 * @returns the directory
 */
export function podLogsDirectory(
  podLogsDir: string,
  pod: { namespace: string; name: string; uid: string },
): string {
  return `${podLogsDir.replace(/\/+$/, "")}/${pod.namespace}_${pod.name}_${pod.uid}`;
}

/**
 * The namespaces a pod's sandbox and containers use (upstream namespacesForPod):
 * node network/IPC/PID when asked for, else the pod's own; PID is per container
 * unless shareProcessNamespace.
 * @param pod the pod
 * @returns the CRI namespace options
 */
export function podNamespaceOptions(pod: Pod): NamespaceOption {
  const spec: PodSpecWithExtras = pod.spec;
  return {
    network: spec.hostNetwork ? NamespaceMode.NODE : NamespaceMode.POD,
    ipc: spec.hostIPC ? NamespaceMode.NODE : NamespaceMode.POD,
    pid: spec.hostPID
      ? NamespaceMode.NODE
      : spec.shareProcessNamespace
      ? NamespaceMode.POD
      : NamespaceMode.CONTAINER,
  };
}

const PROTOCOLS: Record<string, number> = {
  TCP: Protocol.TCP,
  UDP: Protocol.UDP,
  SCTP: Protocol.SCTP,
};

function portMappings(pod: Pod): PortMapping[] {
  const out: PortMapping[] = [];
  for (const c of pod.spec.containers) {
    for (const p of c.ports ?? []) {
      if (!p.hostPort || p.hostPort <= 0) continue;
      const m: PortMapping = {
        protocol: PROTOCOLS[p.protocol ?? "TCP"] ?? Protocol.TCP,
        containerPort: p.containerPort,
        hostPort: p.hostPort,
      };
      if (p.hostIP) m.hostIp = p.hostIP;
      out.push(m);
    }
  }
  return out;
}

/**
 * The labels on a pod's sandbox: the pod's labels plus the pod's identity.
 * @param pod the pod
 * @returns the sandbox labels
 */
export function sandboxLabels(pod: Pod): Record<string, string> {
  return {
    ...pod.metadata.labels,
    [Labels.podName]: pod.metadata.name ?? "",
    [Labels.podNamespace]: pod.metadata.namespace ?? "default",
    [Labels.podUID]: pod.metadata.uid ?? "",
  };
}

/**
 * Builds the PodSandboxConfig for a pod.
 * @param pod the pod (defaulted or not)
 * @param opts node-level settings, the pod's DNS config and the attempt number
 * @returns the CRI config
 * @throws {Error} for a hostname upstream refuses (see pod_dns.ts' podHostnameAndDomain,
 *   kernelHostname) and for `hostUsers: false` (see {@link userNamespacesUnsupported})
 */
export function generatePodSandboxConfig(
  pod: Pod,
  opts: SandboxConfigOptions = {},
): PodSandboxConfig {
  const spec: PodSpecWithExtras = pod.spec;
  const meta = {
    name: pod.metadata.name ?? "",
    namespace: pod.metadata.namespace ?? "default",
    uid: pod.metadata.uid ?? "",
  };
  if (spec.hostUsers === false) {
    throw new Error(userNamespacesUnsupported(opts.runtimeHandler ?? ""));
  }
  const sc = spec.securityContext;
  // Upstream's order: fsGroup first, then supplementalGroups.
  const supplementalGroups = [
    ...(sc?.fsGroup !== undefined ? [sc.fsGroup] : []),
    ...(sc?.supplementalGroups ?? []),
  ];
  const sysctls: Record<string, string> = {};
  for (const s of sc?.sysctls ?? []) sysctls[s.name] = s.value;

  const config: PodSandboxConfig = {
    metadata: { ...meta, attempt: opts.attempt ?? 0 },
    logDirectory: podLogsDirectory(opts.podLogsDir ?? DEFAULT_POD_LOGS_DIR, meta),
    ...(opts.dnsConfig ? { dnsConfig: opts.dnsConfig } : {}),
    portMappings: portMappings(pod),
    labels: sandboxLabels(pod),
    annotations: { ...pod.metadata.annotations },
    linux: {
      cgroupParent: podCgroupParent(pod, {
        cgroupRoot: opts.cgroupRoot ?? "/",
        cgroupDriver: opts.cgroupDriver ?? "cgroupfs",
        cgroupsPerQOS: opts.cgroupsPerQOS ?? true,
      }),
      sysctls,
      securityContext: {
        namespaceOptions: podNamespaceOptions(pod),
        privileged: [...(spec.initContainers ?? []), ...spec.containers]
          .some((c) => c.securityContext?.privileged === true),
        ...(sc?.runAsUser !== undefined ? { runAsUser: { value: sc.runAsUser } } : {}),
        ...(sc?.runAsGroup !== undefined ? { runAsGroup: { value: sc.runAsGroup } } : {}),
        ...(supplementalGroups.length > 0 ? { supplementalGroups } : {}),
        ...(sc?.seLinuxOptions ? { selinuxOptions: selinuxOption(sc.seLinuxOptions)! } : {}),
        // The sandbox (pause) always runs under the runtime's default seccomp profile.
        seccomp: { profileType: ProfileType.RuntimeDefault },
      },
    },
  };
  // runc cannot set a hostname without a private UTS namespace, and upstream
  // leaves it to the node for host-network pods.
  if (!spec.hostNetwork) {
    const name = podHostnameAndDomain(pod, opts.clusterDomain ?? "");
    config.hostname = kernelHostname(name, spec.setHostnameAsFQDN);
  }
  return config;
}
