/**
 * A pod's resolv.conf (the CRI DNSConfig) and its hostname, as upstream's
 * dns.Configurer (pkg/kubelet/network/dns/dns.go) and
 * GeneratePodHostNameAndDomain (kubelet_pods.go) form them. Pure: the host's
 * resolv.conf comes in as text; the warnings upstream records as events come
 * back as data for the caller to record.
 *
 * Like upstream, nothing here rewrites a host resolv.conf whose nameserver is
 * a local stub (systemd-resolved's 127.0.0.53): with dnsPolicy Default such a
 * pod gets a nameserver it cannot reach from its own network namespace.
 * Upstream leaves the choice of file to whoever writes the config (kubeadm sets
 * `resolvConf: /run/systemd/resolve/resolv.conf` when systemd-resolved runs).
 *
 * @module
 */

import { formatPod } from "../api/pod.ts";
import type { Pod } from "../api/types.ts";
import { validateDNS1123Label, validateDNS1123Subdomain } from "../api/validation.ts";
import type { DNSConfig } from "../cri/types.ts";
import { EventReason } from "../events/reasons.ts";

/** Upstream's MaxDNSNameservers (pkg/apis/core/validation). */
export const MAX_DNS_NAMESERVERS = 3;
/** Upstream's MaxDNSSearchPaths (v1.37). */
export const MAX_DNS_SEARCH_PATHS = 32;
/** Upstream's MaxDNSSearchListChars (v1.37), spaces included. */
export const MAX_DNS_SEARCH_LIST_CHARS = 2048;
/** DNS1123SubdomainMaxLength: longer search paths make glibc abort. */
const MAX_SEARCH_PATH_LENGTH = 253;
/** Upstream's maxResolvConfLength. */
const MAX_RESOLV_CONF_BYTES = 10 << 20;
const DEFAULT_CLUSTER_DNS_OPTIONS = ["ndots:5"];

/** The node-level DNS settings. */
export interface DNSSettings {
  /** `clusterDNS` (--cluster-dns). */
  clusterDNS: string[];
  /** `clusterDomain` (--cluster-domain); "" for none. */
  clusterDomain: string;
  /** `resolvConf` (--resolv-conf); "" means the pods get no host DNS. */
  resolvConf: string;
  /** The IPs given with --node-ip (they pick 127.0.0.1 or ::1 when resolvConf is ""). */
  nodeIPs: string[];
}

/** A warning upstream records as an event, about the pod or about the node. */
export interface DNSWarning {
  about: "pod" | "node";
  /** DNSConfigForming, MissingClusterDNS or CheckLimitsForResolvConf. */
  reason: string;
  message: string;
}

/** The pod's DNS config and the warnings met while forming it. */
export interface PodDNSResult {
  config: DNSConfig;
  warnings: DNSWarning[];
}

/**
 * Parses resolv.conf text as upstream's parseResolvConf: `nameserver` lines
 * accumulate, the last `search` line wins (a lone "." dropped, trailing dots
 * trimmed), `options` merge by name with the later one winning; only lines
 * starting with "#" are comments.
 * @param text the file's content
 * @returns servers, searches and options
 * @throws {Error} for a `nameserver` line without an address, or a file over 10 MiB
 */
export function parseResolvConf(text: string): Required<DNSConfig> {
  if (new TextEncoder().encode(text).length > MAX_RESOLV_CONF_BYTES) {
    throw new Error(`resolv.conf is longer than ${MAX_RESOLV_CONF_BYTES} bytes`);
  }
  const servers: string[] = [];
  let searches: string[] = [];
  let options: string[] = [];
  let emptyNameserver = false;
  for (const raw of text.split("\n")) {
    const line = raw.trim();
    if (line.startsWith("#")) continue;
    const [key, ...rest] = line.split(/\s+/).filter((f) => f !== "");
    if (key === "nameserver") {
      if (rest[0] !== undefined) servers.push(rest[0]);
      else emptyNameserver = true;
    } else if (key === "search") {
      searches = rest.filter((s) => s !== ".").map((s) => s.replace(/\.$/, ""));
    } else if (key === "options") {
      options = appendOptions(options, rest);
    }
  }
  if (emptyNameserver) throw new Error("nameserver list is empty");
  return { servers, searches, options };
}

