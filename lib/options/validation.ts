/**
 * Validation of the effective KubeletConfiguration (file plus flags) as
 * upstream validates it (pkg/kubelet/apis/config/validation), with the
 * eviction-threshold, reserved-resource, taint and node-label parsers that
 * go with it. Messages keep upstream's form: `invalid configuration: port
 * (--port) 70000 must be between 1 and 65535, inclusive`.
 *
 * @module
 */

import { isIP } from "node:net";
import type { Taint } from "../api/cluster_types.ts";
import { parseQuantity } from "../api/quantity.ts";
import { formatDuration, parseSignedDuration } from "../util/duration.ts";
import type { KubeletConfiguration } from "./kubelet_config.ts";

/** The eviction signals upstream knows (pkg/kubelet/eviction/api). */
export const EVICTION_SIGNALS: ReadonlySet<string> = new Set([
  "memory.available",
  "allocatableMemory.available",
  "nodefs.available",
  "nodefs.inodesFree",
  "imagefs.available",
  "imagefs.inodesFree",
  "containerfs.available",
  "containerfs.inodesFree",
  "pid.available",
]);

/** One parsed eviction threshold: `signal < value`. */
export interface EvictionThreshold {
  signal: string;
  /** Absolute amount (bytes, inodes or pids), when given as a quantity. */
  quantity?: number;
  /** Fraction of capacity in [0, 1], when given as a percentage. */
  percentage?: number;
}

/**
 * One entry of an eviction map: a known signal and a percentage (as a
 * fraction) or a quantity, syntax only; the callers check the ranges.
 * @param at the field and signal, for errors
 * @param signal the eviction signal
 * @param raw the value as written
 * @throws {Error} naming `at` for an unknown signal, a bad percentage or quantity
 */
function parseSignalAmount(
  at: string,
  signal: string,
  raw: string,
): { percentage: number } | { quantity: number } {
  if (!EVICTION_SIGNALS.has(signal)) {
    throw new Error(`${at}: unsupported eviction signal ${signal}`);
  }
  const value = raw.trim();
  if (value.endsWith("%")) {
    const pct = Number(value.slice(0, -1));
    if (value.length === 1 || !Number.isFinite(pct)) {
      throw new Error(`${at}: invalid percentage ${JSON.stringify(raw)}`);
    }
    return { percentage: pct / 100 };
  }
  try {
    return { quantity: parseQuantity(value) };
  } catch (err) {
    throw new Error(`${at}: ${(err as Error).message}`, { cause: err });
  }
}

/**
 * Parses an eviction map ({"memory.available": "100Mi", "nodefs.available": "10%"}).
 * @param map signal → quantity or percentage
 * @param field the field name for errors, e.g. "evictionHard"
 * @returns thresholds, skipping the ones set to zero (upstream: "disabled")
 * @throws {Error} naming the field and signal when a signal or value is bad
 */
export function parseEvictionThresholds(
  map: Readonly<Record<string, string>>,
  field: string,
): EvictionThreshold[] {
  const out: EvictionThreshold[] = [];
  for (const [signal, raw] of Object.entries(map)) {
    const at = `${field}[${JSON.stringify(signal)}]`;
    const amount = parseSignalAmount(at, signal, raw);
    if ("percentage" in amount) {
      if (amount.percentage < 0 || amount.percentage > 1) {
        throw new Error(
          `${at}: eviction percentage threshold ${signal} must be >= 0% and <= 100%: ${raw}`,
        );
      }
      if (amount.percentage > 0) out.push({ signal, percentage: amount.percentage });
      continue;
    }
    if (amount.quantity < 0) {
      throw new Error(`${at}: eviction threshold ${signal} must be positive: ${raw}`);
    }
    if (amount.quantity > 0) out.push({ signal, quantity: amount.quantity });
  }
  return out;
}

/**
 * Parses `evictionMinimumReclaim` as upstream's parseMinimumReclaims: per
 * signal a positive percentage or a non-negative quantity.
 * @param map signal → quantity or percentage
 * @param field the field name for errors
 * @returns signal → the amount (quantity) or fraction of capacity (percentage)
 * @throws {Error} naming the field and signal when a signal or value is bad
 */
export function parseMinimumReclaims(
  map: Readonly<Record<string, string>>,
  field = "evictionMinimumReclaim",
): Map<string, { quantity?: number; percentage?: number }> {
  const out = new Map<string, { quantity?: number; percentage?: number }>();
  for (const [signal, raw] of Object.entries(map)) {
    const at = `${field}[${JSON.stringify(signal)}]`;
    const amount = parseSignalAmount(at, signal, raw);
    if ("percentage" in amount && amount.percentage <= 0) {
      throw new Error(
        `${at}: eviction percentage minimum reclaim ${signal} must be positive: ${raw}`,
      );
    }
    if ("quantity" in amount && amount.quantity < 0) {
      throw new Error(`${at}: negative eviction minimum reclaim specified for ${signal}`);
    }
    out.set(signal, amount);
  }
  return out;
}

