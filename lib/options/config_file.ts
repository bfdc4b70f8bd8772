/**
 * Loading a KubeletConfiguration file (`--config`): YAML or JSON, decoded
 * strictly against the upstream field set, defaulted as upstream defaults
 * v1beta1, with relative paths resolved against the file's directory.
 *
 * Unknown fields are errors that name the field path (`unknown field
 * "authentication.foo"`); upstream fields denolet does not act on are accepted
 * with a warning that names them.
 *
 * @module
 */

import { dirname, isAbsolute, resolve } from "node:path";
import { parse as parseYaml } from "yaml";
import { formatDuration, parseSignedDuration } from "../util/duration.ts";
import {
  DEFAULT_EVICTION_HARD,
  defaultKubeletConfiguration,
  KUBELET_CONFIG_API_VERSION,
  KUBELET_CONFIG_KIND,
  type KubeletConfiguration,
} from "./kubelet_config.ts";
import {
  IMPLEMENTED_FIELDS,
  isZeroValue,
  KUBELET_CONFIG_SCHEMA,
  leafCode,
  type ObjectSchema,
  type SchemaNode,
} from "./schema.ts";
import { parseQuantity } from "../api/quantity.ts";

/** A file that cannot be read, parsed, decoded: the message names the file and every problem. */
export class ConfigFileError extends Error {
  override name = "ConfigFileError";
  /** The file as given to `--config`. */
  readonly path: string;
  /** One entry per problem, each naming its field path. */
  readonly problems: readonly string[];

  /**
   * @param path the file
   * @param problems what is wrong, one per entry
   * @param options the underlying error, if any
   */
  constructor(path: string, problems: readonly string[], options?: ErrorOptions) {
    super(`failed to load Kubelet config file ${path}, error: ${problems.join("; ")}`, options);
    this.path = path;
    this.problems = problems;
  }
}

/** A decoded, defaulted file. */
export interface LoadedConfig {
  config: KubeletConfiguration;
  /** "field X is not implemented by denolet and is ignored", one per field set. */
  warnings: string[];
}

/** Options for {@link loadConfigFile}. */
export interface LoadConfigFileOptions {
  /** Reads the file; `Deno.readTextFileSync` by default (tests inject). */
  readFile?: (path: string) => string;
}

/** The warning for a field denolet accepts but does not act on. */
export function notImplementedWarning(path: string): string {
  return `field "${path}" is not implemented by denolet and is ignored`;
}

/**
 * Reads and decodes a KubeletConfiguration file.
 * @param path the `--config` value; relative to the working directory
 * @param opts how to read it
 * @returns the defaulted configuration and the warnings for fields ignored
 * @throws {ConfigFileError} naming the file and each bad field
 */
export function loadConfigFile(path: string, opts: LoadConfigFileOptions = {}): LoadedConfig {
  const read = opts.readFile ?? ((p: string) => Deno.readTextFileSync(p));
  const abs = resolve(path);
  let text: string;
  try {
    text = read(abs);
  } catch (err) {
    const denied = err instanceof Deno.errors.NotCapable;
    const hint = denied ? ` (denolet's Deno permissions do not allow reading ${abs})` : "";
    throw new ConfigFileError(path, [(err as Error).message + hint], { cause: err });
  }
  return decodeKubeletConfiguration(text, { path, baseDir: dirname(abs) });
}

/** Where a decoded text came from, for errors and relative paths. */
export interface DecodeOptions {
  /** Named in errors. */
  path: string;
  /** Relative file paths in the config resolve against it; left as written when omitted. */
  baseDir?: string;
}

/**
 * Decodes KubeletConfiguration text (YAML or JSON) strictly and defaults it.
 * @param text the file content
 * @param opts the file's name and directory
 * @returns the defaulted configuration and warnings
 * @throws {ConfigFileError} on a parse error, a wrong apiVersion/kind, an unknown
 *   field or a value of the wrong type
 */
export function decodeKubeletConfiguration(text: string, opts: DecodeOptions): LoadedConfig {
  let doc: unknown;
  try {
    doc = parseYaml(text, { uniqueKeys: true, prettyErrors: false });
  } catch (err) {
    throw new ConfigFileError(opts.path, [`not valid YAML or JSON: ${(err as Error).message}`], {
      cause: err,
    });
  }
  if (!isPlainObject(doc)) {
    throw new ConfigFileError(opts.path, ["the file must hold a KubeletConfiguration object"]);
  }
  const problems: string[] = [];
  const { apiVersion, kind, ...fields } = doc;
  if (kind === undefined || kind === "") problems.push(`Object 'Kind' is missing`);
  else if (kind !== KUBELET_CONFIG_KIND) {
    problems.push(`kind ${JSON.stringify(kind)} is not supported: want "${KUBELET_CONFIG_KIND}"`);
  }
  if (apiVersion !== KUBELET_CONFIG_API_VERSION) {
    problems.push(
      `apiVersion ${
        JSON.stringify(apiVersion ?? "")
      } is not supported: want "${KUBELET_CONFIG_API_VERSION}"`,
    );
  }
  const decoded = decodeObject(fields, KUBELET_CONFIG_SCHEMA, "", problems) as Partial<
    KubeletConfiguration
  >;
  if (problems.length > 0) throw new ConfigFileError(opts.path, problems);

  const warnings: string[] = [];
  collectWarnings(decoded as Record<string, unknown>, KUBELET_CONFIG_SCHEMA, "", warnings);
  if (opts.baseDir !== undefined) resolveRelativePaths(decoded, opts.baseDir);
  return { config: applyDefaults(decoded), warnings };
}

