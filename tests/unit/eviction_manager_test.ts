import assert from "node:assert/strict";
import type { Pod, PodStatus } from "../../lib/api/types.ts";
import { EvictionManager, type EvictionManagerOptions } from "../../lib/eviction/manager.ts";
import { parseThresholdConfig } from "../../lib/eviction/thresholds.ts";
import type { ThresholdNotifier } from "../../lib/eviction/types.ts";
import type { Summary } from "../../lib/stats/summary_types.ts";
import { FakeClock } from "../../lib/util/clock.ts";
import { silentLogger } from "../../lib/util/log.ts";
import { KubeletMetrics } from "../../lib/metrics/mod.ts";
import { recordingEvents } from "../kit/events.ts";
import {
  advance,
  deferred,
  podSummary,
  settle,
  testPod,
  type TestPodFigures,
  testSummary,
} from "../kit/mod.ts";

const Mi = 2 ** 20;

const bestEffort = testPod({ name: "hog", uid: "hog" });
const guaranteed = testPod({
  name: "steady",
  uid: "steady",
  containers: [{
    name: "main",
    image: "busybox",
    resources: {
      requests: { cpu: "100m", memory: "64Mi" },
      limits: { cpu: "100m", memory: "64Mi" },
    },
  }],
  spec: { terminationGracePeriodSeconds: 20 },
});
const staticPod = testPod({
  name: "static",
  uid: "static",
  metadata: { annotations: { "kubernetes.io/config.source": "file" } },
});

interface Kill {
  pod: string;
  grace: number;
  status: PodStatus;
}

/** A manager on a fake clock whose Summary the test sets. */
function setup(
  o: {
    hard?: Record<string, string>;
    soft?: Record<string, string>;
    softGrace?: Record<string, string>;
    minReclaim?: Record<string, string>;
    localStorageCapacityIsolation?: boolean;
    maxPodGrace?: number;
    pods?: Pod[];
    extra?: Partial<EvictionManagerOptions>;
  } = {},
) {
  const clock = new FakeClock(Date.UTC(2026, 0, 1));
  const events = recordingEvents();
  const kills: Kill[] = [];
  const calls: string[] = [];
  let pods = o.pods ?? [bestEffort, guaranteed];
  const state = { summary: testSummary({}) as Summary };
  const manager = new EvictionManager({
    config: {
      thresholds: parseThresholdConfig({
        evictionHard: o.hard ?? { "memory.available": "100Mi" },
        evictionSoft: o.soft ?? {},
        evictionSoftGracePeriod: o.softGrace ?? {},
        evictionMinimumReclaim: o.minReclaim ?? {},
        enforcePodsAllocatable: false,
      }),
      pressureTransitionPeriodMs: 30_000,
      maxPodGracePeriodSeconds: o.maxPodGrace ?? 0,
      localStorageCapacityIsolation: o.localStorageCapacityIsolation ?? true,
    },
    clock,
    logger: silentLogger,
    nodeName: "testnode",
    events,
    summary: () => Promise.resolve(state.summary),
    activePods: () => pods,
    killPod: (pod, { evict, gracePeriodSeconds, statusFn }) => {
      assert.equal(evict, true);
      const status: PodStatus = { phase: "Running" };
      statusFn(status);
      kills.push({ pod: pod.metadata.name!, grace: gracePeriodSeconds, status });
      pods = pods.filter((p) => p !== pod);
      return Promise.resolve();
    },
    podCleanedUp: () => true,
    ...o.extra,
  });
  /** Sets the Summary, sampled now. */
  const observe = (
    memoryAvailable: number,
    figures: [Pod, TestPodFigures][] = [],
    more: Parameters<typeof testSummary>[0] = {},
  ) => {
    const time = new Date(clock.now()).toISOString();
    state.summary = testSummary(
      {
        timeMs: clock.now(),
        memoryAvailable,
        memoryWorkingSet: 1000 * Mi - memoryAvailable,
        ...more,
      },
      figures.map(([p, f]) => podSummary(p, f, time)),
    );
  };
  return {
    clock,
    events,
    kills,
    calls,
    manager,
    observe,
    state,
    setPods: (p: Pod[]) => (pods = p),
  };
}

