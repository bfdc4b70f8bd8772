/**
 * Parsing the kubelet's command line as upstream does: pflag syntax
 * (`--name=value`, `--name value`, bare booleans, `-v 4`, `-h`), `--config`
 * loaded first and every flag that mirrors a config field applied over it,
 * whatever the order on the command line (upstream re-parses the flags over
 * the loaded file), then validation of the result.
 *
 * @module
 */

import { isIP } from "node:net";
import { VERSION } from "../util/version.ts";
import { type AgentOptions, toAgentOptions } from "./agent_options.ts";
import { loadConfigFile, type LoadConfigFileOptions } from "./config_file.ts";
import { formatDuration, parseSignedDuration } from "../util/duration.ts";
import { defaultFlagValues, FLAGS, type FlagSpec, type FlagValues } from "./flag_table.ts";
import type { KubeletConfiguration } from "./kubelet_config.ts";
import { baselineConfig, helpText } from "./help.ts";
import { parseTaint, validateKubeletConfiguration, validateNodeLabels } from "./validation.ts";

export type { AgentOptions } from "./agent_options.ts";

/** The result of parsing argv. */
export type ParsedFlags =
  | { kind: "run"; options: AgentOptions }
  | { kind: "help"; text: string }
  | { kind: "version"; text: string };

/** A bad command line: the message names the flag and the reason, as pflag words it. */
export class FlagError extends Error {
  override name = "FlagError";
}

/** An effective configuration upstream would refuse; lists every problem. */
export class ConfigValidationError extends Error {
  override name = "ConfigValidationError";
  /** Each problem, naming its field and flag. */
  readonly problems: readonly string[];

  /**
   * @param problems what is wrong
   * @param configFile the `--config` file, named in the message when set
   */
  constructor(problems: readonly string[], configFile: string) {
    const where = configFile ? ` (config file ${configFile} and flags)` : "";
    super(`failed to validate kubelet configuration${where}: ${problems.join("; ")}`);
    this.problems = problems;
  }
}

/** Options for {@link parseFlags}. */
export type ParseFlagsOptions = LoadConfigFileOptions;

interface Occurrence {
  spec: FlagSpec;
  value: string;
}

const BY_NAME = new Map(FLAGS.map((f) => [f.name, f]));
const BY_SHORTHAND = new Map(FLAGS.filter((f) => f.shorthand).map((f) => [f.shorthand!, f]));

// Flags whose bare form means "true", as pflag's NoOptDefVal.
function takesNoValue(spec: FlagSpec): boolean {
  return spec.type === "bool" || spec.type === "help" || spec.type === "version";
}

function tokenize(argv: readonly string[]): Occurrence[] {
  const out: Occurrence[] = [];
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i]!;
    if (arg === "--" || !arg.startsWith("-") || arg === "-") {
      const extra = arg === "--" ? argv[i + 1] : arg;
      if (extra === undefined) break;
      throw new FlagError(`unknown command "${extra}": denolet takes only flags`);
    }
    const long = arg.startsWith("--");
    const body = arg.slice(long ? 2 : 1);
    const eq = body.indexOf("=");
    let spec: FlagSpec | undefined;
    let inline: string | undefined;
    let label: string;
    if (long) {
      // Upstream normalizes word separators: --pod_manifest_path is --pod-manifest-path.
      const name = (eq < 0 ? body : body.slice(0, eq)).replaceAll("_", "-");
      spec = BY_NAME.get(name);
      if (!spec) throw new FlagError(`unknown flag: --${name}`);
      if (eq >= 0) inline = body.slice(eq + 1);
      label = `--${name}`;
    } else {
      const c = body[0]!;
      spec = BY_SHORTHAND.get(c);
      if (!spec) throw new FlagError(`unknown shorthand flag: '${c}' in ${arg}`);
      const rest = body.slice(1);
      if (rest.startsWith("=")) inline = rest.slice(1);
      else if (rest !== "") inline = rest;
      label = `'${c}' in ${arg}`;
    }
    if (inline === undefined) {
      if (takesNoValue(spec)) inline = "true";
      else {
        const next = argv[i + 1];
        if (next === undefined) throw new FlagError(`flag needs an argument: ${label}`);
        inline = next;
        i++;
      }
    }
    out.push({ spec, value: inline });
  }
  return out;
}