/** Options keyed by the name before ":", later ones replacing earlier ones. */
function appendOptions(base: string[], extra: string[]): string[] {
  const byName = new Map<string, string>();
  for (const o of [...base, ...extra]) byName.set(o.split(":")[0]!, o);
  return [...byName.values()];
}

function omitDuplicates(items: string[]): string[] {
  return [...new Set(items)];
}

type PodDNSType = "cluster" | "host" | "none";

/**
 * Which base a pod's DNS starts from, as upstream's getPodDNSType.
 * @param policy `spec.dnsPolicy`
 * @param hostNetwork `spec.hostNetwork`
 * @returns the type, or undefined for a policy upstream does not know
 */
function podDNSType(policy: string | undefined, hostNetwork: boolean): PodDNSType | undefined {
  switch (policy) {
    case "None":
      return "none";
    case "ClusterFirstWithHostNet":
      return "cluster";
    case "ClusterFirst":
      return hostNetwork ? "host" : "cluster";
    case "Default":
      return "host";
  }
  return undefined;
}

/**
 * The search line cut to upstream's limits: at most 32 paths, none longer than
 * 253 characters, at most 2048 characters joined (cut from the end).
 * @param searches the composed search paths
 * @returns the paths kept and whether any were dropped
 */
export function searchesFittingLimits(searches: string[]): { searches: string[]; cut: boolean } {
  let cut = false;
  let kept = searches;
  if (kept.length > MAX_DNS_SEARCH_PATHS) {
    kept = kept.slice(0, MAX_DNS_SEARCH_PATHS);
    cut = true;
  }
  const short = kept.filter((s) => s.length <= MAX_SEARCH_PATH_LENGTH);
  if (short.length !== kept.length) cut = true;
  kept = short;
  let length = kept.join(" ").length;
  while (length > MAX_DNS_SEARCH_LIST_CHARS && kept.length > 0) {
    length -= kept[kept.length - 1]!.length + 1;
    kept = kept.slice(0, -1);
    cut = true;
  }
  return { searches: kept, cut };
}

/**
 * The pod's DNS config, as upstream's GetPodDNS: the host's resolv.conf is the
 * base; ClusterFirst (off the host network) and ClusterFirstWithHostNet replace
 * its nameservers with clusterDNS, put `<ns>.svc.<domain> svc.<domain> <domain>`
 * before its search paths and use `ndots:5` — or, without clusterDNS, fall back
 * to Default with a MissingClusterDNS warning; None starts empty; with
 * resolvConf "" the host base is 127.0.0.1 (or ::1) and search "."; then
 * `spec.dnsConfig` is appended and the result cut to the limits (a
 * DNSConfigForming warning when that drops anything).
 * @param pod the pod
 * @param settings the node's DNS settings
 * @param hostResolvConf the text of `settings.resolvConf` (ignored when resolvConf is "")
 * @returns the CRI DNS config and the warnings to record
 * @throws {Error} when the host's resolv.conf cannot be parsed
 */