const usage = (hog: number, steady: number): [Pod, TestPodFigures][] => [
  [bestEffort, { memory: hog, containers: { main: { memory: hog } } }],
  [guaranteed, { memory: steady, containers: { main: { memory: steady } } }],
];

Deno.test("a hard memory threshold evicts the BestEffort pod first, one pod per round, as Failed/Evicted", async () => {
  const { manager, observe, kills, events, clock } = setup();
  observe(50 * Mi, usage(400 * Mi, 60 * Mi));
  assert.deepEqual((await manager.synchronize())?.map((p) => p.metadata.name), ["hog"]);
  assert.equal(kills.length, 1);
  const kill = kills[0]!;
  assert.equal(kill.grace, 1, "a hard threshold gives upstream's immediate grace of 1s");
  const message =
    "The node was low on resource: memory. Threshold quantity: 100Mi, available: 50Mi. " +
    "Container main was using 400Mi, request is 0, has larger consumption of memory. ";
  assert.equal(kill.status.phase, "Failed");
  assert.equal(kill.status.reason, "Evicted");
  assert.equal(kill.status.message, message);
  assert.deepEqual(kill.status.conditions?.map((c) => [c.type, c.status, c.reason]), [
    ["DisruptionTarget", "True", "TerminationByKubelet"],
  ]);
  assert.deepEqual(events.got.map((e) => [e.ref.kind, e.type, e.reason, e.message]), [
    ["Node", "Warning", "EvictionThresholdMet", "Attempting to reclaim memory"],
    ["Pod", "Warning", "Evicted", message],
  ]);
  assert.equal(manager.isUnderMemoryPressure(), true);
  // The same sample again evicts nothing: stats must be fresh.
  assert.equal(await manager.synchronize(), undefined);
  // A fresh sample still under the threshold takes the next pod.
  clock.tick(10_000);
  observe(60 * Mi, usage(0, 60 * Mi));
  assert.deepEqual((await manager.synchronize())?.map((p) => p.metadata.name), ["steady"]);
});

Deno.test("MemoryPressure stays for the transition period after memory recovers, and admission follows it", async () => {
  const { manager, observe, clock } = setup({ pods: [] });
  observe(50 * Mi);
  await manager.synchronize();
  assert.deepEqual(manager.pressure(), { memory: true, disk: false, pid: false });
  assert.deepEqual(manager.admit(bestEffort), {
    admit: false,
    reason: "Evicted",
    message: "The node had condition: [MemoryPressure]. ",
  });
  assert.deepEqual(manager.admit(guaranteed), { admit: true });
  assert.deepEqual(manager.admit(staticPod), { admit: true }, "a critical pod is admitted");
  const tolerating = testPod({
    uid: "t",
    spec: {
      tolerations: [{
        key: "node.kubernetes.io/memory-pressure",
        operator: "Exists",
        effect: "NoSchedule",
      }],
    },
  });
  assert.deepEqual(manager.admit(tolerating), { admit: true });
  clock.tick(10_000);
  observe(500 * Mi);
  await manager.synchronize();
  assert.equal(manager.isUnderMemoryPressure(), true, "within the transition period");
  clock.tick(20_000);
  observe(500 * Mi);
  await manager.synchronize();
  assert.equal(manager.isUnderMemoryPressure(), false);
  assert.deepEqual(manager.admit(bestEffort), { admit: true });
});

