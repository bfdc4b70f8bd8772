/**
 * `--help` in pflag's layout (FlagUsagesWrapped): one line per flag, sorted by
 * name, `  -v, --v Level` or `      --name type`, the usage aligned in one
 * column, then `(default …)` when the default is not the zero value and
 * `(DEPRECATED: …)` for deprecated flags.
 *
 * @module
 */

import { applyEvictionDefaults } from "./config_file.ts";
import { formatDuration } from "../util/duration.ts";
import { defaultFlagValues, FLAGS, type FlagSpec, type FlagType } from "./flag_table.ts";
import { flagOnlyKubeletConfiguration, type KubeletConfiguration } from "./kubelet_config.ts";

/**
 * The configuration without `--config`: v1beta1 defaults, upstream's legacy
 * command-line defaults and the default hard eviction thresholds.
 * @returns a fresh object
 */
export function baselineConfig(): KubeletConfiguration {
  const kc = flagOnlyKubeletConfiguration();
  applyEvictionDefaults(kc);
  return kc;
}

// pflag's names for value types (Value.Type(), as UnquoteUsage shortens them).
const TYPE_NAMES: Record<FlagType, string> = {
  string: "string",
  ip: "ip",
  bool: "",
  int32: "int32",
  int64: "int",
  float64: "float",
  duration: "duration",
  strings: "strings",
  mapStringString: "mapStringString",
  mapStringBool: "mapStringBool",
  langleMap: "mapStringString",
  colonMultimap: "colonSeparatedMultimapStringString",
  taints: "[]api.Taint",
  labels: "mapStringString",
  level: "Level",
  version: "version[=true]",
  help: "",
};

function lookup(root: unknown, path: string): unknown {
  let v = root;
  for (const key of path.split(".")) {
    if (typeof v !== "object" || v === null) return undefined;
    v = (v as Record<string, unknown>)[key];
  }
  return v;
}

function sortedEntries(v: object): [string, unknown][] {
  return Object.entries(v).sort(([a], [b]) => a < b ? -1 : a > b ? 1 : 0);
}

// The default as pflag prints it, or undefined for Go's zero value (not printed).
function renderDefault(spec: FlagSpec, value: unknown): string | undefined {
  if (value === undefined || value === null || value === "" || value === 0 || value === false) {
    return undefined;
  }
  switch (spec.type) {
    case "string":
      return JSON.stringify(value);
    case "duration":
      return typeof value === "number" ? formatDuration(value) : String(value);
    case "strings":
      return (value as string[]).length === 0 ? undefined : `[${(value as string[]).join(",")}]`;
    case "mapStringString":
    case "langleMap":
    case "labels":
    case "mapStringBool": {
      const sep = spec.type === "langleMap" ? "<" : "=";
      const entries = sortedEntries(value as object);
      return entries.length === 0 ? undefined : entries.map(([k, v]) => `${k}${sep}${v}`).join(",");
    }
    case "colonMultimap":
    case "taints":
      return undefined;
    default:
      return String(value);
  }
}

/**
 * The `--help` text.
 * @returns the usage, every flag with its type, default and help
 */
export function helpText(): string {
  const config = baselineConfig();
  const values = defaultFlagValues();
  const lines: string[] = [];
  let maxlen = 0;
  const sorted = [...FLAGS].sort((a, b) => a.name < b.name ? -1 : a.name > b.name ? 1 : 0);
  for (const spec of sorted) {
    let line = spec.shorthand ? `  -${spec.shorthand}, --${spec.name}` : `      --${spec.name}`;
    const type = TYPE_NAMES[spec.type];
    if (type) line += ` ${type}`;
    line += "\x00";
    maxlen = Math.max(maxlen, line.length);
    line += spec.usage;
    const value = spec.field
      ? lookup(config, spec.field)
      : spec.value
      ? values[spec.value]
      : undefined;
    const def = renderDefault(spec, value);
    if (def !== undefined) line += ` (default ${def})`;
    if (spec.deprecated) line += ` (DEPRECATED: ${spec.deprecated})`;
    lines.push(line);
  }
  const flags = lines.map((line) => {
    const sidx = line.indexOf("\x00");
    return `${line.slice(0, sidx)} ${" ".repeat(maxlen - sidx)} ${line.slice(sidx + 1)}`;
  });
  return [
    "denolet is a Kubernetes node agent (a kubelet) for Deno. It registers the node with the",
    "API server (with --kubeconfig) or runs standalone, runs the pods bound to the node and",
    "its static pods through a CRI runtime, and reports their status and resource usage.",
    "",
    "Usage:",
    "  denolet [flags]",
    "",
    "Flags:",
    ...flags,
  ].join("\n");
}
