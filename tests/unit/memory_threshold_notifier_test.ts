import assert from "node:assert/strict";
import type { CgroupLayout } from "../../lib/cgroup/mod.ts";
import { cgroupUsageReader, PollingCgroupNotifier } from "../../lib/eviction/cgroup_notifier.ts";
import {
  createMemoryNotifiers,
  IncompleteSummaryError,
  memcgThreshold,
  MemoryThresholdNotifier,
  type MemoryThresholdSpec,
} from "../../lib/eviction/memory_threshold_notifier.ts";
import type { MemoryStats, Summary } from "../../lib/stats/mod.ts";
import { FakeClock } from "../../lib/util/clock.ts";
import { createLogger } from "../../lib/util/log.ts";
import { advance, withTempDir, withTempDirSync } from "../kit/mod.ts";

const Mi = 1024 * 1024;
const Gi = 1024 * Mi;
const TIME = "2026-01-01T00:00:00Z";

function memory(usage: number, workingSet: number, available: number): MemoryStats {
  return { time: TIME, usageBytes: usage, workingSetBytes: workingSet, availableBytes: available };
}

/** A Summary as lib/stats builds it: node memory, and the "pods" system container. */
function summary(node: MemoryStats | undefined, pods?: MemoryStats): Summary {
  return {
    node: {
      nodeName: "testnode",
      startTime: TIME,
      ...(node ? { memory: node } : {}),
      systemContainers: [
        { name: "kubelet", startTime: TIME },
        ...(pods ? [{ name: "pods", startTime: TIME, memory: pods }] : []),
      ],
    },
    pods: [],
  };
}

const hard100Mi: MemoryThresholdSpec = {
  signal: "memory.available",
  value: { quantity: 100 * Mi },
};

function recordingLog() {
  const lines: string[] = [];
  return { lines, log: createLogger({ write: (l) => lines.push(l), verbosity: 0 }) };
}

Deno.test("memcgThreshold() is capacity − eviction threshold + inactive_file of the node's memory", () => {
  // capacity = available 6 Gi + working set 2 Gi = 8 Gi; inactive_file = 3 − 2 = 1 Gi.
  const s = summary(memory(3 * Gi, 2 * Gi, 6 * Gi));
  assert.deepEqual(memcgThreshold(hard100Mi, s), {
    usageBytes: 8 * Gi - 100 * Mi + 1 * Gi,
    capacityBytes: 8 * Gi,
  });
  // A percentage is of capacity, truncated to bytes (upstream's int64(float64 × float32)).
  const tenth = memcgThreshold(
    { signal: "memory.available", value: { percentage: 0.1 } },
    summary(memory(1001, 1001, 2000)),
  );
  assert.deepEqual(tenth, { usageBytes: 3001 - 300 + 0, capacityBytes: 3001 });
});

Deno.test("memcgThreshold() takes allocatableMemory.available from the pods system container", () => {
  const s = summary(memory(3 * Gi, 2 * Gi, 6 * Gi), memory(600 * Mi, 500 * Mi, 1548 * Mi));
  const t = memcgThreshold({
    signal: "allocatableMemory.available",
    value: { quantity: 200 * Mi },
  }, s);
  assert.deepEqual(t, { usageBytes: 2 * Gi - 200 * Mi + 100 * Mi, capacityBytes: 2 * Gi });
});

Deno.test("memcgThreshold() refuses a Summary without the figures it needs", () => {
  assert.throws(() => memcgThreshold(hard100Mi, summary(undefined)), IncompleteSummaryError);
  assert.throws(
    () => memcgThreshold(hard100Mi, summary({ time: TIME, usageBytes: 1, workingSetBytes: 1 })),
    /availableBytes/,
  );
  assert.throws(
    () =>
      memcgThreshold(
        { signal: "allocatableMemory.available", value: { quantity: 1 } },
        summary(memory(3, 2, 6)),
      ),
    /system container "pods" not found/,
  );
});