Deno.test("the transition period is measured on the monotonic clock: a step of the wall clock neither ends nor stretches it", async () => {
  for (const step of [6 * 3_600_000, -20 * 60_000]) {
    const { manager, observe, clock } = setup({ pods: [] });
    observe(50 * Mi);
    await manager.synchronize();
    clock.tick(10_000);
    observe(500 * Mi);
    await manager.synchronize();
    clock.jump(step);
    observe(500 * Mi);
    await manager.synchronize();
    assert.equal(manager.isUnderMemoryPressure(), true, `step ${step}: ended early`);
    clock.tick(20_000);
    observe(500 * Mi);
    await manager.synchronize();
    assert.equal(manager.isUnderMemoryPressure(), false, `step ${step}: stretched`);
  }
});

Deno.test("a soft threshold evicts only after its grace period, with min(evictionMaxPodGracePeriod, the pod's own)", async () => {
  const { manager, observe, kills, clock } = setup({
    hard: {},
    soft: { "memory.available": "200Mi" },
    softGrace: { "memory.available": "30s" },
    maxPodGrace: 60,
    pods: [guaranteed],
  });
  observe(150 * Mi, usage(0, 100 * Mi));
  assert.equal(await manager.synchronize(), undefined);
  assert.equal(
    manager.isUnderMemoryPressure(),
    true,
    "the condition does not wait for the grace period",
  );
  clock.tick(29_000);
  observe(150 * Mi, usage(0, 100 * Mi));
  assert.equal(await manager.synchronize(), undefined);
  clock.tick(1_000);
  observe(150 * Mi, usage(0, 100 * Mi));
  assert.deepEqual((await manager.synchronize())?.map((p) => p.metadata.name), ["steady"]);
  assert.equal(kills[0]!.grace, 20);
});

Deno.test("the minimum reclaim keeps a met threshold met until that much more is available", async () => {
  const { manager, observe, kills, clock } = setup({ minReclaim: { "memory.available": "100Mi" } });
  observe(50 * Mi, usage(400 * Mi, 60 * Mi));
  await manager.synchronize();
  clock.tick(10_000);
  observe(150 * Mi, usage(0, 60 * Mi));
  assert.deepEqual((await manager.synchronize())?.map((p) => p.metadata.name), ["steady"]);
  assert.equal(kills.length, 2);
});

Deno.test("disk pressure reclaims dead containers, then images, and evicts nobody when that is enough", async () => {
  const calls: string[] = [];
  const { manager, state, kills, clock } = setup({
    hard: { "nodefs.available": "10%" },
    extra: {
      containerGC: {
        deleteAllUnusedContainers: () => {
          calls.push("containers");
          return Promise.resolve();
        },
      },
      imageGC: {
        deleteUnusedImages: () => {
          calls.push("images");
          state.summary = testSummary({
            timeMs: clock.now(),
            nodefs: { available: 50 * Mi, capacity: 100 * Mi },
          });
          return Promise.resolve();
        },
      },
    },
  });
  state.summary = testSummary({
    timeMs: clock.now(),
    nodefs: { available: 5 * Mi, capacity: 100 * Mi },
  });
  assert.equal(await manager.synchronize(), undefined);
  assert.deepEqual(calls, ["containers", "images"]);
  assert.equal(kills.length, 0);
  assert.equal(manager.isUnderDiskPressure(), true);
  assert.deepEqual(manager.admit(guaranteed), {
    admit: false,
    reason: "Evicted",
    message: "The node had condition: [DiskPressure]. ",
  });
});

Deno.test("disk pressure that reclaim cannot relieve evicts the largest local storage user", async () => {
  const { manager, state, kills, clock } = setup({
    hard: { "nodefs.available": "10%" },
    extra: {
      containerGC: { deleteAllUnusedContainers: () => Promise.resolve() },
      imageGC: { deleteUnusedImages: () => Promise.resolve() },
    },
  });
  const time = new Date(clock.now()).toISOString();
  state.summary = testSummary({
    timeMs: clock.now(),
    nodefs: { available: 5 * Mi, capacity: 100 * Mi },
  }, [
    podSummary(bestEffort, { containers: { main: { rootfs: Mi, logs: Mi } } }, time),
    podSummary(guaranteed, { containers: { main: { rootfs: 80 * Mi, logs: Mi } } }, time),
  ]);
  await manager.synchronize();
  assert.deepEqual(kills.map((k) => [k.pod, k.status.message]), [
    [
      "steady",
      "The node was low on resource: ephemeral-storage. Threshold quantity: 10Mi, available: 5Mi. " +
      "Container main was using 81Mi, request is 0, has larger consumption of ephemeral-storage. ",
    ],
  ]);
});