/**
 * Applies upstream's v1beta1 defaulting to a decoded file: a field left out,
 * or a plain (non-pointer) field set to its zero value, takes the default.
 * Also the defaults that depend on other fields, and evictionHard's.
 * @param decoded the fields the file set
 * @returns the full configuration, in upstream field order
 */
export function applyDefaults(decoded: Partial<KubeletConfiguration>): KubeletConfiguration {
  const merged = mergeDefaults(
    decoded as Record<string, unknown>,
    defaultKubeletConfiguration() as unknown as Record<string, unknown>,
    KUBELET_CONFIG_SCHEMA,
  ) as Partial<KubeletConfiguration>;
  const kc = {
    apiVersion: KUBELET_CONFIG_API_VERSION,
    kind: KUBELET_CONFIG_KIND,
    ...merged,
  } as KubeletConfiguration;
  // An explicit update frequency also sets the report frequency when that is unset.
  if (
    isZeroValue(decoded.nodeStatusReportFrequency) &&
    !isZeroValue(decoded.nodeStatusUpdateFrequency)
  ) {
    kc.nodeStatusReportFrequency = decoded.nodeStatusUpdateFrequency!;
  }
  if ((kc.podPidsLimit ?? -1) < 0) kc.podPidsLimit = -1;
  if (decoded.serializeImagePulls === undefined) {
    kc.serializeImagePulls = (decoded.maxParallelImagePulls ?? 0) < 2;
  }
  applyEvictionDefaults(kc);
  return kc;
}

/**
 * Fills `evictionHard` as upstream does after loading the file: the defaults
 * when the field is absent, merged under the set signals only when
 * mergeDefaultEvictionSettings is true (otherwise a partial map replaces them).
 * @param kc the configuration, changed in place
 */
export function applyEvictionDefaults(kc: KubeletConfiguration): void {
  if (kc.evictionHard === undefined) kc.evictionHard = { ...DEFAULT_EVICTION_HARD };
  else if (kc.mergeDefaultEvictionSettings) {
    kc.evictionHard = { ...DEFAULT_EVICTION_HARD, ...kc.evictionHard };
  }
}

const PATH_FIELDS = [
  ["staticPodPath"],
  ["authentication", "x509", "clientCAFile"],
  ["tlsCertFile"],
  ["tlsPrivateKeyFile"],
  ["resolvConf"],
  ["volumePluginDir"],
  ["podLogsDir"],
] as const;

// Upstream resolves the file-path fields of a config file against the file's
// directory, so a config shipped next to its certificates can name them relatively.
function resolveRelativePaths(kc: Partial<KubeletConfiguration>, baseDir: string): void {
  for (const path of PATH_FIELDS) {
    let holder = kc as Record<string, unknown>;
    for (const key of path.slice(0, -1)) {
      const next = holder[key];
      if (!isPlainObject(next)) {
        holder = {};
        break;
      }
      holder = next;
    }
    const leaf = path[path.length - 1]!;
    const value = holder[leaf];
    if (typeof value === "string" && value !== "" && !isAbsolute(value)) {
      holder[leaf] = resolve(baseDir, value);
    }
  }
}

function mergeDefaults(
  decoded: Record<string, unknown>,
  defaults: Record<string, unknown>,
  schema: ObjectSchema,
): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const [key, node] of Object.entries(schema)) {
    const value = decoded[key];
    const def = defaults[key];
    let result: unknown;
    if (typeof node === "object" && !Array.isArray(node)) {
      result = value === undefined && def === undefined ? undefined : mergeDefaults(
        (value ?? {}) as Record<string, unknown>,
        (def ?? {}) as Record<string, unknown>,
        node as ObjectSchema,
      );
    } else if (value === undefined) result = def;
    else if (typeof node === "string" && def !== undefined && !leafCode(node).pointer) {
      // Go defaults a plain field whose value is zero: `port: 0` means 10250.
      const scalar = typeof value !== "object";
      result = scalar && isZeroValue(value) ? def : value;
    } else result = value;
    if (result !== undefined) out[key] = result;
  }
  return out;
}

