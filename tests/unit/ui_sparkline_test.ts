import assert from "node:assert/strict";
import { cpuSeries, memorySeries, sparkline } from "../../lib/ui/mod.ts";
import type { Sample } from "../../lib/stats/mod.ts";

const box = { fromMs: 0, toMs: 100, width: 100, height: 20 };

Deno.test("sparkline() maps time to x and value to y, zero at the bottom and max at the top", () => {
  const s = sparkline([
    { timeMs: 0, value: 0 },
    { timeMs: 50, value: 5 },
    { timeMs: 100, value: 10 },
  ], box);
  assert.equal(s.d, "M0 20L50 10L100 0");
  assert.equal(s.points, 3);
  assert.equal(s.last, 10);
  assert.equal(s.max, 10);
});

Deno.test("sparkline() scales to a given max, clamps values above it and rounds to one decimal", () => {
  const s = sparkline([
    { timeMs: 10, value: 1 },
    { timeMs: 33.33, value: 8 },
  ], { ...box, max: 3 });
  assert.equal(s.d, "M10 13.3L33.3 0");
  assert.equal(s.max, 3);
});

Deno.test("sparkline() leaves out points outside the window and non-finite values", () => {
  const s = sparkline([
    { timeMs: -5, value: 1 },
    { timeMs: 20, value: NaN },
    { timeMs: 40, value: 2 },
    { timeMs: 101, value: 9 },
  ], box);
  assert.equal(s.d, "M40 0");
  assert.equal(s.points, 1);
  assert.equal(s.last, 2);
});

Deno.test("sparkline() draws an all-zero series on the bottom edge and an empty one as no path", () => {
  assert.equal(
    sparkline([{ timeMs: 0, value: 0 }, { timeMs: 100, value: 0 }], box).d,
    "M0 20L100 20",
  );
  const empty = sparkline([], box);
  assert.deepEqual(empty, { d: "", points: 0, max: 0 });
});

Deno.test("sparkline() refuses an empty window or box", () => {
  assert.throws(() => sparkline([], { ...box, toMs: 0 }), RangeError);
  assert.throws(() => sparkline([], { ...box, width: 0 }), RangeError);
});

Deno.test("cpuSeries() gives cores between consecutive samples and skips a counter reset", () => {
  const samples: Sample[] = [
    { timestampMs: 1_000, cpuUsageNs: 0 },
    { timestampMs: 2_000, cpuUsageNs: 500_000_000 }, // half a core for 1 s
    { timestampMs: 3_000, cpuUsageNs: 100 }, // recreated cgroup
    { timestampMs: 5_000, cpuUsageNs: 4_000_000_100 }, // two cores for 2 s
    { timestampMs: 6_000 }, // no CPU figure
  ];
  assert.deepEqual(cpuSeries(samples), [
    { timeMs: 2_000, value: 0.5 },
    { timeMs: 5_000, value: 2 },
  ]);
});

Deno.test("memorySeries() gives the working set of the samples that have one", () => {
  assert.deepEqual(
    memorySeries([
      { timestampMs: 1, memoryWorkingSetBytes: 10, memoryUsageBytes: 99 },
      { timestampMs: 2 },
      { timestampMs: 3, memoryWorkingSetBytes: 30 },
    ]),
    [{ timeMs: 1, value: 10 }, { timeMs: 3, value: 30 }],
  );
});
