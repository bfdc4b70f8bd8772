/**
 * The agent's own metrics, served at `/metrics`, with the upstream kubelet's
 * names, help texts, labels and buckets (pkg/kubelet/metrics), plus the
 * process metrics client_golang's process collector exports.
 *
 * The agent feeds them through small hooks ({@link KubeletMetrics.observePlegRelist},
 * {@link KubeletMetrics.observePodStart}, …); CRI calls are timed by
 * `instrumentRuntime`.
 *
 * @module
 */

import { cpuUsage } from "node:process";
import { ExpositionWriter, type MetricFamily, renderFamilies } from "./exposition.ts";
import {
  type Counter,
  DEFAULT_BUCKETS,
  exponentialBuckets,
  type Gauge,
  type Histogram,
  Registry,
} from "./registry.ts";

/** client-go's rate limiter latency buckets (component-base restclient metrics), in seconds. */
export const REST_CLIENT_RATE_LIMITER_BUCKETS: readonly number[] = [
  0.005,
  0.025,
  0.1,
  0.25,
  0.5,
  1,
  2,
  4,
  8,
  15,
  30,
  60,
];

/** Upstream's podStartupDurationBuckets, in seconds. */
export const POD_START_BUCKETS: readonly number[] = [
  0.5,
  1,
  2,
  3,
  4,
  5,
  6,
  8,
  10,
  20,
  30,
  45,
  60,
  120,
  180,
  240,
  300,
  360,
  480,
  600,
  900,
  1200,
  1800,
  2700,
  3600,
];

/** Upstream's runtime operation buckets: ExponentialBuckets(.005, 2.5, 14). */
export const RUNTIME_OPERATION_BUCKETS: readonly number[] = exponentialBuckets(0.005, 2.5, 14);

/** What the process metrics are read from; tests replace it. */
export interface ProcessInfo {
  /** Resident set size, bytes. */
  rssBytes(): number;
  /** User + system CPU time, seconds. */
  cpuSeconds(): number;
  /** When the process started, epoch seconds. */
  startTimeSeconds: number;
}

/** The running process, through Deno and node:process (no /proc read). */
export const currentProcess: ProcessInfo = {
  rssBytes: () => Deno.memoryUsage().rss,
  cpuSeconds: () => {
    const u = cpuUsage();
    return (u.user + u.system) / 1e6;
  },
  // performance.timeOrigin is when this isolate started, within ms of exec.
  startTimeSeconds: Math.floor(performance.timeOrigin) / 1000,
};

/** Options for {@link KubeletMetrics}. */
export interface KubeletMetricsOptions {
  /** Process figures; the running process by default. */
  process?: ProcessInfo;
}

/** The agent's metrics registry and its hooks. */
export class KubeletMetrics {
  readonly #registry = new Registry();
  readonly #process: ProcessInfo;
  /** `kubelet_pod_start_sli_duration_seconds`. */
  readonly podStartSli: Histogram;
  /** `kubelet_pleg_relist_duration_seconds`. */
  readonly plegRelistDuration: Histogram;
  /** `kubelet_pleg_relist_interval_seconds`. */
  readonly plegRelistInterval: Histogram;
  /** `kubelet_runtime_operations_total{operation_type}`. */
  readonly runtimeOperations: Counter;
  /** `kubelet_runtime_operations_errors_total{operation_type}`. */
  readonly runtimeOperationErrors: Counter;
  /** `kubelet_runtime_operations_duration_seconds{operation_type}`. */
  readonly runtimeOperationDuration: Histogram;
  /** `kubelet_pod_worker_duration_seconds{operation_type}`. */
  readonly podWorkerDuration: Histogram;
  /** `kubelet_running_pods`. */
  readonly runningPods: Gauge;
  /** `kubelet_running_containers{container_state}`. */
  readonly runningContainers: Gauge;
  /** `kubelet_image_garbage_collected_total{reason}` ("age" or "space"). */
  readonly imageGarbageCollected: Counter;
  /** `kubelet_evictions{eviction_signal}`. */
  readonly evictions: Counter;
  /** `kubelet_eviction_stats_age_seconds{eviction_signal}`. */
  readonly evictionStatsAge: Histogram;
  /** `kubelet_lifecycle_handler_http_fallbacks_total`. */
  readonly lifecycleHandlerHttpFallbacks: Counter;
  /** client-go's `rest_client_requests_total{code,method,host}`. */
  readonly restClientRequests: Counter;
  /** client-go's `rest_client_rate_limiter_duration_seconds{verb,host}`. */
  readonly restClientRateLimiterDuration: Histogram;
  #lastRelistStartMs: number | undefined;