Deno.test("MemoryThresholdNotifier.description() uses upstream's words", () => {
  const { log } = recordingLog();
  const make = (threshold: MemoryThresholdSpec) =>
    new MemoryThresholdNotifier({
      threshold,
      cgroupDir: "/nonexistent",
      backend: "poll",
      handler: () => {},
      clock: new FakeClock(),
      log,
    }).description();
  assert.equal(make(hard100Mi), "hard memory eviction threshold");
  assert.equal(
    make({ ...hard100Mi, signal: "allocatableMemory.available", gracePeriodMs: 30_000 }),
    "soft allocatable memory eviction threshold",
  );
});

Deno.test("MemoryThresholdNotifier polls usage on the clock when event_control is missing, and reports crossings both ways", async () => {
  await withTempDir(async (dir) => {
    // A v1-looking cgroup without cgroup.event_control: the eventfd registration fails.
    const usageFile = `${dir}/memory.usage_in_bytes`;
    const setUsage = (bytes: number) => Deno.writeTextFileSync(usageFile, `${bytes}\n`);
    setUsage(1 * Gi);
    const clock = new FakeClock();
    const { lines, log } = recordingLog();
    const messages: string[] = [];
    const notifier = new MemoryThresholdNotifier({
      threshold: hard100Mi,
      cgroupDir: dir,
      backend: "eventfd",
      handler: (m) => messages.push(m),
      clock,
      log,
      pollIntervalMs: 250,
    });
    notifier.start();
    // capacity 4 Gi, nothing inactive → usage threshold 4 Gi − 100 Mi.
    const s = summary(memory(1 * Gi, 1 * Gi, 3 * Gi));
    notifier.updateThreshold(s);
    assert.equal(notifier.backend, "poll");
    assert.equal(notifier.armedThreshold, 4 * Gi - 100 * Mi);
    assert.equal(lines.filter((l) => l.includes("polling")).length, 1);

    setUsage(4 * Gi - 101 * Mi);
    await advance(clock, 1000, 250);
    assert.deepEqual(messages, [], "below the threshold: nothing");

    setUsage(4 * Gi - 100 * Mi);
    await advance(clock, 250, 250);
    assert.deepEqual(messages, ["eviction manager: hard memory eviction threshold crossed"]);
    await advance(clock, 1000, 250);
    assert.equal(messages.length, 1, "staying above is not another crossing");

    setUsage(1 * Gi);
    await advance(clock, 250, 250);
    assert.equal(messages.length, 2, "the way down is reported too, as the kernel does");

    // The same figures again: not re-armed, nothing logged again.
    notifier.updateThreshold(s);
    assert.equal(lines.filter((l) => l.includes("polling")).length, 1);

    notifier.stop();
    await notifier.stopped();
    setUsage(4 * Gi);
    await advance(clock, 1000, 250);
    assert.equal(messages.length, 2, "nothing after stop()");
  });
});

Deno.test("MemoryThresholdNotifier does not arm a threshold that is always met or never reachable", async () => {
  await withTempDir(async (dir) => {
    Deno.writeTextFileSync(`${dir}/memory.current`, "1000\n");
    const { lines, log } = recordingLog();
    const notifier = new MemoryThresholdNotifier({
      threshold: { signal: "memory.available", value: { quantity: 5000 } },
      cgroupDir: dir,
      backend: "poll",
      handler: () => {},
      clock: new FakeClock(),
      log,
    });
    notifier.start();
    notifier.updateThreshold(summary(memory(2000, 2000, 2000)));
    assert.equal(notifier.armedThreshold, undefined, "capacity 4000 − 5000 ≤ 0");
    notifier.updateThreshold(summary(memory(2000, 2000, 2000)));
    assert.equal(lines.filter((l) => l.includes("cannot be watched")).length, 1, "logged once");
    // 6000 of inactive file: 4000 − 5000 + 6000 > capacity 4000, usage never gets there.
    notifier.updateThreshold(summary(memory(8000, 2000, 2000)));
    assert.equal(notifier.armedThreshold, undefined);
    // Back to a reachable threshold: armed.
    notifier.updateThreshold(summary(memory(2000, 2000, 8000)));
    assert.equal(notifier.armedThreshold, 5000);
    notifier.stop();
    await notifier.stopped();
  });
});

