/**
 * The benchmarks' percentile: nearest rank, as every table in
 * docs/benchmarks.md reports it.
 *
 * @module
 */

/**
 * The nearest-rank percentile of `values` (any order; not modified).
 * @param values the samples
 * @param p the percentile, 0–100
 * @returns the sample at rank ⌈p/100 × n⌉, NaN when there are none
 */
export function percentile(values: readonly number[], p: number): number {
  const sorted = [...values].sort((a, b) => a - b);
  const i = Math.ceil((p / 100) * sorted.length) - 1;
  return sorted[Math.min(sorted.length - 1, Math.max(0, i))] ?? NaN;
}
