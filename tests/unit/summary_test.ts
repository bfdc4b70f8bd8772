import assert from "node:assert/strict";
import type { Pod } from "../../lib/api/types.ts";
import { cgroupRefFromPath, detectCgroupLayout, readCgroupStats } from "../../lib/cgroup/mod.ts";
import type { RuntimeService } from "../../lib/cri/types.ts";
import type { RuntimePodStatus } from "../../lib/kuberuntime/types.ts";
import { KubeletMetrics } from "../../lib/metrics/mod.ts";
import { statsHandlers } from "../../lib/server/mod.ts";
import { StatsProvider } from "../../lib/stats/mod.ts";
import type { MachineFacts } from "../../lib/stats/mod.ts";
import { metaTime } from "../../lib/util/time.ts";
import { FakeClock } from "../../lib/util/clock.ts";
import { flush, runtimeContainer, runtimePodStatus, runtimeSandbox } from "../kit/mod.ts";

const CGROUP = new URL("../fixtures/cgroup/hybrid", import.meta.url).pathname;
const PROC = new URL("../fixtures/proc", import.meta.url).pathname;
const CONTAINER = "/kubepods/burstable/pod1234/abc";
/** The facts readMachineInfo() reads from the fixture /proc (btime, cpuN, MemTotal, pid limits). */
const MACHINE: MachineFacts = {
  bootTimeMs: 1_700_000_000_000,
  maxPid: 126000,
  numCores: 2,
  memoryCapacityBytes: 16384000 * 1024,
  bootID: "",
  machineID: "",
  systemUUID: "",
};

/** A runtime that answers only the two stats calls the provider makes. */
const fakeRuntime = {
  imageFsInfo: () =>
    Promise.resolve({
      imageFilesystems: [{ timestamp: 0, usedBytes: { value: 4096 }, inodesUsed: { value: 7 } }],
      containerFilesystems: [],
    }),
  listContainerStats: () =>
    Promise.resolve([{
      attributes: { id: "abc", metadata: { name: "app", attempt: 0 }, labels: {}, annotations: {} },
      writableLayer: { timestamp: 0, usedBytes: { value: 8192 }, inodesUsed: { value: 3 } },
    }]),
} as unknown as RuntimeService;

const pod: Pod = {
  metadata: { name: "web", namespace: "prod", uid: "1234" },
  spec: { containers: [{ name: "app", resources: { requests: { cpu: "100m" } } }] },
  status: { startTime: "2026-01-01T00:00:00Z" },
};

function runtimeStatus(state: "running" | "exited"): RuntimePodStatus {
  return runtimePodStatus({
    uid: "1234",
    name: "web",
    namespace: "prod",
    sandboxes: [runtimeSandbox({ id: "sbx", createdAt: Date.UTC(2026, 0, 1), hostNetwork: true })],
    containers: [
      runtimeContainer({ name: "app", image: "busybox:test" }, {
        id: "abc",
        sandboxId: "sbx",
        state,
        createdAt: Date.UTC(2026, 0, 1, 0, 0, 1),
        startedAt: Date.UTC(2026, 0, 1, 0, 0, 2),
        imageRef: "sha256:1",
        hash: "1",
      }),
    ],
  });
}

function provider(
  clock: FakeClock,
  cgroups: { podCgroupRoot?: string; cgroupsPerQOS?: boolean } = {},
): StatsProvider {
  return new StatsProvider({
    ...cgroups,
    clock,
    cgroupRoot: CGROUP,
    procRoot: PROC,
    rootDir: "/",
    podLogsDir: "/",
    runtime: fakeRuntime,
    nodeName: "node-1",
    runtimePid: 7,
    machine: MACHINE,
    housekeeping: { intervalMs: 10_000, random: () => 0, dynamic: false },
  });
}

/** Tracks the running fixture pod and takes two samples of it, 10 s apart. */
async function twoSamples(p: StatsProvider, clock: FakeClock): Promise<void> {
  p.reconcile([{ pod, runtime: runtimeStatus("running") }]);
  clock.tick(0);
  clock.tick(10_000);
  await flush(); // the runtime filesystem loop's reads
}