export function podDNS(pod: Pod, settings: DNSSettings, hostResolvConf = ""): PodDNSResult {
  const warnings: DNSWarning[] = [];
  let config: Required<DNSConfig> = settings.resolvConf === ""
    ? { servers: [], searches: [], options: [] }
    : parseResolvConf(hostResolvConf);
  // Upstream falls back to ClusterFirst for a policy it does not know (the
  // apiserver and our manifest validation reject those before this).
  let type = podDNSType(pod.spec.dnsPolicy, pod.spec.hostNetwork === true) ?? "cluster";
  if (type === "cluster" && settings.clusterDNS.length === 0) {
    const message =
      `kubelet does not have ClusterDNS IP configured and cannot create Pod using "ClusterFirst" policy. Falling back to "Default" policy.`;
    warnings.push({ about: "node", reason: EventReason.missingClusterDNS, message });
    warnings.push({
      about: "pod",
      reason: EventReason.missingClusterDNS,
      message: `pod: "${formatPod(pod)}". ${message}`,
    });
    type = "host";
  }
  if (type === "none") {
    config = { servers: [], searches: [], options: [] };
  } else if (type === "cluster") {
    config = {
      servers: [...settings.clusterDNS],
      searches: clusterSearches(config.searches, pod, settings.clusterDomain),
      options: [...DEFAULT_CLUSTER_DNS_OPTIONS],
    };
  } else if (settings.resolvConf === "") {
    // No host resolv.conf: a nameserver on the local machine, as bind's
    // resolver does when none is named, and no search paths.
    const servers = settings.nodeIPs.map((ip) => (ip.includes(":") ? "::1" : "127.0.0.1"));
    config.servers.push(...(servers.length > 0 ? servers : ["127.0.0.1"]));
    config.searches = ["."];
  }

  const extra = pod.spec.dnsConfig;
  if (extra) {
    config = {
      servers: omitDuplicates([...config.servers, ...(extra.nameservers ?? [])]),
      searches: omitDuplicates([...config.searches, ...(extra.searches ?? [])]),
      options: appendOptions(
        config.options,
        (extra.options ?? []).map((o) => (o.value ? `${o.name}:${o.value}` : o.name)),
      ),
    };
  }

  if (config.servers.length > MAX_DNS_NAMESERVERS) {
    config.servers = config.servers.slice(0, MAX_DNS_NAMESERVERS);
    warnings.push({
      about: "pod",
      reason: EventReason.dnsConfigForming,
      message:
        `Nameserver limits were exceeded, some nameservers have been omitted, the applied nameserver line is: ${
          config.servers.join(" ")
        }`,
    });
  }
  const fitted = searchesFittingLimits(config.searches);
  config.searches = fitted.searches;
  if (fitted.cut) {
    warnings.push({
      about: "pod",
      reason: EventReason.dnsConfigForming,
      message:
        `Search Line limits were exceeded, some search paths have been omitted, the applied search line is: ${
          config.searches.join(" ")
        }`,
    });
  }
  return { config, warnings };
}

function clusterSearches(hostSearches: string[], pod: Pod, domain: string): string[] {
  if (domain === "") return [...hostSearches];
  const ns = pod.metadata.namespace ?? "default";
  return omitDuplicates([`${ns}.svc.${domain}`, `svc.${domain}`, domain, ...hostSearches]);
}

/**
 * Upstream's CheckLimitsForResolvConf, run once as the sync loop starts: warns
 * (about the node) when the host's search line leaves no room for the cluster's
 * three paths, has a path over 253 characters or is over 2048 characters.
 * @param settings the node's DNS settings (resolvConf must not be "")
 * @param hostResolvConf the file's text, or the error met reading it
 * @returns the warning, if any
 */
export function checkResolvConfLimits(
  settings: DNSSettings,
  hostResolvConf: string | Error,
): DNSWarning | undefined {
  const warn = (message: string): DNSWarning => ({
    about: "node",
    reason: EventReason.checkLimitsForResolvConf,
    message,
  });
  if (hostResolvConf instanceof Error) return warn(hostResolvConf.message);
  let searches: string[];
  try {
    searches = parseResolvConf(hostResolvConf).searches;
  } catch (err) {
    return warn(err instanceof Error ? err.message : String(err));
  }
  const file = settings.resolvConf;
  const countLimit = MAX_DNS_SEARCH_PATHS - (settings.clusterDomain !== "" ? 3 : 0);
  if (searches.length > countLimit) {
    return warn(
      `Resolv.conf file '${file}' contains search line consisting of more than ${countLimit} domains!`,
    );
  }
  if (searches.some((s) => s.length > MAX_SEARCH_PATH_LENGTH)) {
    return warn(
      `Resolv.conf file "${file}" contains a search path which length is more than allowed ${MAX_SEARCH_PATH_LENGTH} chars!`,
    );
  }
  if (searches.join(" ").length > MAX_DNS_SEARCH_LIST_CHARS) {
    return warn(
      `Resolv.conf file '${file}' contains search line which length is more than allowed ${MAX_DNS_SEARCH_LIST_CHARS} chars!`,
    );
  }
  return undefined;
}

