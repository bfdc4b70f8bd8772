/**
 * Metrics: the Prometheus text exposition writer shared by every endpoint,
 * a small registry (counters, gauges, histograms with upstream's buckets),
 * the agent's own `/metrics` ({@link KubeletMetrics}) and the CRI decorator
 * that times every runtime call ({@link instrumentRuntime}).
 *
 * ```ts
 * const metrics = new KubeletMetrics();
 * const runtime = instrumentRuntime(createRuntimeService({ endpoint }), metrics);
 * metrics.observePlegRelist(12, Date.now());
 * const text = metrics.render();
 * ```
 *
 * @module
 */

export {
  escapeHelp,
  escapeLabelValue,
  EXPOSITION_CONTENT_TYPE,
  type ExpositionSample,
  ExpositionWriter,
  type FamilyBuilder,
  formatValue,
  type MetricFamily,
  type MetricType,
  renderFamilies,
} from "./exposition.ts";
export {
  Counter,
  DEFAULT_BUCKETS,
  exponentialBuckets,
  Gauge,
  Histogram,
  type HistogramOptions,
  type MetricOptions,
  Registry,
  type StabilityLevel,
} from "./registry.ts";
export {
  currentProcess,
  KubeletMetrics,
  type KubeletMetricsOptions,
  POD_START_BUCKETS,
  type ProcessInfo,
  RUNTIME_OPERATION_BUCKETS,
} from "./kubelet_metrics.ts";
export { instrumentRuntime, OPERATION_NAMES, type RuntimeOperationObserver } from "./instrument.ts";
