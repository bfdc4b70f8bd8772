/**
 * Configuration as the upstream kubelet takes it: the kubelet's flags, the
 * KubeletConfiguration file named by `--config` (flags override it), upstream's
 * defaults and validation, `--help`/`--version`, and `/configz`.
 *
 * ```ts
 * const parsed = parseFlags(Deno.args);
 * if (parsed.kind === "run") for (const w of parsed.options.warnings) logger.warn(w);
 * ```
 *
 * @module
 */

export {
  type AgentOptions,
  ConfigValidationError,
  defaultOptions,
  FlagError,
  helpText,
  type ParsedFlags,
  parseFlags,
  type ParseFlagsOptions,
  versionText,
} from "./flags.ts";
export {
  ConfigFileError,
  decodeKubeletConfiguration,
  loadConfigFile,
  type LoadConfigFileOptions,
  type LoadedConfig,
} from "./config_file.ts";
export {
  DEFAULT_EVICTION_HARD,
  defaultKubeletConfiguration,
  KUBELET_CONFIG_API_VERSION,
  KUBELET_CONFIG_KIND,
  type KubeletAuthentication,
  type KubeletAuthorization,
  type KubeletConfiguration,
} from "./kubelet_config.ts";
export {
  type EvictionThreshold,
  parseEvictionThresholds,
  parseMinimumReclaims,
  parseTaint,
  restrictedNodeLabels,
  restrictedNodeLabelsMessage,
  validateKubeletConfiguration,
} from "./validation.ts";
export { encodeKubeletConfiguration } from "./configz.ts";
