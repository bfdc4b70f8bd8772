import assert from "node:assert/strict";
import {
  byEvictionPriority,
  mergeThresholds,
  nodeConditions,
  nodeConditionsLastObservedAt,
  nodeConditionsObservedSince,
  parseThresholdConfig,
  thresholdsFirstObservedAt,
  thresholdsMet,
  thresholdsMetGracePeriod,
  thresholdsUpdatedStats,
  updateContainerFsThresholds,
} from "../../lib/eviction/thresholds.ts";
import type { Observations, Threshold } from "../../lib/eviction/types.ts";

const Mi = 2 ** 20;

function settings(over: Partial<Parameters<typeof parseThresholdConfig>[0]> = {}) {
  return {
    evictionHard: {},
    evictionSoft: {},
    evictionSoftGracePeriod: {},
    evictionMinimumReclaim: {},
    enforcePodsAllocatable: false,
    ...over,
  };
}

Deno.test("parseThresholdConfig() reads hard and soft thresholds with grace periods and minimum reclaim", () => {
  const got = parseThresholdConfig(settings({
    evictionHard: { "memory.available": "100Mi", "nodefs.available": "10%" },
    evictionSoft: { "memory.available": "300Mi" },
    evictionSoftGracePeriod: { "memory.available": "1m30s" },
    evictionMinimumReclaim: { "memory.available": "50Mi" },
  }));
  assert.deepEqual(got, [
    {
      signal: "memory.available",
      value: { quantity: 100 * Mi, raw: "100Mi" },
      gracePeriodMs: 0,
      minReclaim: { quantity: 50 * Mi },
    },
    { signal: "nodefs.available", value: { percentage: 0.1 }, gracePeriodMs: 0 },
    {
      signal: "memory.available",
      value: { quantity: 300 * Mi, raw: "300Mi" },
      gracePeriodMs: 90_000,
      minReclaim: { quantity: 50 * Mi },
    },
  ]);
});

Deno.test("parseThresholdConfig() copies the hard memory threshold to allocatableMemory.available when pods' allocatable is enforced", () => {
  const got = parseThresholdConfig(settings({
    evictionHard: { "memory.available": "100Mi" },
    evictionSoft: { "memory.available": "300Mi" },
    evictionSoftGracePeriod: { "memory.available": "1m" },
    enforcePodsAllocatable: true,
  }));
  assert.deepEqual(got.map((t) => [t.signal, t.gracePeriodMs]), [
    ["memory.available", 0],
    ["memory.available", 60_000],
    ["allocatableMemory.available", 0],
  ]);
});

Deno.test("parseThresholdConfig() ignores 0% and 100% and refuses a soft threshold without a grace period", () => {
  assert.deepEqual(
    parseThresholdConfig(
      settings({ evictionHard: { "nodefs.available": "100%", "imagefs.available": "0%" } }),
    ),
    [],
  );
  assert.throws(
    () => parseThresholdConfig(settings({ evictionSoft: { "memory.available": "1Gi" } })),
    /grace period must be specified for the soft eviction threshold memory.available/,
  );
  assert.throws(
    () => parseThresholdConfig(settings({ evictionMinimumReclaim: { "memory.available": "0%" } })),
    /minimum reclaim memory.available must be positive/,
  );
});

Deno.test("updateContainerFsThresholds() makes containerfs copy nodefs on one filesystem and imagefs on a dedicated one", () => {
  const base: Threshold[] = [
    { signal: "nodefs.available", value: { percentage: 0.1 }, gracePeriodMs: 0 },
    { signal: "imagefs.available", value: { percentage: 0.15 }, gracePeriodMs: 0 },
    { signal: "containerfs.available", value: { percentage: 0.5 }, gracePeriodMs: 0 },
  ];
  const one = updateContainerFsThresholds(base, false, false);
  assert.deepEqual(one.find((t) => t.signal === "containerfs.available")?.value, {
    percentage: 0.1,
  });
  assert.equal(one.filter((t) => t.signal === "containerfs.available").length, 1);
  const dedicated = updateContainerFsThresholds(base, true, false);
  assert.deepEqual(dedicated.find((t) => t.signal === "containerfs.available")?.value, {
    percentage: 0.15,
  });
});