function collectWarnings(
  decoded: Record<string, unknown>,
  schema: ObjectSchema,
  prefix: string,
  warnings: string[],
): void {
  for (const [key, value] of Object.entries(decoded)) {
    const path = prefix + key;
    if (IMPLEMENTED_FIELDS.has(path)) continue;
    const node = schema[key];
    const partlyImplemented = [...IMPLEMENTED_FIELDS].some((f) => f.startsWith(`${path}.`));
    if (partlyImplemented && isPlainObject(value) && isPlainObject(node)) {
      collectWarnings(value, node as ObjectSchema, `${path}.`, warnings);
    } else warnings.push(notImplementedWarning(path));
  }
}

function isPlainObject(v: unknown): v is Record<string, unknown> {
  return typeof v === "object" && v !== null && !Array.isArray(v);
}

function describe(v: unknown): string {
  if (Array.isArray(v)) return "a list";
  if (v === null) return "null";
  if (typeof v === "object") return "an object";
  return `${typeof v} ${JSON.stringify(v)}`;
}

function decodeObject(
  raw: Record<string, unknown>,
  schema: ObjectSchema,
  prefix: string,
  problems: string[],
): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(raw)) {
    const path = prefix + key;
    const node = Object.hasOwn(schema, key) ? schema[key] : undefined;
    if (node === undefined) {
      problems.push(`unknown field ${JSON.stringify(path)}`);
      continue;
    }
    // A YAML `field:` with nothing after it is null: Go leaves such a field unset.
    if (value === null) continue;
    const decoded = decodeNode(value, node, path, problems);
    if (decoded !== undefined) out[key] = decoded;
  }
  return out;
}

function decodeNode(
  value: unknown,
  node: SchemaNode,
  path: string,
  problems: string[],
): unknown {
  if (Array.isArray(node)) {
    if (!Array.isArray(value)) return bad(problems, path, "a list", value);
    return value.map((item, i) => {
      const at = `${path}[${i}]`;
      if (!isPlainObject(item)) return bad(problems, at, "an object", item);
      return decodeObject(item, node[0] as ObjectSchema, `${at}.`, problems);
    });
  }
  if (typeof node === "object") {
    if (!isPlainObject(value)) return bad(problems, path, "an object", value);
    return decodeObject(value, node as ObjectSchema, `${path}.`, problems);
  }
  return decodeLeaf(value, leafCode(node).type, path, problems);
}

function bad(problems: string[], path: string, want: string, got: unknown): undefined {
  problems.push(`${path}: want ${want}, got ${describe(got)}`);
  return undefined;
}

function decodeLeaf(value: unknown, type: string, path: string, problems: string[]): unknown {
  switch (type) {
    case "s":
      return typeof value === "string" ? value : bad(problems, path, "a string", value);
    case "b":
      return typeof value === "boolean" ? value : bad(problems, path, "a boolean", value);
    case "i":
      return Number.isInteger(value) ? value : bad(problems, path, "an integer", value);
    case "f":
      return typeof value === "number" ? value : bad(problems, path, "a number", value);
    case "d":
    case "dn": {
      if (type === "dn" && Number.isInteger(value)) return formatDuration((value as number) / 1e6);
      if (typeof value !== "string") return bad(problems, path, "a duration string", value);
      try {
        return formatDuration(parseSignedDuration(value));
      } catch (err) {
        problems.push(`${path}: ${(err as Error).message}`);
        return undefined;
      }
    }
    case "q": {
      const q = typeof value === "number" ? String(value) : value;
      if (typeof q !== "string") return bad(problems, path, "a quantity", value);
      try {
        parseQuantity(q);
        return q;
      } catch (err) {
        problems.push(`${path}: ${(err as Error).message}`);
        return undefined;
      }
    }
    case "ss":
    case "is": {
      const want = type === "ss" ? "a list of strings" : "a list of integers";
      if (!Array.isArray(value)) return bad(problems, path, want, value);
      const ok = value.every((v) => type === "ss" ? typeof v === "string" : Number.isInteger(v));
      return ok ? value : bad(problems, path, want, value);
    }
    case "m":
    case "mb":
    case "mm":
    case "qm":
      return decodeMap(value, type, path, problems);
  }
  throw new Error(`schema: unknown leaf type ${type} at ${path}`);
}

function decodeMap(value: unknown, type: string, path: string, problems: string[]): unknown {
  if (!isPlainObject(value)) return bad(problems, path, "a map", value);
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(value)) {
    const at = `${path}[${JSON.stringify(k)}]`;
    if (type === "mm") {
      const ok = Array.isArray(v) && v.every((s) => typeof s === "string");
      if (ok) out[k] = v;
      else bad(problems, at, "a list of strings", v);
    } else if (type === "mb") {
      if (typeof v === "boolean") out[k] = v;
      else bad(problems, at, "a boolean", v);
    } else if (type === "qm") {
      const q = decodeLeaf(v, "q", at, problems);
      if (q !== undefined) out[k] = q;
    } else if (typeof v === "string") out[k] = v;
    else bad(problems, at, "a string", v);
  }
  return out;
}