Deno.test("StatsProvider.summary() reports a fixture container with upstream's field names and units", async () => {
  const clock = new FakeClock();
  const p = provider(clock);
  try {
    await twoSamples(p, clock);
    const s = await p.summary({ onlyCpuAndMemory: false });
    const direct = readCgroupStats(
      detectCgroupLayout({ cgroupRoot: CGROUP }),
      cgroupRefFromPath(CONTAINER),
    );
    assert.equal(s.node.nodeName, "node-1");
    assert.equal(s.node.startTime, "2023-11-14T22:13:20Z"); // btime 1700000000
    assert.deepEqual(s.node.systemContainers?.map((c) => c.name), ["runtime", "pods"]);
    assert.equal(s.pods.length, 1);
    const podStats = s.pods[0]!;
    assert.deepEqual(podStats.podRef, { name: "web", namespace: "prod", uid: "1234" });
    assert.equal(podStats.startTime, "2026-01-01T00:00:00Z");
    const c = podStats.containers[0]!;
    assert.equal(c.name, "app");
    assert.equal(c.startTime, "2026-01-01T00:00:02Z");
    assert.equal(c.cpu?.usageCoreNanoSeconds, direct.cpu!.usageNs);
    assert.equal(c.cpu?.usageNanoCores, 0); // fixture counters do not move
    assert.equal(c.memory?.usageBytes, direct.memory!.usageBytes);
    assert.equal(c.memory?.workingSetBytes, direct.memory!.workingSetBytes);
    assert.equal(c.memory?.time, metaTime(clock.now()));
    assert.deepEqual(c.rootfs && { used: c.rootfs.usedBytes, inodes: c.rootfs.inodesUsed }, {
      used: 8192,
      inodes: 3,
    });
    assert.equal(podStats["ephemeral-storage"]?.usedBytes, 8192);
    assert.equal(s.node.runtime?.imageFs?.usedBytes, 4096);
    assert.equal(s.node.runtime?.containerFs?.usedBytes, 4096, "containerFs falls back to imageFs");
    assert.ok(s.node.fs?.capacityBytes! > 0);
    assert.equal(s.node.rlimit?.maxpid, 126000); // min(pid_max, threads-max)
    // JSON: omitempty means absent, never null.
    assert.ok(!JSON.stringify(s).includes("null"));
  } finally {
    p.stop();
  }
});

Deno.test("StatsProvider.summary() writes the figures of a sample once until the next tick; the node's availableBytes stays its own", async () => {
  const clock = new FakeClock();
  const p = provider(clock);
  try {
    await twoSamples(p, clock);
    const a = await p.summary({ onlyCpuAndMemory: false });
    const b = await p.summary({ onlyCpuAndMemory: true });
    const [ca, cb] = [a.pods[0]!.containers[0]!, b.pods[0]!.containers[0]!];
    assert.equal(cb.cpu, ca.cpu, "the same figures between ticks");
    assert.equal(cb.memory, ca.memory);
    assert.equal(b.pods[0]!.memory, a.pods[0]!.memory);
    assert.notEqual(b.node.memory, a.node.memory, "the node's are built for each Summary");
    assert.equal(
      a.node.memory?.availableBytes,
      MACHINE.memoryCapacityBytes - a.node.memory!.workingSetBytes!,
    );
    clock.tick(10_000);
    const c = await p.summary({ onlyCpuAndMemory: true });
    const cc = c.pods[0]!.containers[0]!;
    assert.notEqual(cc.cpu, ca.cpu, "a new tick's sample, new figures");
    assert.equal(cc.cpu?.time, metaTime(clock.now()));
    assert.equal(ca.cpu?.time, metaTime(clock.now() - 10_000), "the earlier figures unchanged");
  } finally {
    p.stop();
  }
});

Deno.test("StatsProvider.summary() finds containers right under the cgroup root with cgroupsPerQOS off", async () => {
  const clock = new FakeClock();
  // The fixture's pod cgroup stands in for a --cgroup-root with no kubepods level under it.
  const p = provider(clock, { podCgroupRoot: "/kubepods/burstable/pod1234", cgroupsPerQOS: false });
  try {
    await twoSamples(p, clock);
    const s = await p.summary({ onlyCpuAndMemory: true });
    const direct = readCgroupStats(
      detectCgroupLayout({ cgroupRoot: CGROUP }),
      cgroupRefFromPath(CONTAINER),
    );
    assert.equal(s.pods[0]?.containers[0]?.cpu?.usageCoreNanoSeconds, direct.cpu!.usageNs);
  } finally {
    p.stop();
  }
});

Deno.test("StatsProvider.summary() with onlyCpuAndMemory keeps only cpu and memory", async () => {
  const clock = new FakeClock();
  const p = provider(clock);
  try {
    p.reconcile([{ pod, runtime: runtimeStatus("running") }]);
    clock.tick(0);
    const s = await p.summary({ onlyCpuAndMemory: true });
    assert.deepEqual(Object.keys(s.node).sort(), [
      "cpu",
      "memory",
      "nodeName",
      "startTime",
      "systemContainers",
    ]);
    assert.deepEqual(Object.keys(s.pods[0]!).sort(), ["containers", "podRef", "startTime"]);
    assert.deepEqual(Object.keys(s.pods[0]!.containers[0]!).sort(), [
      "cpu",
      "memory",
      "name",
      "startTime",
    ]);
    assert.equal(s.node.memory!.availableBytes, 16384000 * 1024 - s.node.memory!.workingSetBytes!);
  } finally {
    p.stop();
  }
});

