/**
 * Pod → CRI PodSandboxConfig, as upstream's generatePodSandboxConfig
 * (kuberuntime_sandbox.go). Pure: the host's resolv.conf comes in parsed.
 *
 * @module
 */

import type { Pod, PodSpec } from "../api/types.ts";
import type { DNSConfig, NamespaceOption, PodSandboxConfig, PortMapping } from "../cri/types.ts";
import { NamespaceMode, Protocol } from "../cri/types.ts";
import { Labels } from "./types.ts";
import { podQOSClass } from "../api/qos.ts";

/** Upstream's podLogsRootDirectory, where each pod gets a log directory. */
export const DEFAULT_POD_LOGS_DIR = "/var/log/pods";

/** Upstream validation limits on a pod's resolv.conf. */
const MAX_DNS_NAMESERVERS = 3;
const MAX_DNS_SEARCH_PATHS = 32;
const DEFAULT_CLUSTER_DNS_OPTIONS = ["ndots:5"];

/** `spec.dnsConfig`, which lib/api/types.ts does not model yet. */
export interface PodDNSConfig {
  nameservers?: string[];
  searches?: string[];
  options?: { name: string; value?: string }[];
}

/** PodSpec fields the sandbox reads beyond lib/api/types.ts. */
export type PodSpecWithExtras = PodSpec & {
  dnsConfig?: PodDNSConfig;
  shareProcessNamespace?: boolean;
  setHostnameAsFQDN?: boolean;
};

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
  /** The node's resolv.conf, parsed with {@link parseResolvConf}; absent = none configured. */
  hostDNS?: DNSConfig;
  /** `--cluster-dns`. */
  clusterDNS?: string[];
  /** `--cluster-domain`. */
  clusterDomain?: string;
  /** CRI metadata.attempt. */
  attempt?: number;
}

/**
 * Parses resolv.conf text the way upstream's getHostDNSConfig reads it.
 * @param text the file's content
 * @returns servers, searches (trailing dots dropped, last `search` line wins) and options
 */