const RESERVABLE = new Set(["cpu", "memory", "ephemeral-storage", "pid"]);

const ENFORCEMENT_KEYS = [
  "pods",
  "system-reserved",
  "system-reserved-compressible",
  "kube-reserved",
  "kube-reserved-compressible",
  "none",
] as const;

/**
 * Checks `enforceNodeAllocatable` as upstream's ValidateKubeletConfiguration:
 * known keys, no duplicates, `none` alone, a plain and a compressible form of
 * the same reservation not together, the reserved cgroup named for
 * system-reserved and kube-reserved, and cgroupsPerQOS on for any enforcement.
 * @param kc the configuration
 * @returns the problems, without the "invalid configuration: " prefix
 */
export function validateEnforceNodeAllocatable(kc: KubeletConfiguration): string[] {
  const out: string[] = [];
  const flag = "enforceNodeAllocatable (--enforce-node-allocatable)";
  const keys = kc.enforceNodeAllocatable ?? [];
  for (const what of ["system-reserved", "kube-reserved"]) {
    if (keys.includes(what) && keys.includes(`${what}-compressible`)) {
      out.push(
        `both ${JSON.stringify(what)} and ${
          JSON.stringify(`${what}-compressible`)
        } cannot be specified together in ${flag}`,
      );
    }
  }
  const seen = new Set<string>();
  for (const key of keys) {
    if (seen.has(key)) {
      out.push(`duplicated enforcements ${JSON.stringify(key)} in ${flag}`);
      continue;
    }
    seen.add(key);
    if (key === "none") {
      if (keys.length > 1) {
        out.push(`${flag} may not contain additional enforcements when "none" is specified`);
      }
      continue;
    }
    if (!(ENFORCEMENT_KEYS as readonly string[]).includes(key)) {
      out.push(
        `option ${JSON.stringify(key)} specified for ${flag}. Valid options are ${
          ENFORCEMENT_KEYS.slice(0, -1).map((k) => JSON.stringify(k)).join(", ")
        } or "none"`,
      );
      continue;
    }
    if (key.startsWith("system-reserved") && !kc.systemReservedCgroup) {
      out.push(
        `systemReservedCgroup (--system-reserved-cgroup) must be specified when "system-reserved" or "system-reserved-compressible" included in ${flag}`,
      );
    }
    if (key.startsWith("kube-reserved") && !kc.kubeReservedCgroup) {
      out.push(
        `kubeReservedCgroup (--kube-reserved-cgroup) must be specified when "kube-reserved" or "kube-reserved-compressible" included in ${flag}`,
      );
    }
    if (kc.cgroupsPerQOS === false) {
      out.push(
        `cgroupsPerQOS (--cgroups-per-qos) must be set to true when ${
          JSON.stringify(key)
        } contained in ${flag}`,
      );
    }
  }
  return out;
}

/**
 * Checks a systemReserved/kubeReserved map as the kubelet's parseResourceList does.
 * @param map resource → quantity
 * @param field the field name for errors
 * @returns problems, empty when valid
 */
export function validateReserved(map: Readonly<Record<string, string>>, field: string): string[] {
  const problems: string[] = [];
  for (const [name, q] of Object.entries(map)) {
    const at = `${field}[${JSON.stringify(name)}]`;
    if (!RESERVABLE.has(name) && !name.startsWith("hugepages-")) {
      problems.push(`${at}: cannot reserve ${JSON.stringify(name)} resource`);
      continue;
    }
    try {
      if (parseQuantity(q) < 0) {
        problems.push(`${at}: resource quantity for ${name} cannot be negative: ${q}`);
      }
    } catch (err) {
      problems.push(`${at}: ${(err as Error).message}`);
    }
  }
  return problems;
}