function invalid(spec: FlagSpec, raw: string, reason: string): FlagError {
  return new FlagError(`invalid argument "${raw}" for "--${spec.name}" flag: ${reason}`);
}

function parseBool(spec: FlagSpec, raw: string): boolean {
  if (["1", "t", "T", "true", "TRUE", "True"].includes(raw)) return true;
  if (["0", "f", "F", "false", "FALSE", "False"].includes(raw)) return false;
  throw invalid(spec, raw, `strconv.ParseBool: parsing "${raw}": invalid syntax`);
}

function parseInt(spec: FlagSpec, raw: string, bits: 32 | 64): number {
  const limit = bits === 32 ? 2 ** 31 : 2 ** 63;
  const n = Number(raw);
  if (!/^[+-]?\d+$/.test(raw)) {
    throw invalid(spec, raw, `strconv.ParseInt: parsing "${raw}": invalid syntax`);
  }
  if (n >= limit || n < -limit) {
    throw invalid(spec, raw, `strconv.ParseInt: parsing "${raw}": value out of range`);
  }
  return n;
}

function pairs(spec: FlagSpec, raw: string, sep: string): [string, string][] {
  const out: [string, string][] = [];
  for (const item of raw.split(",")) {
    if (item.trim() === "") continue;
    const i = item.indexOf(sep);
    if (i < 0) {
      if (spec.type === "labels") out.push([item.trim(), ""]);
      else throw invalid(spec, raw, `malformed pair, expect string${sep}string`);
      continue;
    }
    out.push([item.slice(0, i).trim(), item.slice(i + 1).trim()]);
  }
  return out;
}

/**
 * Converts one flag value to what its field holds, merging with the current
 * value the way the matching pflag Value type does on a repeated flag.
 */
function convert(spec: FlagSpec, raw: string, current: unknown, first: boolean): unknown {
  switch (spec.type) {
    case "string":
    case "version":
      return raw;
    case "ip":
      if (isIP(raw) === 0) throw invalid(spec, raw, `"${raw}" is not a valid IP address`);
      return raw;
    case "bool":
    case "help":
      return parseBool(spec, raw);
    case "int32":
    case "level":
      return parseInt(spec, raw, 32);
    case "int64":
      return parseInt(spec, raw, 64);
    case "float64": {
      const n = Number(raw);
      if (raw.trim() === "" || !Number.isFinite(n)) {
        throw invalid(spec, raw, `strconv.ParseFloat: parsing "${raw}": invalid syntax`);
      }
      return n;
    }
    case "duration":
      try {
        const millis = parseSignedDuration(raw);
        return spec.value ? millis : formatDuration(millis);
      } catch {
        throw invalid(spec, raw, `time: invalid duration "${raw}"`);
      }
    case "strings": {
      const items = raw === "" ? [] : raw.split(",").map((s) => s.trim());
      return first ? items : [...(current as string[] ?? []), ...items];
    }
    case "mapStringString":
    case "labels":
    case "langleMap": {
      // A map flag's first use replaces the file's map; later uses add to it (cliflag).
      // --node-labels always adds, as its ConfigurationMap does.
      const base = first && spec.type !== "labels"
        ? {}
        : { ...(current as Record<string, string>) };
      for (const [k, v] of pairs(spec, raw, spec.type === "langleMap" ? "<" : "=")) base[k] = v;
      return base;
    }
    case "mapStringBool": {
      const base: Record<string, boolean> = first
        ? {}
        : { ...(current as Record<string, boolean>) };
      for (const [k, v] of pairs(spec, raw, "=")) base[k] = parseBool(spec, v);
      return base;
    }
    case "colonMultimap": {
      const base: Record<string, string[]> = first
        ? {}
        : structuredClone(current as Record<string, string[]>);
      for (const [k, v] of pairs(spec, raw, ":")) (base[k] ??= []).push(v);
      return base;
    }
    case "taints":
      try {
        return raw.split(",").filter((s) => s !== "").map(parseTaint);
      } catch (err) {
        throw invalid(spec, raw, (err as Error).message);
      }
  }
}