  /** @param opts where process figures come from */
  constructor(opts: KubeletMetricsOptions = {}) {
    this.#process = opts.process ?? currentProcess;
    const r = this.#registry;
    this.podStartSli = r.histogram({
      name: "kubelet_pod_start_sli_duration_seconds",
      help:
        "Duration in seconds to start a pod, excluding time to pull images and run init containers, measured from pod creation timestamp to when all its containers are reported as started and observed via watch",
      buckets: POD_START_BUCKETS,
      stability: "ALPHA",
    });
    this.plegRelistDuration = r.histogram({
      name: "kubelet_pleg_relist_duration_seconds",
      help: "Duration in seconds for relisting pods in PLEG.",
      buckets: DEFAULT_BUCKETS,
      stability: "ALPHA",
    });
    this.plegRelistInterval = r.histogram({
      name: "kubelet_pleg_relist_interval_seconds",
      help: "Interval in seconds between relisting in PLEG.",
      buckets: DEFAULT_BUCKETS,
      stability: "ALPHA",
    });
    this.runtimeOperations = r.counter({
      name: "kubelet_runtime_operations_total",
      help: "Cumulative number of runtime operations by operation type.",
      labelNames: ["operation_type"],
      stability: "ALPHA",
    });
    this.runtimeOperationErrors = r.counter({
      name: "kubelet_runtime_operations_errors_total",
      help: "Cumulative number of runtime operation errors by operation type.",
      labelNames: ["operation_type"],
      stability: "ALPHA",
    });
    this.runtimeOperationDuration = r.histogram({
      name: "kubelet_runtime_operations_duration_seconds",
      help: "Duration in seconds of runtime operations. Broken down by operation type.",
      labelNames: ["operation_type"],
      buckets: RUNTIME_OPERATION_BUCKETS,
      stability: "ALPHA",
    });
    this.podWorkerDuration = r.histogram({
      name: "kubelet_pod_worker_duration_seconds",
      help:
        "Duration in seconds to sync a single pod. Broken down by operation type: create, update, or sync",
      labelNames: ["operation_type"],
      buckets: DEFAULT_BUCKETS,
      stability: "ALPHA",
    });
    this.runningPods = r.gauge({
      name: "kubelet_running_pods",
      help: "Number of pods that have a running pod sandbox",
      stability: "ALPHA",
    });
    this.runningContainers = r.gauge({
      name: "kubelet_running_containers",
      help: "Number of containers currently running",
      labelNames: ["container_state"],
      stability: "ALPHA",
    });
    this.imageGarbageCollected = r.counter({
      name: "kubelet_image_garbage_collected_total",
      help:
        "Total number of images garbage collected by the kubelet, whether through disk usage or image age.",
      labelNames: ["reason"],
      stability: "ALPHA",
    });
    this.evictions = r.counter({
      name: "kubelet_evictions",
      help: "Cumulative number of pod evictions by eviction signal",
      labelNames: ["eviction_signal"],
      stability: "ALPHA",
    });
    this.evictionStatsAge = r.histogram({
      name: "kubelet_eviction_stats_age_seconds",
      help:
        "Time between when stats are collected, and when pod is evicted based on those stats by eviction signal",
      labelNames: ["eviction_signal"],
      buckets: DEFAULT_BUCKETS,
      stability: "ALPHA",
    });
    this.lifecycleHandlerHttpFallbacks = r.counter({
      name: "kubelet_lifecycle_handler_http_fallbacks_total",
      help: "The number of times lifecycle handlers successfully fell back to http from https.",
      stability: "ALPHA",
    });
    this.restClientRequests = r.counter({
      name: "rest_client_requests_total",
      help: "Number of HTTP requests, partitioned by status code, method, and host.",
      labelNames: ["code", "method", "host"],
      stability: "ALPHA",
    });
    this.restClientRateLimiterDuration = r.histogram({
      name: "rest_client_rate_limiter_duration_seconds",
      help: "Client side rate limiter latency in seconds. Broken down by verb, and host.",
      labelNames: ["verb", "host"],
      buckets: REST_CLIENT_RATE_LIMITER_BUCKETS,
      stability: "ALPHA",
    });
    this.runningPods.set(0);
    // A counter without labels is on /metrics from the start, as upstream's (0).
    this.lifecycleHandlerHttpFallbacks.inc(0);
  }

