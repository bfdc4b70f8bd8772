/**
 * Pod validation in the shape of upstream pkg/apis/core/validation: every
 * problem is one string `<field path>: <kind>: <detail>` (for example
 * `spec.containers[1].name: Duplicate value: "web"`), so a rejected manifest
 * tells its author exactly what to fix.
 *
 * The rules are upstream's where denolet runs the field. A volume source
 * upstream knows but denolet does not implement (nfs, csi, ...) is valid here,
 * as upstream; lib/volumes refuses it when a container mounts it (FailedMount).
 * A key upstream does not know is `Unsupported value`.
 *
 * @module
 */

import type { Container, Pod, Probe, Volume } from "./types.ts";
import { parseQuantity, QUANTITY_FORMAT_HINT } from "./quantity.ts";
import { isIP } from "node:net";
import { isRecord } from "../util/json.ts";
import { UPSTREAM_VOLUME_SOURCES } from "./volume_sources.ts";
import { normalizeSysctlName, sysctlNamespace } from "./sysctl.ts";

// ---- error builders, worded as upstream's field.Error ----------------------

function show(value: unknown): string {
  return typeof value === "string" ? JSON.stringify(value) : String(JSON.stringify(value));
}
const required = (path: string) => `${path}: Required value`;
const invalid = (path: string, value: unknown, detail: string) =>
  `${path}: Invalid value: ${show(value)}: ${detail}`;
const duplicate = (path: string, value: unknown) => `${path}: Duplicate value: ${show(value)}`;
const notFound = (path: string, value: unknown) => `${path}: Not found: ${show(value)}`;
const forbidden = (path: string, detail: string) => `${path}: Forbidden: ${detail}`;
const unsupported = (path: string, value: unknown, supported: readonly string[]) =>
  `${path}: Unsupported value: ${show(value)}: supported values: ${
    supported.map((s) => JSON.stringify(s)).join(", ")
  }`;

// ---- name formats -----------------------------------------------------------