function holderFor(root: Record<string, unknown>, path: string): [Record<string, unknown>, string] {
  const keys = path.split(".");
  let holder = root;
  for (const key of keys.slice(0, -1)) {
    const next = holder[key];
    if (typeof next !== "object" || next === null) holder[key] = {};
    holder = holder[key] as Record<string, unknown>;
  }
  return [holder, keys[keys.length - 1]!];
}

function applyAll(occurrences: Occurrence[], kc: KubeletConfiguration, values: FlagValues): void {
  const seen = new Set<string>();
  for (const { spec, value } of occurrences) {
    const root = (spec.field ? kc : values) as unknown as Record<string, unknown>;
    const path = spec.field ?? spec.value;
    if (!path) {
      convert(spec, value, undefined, true); // checked, then ignored: nothing reads it
      continue;
    }
    const [holder, key] = holderFor(root, path);
    holder[key] = convert(spec, value, holder[key], !seen.has(spec.name));
    seen.add(spec.name);
  }
}

function flagWarnings(occurrences: Occurrence[]): string[] {
  const warnings = new Set<string>();
  for (const { spec } of occurrences) {
    if (spec.deprecated) {
      warnings.add(`Flag --${spec.name} has been deprecated, ${spec.deprecated}`);
    }
    if (spec.implemented === false) {
      warnings.add(`flag --${spec.name} is not implemented by denolet and is ignored`);
    }
  }
  return [...warnings];
}

/** The `--version` line: upstream's "Kubernetes vX.Y.Z", with denolet's version. */
export function versionText(raw = false): string {
  if (!raw) return `Kubernetes ${VERSION}`;
  return JSON.stringify({ gitVersion: VERSION, platform: `${Deno.build.os}/${Deno.build.arch}` });
}

/**
 * Parses kubelet argv into the options of a run, or a help/version request.
 * Reads the `--config` file synchronously, so it stays a plain function.
 * @param argv the arguments after the program name
 * @param opts how to read the config file (tests inject)
 * @returns options to run with, or the help or version text to print
 * @throws {FlagError} on an unknown flag, a missing or bad value (exit 2)
 * @throws {ConfigFileError} when the `--config` file is unreadable or invalid
 * @throws {ConfigValidationError} when the merged configuration is invalid
 */
export function parseFlags(argv: readonly string[], opts: ParseFlagsOptions = {}): ParsedFlags {
  const occurrences = tokenize(argv);
  const values = defaultFlagValues();
  // Values are converted now so a bad value is reported before --help, as pflag does.
  const scratch = baselineConfig();
  applyAll(occurrences, scratch, values);
  if (values.help) return { kind: "help", text: helpText() };
  if (values.version === "true" || values.version === "raw") {
    return { kind: "version", text: versionText(values.version === "raw") };
  }

  const warnings: string[] = [];
  let kc: KubeletConfiguration;
  if (values.configFile) {
    const loaded = loadConfigFile(values.configFile, opts);
    kc = loaded.config;
    warnings.push(...loaded.warnings);
  } else kc = baselineConfig();
  applyAll(occurrences.filter((o) => o.spec.field), kc, defaultFlagValues());
  warnings.push(...flagWarnings(occurrences));
  if (values.version !== "" && values.version !== "false") {
    warnings.push(
      `--version=${values.version}: overriding the reported version is not implemented by denolet`,
    );
  }

  const labelProblems = validateNodeLabels(values.nodeLabels);
  if (labelProblems.length > 0) throw new FlagError(labelProblems.join("; "));
  const nodeIPs = values.nodeIp === "" ? [] : values.nodeIp.split(",").map((s) => s.trim());
  if (nodeIPs.length > 2 || nodeIPs.some((ip) => isIP(ip) === 0)) {
    throw new FlagError(`bad --node-ip "${values.nodeIp}": want one IP or a dual-stack pair`);
  }
  const problems = validateKubeletConfiguration(kc);
  if (problems.length > 0) throw new ConfigValidationError(problems, values.configFile);
  return { kind: "run", options: toAgentOptions(kc, values, warnings) };
}

/**
 * Upstream's baseline options: no `--config`, no flags.
 * @returns the options `parseFlags([])` gives
 */
export function defaultOptions(): AgentOptions {
  return toAgentOptions(baselineConfig(), defaultFlagValues(), []);
}

export { helpText };