Deno.test("a critical pod is never evicted; the next in rank is", async () => {
  const { manager, observe, kills } = setup({ pods: [staticPod, guaranteed] });
  observe(50 * Mi, [
    [staticPod, { memory: 800 * Mi }],
    [guaranteed, { memory: 10 * Mi }],
  ]);
  await manager.synchronize();
  assert.deepEqual(kills.map((k) => k.pod), ["steady"]);
});

Deno.test("an emptyDir over its sizeLimit is evicted without node pressure", async () => {
  const cached = testPod({
    name: "cached",
    uid: "cached",
    spec: { volumes: [{ name: "cache", emptyDir: { sizeLimit: "1Mi" } }] },
  });
  const { manager, observe, kills } = setup({ pods: [cached, guaranteed] });
  observe(900 * Mi, [[cached, { volumes: { cache: 2 * Mi } }]]);
  assert.deepEqual((await manager.synchronize())?.map((p) => p.metadata.name), ["cached"]);
  assert.deepEqual(kills.map((k) => [k.grace, k.status.reason, k.status.message]), [
    [1, "Evicted", 'Usage of EmptyDir volume "cache" exceeds the limit "1Mi". '],
  ]);
  assert.equal(manager.isUnderMemoryPressure(), false);
});

Deno.test("with localStorageCapacityIsolation false no local storage limit evicts, and without thresholds nothing is read", async () => {
  const cached = testPod({
    name: "cached",
    uid: "cached",
    spec: { volumes: [{ name: "cache", emptyDir: { sizeLimit: "1Mi" } }] },
  });
  const off = setup({ pods: [cached], localStorageCapacityIsolation: false });
  off.observe(900 * Mi, [[cached, { volumes: { cache: 2 * Mi } }]]);
  assert.equal(await off.manager.synchronize(), undefined);
  assert.deepEqual(off.kills, []);
  // As upstream's synchronize: no thresholds and no isolation, no round at all.
  let reads = 0;
  const idle = setup({
    hard: {},
    pods: [cached],
    localStorageCapacityIsolation: false,
    extra: { summary: () => (reads++, Promise.resolve(testSummary({}))) },
  });
  assert.equal(await idle.manager.synchronize(), undefined);
  assert.equal(reads, 0);
});

Deno.test("the loop runs every 10s, at once on trigger, and re-arms the notifiers from the Summary", async () => {
  const seen: string[] = [];
  const notifier: ThresholdNotifier = {
    start: () => void seen.push("start"),
    updateThreshold: (s) => void seen.push(`update ${s.node.memory?.availableBytes}`),
    description: () => "memory.available notifier",
    stop: () => void seen.push("stop"),
  };
  let rounds = 0;
  const fresh: boolean[] = [];
  const summary = testSummary({ memoryAvailable: 900 * Mi, memoryWorkingSet: 100 * Mi });
  const { manager, clock } = setup({
    pods: [],
    extra: {
      notifiers: [notifier],
      summary: (_signal, isFresh) => {
        rounds++;
        fresh.push(isFresh ?? false);
        return Promise.resolve(summary);
      },
    },
  });
  manager.start();
  await settle();
  assert.equal(rounds, 1);
  await advance(clock, 9_000);
  assert.equal(rounds, 1);
  await advance(clock, 1_000);
  assert.equal(rounds, 2);
  manager.trigger("memory threshold crossed");
  await settle();
  assert.equal(rounds, 3, "a trigger does not wait for the tick");
  // The first round and a triggered one read every cgroup afresh; a 10 s round reads
  // housekeeping's samples.
  assert.deepEqual(fresh, [true, false, true]);
  // Re-armed at most every 10 s (upstream's notifierRefreshInterval): not by rounds 2 and 3.
  assert.deepEqual(seen, ["start", `update ${900 * Mi}`]);
  await advance(clock, 10_000);
  assert.equal(rounds, 4);
  await manager.stop();
  assert.deepEqual(seen, ["start", `update ${900 * Mi}`, `update ${900 * Mi}`, "stop"]);
});

