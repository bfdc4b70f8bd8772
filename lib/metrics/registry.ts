/**
 * A small metrics registry in the spirit of k8s.io/component-base/metrics:
 * counters, gauges and histograms with fixed label names, a stability level
 * that prefixes the HELP text ("[ALPHA] ", "[STABLE] ") as upstream does, and
 * collection into exposition families.
 *
 * @module
 */

import { type ExpositionSample, formatValue, type MetricFamily } from "./exposition.ts";

/** component-base's stability levels; `undefined` means a raw Prometheus metric (no prefix). */
export type StabilityLevel = "ALPHA" | "BETA" | "STABLE";

/** Prometheus' default histogram buckets (client_golang DefBuckets). */
export const DEFAULT_BUCKETS: readonly number[] = [
  0.005,
  0.01,
  0.025,
  0.05,
  0.1,
  0.25,
  0.5,
  1,
  2.5,
  5,
  10,
];

/**
 * `count` buckets starting at `start`, each `factor` times the previous
 * (client_golang ExponentialBuckets).
 * @param start first upper bound, > 0
 * @param factor growth, > 1
 * @param count number of buckets, ≥ 1
 * @returns the bounds
 * @throws {RangeError} on invalid arguments
 */
export function exponentialBuckets(start: number, factor: number, count: number): number[] {
  if (!(start > 0) || !(factor > 1) || !(count >= 1)) {
    throw new RangeError(`exponentialBuckets(${start}, ${factor}, ${count}): invalid arguments`);
  }
  const out: number[] = [];
  let b = start;
  for (let i = 0; i < count; i++, b *= factor) out.push(b);
  return out;
}

/** What every metric is declared with. */
export interface MetricOptions {
  name: string;
  help: string;
  /** Label names, in declaration order; values are passed in the same order. */
  labelNames?: readonly string[];
  /** Prefixes HELP as component-base does; absent for plain Prometheus metrics. */
  stability?: StabilityLevel;
}

/** Options of a histogram. */
export interface HistogramOptions extends MetricOptions {
  /** Upper bounds, ascending; +Inf is implicit. */
  buckets: readonly number[];
}

interface Collectable {
  collect(): MetricFamily;
}

function helpOf(o: MetricOptions): string {
  return o.stability ? `[${o.stability}] ${o.help}` : o.help;
}

abstract class Vec<T> implements Collectable {
  protected readonly children = new Map<string, { values: string[]; child: T }>();
  constructor(readonly opts: MetricOptions) {}

  protected abstract make(): T;

  protected get(values: readonly string[]): T {
    const names = this.opts.labelNames ?? [];
    if (values.length !== names.length) {
      throw new RangeError(
        `metric ${this.opts.name}: expected ${names.length} label values, got ${values.length}`,
      );
    }
    const key = values.join("\u0000");
    let entry = this.children.get(key);
    if (!entry) {
      entry = { values: [...values], child: this.make() };
      this.children.set(key, entry);
    }
    return entry.child;
  }

  protected labels(values: readonly string[]): Record<string, string> {
    const out: Record<string, string> = {};
    (this.opts.labelNames ?? []).forEach((n, i) => (out[n] = values[i]!));
    return out;
  }

  protected sortedChildren(): { values: string[]; child: T }[] {
    return [...this.children.values()].sort((a, b) => {
      const ka = a.values.join("\u0000");
      const kb = b.values.join("\u0000");
      return ka < kb ? -1 : ka > kb ? 1 : 0;
    });
  }

  abstract collect(): MetricFamily;
}

/** One number per label values; Counter and Gauge differ only in how it changes. */
abstract class ScalarVec extends Vec<{ value: number }> {
  protected abstract readonly type: "counter" | "gauge";

  protected make(): { value: number } {
    return { value: 0 };
  }

  /**
   * The current value.
   * @param labelValues values for the declared label names
   */
  value(...labelValues: string[]): number {
    return this.children.get(labelValues.join("\u0000"))?.child.value ?? 0;
  }

  collect(): MetricFamily {
    return {
      name: this.opts.name,
      help: helpOf(this.opts),
      type: this.type,
      samples: this.sortedChildren().map((c) => ({
        labels: this.labels(c.values),
        value: c.child.value,
      })),
    };
  }
}