export function parseResolvConf(text: string): DNSConfig {
  const servers: string[] = [];
  let searches: string[] = [];
  let options: string[] = [];
  for (const raw of text.split("\n")) {
    const line = raw.replace(/[#;].*$/, "").trim();
    const fields = line.split(/\s+/).filter((f) => f !== "");
    const [key, ...rest] = fields;
    if (key === "nameserver" && rest[0] !== undefined) servers.push(rest[0]);
    else if (key === "search") {
      searches = rest.filter((s) => s !== ".").map((s) => s.replace(/\.$/, ""));
    } else if (key === "options") options = mergeOptions(options, rest);
  }
  return { servers, searches, options };
}

/** Options merged by name ("ndots:2" replaces "ndots:5"), later ones winning. */
function mergeOptions(base: string[], extra: string[]): string[] {
  const byName = new Map<string, string>();
  for (const o of [...base, ...extra]) byName.set(o.split(":")[0]!, o);
  return [...byName.values()];
}

function dedupe(items: string[]): string[] {
  return [...new Set(items)];
}

/**
 * The pod's DNS config, as upstream's GetPodDNS: cluster DNS for ClusterFirst
 * (and ClusterFirstWithHostNet) when cluster DNS is configured, the host's
 * resolv.conf for Default (and for ClusterFirst without cluster DNS or on the
 * host network), nothing for None; then `spec.dnsConfig` is merged in.
 * @param pod the pod
 * @param opts host DNS and cluster DNS settings
 * @returns the CRI DNS config
 */
export function podDNSConfig(pod: Pod, opts: SandboxConfigOptions): DNSConfig {
  const spec: PodSpecWithExtras = pod.spec;
  const policy = spec.dnsPolicy ?? "ClusterFirst";
  const host = opts.hostDNS ?? { servers: [], searches: [], options: [] };
  let type: "cluster" | "host" | "none";
  if (policy === "None") type = "none";
  else if (policy === "ClusterFirstWithHostNet") type = "cluster";
  else if (policy === "ClusterFirst" && !spec.hostNetwork) type = "cluster";
  else type = "host";
  if (type === "cluster" && (opts.clusterDNS ?? []).length === 0) type = "host";

  let servers: string[] = [];
  let searches: string[] = [];
  let options: string[] = [];
  if (type === "cluster") {
    servers = [...opts.clusterDNS!];
    const ns = pod.metadata.namespace ?? "default";
    const domain = opts.clusterDomain ?? "";
    const clusterSearch = domain ? [`${ns}.svc.${domain}`, `svc.${domain}`, domain] : [];
    searches = dedupe([...clusterSearch, ...(host.searches ?? [])]);
    options = [...DEFAULT_CLUSTER_DNS_OPTIONS];
  } else if (type === "host") {
    servers = [...(host.servers ?? [])];
    searches = [...(host.searches ?? [])];
    options = [...(host.options ?? [])];
  }
  if (spec.dnsConfig) {
    servers = dedupe([...servers, ...(spec.dnsConfig.nameservers ?? [])]);
    searches = dedupe([...searches, ...(spec.dnsConfig.searches ?? [])]);
    options = mergeOptions(
      options,
      (spec.dnsConfig.options ?? []).map((o) =>
        o.value === undefined ? o.name : `${o.name}:${o.value}`
      ),
    );
  }
  return {
    servers: servers.slice(0, MAX_DNS_NAMESERVERS),
    searches: searches.slice(0, MAX_DNS_SEARCH_PATHS),
    options,
  };
}

/**
 * The pod's hostname, as upstream's GeneratePodHostNameAndDomain: spec.hostname
 * or the pod name, cut to 63 characters without a trailing '-' or '.'.
 * @param pod the pod
 * @returns the hostname
 */
export function podHostname(pod: Pod): string {
  const name = pod.spec.hostname || pod.metadata.name || "";
  if (name.length <= 63) return name;
  return name.slice(0, 63).replace(/[-.]+$/, "");
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
 * The pod's cgroup parent as upstream's pod container manager names it with
 * cgroupsPerQOS: `<root>/kubepods[/burstable|/besteffort]/pod<uid>` (cgroupfs) or
 * `kubepods[-burstable|-besteffort]-pod<uid>.slice` (systemd).
 * @param pod the pod
 * @param opts cgroup root, driver and cgroupsPerQOS
 * @returns the cgroup parent for the sandbox
 */
export function podCgroupParent(pod: Pod, opts: SandboxConfigOptions): string {
  const root = (opts.cgroupRoot ?? "/").replace(/\/+$/, "");
  if (opts.cgroupsPerQOS === false) return root === "" ? "/" : root;
  const qos = podQOSClass(pod);
  const parts = ["kubepods"];
  if (qos === "Burstable") parts.push("burstable");
  if (qos === "BestEffort") parts.push("besteffort");
  const uid = pod.metadata.uid ?? "";
  if (opts.cgroupDriver === "systemd") {
    const prefix = root.split("/").filter((p) => p !== "" && !p.endsWith(".slice"));
    return `${[...prefix, ...parts, `pod${uid.replaceAll("-", "_")}`].join("-")}.slice`;
  }
  return `${root}/${parts.join("/")}/pod${uid}`;
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
    [Labels.managed]: "true",
  };
}

/**
 * Builds the PodSandboxConfig for a pod.
 * @param pod the pod (defaulted or not)
 * @param opts node-level settings and the attempt number
 * @returns the CRI config
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
  const sc = spec.securityContext;
  const supplementalGroups = [...(sc?.supplementalGroups ?? [])];
  if (sc?.fsGroup !== undefined) supplementalGroups.push(sc.fsGroup);
  const sysctls: Record<string, string> = {};
  for (const s of sc?.sysctls ?? []) sysctls[s.name] = s.value;

  const config: PodSandboxConfig = {
    metadata: { ...meta, attempt: opts.attempt ?? 0 },
    logDirectory: podLogsDirectory(opts.podLogsDir ?? DEFAULT_POD_LOGS_DIR, meta),
    dnsConfig: podDNSConfig(pod, opts),
    portMappings: portMappings(pod),
    labels: sandboxLabels(pod),
    annotations: { ...pod.metadata.annotations },
    linux: {
      cgroupParent: podCgroupParent(pod, opts),
      sysctls,
      securityContext: {
        namespaceOptions: podNamespaceOptions(pod),
        privileged: [...(spec.initContainers ?? []), ...spec.containers]
          .some((c) => c.securityContext?.privileged === true),
        ...(sc?.runAsUser !== undefined ? { runAsUser: { value: sc.runAsUser } } : {}),
        ...(sc?.runAsGroup !== undefined ? { runAsGroup: { value: sc.runAsGroup } } : {}),
        ...(supplementalGroups.length > 0 ? { supplementalGroups } : {}),
      },
    },
  };
  // runc cannot set a hostname without a private UTS namespace, and upstream
  // leaves it to the node for host-network pods.
  if (!spec.hostNetwork) config.hostname = podHostname(pod);
  return config;
}
