/**
 * The kubelet flags denolet accepts, with upstream's names and defaults.
 *
 * Parsing follows Go's pflag conventions that operators' unit files use:
 * `--name=value`, `--name value`, a single leading dash (`-v=2`), and bare
 * booleans (`--fail-swap-on`, `--fail-swap-on=false`).
 *
 * @module
 */

import { parseDuration } from "./duration.ts";

/** The effective options of one agent run. Durations are milliseconds. */
export interface AgentOptions {
  podManifestPath: string;
  manifestUrl: string;
  manifestUrlHeader: Record<string, string[]>;
  containerRuntimeEndpoint: string;
  imageServiceEndpoint: string;
  runtimeRequestTimeoutMs: number;
  fileCheckFrequencyMs: number;
  httpCheckFrequencyMs: number;
  syncFrequencyMs: number;
  housekeepingIntervalMs: number;
  address: string;
  readOnlyPort: number;
  healthzPort: number;
  healthzBindAddress: string;
  hostnameOverride: string;
  nodeIp: string;
  rootDir: string;
  podLogsDir: string;
  cgroupRoot: string;
  verbosity: number;
  loggingFormat: "text" | "json";
}

type Kind = "string" | "duration" | "int" | "headers" | "format";

interface FlagSpec {
  name: string;
  key: keyof AgentOptions;
  kind: Kind;
  help: string;
}

const FLAGS: FlagSpec[] = [
  {
    name: "pod-manifest-path",
    key: "podManifestPath",
    kind: "string",
    help: "Path to the directory (or file) of static pod manifests.",
  },
  {
    name: "manifest-url",
    key: "manifestUrl",
    kind: "string",
    help: "URL to fetch static pod manifests from.",
  },
  {
    name: "manifest-url-header",
    key: "manifestUrlHeader",
    kind: "headers",
    help: "'key:value' HTTP header for --manifest-url requests; repeatable.",
  },
  {
    name: "container-runtime-endpoint",
    key: "containerRuntimeEndpoint",
    kind: "string",
    help: "The CRI endpoint, e.g. unix:///run/containerd/containerd.sock.",
  },
  {
    name: "image-service-endpoint",
    key: "imageServiceEndpoint",
    kind: "string",
    help: "The CRI image endpoint; defaults to --container-runtime-endpoint.",
  },
  {
    name: "runtime-request-timeout",
    key: "runtimeRequestTimeoutMs",
    kind: "duration",
    help: "Timeout of CRI calls except long ones (pulls).",
  },
  {
    name: "file-check-frequency",
    key: "fileCheckFrequencyMs",
    kind: "duration",
    help: "How often to re-read the manifest path.",
  },
  {
    name: "http-check-frequency",
    key: "httpCheckFrequencyMs",
    kind: "duration",
    help: "How often to poll --manifest-url.",
  },
  {
    name: "sync-frequency",
    key: "syncFrequencyMs",
    kind: "duration",
    help: "Max period between syncs of a running pod.",
  },
  {
    name: "housekeeping-interval",
    key: "housekeepingIntervalMs",
    kind: "duration",
    help: "Interval between container stats housekeeping.",
  },
  {
    name: "address",
    key: "address",
    kind: "string",
    help: "IP address the read-only server binds to.",
  },
  {
    name: "read-only-port",
    key: "readOnlyPort",
    kind: "int",
    help: "Read-only HTTP port (/pods, /stats); 0 disables it.",
  },
  {
    name: "healthz-port",
    key: "healthzPort",
    kind: "int",
    help: "Port of /healthz; 0 disables it.",
  },
  {
    name: "healthz-bind-address",
    key: "healthzBindAddress",
    kind: "string",
    help: "IP address /healthz binds to.",
  },
  {
    name: "hostname-override",
    key: "hostnameOverride",
    kind: "string",
    help: "The node name to use instead of the hostname.",
  },
  { name: "node-ip", key: "nodeIp", kind: "string", help: "The node's IP address." },
  {
    name: "root-dir",
    key: "rootDir",
    kind: "string",
    help: "Directory for pod volumes and agent state.",
  },
  {
    name: "pod-logs-dir",
    key: "podLogsDir",
    kind: "string",
    help: "Directory for container logs (podLogsDir).",
  },
  {
    name: "cgroup-root",
    key: "cgroupRoot",
    kind: "string",
    help: "Root cgroup for pods (cgroupfs driver).",
  },
  { name: "v", key: "verbosity", kind: "int", help: "Log verbosity." },
  {
    name: "logging-format",
    key: "loggingFormat",
    kind: "format",
    help: "Log format: text or json.",
  },
];