Deno.test("thresholdsMet() compares percentages against capacity and adds the minimum reclaim when asked", () => {
  const t: Threshold = {
    signal: "memory.available",
    value: { percentage: 0.1 },
    gracePeriodMs: 0,
    minReclaim: { quantity: 100 * Mi },
  };
  const at = (available: number): Observations =>
    new Map([["memory.available", { available, capacity: 1000 * Mi }]]);
  assert.deepEqual(thresholdsMet([t], at(99 * Mi), false), [t]);
  assert.deepEqual(thresholdsMet([t], at(100 * Mi), false), []);
  // Met until 10% + 100Mi are available again.
  assert.deepEqual(thresholdsMet([t], at(150 * Mi), true), [t]);
  assert.deepEqual(thresholdsMet([t], at(200 * Mi), true), []);
  assert.deepEqual(thresholdsMet([t], new Map(), false), [], "no observation, not met");
});

Deno.test("a soft threshold is acted on only once met for its grace period", () => {
  const soft: Threshold = {
    signal: "memory.available",
    value: { quantity: Mi },
    gracePeriodMs: 60_000,
  };
  const first = thresholdsFirstObservedAt([soft], new Map(), 1_000);
  assert.deepEqual(thresholdsMetGracePeriod(first, 30_000), []);
  const still = thresholdsFirstObservedAt([soft], first, 61_000);
  assert.deepEqual(thresholdsMetGracePeriod(still, 61_000), [soft]);
  // Not met in between: the clock starts again.
  const again = thresholdsFirstObservedAt(
    [soft],
    thresholdsFirstObservedAt([], still, 62_000),
    63_000,
  );
  assert.deepEqual(thresholdsMetGracePeriod(again, 64_000), []);
});

Deno.test("a pressure condition stays for the transition period after its last observation", () => {
  const hard: Threshold = { signal: "nodefs.inodesFree", value: { quantity: 5 }, gracePeriodMs: 0 };
  const seen = nodeConditionsLastObservedAt(nodeConditions([hard]), new Map(), 0);
  assert.deepEqual(nodeConditionsObservedSince(seen, 300_000, 0), ["DiskPressure"]);
  const later = nodeConditionsLastObservedAt([], seen, 299_999);
  assert.deepEqual(nodeConditionsObservedSince(later, 300_000, 299_999), ["DiskPressure"]);
  assert.deepEqual(nodeConditionsObservedSince(later, 300_000, 300_000), []);
  assert.deepEqual(
    nodeConditions([
      { signal: "memory.available", value: {}, gracePeriodMs: 0 },
      { signal: "allocatableMemory.available", value: {}, gracePeriodMs: 0 },
      { signal: "pid.available", value: {}, gracePeriodMs: 0 },
    ]),
    ["MemoryPressure", "PIDPressure"],
  );
});

Deno.test("thresholdsUpdatedStats() drops thresholds whose signal was not sampled again", () => {
  const t: Threshold = { signal: "memory.available", value: { quantity: Mi }, gracePeriodMs: 0 };
  const obs = (timeMs: number): Observations =>
    new Map([["memory.available", { available: 0, capacity: 1, timeMs }]]);
  assert.deepEqual(thresholdsUpdatedStats([t], obs(1000), new Map()), [t]);
  assert.deepEqual(thresholdsUpdatedStats([t], obs(1000), obs(1000)), []);
  assert.deepEqual(thresholdsUpdatedStats([t], obs(2000), obs(1000)), [t]);
});

Deno.test("byEvictionPriority() puts memory first and mergeThresholds() keeps each threshold once", () => {
  const disk: Threshold = { signal: "nodefs.available", value: { quantity: 1 }, gracePeriodMs: 0 };
  const mem: Threshold = { signal: "memory.available", value: { quantity: 1 }, gracePeriodMs: 0 };
  assert.deepEqual(byEvictionPriority([disk, mem]), [mem, disk]);
  assert.deepEqual(mergeThresholds([disk], [{ ...disk }, mem]), [disk, mem]);
});
