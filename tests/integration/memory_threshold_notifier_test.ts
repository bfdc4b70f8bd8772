/**
 * The memory threshold notifier on the real kernel: a memory cgroup of the test's own
 * (tests/integration/_memcg.ts), its usage moved by a process inside it, the notifier
 * registered there through cgroup v1's event_control (this machine's memory controller
 * is v1) or polling.
 */

import assert from "node:assert/strict";
import { detectCgroupLayout } from "../../lib/cgroup/mod.ts";
import {
  EventfdCgroupNotifier,
  PollingCgroupNotifier,
} from "../../lib/eviction/cgroup_notifier.ts";
import {
  createMemoryNotifiers,
  type MemoryThresholdNotifier,
} from "../../lib/eviction/memory_threshold_notifier.ts";
import type { Summary } from "../../lib/stats/mod.ts";
import { realClock } from "../../lib/util/clock.ts";
import { createLogger } from "../../lib/util/log.ts";
import { delay, waitFor } from "../kit/mod.ts";
import { createTestMemcg } from "./_memcg.ts";

const MiB = 1024 * 1024;
const log = createLogger({ write: () => {} });

function openFds(): number {
  return [...Deno.readDirSync("/proc/self/fd")].length;
}

/** A Summary whose "pods" container is the test cgroup: capacity = usage now + `headroom`. */
function podsSummary(usage: number, headroom: number): Summary {
  const time = new Date().toISOString();
  return {
    node: {
      nodeName: "testnode",
      startTime: time,
      systemContainers: [{
        name: "pods",
        startTime: time,
        memory: { time, usageBytes: usage, workingSetBytes: usage, availableBytes: headroom },
      }],
    },
    pods: [],
  };
}

Deno.test("EventfdCgroupNotifier fires when the cgroup's usage crosses the threshold, not below, and stop() releases its fds", async () => {
  const memcg = await createTestMemcg();
  const fdsBefore = openFds();
  let crossings = 0;
  let notifier: EventfdCgroupNotifier | undefined;
  try {
    notifier = new EventfdCgroupNotifier({
      cgroupDir: memcg.dir,
      threshold: memcg.usage() + 32 * MiB,
      log,
    });
    notifier.start(() => crossings++);
    await memcg.grow(16 * MiB);
    // Nothing to poll for: the property is that no event comes while below.
    await delay(300);
    assert.equal(crossings, 0, "no event below the threshold");
    await memcg.grow(24 * MiB);
    await waitFor("the crossing upwards", () => crossings === 1, {
      timeoutMs: 5_000,
      intervalMs: 10,
    });
    await memcg.shrink();
    await waitFor("the crossing downwards", () => crossings === 2, {
      timeoutMs: 5_000,
      intervalMs: 10,
    });
    notifier.stop();
    await notifier.stopped;
    assert.equal(openFds(), fdsBefore, "the eventfd is closed");
    await memcg.grow(40 * MiB);
    await delay(300);
    assert.equal(crossings, 2, "no event after stop()");
  } finally {
    notifier?.stop();
    await notifier?.stopped;
    await memcg.close();
  }
});

Deno.test("PollingCgroupNotifier reads the real cgroup's usage and fires on the crossing", async () => {
  const memcg = await createTestMemcg();
  let crossings = 0;
  const notifier = new PollingCgroupNotifier({
    cgroupDir: memcg.dir,
    threshold: memcg.usage() + 32 * MiB,
    readUsage: memcg.usage,
    clock: realClock,
    intervalMs: 50,
    log,
  });
  try {
    notifier.start(() => crossings++);
    await memcg.grow(16 * MiB);
    await delay(200);
    assert.equal(crossings, 0);
    await memcg.grow(24 * MiB);
    await waitFor("the crossing upwards", () => crossings === 1, {
      timeoutMs: 5_000,
      intervalMs: 10,
    });
  } finally {
    notifier.stop();
    await memcg.close();
  }
});

Deno.test("createMemoryNotifiers() watches allocatableMemory.available on the pods' cgroup, re-arms from a new Summary, and stop() closes every eventfd", async () => {
  const memcg = await createTestMemcg();
  const fdsBefore = openFds();
  const messages: string[] = [];
  const layout = detectCgroupLayout();
  const notifiers = createMemoryNotifiers({
    // Only the allocatable threshold: a memory.available one would register on the
    // machine's root cgroup, which a test must not do.
    thresholds: [{ signal: "allocatableMemory.available", value: { quantity: 32 * MiB } }],
    podCgroupRoot: memcg.name,
    layout,
    handler: (msg) => messages.push(msg),
    clock: realClock,
    log,
    pollIntervalMs: 50,
  });
  try {
    assert.equal(notifiers.length, 1);
    const [notifier] = notifiers as [MemoryThresholdNotifier];
    notifier.start();
    // capacity = usage + 64 MiB; evict at 32 MiB available → usage + 32 MiB.
    const base = memcg.usage();
    notifier.updateThreshold(podsSummary(base, 64 * MiB));
    assert.equal(notifier.armedThreshold, base + 32 * MiB);
    assert.equal(notifier.backend, layout.v1.memory !== undefined ? "eventfd" : "poll");
    // Re-armed with less headroom: 48 MiB → crossing at usage + 16 MiB.
    notifier.updateThreshold(podsSummary(base, 48 * MiB));
    assert.equal(notifier.armedThreshold, base + 16 * MiB);
    await memcg.grow(8 * MiB);
    await delay(300);
    assert.deepEqual(messages, []);
    await memcg.grow(16 * MiB);
    await waitFor("the handler's message", () => messages.length === 1, {
      timeoutMs: 5_000,
      intervalMs: 10,
    });
    assert.equal(
      messages[0],
      "eviction manager: hard allocatable memory eviction threshold crossed",
    );
    notifier.stop();
    await notifier.stopped();
    assert.equal(openFds(), fdsBefore, "every eventfd (first arm and re-arm) is closed");
  } finally {
    for (const n of notifiers) n.stop();
    await Promise.all(notifiers.map((n) => n.stopped()));
    await memcg.close();
  }
});
