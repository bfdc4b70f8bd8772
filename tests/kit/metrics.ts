/**
 * Reading Prometheus text exposition in tests, e.g. to wait until a probe counter shows
 * that the thing awaited really happened.
 *
 * @module
 */

const LABEL = /(\w+)="((?:[^"\\]|\\.)*)"/g;

/**
 * The value of the first sample of `name` whose labels include all of `labels`.
 *
 * ```ts
 * import { sampleValue } from "./metrics.ts";
 *
 * const text = 'prober_probe_total{container="app",result="failed"} 3\n';
 * sampleValue(text, "prober_probe_total", { result: "failed" }); // 3
 * ```
 *
 * @param text the exposition (e.g. a `/metrics/probes` body)
 * @param name the metric name, suffix included (`_total`, `_count`...)
 * @param labels label values the sample must carry (others are ignored)
 * @returns the value, or undefined when no sample matches
 */
export function sampleValue(
  text: string,
  name: string,
  labels: Record<string, string> = {},
): number | undefined {
  return samples(text, name, labels).next().value;
}

/**
 * The sum of every sample of `name` whose labels include all of `labels`, e.g. the
 * apiserver's requests of one resource over all verbs and codes.
 *
 * @param text the exposition
 * @param name the metric name, suffix included
 * @param labels label values the samples must carry (others are ignored)
 * @returns the sum, 0 when no sample matches
 */
export function sampleSum(
  text: string,
  name: string,
  labels: Record<string, string> = {},
): number {
  let sum = 0;
  for (const v of samples(text, name, labels)) sum += v;
  return sum;
}

function* samples(
  text: string,
  name: string,
  labels: Record<string, string>,
): Generator<number, undefined> {
  for (const line of text.split("\n")) {
    if (!line.startsWith(`${name}{`) && !line.startsWith(`${name} `)) continue;
    const close = line.lastIndexOf("}");
    const have = new Map<string, string>();
    if (close > 0) {
      for (const [, key, value] of line.slice(name.length + 1, close).matchAll(LABEL)) {
        have.set(key!, value!);
      }
    }
    if (Object.entries(labels).every(([key, value]) => have.get(key) === value)) {
      yield Number(line.slice(close > 0 ? close + 1 : name.length).trim().split(" ")[0]);
    }
  }
  return undefined;
}
