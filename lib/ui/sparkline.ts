/**
 * Sparklines as SVG path data: a series of (time, value) points over a time
 * window drawn into a `width × height` box, time left to right and zero at
 * the bottom. The page draws the path as is (`<path d="…">`); no charting
 * library, so the page works offline.
 *
 * @module
 */

import { nanoCoresBetween, type Sample } from "../stats/mod.ts";

/** A point of a series. */
export interface SeriesPoint {
  timeMs: number;
  value: number;
}

/** The box and window a sparkline is drawn in. */
export interface SparklineBox {
  /** The window's start and end, epoch ms: the left and right edges. */
  fromMs: number;
  toMs: number;
  width: number;
  height: number;
  /** The value at the top edge; the series' largest value (at least 0) when absent. */
  max?: number;
}

/** A series drawn for the page. */
export interface Sparkline {
  /** SVG path data (`M x y L x y …`); "" without points in the window. */
  d: string;
  /** Points drawn. */
  points: number;
  /** The newest value (cores or bytes); absent without points. */
  last?: number;
  /** The value at the top edge. */
  max: number;
}

/** The size of every sparkline on the page (the SVG's viewBox). */
export const SPARK_WIDTH = 120;
export const SPARK_HEIGHT = 24;

/** One decimal, without a trailing ".0": short path data. */
function coord(n: number): string {
  return String(Math.round(n * 10) / 10);
}

/**
 * Draws a series: points outside the window are left out, values are clamped
 * to [0, max]; a series whose max is 0 lies on the bottom edge.
 * @param points the series, oldest first
 * @param box the window and the box
 * @returns the path and what it shows
 * @throws {RangeError} when the window or the box is empty
 */
export function sparkline(points: readonly SeriesPoint[], box: SparklineBox): Sparkline {
  const span = box.toMs - box.fromMs;
  if (!(span > 0) || !(box.width > 0) || !(box.height > 0)) {
    throw new RangeError(
      `sparkline needs a window and a box (${span} ms, ${box.width}×${box.height})`,
    );
  }
  const shown = points.filter((p) =>
    p.timeMs >= box.fromMs && p.timeMs <= box.toMs && Number.isFinite(p.value)
  );
  const max = box.max ?? Math.max(0, ...shown.map((p) => p.value));
  const parts = shown.map((p, i) => {
    const x = ((p.timeMs - box.fromMs) / span) * box.width;
    const v = Math.min(Math.max(p.value, 0), max);
    const y = max > 0 ? box.height - (v / max) * box.height : box.height;
    return `${i === 0 ? "M" : "L"}${coord(x)} ${coord(y)}`;
  });
  const out: Sparkline = { d: parts.join(""), points: shown.length, max };
  if (shown.length > 0) out.last = shown[shown.length - 1]!.value;
  return out;
}

/**
 * CPU usage in cores between consecutive samples, at the later one's time.
 * @param samples a cgroup's samples, oldest first
 * @returns the series (pairs without a rate, as across a counter reset, are skipped)
 */
export function cpuSeries(samples: readonly Sample[]): SeriesPoint[] {
  const out: SeriesPoint[] = [];
  for (let i = 1; i < samples.length; i++) {
    const nano = nanoCoresBetween(samples[i - 1]!, samples[i]!);
    if (nano !== undefined) out.push({ timeMs: samples[i]!.timestampMs, value: nano / 1e9 });
  }
  return out;
}

/**
 * The memory working set (what the kubelet evicts on and reports), in bytes.
 * @param samples a cgroup's samples, oldest first
 * @returns the series (samples without memory are skipped)
 */
export function memorySeries(samples: readonly Sample[]): SeriesPoint[] {
  return samples.flatMap((s) =>
    s.memoryWorkingSetBytes === undefined
      ? []
      : [{ timeMs: s.timestampMs, value: s.memoryWorkingSetBytes }]
  );
}