/** Upstream's defaults (KubeletConfiguration v1beta1 and kubelet flags). */
export function defaultOptions(): AgentOptions {
  return {
    podManifestPath: "",
    manifestUrl: "",
    manifestUrlHeader: {},
    containerRuntimeEndpoint: "unix:///run/containerd/containerd.sock",
    imageServiceEndpoint: "",
    runtimeRequestTimeoutMs: 120_000,
    fileCheckFrequencyMs: 20_000,
    httpCheckFrequencyMs: 20_000,
    syncFrequencyMs: 60_000,
    housekeepingIntervalMs: 10_000,
    address: "0.0.0.0",
    readOnlyPort: 0,
    healthzPort: 10248,
    healthzBindAddress: "127.0.0.1",
    hostnameOverride: "",
    nodeIp: "",
    rootDir: "/var/lib/kubelet",
    podLogsDir: "/var/log/pods",
    cgroupRoot: "/",
    verbosity: 0,
    loggingFormat: "text",
  };
}

/** The result of parsing argv. */
export type ParsedFlags =
  | { kind: "run"; options: AgentOptions }
  | { kind: "help"; text: string }
  | { kind: "version" };

/** A flag error: the message names the flag and the reason. */
export class FlagError extends Error {
  override name = "FlagError";
}

function setValue(opts: AgentOptions, spec: FlagSpec, raw: string): void {
  const where = `--${spec.name}=${raw}`;
  const o = opts as unknown as Record<string, unknown>;
  switch (spec.kind) {
    case "string":
      o[spec.key] = raw;
      return;
    case "duration":
      try {
        o[spec.key] = parseDuration(raw);
      } catch (err) {
        throw new FlagError(`invalid value for ${where}: ${(err as Error).message}`);
      }
      return;
    case "int": {
      if (!/^-?\d+$/.test(raw)) throw new FlagError(`invalid value for ${where}: not an integer`);
      o[spec.key] = Number(raw);
      return;
    }
    case "format":
      if (raw !== "text" && raw !== "json") {
        throw new FlagError(`invalid value for ${where}: want "text" or "json"`);
      }
      o[spec.key] = raw;
      return;
    case "headers": {
      const i = raw.indexOf(":");
      if (i <= 0) throw new FlagError(`invalid value for ${where}: want "key:value"`);
      const key = raw.slice(0, i).trim();
      (opts.manifestUrlHeader[key] ??= []).push(raw.slice(i + 1).trim());
      return;
    }
  }
}

/** `--help` text listing every flag with its default. */
export function helpText(): string {
  const d = defaultOptions() as unknown as Record<string, unknown>;
  const lines = [
    "denolet: a Kubernetes node agent (kubelet) on Deno.",
    "",
    "Usage: denolet [flags]",
    "",
    "Flags:",
  ];
  for (const f of FLAGS) {
    const def = d[f.key];
    const shown = typeof def === "object" ? "" : ` (default ${JSON.stringify(def)})`;
    lines.push(`  --${f.name.padEnd(30)} ${f.help}${shown}`);
  }
  lines.push(
    `  --${"help".padEnd(30)} Show this help.`,
    `  --${"version".padEnd(30)} Print the version.`,
  );
  return lines.join("\n");
}

/**
 * Parses kubelet-style argv.
 * @param argv the arguments after the program name
 * @returns options to run with, or a help/version request
 * @throws {FlagError} on an unknown flag, a missing or bad value
 */
export function parseFlags(argv: readonly string[]): ParsedFlags {
  const opts = defaultOptions();
  const byName = new Map(FLAGS.map((f) => [f.name, f]));
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i]!;
    if (!arg.startsWith("-")) {
      throw new FlagError(`unexpected argument "${arg}": denolet takes only flags`);
    }
    const body = arg.replace(/^--?/, "");
    const eq = body.indexOf("=");
    const name = eq < 0 ? body : body.slice(0, eq);
    if (name === "help" || name === "h") return { kind: "help", text: helpText() };
    if (name === "version") return { kind: "version" };
    const spec = byName.get(name);
    if (!spec) throw new FlagError(`unknown flag: --${name} (see --help)`);
    let value: string;
    if (eq >= 0) value = body.slice(eq + 1);
    else {
      const next = argv[i + 1];
      if (next === undefined) throw new FlagError(`flag needs an argument: --${name}`);
      value = next;
      i++;
    }
    setValue(opts, spec, value);
  }
  if (!opts.imageServiceEndpoint) opts.imageServiceEndpoint = opts.containerRuntimeEndpoint;
  return { kind: "run", options: opts };
}