/** A monotonically increasing count, per label values. */
export class Counter extends ScalarVec {
  protected readonly type = "counter";

  /**
   * Adds to the counter.
   * @param amount ≥ 0
   * @param labelValues values for the declared label names
   * @throws {RangeError} on a negative amount or a wrong number of label values
   */
  inc(amount = 1, ...labelValues: string[]): void {
    if (amount < 0) throw new RangeError(`counter ${this.opts.name} cannot decrease`);
    this.get(labelValues).value += amount;
  }
}

/** A value that goes up and down, per label values. */
export class Gauge extends ScalarVec {
  protected readonly type = "gauge";

  /**
   * Sets the gauge.
   * @param value the value
   * @param labelValues values for the declared label names
   */
  set(value: number, ...labelValues: string[]): void {
    this.get(labelValues).value = value;
  }

  /** Drops every child (before setting a fresh set of label values). */
  reset(): void {
    this.children.clear();
  }
}

interface HistogramChild {
  counts: number[];
  sum: number;
  count: number;
}

/** Observations counted into cumulative buckets, per label values. */
export class Histogram extends Vec<HistogramChild> {
  readonly #buckets: readonly number[];

  /** @param opts name, help, labels and bucket bounds */
  constructor(opts: HistogramOptions) {
    super(opts);
    for (let i = 1; i < opts.buckets.length; i++) {
      if (!(opts.buckets[i]! > opts.buckets[i - 1]!)) {
        throw new RangeError(`histogram ${opts.name}: buckets must be strictly ascending`);
      }
    }
    this.#buckets = opts.buckets;
  }

  protected make(): HistogramChild {
    return { counts: new Array(this.#buckets.length).fill(0), sum: 0, count: 0 };
  }

  /**
   * Records an observation.
   * @param value the observation (seconds, for every kubelet histogram)
   * @param labelValues values for the declared label names
   */
  observe(value: number, ...labelValues: string[]): void {
    const child = this.get(labelValues);
    const i = this.#buckets.findIndex((b) => value <= b);
    if (i >= 0) child.counts[i]!++;
    child.sum += value;
    child.count++;
  }

  /**
   * Count and sum of observations.
   * @param labelValues values for the declared label names
   */
  snapshot(...labelValues: string[]): { count: number; sum: number } {
    const c = this.children.get(labelValues.join("\u0000"))?.child;
    return { count: c?.count ?? 0, sum: c?.sum ?? 0 };
  }

  collect(): MetricFamily {
    const samples: ExpositionSample[] = [];
    for (const { values, child } of this.sortedChildren()) {
      const labels = this.labels(values);
      let cumulative = 0;
      this.#buckets.forEach((b, i) => {
        cumulative += child.counts[i]!;
        samples.push({
          labels: { ...labels, le: formatValue(b) },
          value: cumulative,
          suffix: "_bucket",
        });
      });
      samples.push({ labels: { ...labels, le: "+Inf" }, value: child.count, suffix: "_bucket" });
      samples.push({ labels, value: child.sum, suffix: "_sum" });
      samples.push({ labels, value: child.count, suffix: "_count" });
    }
    return { name: this.opts.name, help: helpOf(this.opts), type: "histogram", samples };
  }
}

/** A set of metrics collected together. */
export class Registry {
  readonly #metrics: Collectable[] = [];
  readonly #names = new Set<string>();

  #add<T extends Collectable>(name: string, m: T): T {
    if (this.#names.has(name)) throw new Error(`metric ${name} registered twice`);
    this.#names.add(name);
    this.#metrics.push(m);
    return m;
  }

  /** Registers a counter. @param opts name, help, labels, stability */
  counter(opts: MetricOptions): Counter {
    return this.#add(opts.name, new Counter(opts));
  }

  /** Registers a gauge. @param opts name, help, labels, stability */
  gauge(opts: MetricOptions): Gauge {
    return this.#add(opts.name, new Gauge(opts));
  }

  /** Registers a histogram. @param opts name, help, labels, stability, buckets */
  histogram(opts: HistogramOptions): Histogram {
    return this.#add(opts.name, new Histogram(opts));
  }

  /** @returns every metric's family, current values */
  collect(): MetricFamily[] {
    return this.#metrics.map((m) => m.collect());
  }
}