/** The pod's hostname and its domain ("" for none). */
export interface PodHostnameAndDomain {
  hostname: string;
  domain: string;
}

function truncateHostname(podName: string, hostname: string): string {
  if (hostname.length <= 63) return hostname;
  const cut = hostname.slice(0, 63).replace(/[-.]+$/, "");
  if (cut === "") throw new Error(`hostname for pod "${podName}" was invalid: "${hostname}"`);
  return cut;
}

/**
 * The pod's hostname and domain, as upstream's GeneratePodHostNameAndDomain:
 * `spec.hostnameOverride` as is (no domain); else `spec.hostname` or the pod
 * name, cut to 63 characters without a trailing '-' or '.', and with a
 * `spec.subdomain` the domain `<subdomain>.<namespace>.svc.<clusterDomain>`.
 * @param pod the pod
 * @param clusterDomain the node's clusterDomain
 * @returns the hostname and domain
 * @throws {Error} for a hostname, override or subdomain that is not a valid DNS name
 */
export function podHostnameAndDomain(pod: Pod, clusterDomain: string): PodHostnameAndDomain {
  const podName = pod.metadata.name ?? "";
  const override = pod.spec.hostnameOverride;
  if (override !== undefined && override !== null) {
    const errs = validateDNS1123Subdomain("spec.hostnameOverride", override);
    if (errs.length > 0) {
      throw new Error(
        `pod HostnameOverride "${override}" is not a valid DNS subdomain: ${errs.join(";")}`,
      );
    }
    return { hostname: truncateHostname(podName, override), domain: "" };
  }
  let hostname = podName;
  if (pod.spec.hostname) {
    const errs = validateDNS1123Label("spec.hostname", pod.spec.hostname);
    if (errs.length > 0) {
      throw new Error(
        `pod Hostname "${pod.spec.hostname}" is not a valid DNS label: ${errs.join(";")}`,
      );
    }
    hostname = pod.spec.hostname;
  }
  hostname = truncateHostname(podName, hostname);
  let domain = "";
  const sub = pod.spec.subdomain;
  if (sub) {
    const errs = validateDNS1123Label("spec.subdomain", sub);
    if (errs.length > 0) {
      throw new Error(`pod Subdomain "${sub}" is not a valid DNS label: ${errs.join(";")}`);
    }
    domain = `${sub}.${pod.metadata.namespace ?? "default"}.svc.${clusterDomain}`;
  }
  return { hostname, domain };
}

/**
 * The hostname the sandbox's kernel gets, as upstream's GetNodenameForKernel:
 * the FQDN `<hostname>.<domain>` with setHostnameAsFQDN and a domain, else the
 * short name.
 * @param name from {@link podHostnameAndDomain}
 * @param setHostnameAsFQDN `spec.setHostnameAsFQDN`
 * @returns the hostname for PodSandboxConfig
 * @throws {Error} when the FQDN is longer than the kernel's 64 characters
 */
export function kernelHostname(name: PodHostnameAndDomain, setHostnameAsFQDN?: boolean): string {
  if (!name.domain || setHostnameAsFQDN !== true) return name.hostname;
  const fqdn = `${name.hostname}.${name.domain}`;
  if (fqdn.length > 64) {
    throw new Error(
      `failed to construct FQDN from pod hostname and cluster domain, FQDN ${fqdn} is too long (64 characters is the max, ${fqdn.length} characters requested)`,
    );
  }
  return fqdn;
}