const QUALIFIED_NAME = /^([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]$/;
const DNS1123_SUBDOMAIN = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/;

/**
 * Upstream's IsQualifiedName: `[prefix/]name`, name ≤ 63 characters.
 * @param key a label or taint key
 * @returns problems, empty when valid
 */
export function qualifiedNameProblems(key: string): string[] {
  const parts = key.split("/");
  let name = key;
  const problems: string[] = [];
  if (parts.length === 2) {
    const prefix = parts[0]!;
    name = parts[1]!;
    if (prefix.length === 0) problems.push("prefix part must be non-empty");
    else if (prefix.length > 253 || !DNS1123_SUBDOMAIN.test(prefix)) {
      problems.push("prefix part must be a lowercase RFC 1123 subdomain");
    }
  } else if (parts.length > 2) {
    return ["a qualified name must consist of an optional prefix and a name separated by '/'"];
  }
  if (name.length === 0) problems.push("name part must be non-empty");
  else if (name.length > 63) problems.push("name part must be no more than 63 characters");
  else if (!QUALIFIED_NAME.test(name)) {
    problems.push(
      "name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character",
    );
  }
  return problems;
}

/**
 * Upstream's IsValidLabelValue: empty, or ≤ 63 characters of the qualified-name alphabet.
 * @param value a label or taint value
 * @returns problems, empty when valid
 */
export function labelValueProblems(value: string): string[] {
  if (value === "") return [];
  if (value.length > 63) return ["must be no more than 63 characters"];
  if (!QUALIFIED_NAME.test(value)) {
    return [
      "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character",
    ];
  }
  return [];
}

const TAINT_EFFECTS = new Set(["NoSchedule", "PreferNoSchedule", "NoExecute"]);

/**
 * Parses one `key=value:Effect` or `key:Effect` taint, as `--register-with-taints` takes them.
 * @param spec the text
 * @returns the taint
 * @throws {Error} "invalid taint spec: ..." naming the spec
 */
export function parseTaint(spec: string): Taint {
  const parts = spec.split(":");
  if (parts.length !== 2) throw new Error(`invalid taint spec: ${spec}: want key=value:Effect`);
  const effect = parts[1]!;
  if (!TAINT_EFFECTS.has(effect)) {
    throw new Error(`invalid taint effect: ${effect}, unsupported taint effect`);
  }
  const kv = parts[0]!.split("=");
  if (kv.length > 2) throw new Error(`invalid taint spec: ${spec}`);
  const taint: Taint = { key: kv[0]!, effect: effect as Taint["effect"] };
  if (kv.length === 2) taint.value = kv[1]!;
  const problems = [...qualifiedNameProblems(taint.key), ...labelValueProblems(taint.value ?? "")];
  if (problems.length > 0) throw new Error(`invalid taint spec: ${spec}, ${problems.join("; ")}`);
  return taint;
}

const KUBELET_LABEL_NAMESPACES = ["kubelet.kubernetes.io", "node.kubernetes.io"];
const KUBELET_LABELS = new Set([
  "kubernetes.io/hostname",
  "topology.kubernetes.io/zone",
  "topology.kubernetes.io/region",
  "failure-domain.beta.kubernetes.io/zone",
  "failure-domain.beta.kubernetes.io/region",
  "beta.kubernetes.io/instance-type",
  "node.kubernetes.io/instance-type",
  "beta.kubernetes.io/os",
  "beta.kubernetes.io/arch",
  "kubernetes.io/os",
  "kubernetes.io/arch",
]);

function isKubeletLabel(key: string): boolean {
  if (KUBELET_LABELS.has(key)) return true;
  const ns = key.includes("/") ? key.split("/")[0]! : "";
  return KUBELET_LABEL_NAMESPACES.some((n) => ns === n || ns.endsWith(`.${n}`));
}

/**
 * The keys in the kubernetes.io and k8s.io namespaces that the NodeRestriction
 * admission plugin does not let a node set on itself (upstream
 * `IsKubeletLabel`): the rule `--node-labels` and node registration share.
 * @param labels the labels
 * @returns the offending keys, sorted
 */
export function restrictedNodeLabels(labels: Readonly<Record<string, string>>): string[] {
  return Object.keys(labels).filter((k) => {
    const ns = k.includes("/") ? k.split("/")[0]! : "";
    const k8sNamespace = ["kubernetes.io", "k8s.io"].some((n) => ns === n || ns.endsWith(`.${n}`));
    return k8sNamespace && !isKubeletLabel(k);
  }).sort();
}

/**
 * Upstream's message for labels {@link restrictedNodeLabels} refuses.
 * @param keys the offending keys
 */
export function restrictedNodeLabelsMessage(keys: readonly string[]): string {
  return `unknown 'kubernetes.io' or 'k8s.io' labels specified with --node-labels: [${
    keys.join(" ")
  }]; --node-labels in the 'kubernetes.io' namespace must begin with an allowed prefix (${
    KUBELET_LABEL_NAMESPACES.join(", ")
  }) or be in the specifically allowed set (${[...KUBELET_LABELS].join(", ")})`;
}

/**
 * Validates `--node-labels` as upstream's ValidateKubeletFlags: well-formed keys and
 * values, and only the kubelet's allowed labels in the kubernetes.io/k8s.io namespaces
 * (NodeRestriction would refuse the others).
 * @param labels the labels
 * @returns problems, empty when valid
 */
export function validateNodeLabels(labels: Readonly<Record<string, string>>): string[] {
  const problems: string[] = [];
  for (const [k, v] of Object.entries(labels)) {
    for (const p of qualifiedNameProblems(k)) problems.push(`invalid node label key '${k}' - ${p}`);
    for (const p of labelValueProblems(v)) problems.push(`invalid node label value '${v}' - ${p}`);
  }
  const restricted = restrictedNodeLabels(labels);
  if (restricted.length > 0) problems.unshift(restrictedNodeLabelsMessage(restricted));
  return problems;
}

function inRange(v: number | undefined, lo: number, hi: number): boolean {
  return v === undefined || (v >= lo && v <= hi);
}

function isValidIP(s: string): boolean {
  return isIP(s) !== 0;
}

/**
 * Validates the effective configuration.
 * @param kc the configuration after file, defaults and flags
 * @returns problems, each naming the field (and its flag), empty when valid
 */
export function validateKubeletConfiguration(kc: KubeletConfiguration): string[] {
  const p: string[] = [];
  const bad = (msg: string) => p.push(`invalid configuration: ${msg}`);
  if ((kc.nodeLeaseDurationSeconds ?? 0) <= 0) {
    bad("nodeLeaseDurationSeconds must be greater than 0");
  }
  if (kc.port !== undefined && !inRange(kc.port, 1, 65535)) {
    bad(`port (--port) ${kc.port} must be between 1 and 65535, inclusive`);
  }
  if (!inRange(kc.readOnlyPort, 0, 65535)) {
    bad(
      `readOnlyPort (--read-only-port) ${kc.readOnlyPort} must be between 0 and 65535, inclusive`,
    );
  }
  if (kc.healthzPort !== 0 && !inRange(kc.healthzPort, 1, 65535)) {
    bad(`healthzPort (--healthz-port) ${kc.healthzPort} must be between 1 and 65535, inclusive`);
  }
  const high = kc.imageGCHighThresholdPercent ?? 85;
  const low = kc.imageGCLowThresholdPercent ?? 80;
  if (!inRange(high, 0, 100)) {
    bad(
      `imageGCHighThresholdPercent (--image-gc-high-threshold) ${high} must be between 0 and 100, inclusive`,
    );
  }
  if (!inRange(low, 0, 100)) {
    bad(
      `imageGCLowThresholdPercent (--image-gc-low-threshold) ${low} must be between 0 and 100, inclusive`,
    );
  }
  if (low >= high) {
    bad(
      `imageGCLowThresholdPercent (--image-gc-low-threshold) ${low} must be less than imageGCHighThresholdPercent (--image-gc-high-threshold) ${high}`,
    );
  }
  const minAge = parseSignedDuration(kc.imageMinimumGCAge ?? "2m");
  const maxAge = parseSignedDuration(kc.imageMaximumGCAge ?? "0s");
  if (minAge < 0) {
    bad(`imageMinimumGCAge ${formatDuration(minAge)} must not be negative`);
  }
  if (maxAge < 0) {
    bad(`imageMaximumGCAge ${formatDuration(maxAge)} must not be negative`);
  }
  if (maxAge > 0 && maxAge <= minAge) {
    bad(
      `imageMaximumGCAge ${formatDuration(maxAge)} must be greater than imageMinimumGCAge ${
        formatDuration(minAge)
      }`,
    );
  }
  for (
    const [field, flag] of [["kubeAPIQPS", "kube-api-qps"], ["kubeAPIBurst", "kube-api-burst"], [
      "maxPods",
      "max-pods",
    ]] as const
  ) {
    const v = kc[field];
    if (v !== undefined && v < 0) bad(`${field} (--${flag}) ${v} must not be a negative number`);
  }
  if (kc.nodeStatusMaxImages !== undefined && kc.nodeStatusMaxImages < -1) {
    bad(
      `nodeStatusMaxImages (--node-status-max-images) ${kc.nodeStatusMaxImages} must be -1 or greater`,
    );
  }
  if (kc.maxParallelImagePulls !== undefined && kc.maxParallelImagePulls < 1) {
    bad(`maxParallelImagePulls ${kc.maxParallelImagePulls} must be a positive number`);
  }
  if (kc.serializeImagePulls && (kc.maxParallelImagePulls ?? 1) > 1) {
    bad(
      "maxParallelImagePulls cannot be larger than 1 unless SerializeImagePulls (--serialize-image-pulls) is set to false",
    );
  }
  for (
    const [field, flag] of [
      ["syncFrequency", "sync-frequency"],
      ["fileCheckFrequency", "file-check-frequency"],
      ["httpCheckFrequency", "http-check-frequency"],
      ["nodeStatusUpdateFrequency", "node-status-update-frequency"],
      ["nodeStatusReportFrequency", "node-status-report-frequency"],
      ["runtimeRequestTimeout", "runtime-request-timeout"],
    ] as const
  ) {
    const v = kc[field];
    if (v !== undefined && parseSignedDuration(v) <= 0) {
      bad(`${field} (--${flag}) ${v} must be greater than 0`);
    }
  }
  if (kc.cgroupDriver !== undefined && !["cgroupfs", "systemd"].includes(kc.cgroupDriver)) {
    bad(
      `cgroupDriver (--cgroup-driver) ${
        JSON.stringify(kc.cgroupDriver)
      } must be one of "cgroupfs", "systemd"`,
    );
  }
  const mode = kc.authorization?.mode;
  if (mode !== undefined && mode !== "AlwaysAllow" && mode !== "Webhook") {
    bad(
      `authorization.mode (--authorization-mode) ${
        JSON.stringify(mode)
      } must be one of "AlwaysAllow", "Webhook"`,
    );
  }
  const format = kc.logging?.format;
  if (format !== undefined && format !== "text" && format !== "json") {
    p.push(
      `logging.format: Unsupported value: ${
        JSON.stringify(format)
      }: supported values: "json", "text"`,
    );
  }
  if ((kc.logging?.verbosity ?? 0) < 0) {
    p.push(`logging.verbosity: Invalid value: ${kc.logging?.verbosity}: must be >= 0`);
  }
  for (
    const [field, flag] of [["address", "address"], [
      "healthzBindAddress",
      "healthz-bind-address",
    ]] as const
  ) {
    const v = kc[field];
    if (v !== undefined && v !== "" && !isValidIP(v)) {
      bad(`${field} (--${flag}) ${JSON.stringify(v)} is not a valid IP address`);
    }
  }
  for (const ip of kc.clusterDNS ?? []) {
    if (!isValidIP(ip)) {
      bad(`clusterDNS (--cluster-dns) ${JSON.stringify(ip)} is not a valid IP address`);
    }
  }
  for (const field of ["evictionHard", "evictionSoft"] as const) {
    try {
      parseEvictionThresholds(kc[field] ?? {}, field);
    } catch (err) {
      bad((err as Error).message);
    }
  }
  try {
    parseMinimumReclaims(kc.evictionMinimumReclaim ?? {});
  } catch (err) {
    bad((err as Error).message);
  }
  for (const signal of Object.keys(kc.evictionSoft ?? {})) {
    const grace = kc.evictionSoftGracePeriod?.[signal];
    if (grace === undefined) {
      bad(
        `evictionSoftGracePeriod: grace period must be specified for the soft eviction threshold ${signal}`,
      );
    }
  }
  for (const [signal, grace] of Object.entries(kc.evictionSoftGracePeriod ?? {})) {
    try {
      if (parseSignedDuration(grace) < 0) throw new Error("must not be negative");
    } catch (err) {
      bad(`evictionSoftGracePeriod[${JSON.stringify(signal)}]: ${(err as Error).message}`);
    }
  }
  for (const field of ["systemReserved", "kubeReserved"] as const) {
    for (const problem of validateReserved(kc[field] ?? {}, field)) bad(problem);
  }
  for (const problem of validateEnforceNodeAllocatable(kc)) bad(problem);
  if (kc.containerLogMaxFiles !== undefined && kc.containerLogMaxFiles <= 1) {
    bad(
      `containerLogMaxFiles (--container-log-max-files) ${kc.containerLogMaxFiles} must be greater than 1`,
    );
  }
  (kc.registerWithTaints ?? []).forEach((t, i) => {
    const at = `registerWithTaints[${i}]`;
    const problems = [...qualifiedNameProblems(t.key ?? ""), ...labelValueProblems(t.value ?? "")];
    if (!TAINT_EFFECTS.has(t.effect)) {
      problems.push(`unsupported taint effect ${JSON.stringify(t.effect)}`);
    }
    if (problems.length > 0) bad(`${at}: invalid taint: ${problems.join("; ")}`);
    if (t.timeAdded !== undefined) bad(`${at}: taint.TimeAdded is not nil`);
  });
  return p;
}