  /**
   * Records how long an apiserver request waited for the client's rate limiter.
   * @param verb the HTTP method
   * @param host the apiserver's host:port
   * @param waitedMs the wait
   */
  observeRestClientRateLimiter(verb: string, host: string, waitedMs: number): void {
    this.restClientRateLimiterDuration.observe(waitedMs / 1000, verb, host);
  }

  /**
   * Counts one apiserver request by outcome.
   * @param code the HTTP status code, or `<error>` when no response came
   * @param method the HTTP method
   * @param host the apiserver's host:port
   */
  observeRestClientResult(code: string, method: string, host: string): void {
    this.restClientRequests.inc(1, code, method, host);
  }

  /**
   * Records one PLEG relist: its duration, and (as upstream) the interval
   * from the previous relist's start to this one's.
   * @param durationMs how long the relist took
   * @param endedAtMs when it ended (epoch ms)
   */
  observePlegRelist(durationMs: number, endedAtMs: number): void {
    this.plegRelistDuration.observe(durationMs / 1000);
    const startMs = endedAtMs - durationMs;
    if (this.#lastRelistStartMs !== undefined) {
      this.plegRelistInterval.observe(Math.max(0, startMs - this.#lastRelistStartMs) / 1000);
    }
    this.#lastRelistStartMs = startMs;
  }

  /** Counts an HTTPS lifecycle hook that passed over HTTP (`kubelet_lifecycle_handler_http_fallbacks_total`). */
  countHookHttpFallback(): void {
    this.lifecycleHandlerHttpFallbacks.inc();
  }

  /**
   * Counts an eviction (`kubelet_evictions`).
   * @param signal the signal it reclaimed, or a local storage limit ("emptydirfs.limit", …)
   */
  countEviction(signal: string): void {
    this.evictions.inc(1, signal);
  }

  /**
   * How old the stats were that an eviction round acted on (`kubelet_eviction_stats_age_seconds`).
   * @param signal the met threshold's signal
   * @param ageMs now minus the observation's sample time
   */
  observeEvictionStatsAge(signal: string, ageMs: number): void {
    this.evictionStatsAge.observe(ageMs / 1000, signal);
  }

  /**
   * Records a pod start (creation timestamp → all containers started, image pulls excluded).
   * @param durationMs the duration
   */
  observePodStart(durationMs: number): void {
    this.podStartSli.observe(durationMs / 1000);
  }

  /**
   * Records one pod worker sync.
   * @param operation "create", "update" or "sync" (upstream's operation types)
   * @param durationMs how long the sync took
   */
  observePodWorker(operation: string, durationMs: number): void {
    this.podWorkerDuration.observe(durationMs / 1000, operation);
  }

  /**
   * Records one CRI call.
   * @param operation upstream's operation name ("run_podsandbox", "list_containers", …)
   * @param durationMs how long it took
   * @param failed whether it returned an error
   */
  observeRuntimeOperation(operation: string, durationMs: number, failed: boolean): void {
    this.runtimeOperations.inc(1, operation);
    this.runtimeOperationDuration.observe(durationMs / 1000, operation);
    if (failed) this.runtimeOperationErrors.inc(1, operation);
  }

  /**
   * Counts an image removed by image GC.
   * @param reason "age" (imageMaximumGCAge) or "space" (the thresholds, or eviction's reclaim)
   */
  observeImageGarbageCollected(reason: string): void {
    this.imageGarbageCollected.inc(1, reason);
  }

  /**
   * Sets the running pod and container gauges.
   * @param pods pods with a ready sandbox
   * @param containersByState container count by state ("running", "exited", "created", "unknown")
   */
  setRunning(pods: number, containersByState: Readonly<Record<string, number>>): void {
    this.runningPods.set(pods);
    this.runningContainers.reset();
    for (const [state, n] of Object.entries(containersByState)) {
      this.runningContainers.set(n, state);
    }
  }

  /** @returns every family, the kubelet's and the process collector's */
  families(): MetricFamily[] {
    const w = new ExpositionWriter();
    w.family("process_resident_memory_bytes", "Resident memory size in bytes.", "gauge")
      .add({}, this.#process.rssBytes());
    w.family(
      "process_cpu_seconds_total",
      "Total user and system CPU time spent in seconds.",
      "counter",
    ).add({}, this.#process.cpuSeconds());
    w.family(
      "process_start_time_seconds",
      "Start time of the process since unix epoch in seconds.",
      "gauge",
    ).add({}, this.#process.startTimeSeconds);
    return [...this.#registry.collect(), ...w.families()];
  }

  /** @returns the `/metrics` text */
  render(): string {
    return renderFamilies(this.families());
  }
}