Deno.test("cgroupUsageReader() reads memory.current, memory.usage_in_bytes, or a v2 root's memory.stat", () => {
  withTempDirSync((dir) => {
    Deno.mkdirSync(`${dir}/v2`);
    Deno.writeTextFileSync(`${dir}/v2/memory.current`, "123\n");
    assert.equal(cgroupUsageReader(`${dir}/v2`)(), 123);
    Deno.mkdirSync(`${dir}/v1`);
    Deno.writeTextFileSync(`${dir}/v1/memory.usage_in_bytes`, "456\n");
    assert.equal(cgroupUsageReader(`${dir}/v1`)(), 456);
    Deno.mkdirSync(`${dir}/root`);
    Deno.writeTextFileSync(
      `${dir}/root/memory.stat`,
      "anon 100\nfile 20\nkernel 7\nfile_dirty 3\n",
    );
    assert.equal(cgroupUsageReader(`${dir}/root`)(), 120);
    assert.throws(() => cgroupUsageReader(`${dir}/none`), /no memory usage file/);
  });
});

Deno.test("createMemoryNotifiers() makes one notifier per memory threshold, eventfd on a v1 memory controller, polling on v2", () => {
  const { log } = recordingLog();
  const thresholds: MemoryThresholdSpec[] = [
    hard100Mi,
    { signal: "nodefs.available", value: { percentage: 0.1 } },
    { signal: "allocatableMemory.available", value: { quantity: 1 } },
  ];
  const base = { thresholds, podCgroupRoot: "/kubepods", handler: () => {}, log };
  const hybrid: CgroupLayout = {
    mode: "hybrid",
    root: "/sys/fs/cgroup",
    unified: "/sys/fs/cgroup/unified",
    unifiedControllers: [],
    v1: { memory: "/sys/fs/cgroup/memory" },
  };
  const v1 = createMemoryNotifiers({ ...base, layout: hybrid, clock: new FakeClock() });
  assert.deepEqual(v1.map((n) => n.description()), [
    "hard memory eviction threshold",
    "hard allocatable memory eviction threshold",
  ]);
  assert.deepEqual(v1.map((n) => [n.cgroupDir, n.preferredBackend]), [
    ["/sys/fs/cgroup/memory", "eventfd"],
    ["/sys/fs/cgroup/memory/kubepods", "eventfd"],
  ]);
  // kernelMemcgNotification off (the agent's pollOnly): no kernel registration, even on v1.
  const polled = createMemoryNotifiers({
    ...base,
    layout: hybrid,
    clock: new FakeClock(),
    pollOnly: true,
  });
  assert.deepEqual(polled.map((n) => [n.cgroupDir, n.preferredBackend]), [
    ["/sys/fs/cgroup/memory", "poll"],
    ["/sys/fs/cgroup/memory/kubepods", "poll"],
  ]);
  const unified: CgroupLayout = {
    mode: "v2",
    root: "/sys/fs/cgroup",
    unified: "/sys/fs/cgroup",
    unifiedControllers: ["memory"],
    v1: {},
  };
  const v2 = createMemoryNotifiers({ ...base, layout: unified, clock: new FakeClock() });
  assert.deepEqual(v2.map((n) => [n.cgroupDir, n.preferredBackend]), [
    ["/sys/fs/cgroup", "poll"],
    ["/sys/fs/cgroup/kubepods", "poll"],
  ]);
});

Deno.test("PollingCgroupNotifier logs a handler that throws and keeps watching", async () => {
  const clock = new FakeClock();
  const { lines, log } = recordingLog();
  let usage = 10;
  let calls = 0;
  const notifier = new PollingCgroupNotifier({
    cgroupDir: "/fixture",
    threshold: 100,
    readUsage: () => usage,
    clock,
    intervalMs: 250,
    log,
  });
  notifier.start(() => {
    calls++;
    throw new Error("handler broke");
  });
  usage = 200;
  await advance(clock, 250, 250);
  usage = 10;
  await advance(clock, 250, 250);
  assert.equal(calls, 2, "the second crossing still reaches the handler");
  assert.equal(lines.filter((l) => l.includes("handler failed")).length, 2);
  notifier.stop();
  await notifier.stopped;
});