const DNS1123_LABEL = "[a-z0-9]([-a-z0-9]*[a-z0-9])?";
const DNS1123_SUBDOMAIN = `${DNS1123_LABEL}(\\.${DNS1123_LABEL})*`;
const LABEL_RE = new RegExp(`^${DNS1123_LABEL}$`);
const SUBDOMAIN_RE = new RegExp(`^${DNS1123_SUBDOMAIN}$`);
const QUALIFIED_NAME_RE = /^([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]$/;
const LABEL_VALUE_RE = /^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$/;
const ENV_NAME_RE = /^[-._a-zA-Z][-._a-zA-Z0-9]*$/;

function dnsName(path: string, value: string, kind: "label" | "subdomain"): string[] {
  const [re, max, chars, example, regex] = kind === "label"
    ? [LABEL_RE, 63, "alphanumeric characters or '-'", "'my-name',  or '123-abc'", DNS1123_LABEL]
    : [
      SUBDOMAIN_RE,
      253,
      "alphanumeric characters, '-' or '.'",
      "'example.com'",
      DNS1123_SUBDOMAIN,
    ];
  const errs: string[] = [];
  if (value.length > max) errs.push(invalid(path, value, `must be no more than ${max} characters`));
  if (!re.test(value)) {
    errs.push(invalid(
      path,
      value,
      `a lowercase RFC 1123 ${kind} must consist of lower case ${chars}, and must start and end ` +
        `with an alphanumeric character (e.g. ${example}, regex used for validation is '${regex}')`,
    ));
  }
  return errs;
}

/** Upstream's limits on spec.dnsConfig (pkg/apis/core/validation, v1.37). */
const MAX_DNS_NAMESERVERS = 3;
const MAX_DNS_SEARCH_PATHS = 32;
const MAX_DNS_SEARCH_LIST_CHARS = 2048;
const SEARCH_LABEL = "_?[a-z0-9]([-_a-z0-9]*[a-z0-9])?";
const SEARCH_RE = new RegExp(`^${SEARCH_LABEL}(\\.${SEARCH_LABEL})*$`);

/** An IP as upstream's legacy fields accept it (IPv4 octets may have leading zeros). */
function isLegacyIP(value: string): boolean {
  return isIP(value) !== 0 || isIP(value.replace(/(^|\.)0+(?=\d)/g, "$1")) === 4;
}

function ipErrs(path: string, value: unknown): string[] {
  if (typeof value === "string" && value !== "" && isLegacyIP(value)) return [];
  return [invalid(path, value, "must be a valid IP address, (e.g. 10.9.8.7 or 2001:db8::ffff)")];
}

/**
 * spec.dnsConfig, spec.hostAliases, spec.subdomain and spec.hostnameOverride,
 * as upstream's validatePodDNSConfig, ValidateHostAliases and validatePodHostName.
 */
function validatePodDNS(spec: Record<string, unknown>): string[] {
  const errs: string[] = [];
  const dns = spec.dnsConfig;
  if (spec.dnsPolicy === "None") {
    if (!isRecord(dns)) {
      return [required("spec.dnsConfig") + ": must provide `dnsConfig` when `dnsPolicy` is None"];
    }
    if (!Array.isArray(dns.nameservers) || dns.nameservers.length === 0) {
      errs.push(
        `${
          required("spec.dnsConfig.nameservers")
        }: must provide at least one DNS nameserver when \`dnsPolicy\` is None`,
      );
    }
  }
  if (isRecord(dns)) {
    const servers = listAt<unknown>("spec.dnsConfig.nameservers", dns.nameservers, errs);
    if (servers.length > MAX_DNS_NAMESERVERS) {
      errs.push(
        invalid(
          "spec.dnsConfig.nameservers",
          servers,
          `must not have more than ${MAX_DNS_NAMESERVERS} nameservers`,
        ),
      );
    }
    servers.forEach((ip, i) => errs.push(...ipErrs(`spec.dnsConfig.nameservers[${i}]`, ip)));
    const searches = listAt<string>("spec.dnsConfig.searches", dns.searches, errs);
    if (searches.length > MAX_DNS_SEARCH_PATHS) {
      errs.push(
        invalid(
          "spec.dnsConfig.searches",
          searches,
          `must not have more than ${MAX_DNS_SEARCH_PATHS} search paths`,
        ),
      );
    }
    if (searches.join(" ").length > MAX_DNS_SEARCH_LIST_CHARS) {
      errs.push(invalid(
        "spec.dnsConfig.searches",
        searches,
        `must not have more than ${MAX_DNS_SEARCH_LIST_CHARS} characters (including spaces) in the search list`,
      ));
    }
    searches.forEach((search, i) => {
      const name = String(search).replace(/\.$/, "");
      if (search !== "." && (name.length > 253 || !SEARCH_RE.test(name))) {
        errs.push(
          invalid(
            `spec.dnsConfig.searches[${i}]`,
            name,
            "a lowercase RFC 1123 subdomain (underscores allowed)",
          ),
        );
      }
    });
    objectsAt("spec.dnsConfig.options", dns.options, errs).forEach(([o, i]) => {
      if (!o.name) errs.push(`${required(`spec.dnsConfig.options[${i}]`)}: must not be empty`);
    });
  }
  objectsAt("spec.hostAliases", spec.hostAliases, errs).forEach(([a, i]) => {
    errs.push(...ipErrs(`spec.hostAliases[${i}].ip`, a.ip));
    listAt<string>(`spec.hostAliases[${i}].hostnames`, a.hostnames, errs).forEach((h, j) => {
      errs.push(...validateDNS1123Subdomain(`spec.hostAliases[${i}].hostnames[${j}]`, String(h)));
    });
  });
  if (spec.subdomain) errs.push(...validateDNS1123Label("spec.subdomain", String(spec.subdomain)));
  const override = spec.hostnameOverride;
  if (override !== undefined && override !== null) {
    if (spec.setHostnameAsFQDN === true) {
      errs.push(
        forbidden("spec.hostnameOverride", "may not be specified when setHostnameAsFQDN is true"),
      );
    }
    if (spec.hostNetwork === true) {
      errs.push(
        forbidden("spec.hostnameOverride", "may not be specified when hostNetwork is true"),
      );
    }
    if (String(override).length > 64) {
      errs.push("spec.hostnameOverride: Too long: may not be more than 64 bytes");
    }
    errs.push(...validateDNS1123Subdomain("spec.hostnameOverride", String(override)));
  }
  return errs;
}

/**
 * Checks a DNS-1123 label (container, volume and namespace names).
 * @param path the field path, for the message
 * @param value the name
 * @returns the errors, empty when valid
 */
export function validateDNS1123Label(path: string, value: string): string[] {
  return dnsName(path, value, "label");
}

/**
 * Checks a DNS-1123 subdomain (pod names).
 * @param path the field path, for the message
 * @param value the name
 * @returns the errors, empty when valid
 */
export function validateDNS1123Subdomain(path: string, value: string): string[] {
  return dnsName(path, value, "subdomain");
}

/** Upstream `IsQualifiedName`: `[prefix/]name`, a DNS subdomain prefix and a 63-character name. */
function isQualifiedName(key: string): boolean {
  const slash = key.indexOf("/");
  const name = slash < 0 ? key : key.slice(slash + 1);
  const prefixOk = slash < 0 || SUBDOMAIN_RE.test(key.slice(0, slash));
  return prefixOk && name.length <= 63 && QUALIFIED_NAME_RE.test(name);
}

const QUALIFIED_NAME_MESSAGE = "name part must consist of alphanumeric characters, '-', '_' or '.'";

function validateLabels(path: string, labels: unknown): string[] {
  if (labels === undefined) return [];
  if (!isRecord(labels)) return [invalid(path, labels, "must be a map of strings")];
  const errs: string[] = [];
  for (const [key, value] of Object.entries(labels)) {
    if (!isQualifiedName(key)) errs.push(invalid(path, key, QUALIFIED_NAME_MESSAGE));
    if (typeof value !== "string" || value.length > 63 || !LABEL_VALUE_RE.test(value)) {
      errs.push(
        invalid(
          `${path}[${key}]`,
          value,
          "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.'",
        ),
      );
    }
  }
  return errs;
}

// ---- helpers for untrusted shapes -------------------------------------------

function listAt<T>(path: string, value: unknown, errs: string[]): T[] {
  if (value === undefined || value === null) return [];
  if (!Array.isArray(value)) {
    errs.push(invalid(path, typeof value, "must be a list"));
    return [];
  }
  return value as T[];
}

/**
 * A list of objects (env, ports, tolerations, ...) with each entry's index; an entry that
 * is not an object (null included: the rest of the node walks these lists as objects) is
 * reported and left out.
 */
function objectsAt(
  path: string,
  value: unknown,
  errs: string[],
): [Record<string, unknown>, number][] {
  const out: [Record<string, unknown>, number][] = [];
  listAt<unknown>(path, value, errs).forEach((item, i) => {
    if (isRecord(item)) out.push([item, i]);
    else errs.push(invalid(`${path}[${i}]`, item, "must be an object"));
  });
  return out;
}

/** A field that must be a string when set (upstream's decoder refuses any other type). */
function stringAt(path: string, value: unknown): string[] {
  if (value === undefined || typeof value === "string") return [];
  return [invalid(path, value, "must be a string")];
}

/** A field that must be a list of strings when set (command, args). */
function stringsAt(path: string, value: unknown, errs: string[]): void {
  listAt<unknown>(path, value, errs).forEach((item, i) => {
    errs.push(...stringAt(`${path}[${i}]`, item === undefined ? null : item));
  });
}

function intInRange(path: string, value: unknown, min: number, max: number): string[] {
  if (value === undefined) return [];
  if (typeof value !== "number" || !Number.isInteger(value) || value < min || value > max) {
    return [invalid(path, value, `must be between ${min} and ${max}, inclusive`)];
  }
  return [];
}

function nonNegative(path: string, value: unknown): string[] {
  if (value === undefined) return [];
  if (typeof value !== "number" || !Number.isInteger(value) || value < 0) {
    return [invalid(path, value, "must be greater than or equal to 0")];
  }
  return [];
}

// ---- the supported value sets ----------------------------------------------

const RESTART_POLICIES = ["Always", "OnFailure", "Never"] as const;
const DNS_POLICIES = ["ClusterFirstWithHostNet", "ClusterFirst", "Default", "None"] as const;
const PULL_POLICIES = ["Always", "IfNotPresent", "Never"] as const;
const MESSAGE_POLICIES = ["File", "FallbackToLogsOnError"] as const;
const PROTOCOLS = ["TCP", "UDP", "SCTP"] as const;
const VOLUME_SOURCES = UPSTREAM_VOLUME_SOURCES;
const HOST_PATH_TYPES = [
  "",
  ..."DirectoryOrCreate Directory FileOrCreate File Socket CharDevice BlockDevice".split(" "),
];

// ---- volumes ----------------------------------------------------------------

function validateVolumes(volumes: Volume[]): { errs: string[]; names: Set<string> } {
  const errs: string[] = [];
  const names = new Set<string>();
  volumes.forEach((v, i) => {
    const path = `spec.volumes[${i}]`;
    if (!isRecord(v)) return void errs.push(invalid(path, v, "must be an object"));
    if (!v.name) errs.push(required(`${path}.name`));
    else {
      errs.push(...validateDNS1123Label(`${path}.name`, v.name));
      if (names.has(v.name)) errs.push(duplicate(`${path}.name`, v.name));
      names.add(v.name);
    }
    const sources = Object.keys(v).filter((k) => k !== "name");
    if (sources.length === 0) errs.push(required(path));
    if (sources.length > 1) {
      errs.push(forbidden(`${path}.${sources[1]}`, "may not specify more than 1 volume type"));
    }
    for (const source of sources) {
      if (!(VOLUME_SOURCES as readonly string[]).includes(source)) {
        errs.push(unsupported(path, source, VOLUME_SOURCES));
      }
    }
    if (v.hostPath !== undefined) {
      if (!isRecord(v.hostPath) || !v.hostPath.path) errs.push(required(`${path}.hostPath.path`));
      const type = isRecord(v.hostPath) ? v.hostPath.type : undefined;
      if (type !== undefined && !(HOST_PATH_TYPES as readonly string[]).includes(type)) {
        errs.push(unsupported(`${path}.hostPath.type`, type, HOST_PATH_TYPES));
      }
    }
    if (isRecord(v.emptyDir)) {
      const { medium, sizeLimit } = v.emptyDir;
      if (medium !== undefined && medium !== "" && medium !== "Memory") {
        errs.push(unsupported(`${path}.emptyDir.medium`, medium, ["", "Memory"]));
      }
      if (sizeLimit !== undefined) {
        errs.push(...validateQuantity(`${path}.emptyDir.sizeLimit`, sizeLimit));
      }
    }
  });
  return { errs, names };
}

function validateQuantity(path: string, q: unknown): string[] {
  if (typeof q !== "string" && typeof q !== "number") {
    return [invalid(path, q, QUANTITY_FORMAT_HINT)];
  }
  let value: number;
  try {
    value = parseQuantity(q);
  } catch {
    return [invalid(path, q, QUANTITY_FORMAT_HINT)];
  }
  return value < 0 ? [invalid(path, q, "must be greater than or equal to 0")] : [];
}

// ---- containers -------------------------------------------------------------

function validateProbe(path: string, probe: Probe | undefined): string[] {
  if (probe === undefined) return [];
  if (!isRecord(probe)) return [invalid(path, probe, "must be an object")];
  const errs: string[] = [];
  const handlers = (["exec", "httpGet", "tcpSocket", "grpc"] as const).filter((h) => probe[h]);
  if (handlers.length === 0) errs.push(required(path + ".exec"));
  if (handlers.length > 1) {
    errs.push(forbidden(`${path}.${handlers[1]}`, "may not specify more than 1 handler type"));
  }
  const numbers = ["initialDelaySeconds", "timeoutSeconds", "periodSeconds", "successThreshold"];
  for (const key of [...numbers, "failureThreshold"] as const) {
    errs.push(...nonNegative(`${path}.${key}`, (probe as Record<string, unknown>)[key]));
  }
  const p = probe as Probe;
  const port = p.httpGet?.port ?? p.tcpSocket?.port ?? p.grpc?.port;
  if (typeof port === "number") errs.push(...intInRange(`${path}.port`, port, 1, 65535));
  return errs;
}

interface ContainerContext {
  names: Set<string>;
  volumes: Set<string>;
  hostNetwork: boolean;
  /** spec.hostUsers, default true: procMount Unmasked needs it false. */
  hostUsers: boolean;
  init: boolean;
}

// ---- securityContext ----------------------------------------------------------

const PROFILE_TYPES = ["Localhost", "RuntimeDefault", "Unconfined"] as const;
const SYSCTL_NAME_TEXT = "([a-z0-9]([-_a-z0-9]*[a-z0-9])?[\\./])*[a-z0-9]([-_a-z0-9]*[a-z0-9])?";
const SYSCTL_NAME_RE = new RegExp(`^${SYSCTL_NAME_TEXT}$`);

/** seccompProfile or appArmorProfile, as upstream's validateSeccompProfileField / ValidateAppArmorProfileField. */
function validateProfile(path: string, profile: unknown, what: "seccomp" | "AppArmor"): string[] {
  if (profile === undefined) return [];
  if (!isRecord(profile)) return [invalid(path, profile, "must be an object")];
  const errs: string[] = [];
  const { type, localhostProfile } = profile;
  const lp = `${path}.localhostProfile`;
  if (type === "" || type === undefined) {
    errs.push(
      `${path}.type: Required value: type is required when ${
        what === "seccomp" ? "seccompProfile" : "appArmorProfile"
      } is set`,
    );
  } else if (!(PROFILE_TYPES as readonly unknown[]).includes(type)) {
    errs.push(unsupported(`${path}.type`, type, PROFILE_TYPES));
  }
  if (type === "Localhost") {
    const name = typeof localhostProfile === "string" ? localhostProfile : undefined;
    if (name === undefined || name.trim() === "") {
      errs.push(`${lp}: Required value: must be set when ${what} type is Localhost`);
    } else if (what === "seccomp" && name.startsWith("/")) {
      errs.push(invalid(lp, name, "must be a relative path"));
    } else if (what === "seccomp" && name.split("/").includes("..")) {
      errs.push(invalid(lp, name, "must not contain '..'"));
    } else if (what === "AppArmor" && name.trim() !== name) {
      errs.push(invalid(lp, name, "must not be padded with whitespace"));
    }
  } else if (localhostProfile !== undefined) {
    errs.push(invalid(lp, localhostProfile, `can only be set when ${what} type is Localhost`));
  }
  return errs;
}

/** A container's securityContext fields beyond ids and capabilities. */
function validateContainerSecurity(path: string, sc: unknown, ctx: ContainerContext): string[] {
  if (sc === undefined) return [];
  if (!isRecord(sc)) return [invalid(path, sc, "must be an object")];
  const errs = [
    ...validateProfile(`${path}.seccompProfile`, sc.seccompProfile, "seccomp"),
    ...validateProfile(`${path}.appArmorProfile`, sc.appArmorProfile, "AppArmor"),
  ];
  if (sc.procMount !== undefined) {
    if (sc.procMount !== "Default" && sc.procMount !== "Unmasked") {
      errs.push(unsupported(`${path}.procMount`, sc.procMount, ["Default", "Unmasked"]));
    } else if (sc.procMount === "Unmasked" && ctx.hostUsers) {
      errs.push(
        invalid(`${path}.procMount`, sc.procMount, "`hostUsers` must be false to use `Unmasked`"),
      );
    }
  }
  return errs;
}

/** spec.securityContext: profiles, sysctls and the policies, as upstream. */
function validatePodSecurity(spec: Record<string, unknown>): string[] {
  const path = "spec.securityContext";
  const sc = spec.securityContext;
  if (sc === undefined) return [];
  if (!isRecord(sc)) return [invalid(path, sc, "must be an object")];
  const errs = [
    ...validateProfile(`${path}.seccompProfile`, sc.seccompProfile, "seccomp"),
    ...validateProfile(`${path}.appArmorProfile`, sc.appArmorProfile, "AppArmor"),
  ];
  const policy = (field: string, allowed: readonly string[]) => {
    const v = sc[field];
    if (v !== undefined && !allowed.includes(v as string)) {
      errs.push(unsupported(`${path}.${field}`, v, allowed));
    }
  };
  policy("fsGroupChangePolicy", ["Always", "OnRootMismatch"]);
  policy("supplementalGroupsPolicy", ["Merge", "Strict"]);
  const seen = new Set<string>();
  const errList: string[] = [];
  objectsAt(`${path}.sysctls`, sc.sysctls, errList).forEach(([s, i]) => {
    const np = `${path}.sysctls[${i}].name`;
    const name = typeof s.name === "string" ? s.name : "";
    if (name === "") errs.push(required(np));
    else if (name.length > 253 || !SYSCTL_NAME_RE.test(name)) {
      errs.push(
        invalid(np, name, `must have at most 253 characters and match regex ^${SYSCTL_NAME_TEXT}$`),
      );
    } else if (seen.has(name)) errs.push(duplicate(np, name));
    seen.add(name);
    const ns = sysctlNamespace(normalizeSysctlName(name));
    if (spec.hostNetwork === true && ns === "Net") {
      errs.push(invalid(np, name, "may not be specified when 'hostNetwork' is true"));
    }
    if (spec.hostIPC === true && ns === "IPC") {
      errs.push(invalid(np, name, "may not be specified when 'hostIPC' is true"));
    }
  });
  return [...errs, ...errList];
}

function validateContainer(path: string, c: Container, ctx: ContainerContext): string[] {
  if (!isRecord(c)) return [invalid(path, c, "must be an object")];
  const errs: string[] = [];
  if (!c.name) errs.push(required(`${path}.name`));
  else {
    errs.push(...validateDNS1123Label(`${path}.name`, c.name));
    if (ctx.names.has(c.name)) errs.push(duplicate(`${path}.name`, c.name));
    ctx.names.add(c.name);
  }
  if (!c.image || !String(c.image).trim()) errs.push(required(`${path}.image`));
  else errs.push(...stringAt(`${path}.image`, c.image));
  for (const key of ["workingDir", "terminationMessagePath"] as const) {
    errs.push(...stringAt(`${path}.${key}`, c[key]));
  }
  stringsAt(`${path}.command`, c.command, errs);
  stringsAt(`${path}.args`, c.args, errs);
  if (c.imagePullPolicy !== undefined && !PULL_POLICIES.includes(c.imagePullPolicy)) {
    errs.push(unsupported(`${path}.imagePullPolicy`, c.imagePullPolicy, PULL_POLICIES));
  }
  if (
    c.terminationMessagePolicy !== undefined &&
    !MESSAGE_POLICIES.includes(c.terminationMessagePolicy)
  ) {
    errs.push(
      unsupported(`${path}.terminationMessagePolicy`, c.terminationMessagePolicy, MESSAGE_POLICIES),
    );
  }
  if (c.restartPolicy !== undefined) {
    if (!ctx.init) {
      errs.push(forbidden(`${path}.restartPolicy`, "may not be set for non-init containers"));
    } else if (c.restartPolicy !== "Always") {
      errs.push(unsupported(`${path}.restartPolicy`, c.restartPolicy, ["Always"]));
    }
  }
  const portNames = new Set<string>();
  objectsAt(`${path}.ports`, c.ports, errs).forEach(([p, i]) => {
    const pp = `${path}.ports[${i}]`;
    if (p.containerPort === undefined) errs.push(required(`${pp}.containerPort`));
    else errs.push(...intInRange(`${pp}.containerPort`, p.containerPort, 1, 65535));
    if (p.hostPort !== undefined && p.hostPort !== 0) {
      errs.push(...intInRange(`${pp}.hostPort`, p.hostPort, 1, 65535));
      if (ctx.hostNetwork && p.hostPort !== p.containerPort) {
        errs.push(
          invalid(
            `${pp}.hostPort`,
            p.hostPort,
            "must match `containerPort` when `hostNetwork` is true",
          ),
        );
      }
    }
    if (p.protocol !== undefined && !(PROTOCOLS as readonly unknown[]).includes(p.protocol)) {
      errs.push(unsupported(`${pp}.protocol`, p.protocol, PROTOCOLS));
    }
    if (typeof p.name === "string" && p.name !== "") {
      if (
        p.name.length > 15 || !/^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/.test(p.name) ||
        !/[a-z]/.test(p.name)
      ) {
        errs.push(
          invalid(
            `${pp}.name`,
            p.name,
            "must be an IANA_SVC_NAME (at most 15 characters, lowercase alphanumerics and '-', at least one letter)",
          ),
        );
      }
      if (portNames.has(p.name)) errs.push(duplicate(`${pp}.name`, p.name));
      portNames.add(p.name);
    }
  });
  objectsAt(`${path}.env`, c.env, errs).forEach(([e, i]) => {
    if (!e.name) errs.push(required(`${path}.env[${i}].name`));
    else if (typeof e.name !== "string" || !ENV_NAME_RE.test(e.name)) {
      errs.push(
        invalid(
          `${path}.env[${i}].name`,
          e.name,
          "a valid environment variable name must consist of alphabetic characters, digits, '_', '-', or '.', and must not start with a digit",
        ),
      );
    }
    errs.push(...stringAt(`${path}.env[${i}].value`, e.value));
  });
  errs.push(...validateResources(`${path}.resources`, c.resources));
  const mountPaths = new Set<string>();
  objectsAt(`${path}.volumeMounts`, c.volumeMounts, errs).forEach(([m, i]) => {
    const mp = `${path}.volumeMounts[${i}]`;
    if (!m.name) errs.push(required(`${mp}.name`));
    else if (!ctx.volumes.has(String(m.name))) errs.push(notFound(`${mp}.name`, m.name));
    if (!m.mountPath) errs.push(required(`${mp}.mountPath`));
    else {
      if (mountPaths.has(String(m.mountPath))) {
        errs.push(invalid(`${mp}.mountPath`, m.mountPath, "must be unique"));
      }
      mountPaths.add(String(m.mountPath));
    }
    if (m.subPath !== undefined && String(m.subPath).split("/").includes("..")) {
      errs.push(invalid(`${mp}.subPath`, m.subPath, "must not contain '..'"));
    }
    if (m.subPathExpr) {
      if (m.subPath) {
        errs.push(
          invalid(
            `${mp}.subPathExpr`,
            m.subPathExpr,
            "subPathExpr and subPath are mutually exclusive",
          ),
        );
      }
      // The expanded value is checked again at container start (lib/volumes validateSubPath).
      const expr = String(m.subPathExpr);
      if (expr.startsWith("/")) {
        errs.push(invalid(`${mp}.subPathExpr`, expr, "must be a relative path"));
      }
      if (expr.split("/").includes("..")) {
        errs.push(invalid(`${mp}.subPathExpr`, expr, "must not contain '..'"));
      }
    }
  });
  for (const key of ["livenessProbe", "readinessProbe", "startupProbe"] as const) {
    errs.push(...validateProbe(`${path}.${key}`, c[key]));
  }
  errs.push(...validateContainerSecurity(`${path}.securityContext`, c.securityContext, ctx));
  return errs;
}

function validateResources(path: string, resources: unknown): string[] {
  if (resources === undefined) return [];
  if (!isRecord(resources)) return [invalid(path, resources, "must be an object")];
  const errs: string[] = [];
  const parsed: Record<"limits" | "requests", Record<string, number>> = {
    limits: {},
    requests: {},
  };
  for (const kind of ["limits", "requests"] as const) {
    const map = resources[kind];
    if (map === undefined) continue;
    if (!isRecord(map)) {
      errs.push(invalid(`${path}.${kind}`, map, "must be a map of resource quantities"));
      continue;
    }
    for (const [name, q] of Object.entries(map)) {
      const e = validateQuantity(`${path}.${kind}[${name}]`, q);
      errs.push(...e);
      if (e.length === 0) parsed[kind][name] = parseQuantity(q as string | number);
    }
  }
  for (const [name, request] of Object.entries(parsed.requests)) {
    const limit = parsed.limits[name];
    if (limit !== undefined && request > limit) {
      const raw = (resources.requests as Record<string, unknown>)[name];
      const rawLimit = (resources.limits as Record<string, unknown>)[name];
      errs.push(
        invalid(
          `${path}.requests`,
          String(raw),
          `must be less than or equal to ${name} limit of ${rawLimit}`,
        ),
      );
    }
  }
  return errs;
}

// ---- the pod ------------------------------------------------------------------

/**
 * Validates a pod as the node will run it (after defaults and, for static
 * pods, the name suffix and UID).
 * @param pod the pod, possibly straight from an untrusted manifest
 * @returns every problem found, upstream-worded; empty when the pod is valid
 */
export function validatePod(pod: Pod): string[] {
  if (!isRecord(pod)) return [invalid("<root>", pod, "a Pod must be an object")];
  const errs: string[] = [];
  const meta = pod.metadata;
  if (!isRecord(meta)) errs.push(required("metadata"));
  else {
    if (!meta.name) errs.push(required("metadata.name"));
    else errs.push(...validateDNS1123Subdomain("metadata.name", String(meta.name)));
    if (meta.namespace) {
      errs.push(...validateDNS1123Label("metadata.namespace", String(meta.namespace)));
    }
    errs.push(...validateLabels("metadata.labels", meta.labels));
    if (meta.annotations !== undefined && !isRecord(meta.annotations)) {
      errs.push(invalid("metadata.annotations", meta.annotations, "must be a map of strings"));
    }
  }
  const spec = pod.spec;
  if (!isRecord(spec)) return [...errs, required("spec")];

  const { errs: volumeErrs, names: volumes } = validateVolumes(
    listAt<Volume>("spec.volumes", spec.volumes, errs),
  );
  errs.push(...volumeErrs);

  const ctx: ContainerContext = {
    names: new Set(),
    volumes,
    hostNetwork: spec.hostNetwork === true,
    hostUsers: spec.hostUsers !== false,
    init: true,
  };
  listAt<Container>("spec.initContainers", spec.initContainers, errs).forEach((c, i) => {
    errs.push(...validateContainer(`spec.initContainers[${i}]`, c, ctx));
  });
  ctx.init = false;
  const containers = listAt<Container>("spec.containers", spec.containers, errs);
  if (containers.length === 0 && Array.isArray(spec.containers) || spec.containers === undefined) {
    errs.push(required("spec.containers"));
  }
  containers.forEach((c, i) => errs.push(...validateContainer(`spec.containers[${i}]`, c, ctx)));
  // Upstream validates a manifest as a pod creation, and ephemeral containers
  // only come later, through the apiserver's ephemeralcontainers subresource.
  if (spec.ephemeralContainers !== undefined) {
    errs.push(forbidden("spec.ephemeralContainers", "cannot be set on create"));
  }

  if (spec.restartPolicy !== undefined && !RESTART_POLICIES.includes(spec.restartPolicy)) {
    errs.push(unsupported("spec.restartPolicy", spec.restartPolicy, RESTART_POLICIES));
  }
  if (
    spec.dnsPolicy !== undefined && !(DNS_POLICIES as readonly string[]).includes(spec.dnsPolicy)
  ) {
    errs.push(unsupported("spec.dnsPolicy", spec.dnsPolicy, DNS_POLICIES));
  }
  errs.push(
    ...nonNegative("spec.terminationGracePeriodSeconds", spec.terminationGracePeriodSeconds),
  );
  errs.push(...intInRange("spec.activeDeadlineSeconds", spec.activeDeadlineSeconds, 1, 2147483647));
  objectsAt("spec.readinessGates", spec.readinessGates, errs).forEach(
    ([gate, i]) => {
      const type = gate.conditionType;
      if (typeof type !== "string" || !isQualifiedName(type)) {
        errs.push(invalid(`spec.readinessGates[${i}].conditionType`, type, QUALIFIED_NAME_MESSAGE));
      }
    },
  );
  if (spec.hostname) errs.push(...validateDNS1123Label("spec.hostname", spec.hostname));
  errs.push(...validatePodDNS(spec));
  errs.push(...validatePodSecurity(spec));
  objectsAt("spec.tolerations", spec.tolerations, errs).forEach(([t, i]) => {
    const op = t.operator;
    if (op !== undefined && op !== "Exists" && op !== "Equal") {
      errs.push(unsupported(`spec.tolerations[${i}].operator`, op, ["Equal", "Exists"]));
    }
    if (op === "Exists" && t.value) {
      errs.push(
        invalid(
          `spec.tolerations[${i}].operator`,
          t.value,
          "value must be empty when `operator` is 'Exists'",
        ),
      );
    }
  });
  return errs;
}
