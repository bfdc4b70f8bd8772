/**
 * The prober's metrics, as upstream's pkg/kubelet/prober:
 * `prober_probe_total{probe_type,result,container,pod,namespace,pod_uid}`
 * (result "successful", "failed", "unknown") and
 * `prober_probe_duration_seconds{probe_type,container,pod,namespace}`.
 * A worker's series are dropped when it stops, as upstream deletes them, so
 * pods that come and go leave nothing behind.
 *
 * @module
 */

import { type ExpositionSample, formatValue, renderFamilies } from "../metrics/exposition.ts";
import type { ProbeResultKind, ProbeType } from "./types.ts";

/** client_golang's DefBuckets: upstream's probe histogram sets no buckets of its own. */
const BUCKETS: readonly number[] = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10];

const RESULT_LABEL: Record<ProbeResultKind, string> = {
  success: "successful",
  failure: "failed",
  unknown: "unknown",
};

/** The labels of one worker's series. */
export interface ProbeSeriesLabels {
  probeType: ProbeType;
  container: string;
  pod: string;
  namespace: string;
  podUID: string;
}

interface Series {
  labels: ProbeSeriesLabels;
  counts: Record<ProbeResultKind, number>;
  /** Histogram: per-bucket (non-cumulative) counts, sum, count. */
  buckets: number[];
  sum: number;
  observed: number;
}

/** Counters and histograms of every probe worker. */
export class ProbeMetrics {
  readonly #series = new Map<string, Series>();

  /**
   * Records one probe: the counter always; the duration for a success or an
   * unknown result, as upstream observes it.
   * @param key the worker's identity (pod uid, container, type)
   * @param labels the worker's labels
   * @param result the probe's result
   * @param seconds how long the probe took
   */
  record(key: string, labels: ProbeSeriesLabels, result: ProbeResultKind, seconds: number): void {
    let s = this.#series.get(key);
    if (!s) {
      s = {
        labels,
        counts: { success: 0, failure: 0, unknown: 0 },
        buckets: new Array(BUCKETS.length).fill(0),
        sum: 0,
        observed: 0,
      };
      this.#series.set(key, s);
    }
    s.counts[result]++;
    if (result === "failure") return;
    const i = BUCKETS.findIndex((b) => seconds <= b);
    if (i >= 0) s.buckets[i]!++;
    s.sum += seconds;
    s.observed++;
  }

  /**
   * Drops a worker's series.
   * @param key the worker's identity
   */
  forget(key: string): void {
    this.#series.delete(key);
  }

  /** The number of workers with series. */
  get size(): number {
    return this.#series.size;
  }

  /**
   * The current value of one counter, for tests and logs.
   * @param key the worker's identity
   * @param result which result
   * @returns the count, 0 when the worker has none
   */
  count(key: string, result: ProbeResultKind): number {
    return this.#series.get(key)?.counts[result] ?? 0;
  }

  /** @returns `/metrics/probes` in the Prometheus text format */
  render(): string {
    const all = [...this.#series.values()].sort((a, b) => compareLabels(a.labels, b.labels));
    const totals: ExpositionSample[] = [];
    const durations: ExpositionSample[] = [];
    for (const s of all) {
      const l = s.labels;
      const base = { container: l.container, namespace: l.namespace, pod: l.pod };
      for (const r of ["failure", "success", "unknown"] as const) {
        if (s.counts[r] === 0) continue;
        totals.push({
          labels: { ...base, pod_uid: l.podUID, probe_type: l.probeType, result: RESULT_LABEL[r] },
          value: s.counts[r],
        });
      }
      if (s.observed === 0) continue;
      const labels = { ...base, probe_type: l.probeType };
      let cumulative = 0;
      BUCKETS.forEach((b, i) => {
        cumulative += s.buckets[i]!;
        durations.push({
          labels: { ...labels, le: formatValue(b) },
          value: cumulative,
          suffix: "_bucket",
        });
      });
      durations.push({ labels: { ...labels, le: "+Inf" }, value: s.observed, suffix: "_bucket" });
      durations.push({ labels, value: s.sum, suffix: "_sum" });
      durations.push({ labels, value: s.observed, suffix: "_count" });
    }
    return renderFamilies([
      {
        name: "prober_probe_total",
        help:
          "[BETA] Cumulative number of a liveness, readiness or startup probe for a container by result.",
        type: "counter",
        samples: totals,
      },
      {
        name: "prober_probe_duration_seconds",
        help: "[ALPHA] Duration in seconds for a probe response.",
        type: "histogram",
        samples: durations,
      },
    ]);
  }
}

/** Orders series as client_golang does: by label values in label-name order. */
function compareLabels(a: ProbeSeriesLabels, b: ProbeSeriesLabels): number {
  const ka = [a.container, a.namespace, a.pod, a.podUID, a.probeType].join("\u0000");
  const kb = [b.container, b.namespace, b.pod, b.podUID, b.probeType].join("\u0000");
  return ka < kb ? -1 : ka > kb ? 1 : 0;
}
