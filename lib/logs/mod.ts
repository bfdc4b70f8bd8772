/**
 * Container and node logs as the kubelet serves and keeps them: the
 * `/containerLogs/{namespace}/{pod}/{container}` and `/logs/` handlers of the
 * kubelet server, the CRI log format reader behind the first, and log
 * rotation of running containers (upstream's ContainerLogManager).
 *
 * ```ts
 * import { containerLogsHandler, ContainerLogManager, nodeLogsHandler } from "./lib/logs/mod.ts";
 * const logs = containerLogsHandler({ getPodByName, runtime, clock, logger });
 * const nodeLogs = nodeLogsHandler(); // serves /var/log
 * // routes: GET /containerLogs/... → logs(req, url); GET /logs/... → nodeLogs(req, url)
 * const rotation = new ContainerLogManager({ runtime, clock, logger, listRunningContainers });
 * rotation.start();
 * ```
 *
 * @module
 */

export type { Handler } from "./_http.ts";
export {
  containerIdForLogs,
  containerLogsHandler,
  type ContainerLogsOptions,
} from "./container_logs.ts";
export { DEFAULT_NODE_LOG_DIR, nodeLogsHandler, type NodeLogsOptions } from "./node_logs.ts";
export {
  LogQueryError,
  type LogReadOptions,
  logReadOptions,
  parsePodLogQuery,
  type PodLogOptions,
} from "./log_options.ts";
export {
  type LogRecord,
  type LogStream,
  parseCriLine,
  type ParsedTime,
  parseRfc3339,
  tailStartOffset,
} from "./cri_format.ts";
export { openContainerLog, type OpenContainerLogOptions, readLogTail } from "./read_logs.ts";
export {
  cleanContainerLogs,
  ContainerLogManager,
  type ContainerLogManagerOptions,
  type ContainerLogRotationConfig,
  DEFAULT_CONTAINER_LOG_MAX_FILES,
  DEFAULT_CONTAINER_LOG_MAX_SIZE,
  listRunningContainerLogs,
  LOG_MONITOR_PERIOD_MS,
  rotationPolicy,
  type RunningContainerLog,
  timestamp as rotatedLogTimestamp,
} from "./rotation.ts";