Deno.test("after an eviction the loop waits for the pod's cleanup and for stats sampled after it", async () => {
  const { manager, kills, clock, state } = setup();
  const at = (ms: number, hog: number, available: number) => {
    const time = new Date(ms).toISOString();
    state.summary = testSummary(
      { timeMs: ms, memoryAvailable: available, memoryWorkingSet: 1000 * Mi - available },
      usage(hog, 60 * Mi).map(([p, f]) => podSummary(p, f, time)),
    );
  };
  const t0 = clock.now();
  at(t0 - 5_000, 400 * Mi, 50 * Mi);
  manager.start();
  await settle();
  assert.deepEqual(kills.map((k) => k.pod), ["hog"]);
  // A newer sample, still from before the hog's cleanup, shows the pressure it caused.
  at(t0, 400 * Mi, 50 * Mi);
  await advance(clock, 1_000);
  assert.deepEqual(kills.map((k) => k.pod), ["hog"], "stats from before the cleanup evict nobody");
  at(t0 + 2_000, 0, 60 * Mi);
  await advance(clock, 10_000);
  assert.deepEqual(kills.map((k) => k.pod), ["hog", "steady"]);
  await manager.stop();
});

Deno.test("a trigger during a round runs the next round without waiting for the tick", async () => {
  let rounds = 0;
  const first = deferred<Summary>();
  const summary = testSummary({ memoryAvailable: 900 * Mi, memoryWorkingSet: 100 * Mi });
  const { manager } = setup({
    pods: [],
    extra: {
      summary: () => {
        rounds++;
        return rounds === 1 ? first.promise : Promise.resolve(summary);
      },
    },
  });
  manager.start();
  await settle();
  manager.trigger("memory threshold crossed");
  first.resolve(summary);
  await settle();
  assert.equal(rounds, 2);
  await manager.stop();
});

Deno.test("evictions are counted by signal and the stats' age is observed (kubelet_evictions metrics)", async () => {
  const metrics = new KubeletMetrics({
    process: { rssBytes: () => 0, cpuSeconds: () => 0, startTimeSeconds: 0 },
  });
  const cached = testPod({
    name: "cached",
    uid: "cached",
    spec: { volumes: [{ name: "cache", emptyDir: { sizeLimit: "1Mi" } }] },
  });
  const { manager, observe, clock } = setup({ extra: { metrics } });
  const sampledAt = clock.now();
  observe(50 * Mi, usage(400 * Mi, 60 * Mi));
  clock.tick(3_000);
  await manager.synchronize();
  const local = setup({ pods: [cached], extra: { metrics } });
  local.observe(900 * Mi, [[cached, { volumes: { cache: 2 * Mi } }]]);
  await local.manager.synchronize();
  const text = metrics.render();
  assert.equal(sampledAt + 3_000, clock.now());
  assert.match(
    text,
    /^# HELP kubelet_evictions \[ALPHA\] Cumulative number of pod evictions by eviction signal$/m,
  );
  assert.match(text, /^kubelet_evictions\{eviction_signal="memory.available"\} 1$/m);
  assert.match(text, /^kubelet_evictions\{eviction_signal="emptydirfs.limit"\} 1$/m);
  assert.match(
    text,
    /^kubelet_eviction_stats_age_seconds_sum\{eviction_signal="memory.available"\} 3$/m,
  );
});