Deno.test("StatsProvider.reconcile() stops housekeeping a container once it has exited", () => {
  const clock = new FakeClock();
  const p = provider(clock);
  try {
    p.reconcile([{ pod, runtime: runtimeStatus("running") }]);
    assert.ok(p.housekeeper.ids().includes("abc"));
    assert.ok(p.housekeeper.ids().includes("pod:1234"));
    p.reconcile([{ pod, runtime: runtimeStatus("exited") }]);
    assert.ok(!p.housekeeper.ids().includes("abc"));
    assert.ok(p.housekeeper.ids().includes("pod:1234"), "the sandbox is still ready");
    p.reconcile([]);
    assert.deepEqual(p.housekeeper.ids().sort(), ["/", "system:pods", "system:runtime"]);
  } finally {
    p.stop();
  }
});

Deno.test("StatsProvider.reconcile() records a pod's cgroup path when it first sees the pod", async () => {
  const clock = new FakeClock();
  const p = provider(clock);
  // The same pod as a BestEffort one would live under /kubepods/besteffort.
  const bestEffort: Pod = {
    ...pod,
    spec: { containers: [{ name: "app" }] },
  };
  const paths = async () => {
    const s = await p.snapshot({ withFs: false });
    return s.pods.map((x) => [x.cgroup.path, ...x.containers.map((c) => c.cgroup.path)]);
  };
  try {
    p.reconcile([{ pod, runtime: runtimeStatus("running") }]);
    assert.deepEqual(await paths(), [["/kubepods/burstable/pod1234", CONTAINER]]);
    p.reconcile([{ pod: bestEffort, runtime: runtimeStatus("running") }]);
    assert.deepEqual(await paths(), [["/kubepods/burstable/pod1234", CONTAINER]]);
    // Gone and seen again: recorded anew.
    p.reconcile([]);
    p.reconcile([{ pod: bestEffort, runtime: runtimeStatus("running") }]);
    assert.deepEqual(await paths(), [[
      "/kubepods/besteffort/pod1234",
      "/kubepods/besteffort/pod1234/abc",
    ]]);
  } finally {
    p.stop();
  }
});

Deno.test("StatsProvider.reconcile() given the same pod and status objects keeps what it built; a start time set in place is read", async () => {
  const clock = new FakeClock(Date.UTC(2026, 0, 2));
  const p = provider(clock);
  // No start time and no ready sandbox: the pod's start is when it was first reconciled.
  const noStart: Pod = { ...pod, status: {} };
  const running = runtimeStatus("running");
  running.sandboxes[0]!.state = "notready";
  const observed = [{ pod: noStart, runtime: running }];
  const start = async () => (await p.snapshot({ withFs: false })).pods.map((x) => x.startTimeMs);
  try {
    p.reconcile(observed);
    assert.deepEqual(await start(), [Date.UTC(2026, 0, 2)]);
    clock.tick(5_000);
    p.reconcile([{ pod: noStart, runtime: running }]);
    assert.deepEqual(await start(), [Date.UTC(2026, 0, 2)], "the same objects: nothing rebuilt");
    // The config mux writes a source's status into the pod it holds.
    noStart.status = { startTime: "2026-01-01T00:00:09Z" };
    p.reconcile([{ pod: noStart, runtime: running }]);
    assert.deepEqual(await start(), [Date.UTC(2026, 0, 1, 0, 0, 9)]);
  } finally {
    p.stop();
  }
});

Deno.test("statsHandlers() serves /stats/summary as JSON and honours only_cpu_and_memory", async () => {
  const clock = new FakeClock();
  const p = provider(clock);
  try {
    p.reconcile([{ pod, runtime: runtimeStatus("running") }]);
    clock.tick(0);
    const metrics = new KubeletMetrics();
    const h = statsHandlers(p, () => metrics.render())["/stats/summary"]!;
    const url = new URL("http://node/stats/summary?only_cpu_and_memory=true");
    const res = await h(new Request(url), url);
    assert.equal(res.headers.get("content-type"), "application/json");
    const body = await res.json();
    assert.equal(body.node.fs, undefined);
    assert.equal(body.pods[0].containers[0].rootfs, undefined);
    assert.equal(typeof body.pods[0].containers[0].memory.workingSetBytes, "number");
  } finally {
    p.stop();
  }
});

Deno.test("metaTime() formats like metav1.Time: UTC, whole seconds", () => {
  assert.equal(metaTime(Date.UTC(2026, 0, 2, 3, 4, 5, 999)), "2026-01-02T03:04:05Z");
});
