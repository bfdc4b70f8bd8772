import { deepStrictEqual, ok, strictEqual } from "node:assert";
import type { Container, Pod, ResourceRequirements } from "../../lib/api/types.ts";
import { formatBinaryBytes, formatMilliCPU } from "../../lib/api/quantity.ts";
import { computePodActions } from "../../lib/kuberuntime/compute_pod_actions.ts";
import { isPodResizeInProgress } from "../../lib/kuberuntime/resize_action.ts";
import {
  runtimeContainerResources,
  sharesToMilliCPU,
} from "../../lib/kuberuntime/runtime_status.ts";
import { requirementsFromNumbers } from "../../lib/kuberuntime/resize_pod.ts";
import type { PodActions, RuntimePodStatus } from "../../lib/kuberuntime/types.ts";
import { statusResources } from "../../lib/status/container_resources.ts";
import { generatePodStatus } from "../../lib/status/generate.ts";
import {
  AllocationManager,
  type PendingResizeHooks,
  podFromAllocation,
  resizeEventMessage,
  resourceInfoForPod,
  ResourceState,
} from "../../lib/allocation/mod.ts";
import { FakeClock } from "../../lib/util/clock.ts";
import { silentLogger } from "../../lib/util/log.ts";
import {
  podActions,
  runtimeContainer,
  runtimePodStatus,
  runtimeSandbox,
  testPod,
} from "../kit/mod.ts";

const NOW = Date.parse("2026-01-01T00:10:00Z");
const ID = { name: "resize", namespace: "ns", uid: "uid-r" };

/** A pod whose app containers have the given resources (and resize policies). */
function resizePod(
  containers: {
    name: string;
    resources: ResourceRequirements;
    policy?: Container["resizePolicy"];
  }[],
): Pod {
  const pod = testPod({ ...ID, containers: containers.map((c) => c.name) });
  pod.spec.containers.forEach((c, i) => {
    c.resources = containers[i]!.resources;
    const policy = containers[i]!.policy;
    if (policy) c.resizePolicy = policy;
  });
  return pod;
}

function running(pod: Pod): RuntimePodStatus {
  return runtimePodStatus({
    ...ID,
    sandboxes: [runtimeSandbox({ createdAt: NOW - 120_000 })],
    containers: pod.spec.containers.map((c, i) =>
      runtimeContainer(c, { id: `${c.name}-id`, createdAt: NOW - 60_000 - i })
    ),
  });
}

function plan(pod: Pod, actuated: Record<string, ResourceRequirements>): PodActions {
  return computePodActions({
    pod,
    status: running(pod),
    backoff: new Map(),
    now: NOW,
    actuated: new Map(Object.entries(actuated)),
  });
}

const cpu = (req: string, lim?: string): ResourceRequirements => ({
  requests: { cpu: req },
  ...(lim ? { limits: { cpu: lim } } : {}),
});

Deno.test("computePodActions() keeps a container whose allocated resources are actuated", () => {
  const pod = resizePod([{ name: "c1", resources: cpu("20m", "30m") }]);
  deepStrictEqual(plan(pod, { c1: cpu("20m", "30m") }), podActions({ sandboxId: "sb1" }));
});

Deno.test("computePodActions() treats 1 and 1000m as the same allocation", () => {
  const pod = resizePod([{ name: "c1", resources: cpu("1") }]);
  deepStrictEqual(plan(pod, { c1: cpu("1000m") }), podActions({ sandboxId: "sb1" }));
});

Deno.test("computePodActions() updates cpu in place when the resize policy is NotRequired (or unset)", () => {
  const pod = resizePod([{ name: "c1", resources: cpu("25m", "35m") }]);
  const actions = plan(pod, { c1: cpu("20m", "30m") });
  deepStrictEqual(actions.containersToKill, []);
  deepStrictEqual(actions.containersToStart, []);
  deepStrictEqual(actions.containersToUpdate, {
    memory: [],
    cpu: [{
      name: "c1",
      containerId: "c1-id",
      isInit: false,
      desired: { cpuRequest: 25, cpuLimit: 35, memoryRequest: 0, memoryLimit: 0 },
      current: { cpuRequest: 20, cpuLimit: 30, memoryRequest: 0, memoryLimit: 0 },
    }],
  });
});

Deno.test("computePodActions() restarts a container whose changed resource says RestartContainer", () => {
  const pod = resizePod([{
    name: "c1",
    resources: { requests: { cpu: "20m", memory: "40Mi" }, limits: { memory: "40Mi" } },
    policy: [
      { resourceName: "cpu", restartPolicy: "NotRequired" },
      { resourceName: "memory", restartPolicy: "RestartContainer" },
    ],
  }]);
  const actions = plan(pod, {
    c1: { requests: { cpu: "20m", memory: "35Mi" }, limits: { memory: "35Mi" } },
  });
  deepStrictEqual(actions.containersToStart, [0]);
  deepStrictEqual(actions.containersToKill, [{
    containerId: "c1-id",
    name: "c1",
    reason: "ResizeRestart",
    message: "Container c1 resize requires restart",
  }]);
  strictEqual(actions.containersToUpdate, undefined);
  strictEqual(actions.killPod, false);
});

Deno.test("computePodActions() does not restart for a RestartContainer resource that did not change", () => {
  const pod = resizePod([{
    name: "c1",
    resources: { requests: { cpu: "25m", memory: "35Mi" } },
    policy: [{ resourceName: "memory", restartPolicy: "RestartContainer" }],
  }]);
  const actions = plan(pod, { c1: { requests: { cpu: "20m", memory: "35Mi" } } });
  deepStrictEqual(actions.containersToKill, []);
  strictEqual(actions.containersToUpdate?.cpu.length, 1);
  strictEqual(actions.containersToUpdate?.memory.length, 0);
});

Deno.test("computePodActions() orders each resource's updates: decreases first, increases last", () => {
  const pod = resizePod([
    { name: "up", resources: { requests: { memory: "50Mi" }, limits: { memory: "60Mi" } } },
    { name: "down", resources: { requests: { memory: "30Mi" }, limits: { memory: "40Mi" } } },
    { name: "cpuup", resources: cpu("30m") },
    { name: "cpudown", resources: cpu("10m") },
  ]);
  const actions = plan(pod, {
    up: { requests: { memory: "40Mi" }, limits: { memory: "50Mi" } },
    down: { requests: { memory: "35Mi" }, limits: { memory: "45Mi" } },
    cpuup: cpu("20m"),
    cpudown: cpu("20m"),
  });
  deepStrictEqual(actions.containersToUpdate?.memory.map((u) => u.name), ["down", "up"]);
  deepStrictEqual(actions.containersToUpdate?.cpu.map((u) => u.name), ["cpudown", "cpuup"]);
});

Deno.test("computePodActions() plans no resize without an actuated record (resize off)", () => {
  const pod = resizePod([{ name: "c1", resources: cpu("25m") }]);
  const actions = computePodActions({
    pod,
    status: running(pod),
    backoff: new Map(),
    now: NOW,
  });
  strictEqual(actions.containersToUpdate, undefined);
});

Deno.test("computePodActions() resizes a running sidecar in place and restarts one that says so", () => {
  const pod = resizePod([{ name: "app", resources: cpu("10m") }]);
  pod.spec.initContainers = [
    { name: "side", image: "busybox", restartPolicy: "Always", resources: cpu("30m") },
    {
      name: "side2",
      image: "busybox",
      restartPolicy: "Always",
      resources: cpu("30m"),
      resizePolicy: [{ resourceName: "cpu", restartPolicy: "RestartContainer" }],
    },
  ];
  const status = running(pod);
  status.containers.push(
    runtimeContainer(pod.spec.initContainers[0]!, { id: "side-id", createdAt: NOW - 90_000 }),
    runtimeContainer(pod.spec.initContainers[1]!, { id: "side2-id", createdAt: NOW - 80_000 }),
  );
  const actions = computePodActions({
    pod,
    status,
    backoff: new Map(),
    now: NOW,
    actuated: new Map([["app", cpu("10m")], ["side", cpu("20m")], ["side2", cpu("20m")]]),
  });
  deepStrictEqual(actions.containersToUpdate?.cpu.map((u) => [u.name, u.isInit]), [[
    "side",
    true,
  ]]);
  deepStrictEqual(actions.initContainersToStart, [1]);
  deepStrictEqual(actions.containersToKill.map((k) => [k.name, k.reason]), [[
    "side2",
    "ResizeRestart",
  ]]);
});

Deno.test("isPodResizeInProgress() is true until every running container's allocation is actuated", () => {
  const pod = resizePod([{ name: "c1", resources: cpu("25m") }, {
    name: "c2",
    resources: cpu("5m"),
  }]);
  const status = running(pod);
  const actuated = new Map([["c1", cpu("20m")], ["c2", cpu("5m")]]);
  ok(isPodResizeInProgress(pod, status, (n) => actuated.get(n)));
  actuated.set("c1", cpu("25m"));
  ok(!isPodResizeInProgress(pod, status, (n) => actuated.get(n)));
  // A container that does not run is sized when it starts.
  actuated.set("c2", cpu("1"));
  status.containers = status.containers.filter((c) => c.name !== "c2");
  ok(!isPodResizeInProgress(pod, status, (n) => actuated.get(n)));
});

Deno.test("runtimeContainerResources() turns CRI cgroup values back into millicores and bytes as upstream", () => {
  deepStrictEqual(
    runtimeContainerResources({
      cpuShares: 20,
      cpuQuota: 3000,
      cpuPeriod: 100000,
      memoryLimitInBytes: 47185920,
    }),
    { cpuRequest: 20, cpuLimit: 30, memoryLimit: 47185920 },
  );
  // 25m → 25 shares → 25m (rounded up); no quota means no limit.
  strictEqual(sharesToMilliCPU(25), 25);
  deepStrictEqual(runtimeContainerResources({ cpuShares: 2, cpuQuota: -1, cpuPeriod: 100000 }), {
    cpuRequest: 2,
  });
  strictEqual(runtimeContainerResources({}), undefined);
});

Deno.test("formatMilliCPU() and formatBinaryBytes() write quantities as the apiserver does", () => {
  deepStrictEqual(
    [formatMilliCPU(25), formatMilliCPU(1000), formatMilliCPU(1500)],
    ["25m", "1", "1500m"],
  );
  deepStrictEqual(
    [formatBinaryBytes(47185920), formatBinaryBytes(1 << 30), formatBinaryBytes(1000)],
    ["45Mi", "1Gi", "1000"],
  );
  deepStrictEqual(
    requirementsFromNumbers({
      cpuRequest: 20,
      cpuLimit: 0,
      memoryRequest: 0,
      memoryLimit: 1 << 20,
    }),
    { requests: { cpu: "20m" }, limits: { memory: "1Mi" } },
  );
});

Deno.test("statusResources() reports the runtime's values, and the allocated ones the cgroup cannot tell apart", () => {
  const spec: Container = {
    name: "c1",
    image: "busybox",
    resources: { requests: { cpu: "1m" }, limits: { cpu: "5m" } },
  };
  // 1m runs as 2 shares (2m), 5m as the 1 ms quota floor (10m): the API keeps 1m and 5m.
  const rc = runtimeContainer(spec, {
    id: "c1-id",
    resources: { cpuRequest: 2, cpuLimit: 10 },
  });
  deepStrictEqual(statusResources(spec, rc, undefined, undefined), {
    requests: { cpu: "1m" },
    limits: { cpu: "5m" },
  });
  // Above the floors the runtime's values win: an old limit still in the cgroup shows.
  const spec2: Container = {
    ...spec,
    resources: { requests: { cpu: "25m" }, limits: { cpu: "35m" } },
  };
  const rc2 = runtimeContainer(spec2, { id: "c2", resources: { cpuRequest: 20, cpuLimit: 30 } });
  deepStrictEqual(statusResources(spec2, rc2, undefined, undefined), {
    requests: { cpu: "20m" },
    limits: { cpu: "30m" },
  });
  // The memory request comes from the actuated record; no limits stay absent.
  const spec3: Container = { ...spec, resources: { requests: { memory: "35Mi" } } };
  const rc3 = runtimeContainer(spec3, { id: "c3", resources: { cpuRequest: 2 } });
  deepStrictEqual(statusResources(spec3, rc3, undefined, { requests: { memory: "40Mi" } }), {
    requests: { memory: "40Mi" },
  });
});

Deno.test("generatePodStatus() reports resources, allocatedResources, resize conditions and each condition's observedGeneration", () => {
  const pod = resizePod([{ name: "c1", resources: cpu("20m", "30m") }]);
  pod.metadata.generation = 3;
  const runtime = running(pod);
  runtime.containers[0]!.resources = { cpuRequest: 20, cpuLimit: 30 };
  const status = generatePodStatus({
    pod,
    runtime,
    inBackoff: [],
    actuated: () => cpu("20m", "30m"),
    resizeConditions: [{ type: "PodResizeInProgress", status: "True", observedGeneration: 3 }],
    now: NOW,
  });
  // status.observedGeneration itself is the status manager's (tests/unit/status_manager_test.ts).
  const c1 = status.containerStatuses![0]!;
  deepStrictEqual(c1.resources, { requests: { cpu: "20m" }, limits: { cpu: "30m" } });
  deepStrictEqual(c1.allocatedResources, { cpu: "20m" });
  const types = status.conditions!.map((c) => [c.type, c.observedGeneration]);
  deepStrictEqual(types[0], ["PodResizeInProgress", 3]);
  ok(types.every(([, g]) => g === 3));
});

function hooks(pods: Map<string, Pod>, synced: string[]): PendingResizeHooks {
  return {
    podByUid: (uid) => pods.get(uid),
    activePods: () => [...pods.values()],
    syncPod: (pod) => synced.push(pod.metadata.uid!),
  };
}

/** Admits while the pods' cpu requests sum to at most 100m, as OutOfcpu would. */
function cpuBudget(pod: Pod, others: readonly Pod[]) {
  const sum = (p: Pod) =>
    p.spec.containers.reduce(
      (n, c) => n + Number.parseInt(String(c.resources?.requests?.cpu ?? "0"), 10),
      0,
    );
  const used = others.reduce((n, p) => n + sum(p), 0);
  return used + sum(pod) <= 100 ? { admit: true as const } : {
    admit: false as const,
    reason: "OutOfcpu",
    message: "Node didn't have enough resource: cpu",
  };
}

Deno.test("AllocationManager allocates a resize that fits, defers one that does not, and retries it", () => {
  const clock = new FakeClock(NOW);
  const events: string[] = [];
  const m = new AllocationManager({
    state: new ResourceState(),
    clock,
    logger: silentLogger,
    admit: cpuBudget,
    events: { event: (_o, type, reason) => events.push(`${type} ${reason}`) },
  });
  const a = resizePod([{ name: "c1", resources: cpu("40m") }]);
  const b = structuredClone(a);
  b.metadata.uid = "uid-b";
  b.metadata.name = "b";
  const pods = new Map([[a.metadata.uid!, a], [b.metadata.uid!, b]]);
  ok(m.addPod(a, []).admit);
  ok(m.addPod(b, [a]).admit);
  const synced: string[] = [];

  // a grows to 50m: 50 + 40 fits.
  const a2 = structuredClone(a);
  a2.spec.containers[0]!.resources = cpu("50m");
  a2.metadata.generation = 2;
  pods.set(a.metadata.uid!, a2);
  m.podUpdated(a2, hooks(pods, synced));
  strictEqual(m.allocatedPod(a2).updated, false);
  deepStrictEqual(m.conditions.list(a.metadata.uid!).map((c) => c.type), ["PodResizeInProgress"]);
  deepStrictEqual(synced, [a.metadata.uid]);

  // b grows to 70m: 50 + 70 does not fit → Deferred, still allocated 40m.
  const b2 = structuredClone(b);
  b2.spec.containers[0]!.resources = cpu("70m");
  b2.metadata.generation = 2;
  pods.set(b.metadata.uid!, b2);
  m.podUpdated(b2, hooks(pods, synced));
  const pending = m.conditions.list("uid-b")[0]!;
  deepStrictEqual([pending.type, pending.reason, pending.observedGeneration], [
    "PodResizePending",
    "Deferred",
    2,
  ]);
  deepStrictEqual(m.allocatedPod(b2).pod.spec.containers[0]!.resources, cpu("40m"));
  deepStrictEqual(m.pendingResizes(), ["uid-b"]);

  // a goes away: b's resize fits now.
  pods.delete(a.metadata.uid!);
  m.removePod(a.metadata.uid!);
  m.retryPendingResizes(hooks(pods, synced));
  strictEqual(m.allocatedPod(b2).updated, false);
  deepStrictEqual(m.conditions.list("uid-b").map((c) => c.type), ["PodResizeInProgress"]);
  deepStrictEqual(m.pendingResizes(), []);
  deepStrictEqual(events, [
    "Normal ResizeStarted",
    "Warning ResizeDeferred",
    "Normal ResizeStarted",
  ]);
});

Deno.test("AllocationManager: a pod-level resources resize is Infeasible with upstream's message", () => {
  const m = new AllocationManager({
    state: new ResourceState(),
    clock: new FakeClock(NOW),
    logger: silentLogger,
    admit: () => ({ admit: true }),
  });
  const pod = resizePod([{ name: "c1", resources: cpu("10m") }]);
  pod.spec.resources = { requests: { cpu: "10m" } };
  ok(m.addPod(pod, []).admit);
  const resized = structuredClone(pod);
  resized.spec.resources = { requests: { cpu: "20m" } };
  m.podUpdated(resized, hooks(new Map([[ID.uid, resized]]), []));
  const c = m.conditions.list(ID.uid)[0]!;
  deepStrictEqual([c.type, c.reason, c.message], [
    "PodResizePending",
    "Infeasible",
    "In-place pod-level resources resize is not supported on this node",
  ]);
  // Infeasible resizes are not retried.
  deepStrictEqual(m.pendingResizes(), []);
});

Deno.test("ResourceState survives a restart through its checkpoint file", () => {
  const dir = Deno.makeTempDirSync();
  try {
    const path = `${dir}/allocated_pods_state`;
    const pod = resizePod([{ name: "c1", resources: cpu("20m") }]);
    new ResourceState({ path }).setPod(ID.uid, resourceInfoForPod(pod));
    const again = new ResourceState({ path });
    deepStrictEqual(again.getContainer(ID.uid, "c1"), cpu("20m"));
    const resized = structuredClone(pod);
    resized.spec.containers[0]!.resources = cpu("30m");
    deepStrictEqual(
      podFromAllocation(resized, again.getPod(ID.uid)).pod.spec.containers[0]!.resources,
      cpu("20m"),
    );
  } finally {
    Deno.removeSync(dir, { recursive: true });
  }
});

Deno.test("resizeEventMessage() writes upstream's resource summary", () => {
  const pod = resizePod([{ name: "c1", resources: { requests: { memory: "35Mi", cpu: "20m" } } }]);
  strictEqual(
    resizeEventMessage("Pod resize started", pod, 2),
    'Pod resize started: {"containers":[{"name":"c1","resources":{"requests":{"cpu":"20m","memory":"35Mi"}}}],"generation":2}',
  );
});

Deno.test("AllocationManager retries deferred resizes highest priority first, as upstream sorts them", () => {
  const m = new AllocationManager({
    state: new ResourceState(),
    clock: new FakeClock(NOW),
    logger: silentLogger,
    admit: cpuBudget,
  });
  const make = (uid: string, cpuReq: string, priority: number) => {
    const p = resizePod([{ name: "c1", resources: cpu(cpuReq) }]);
    p.metadata.uid = uid;
    p.metadata.name = uid;
    p.spec.priority = priority;
    return p;
  };
  const big = make("big", "60m", 0);
  const low = make("low", "10m", 1);
  const high = make("high", "10m", 100);
  const pods = new Map([["big", big], ["low", low], ["high", high]]);
  for (const p of pods.values()) ok(m.addPod(p, [...pods.values()].filter((o) => o !== p)).admit);
  const synced: string[] = [];
  // Both ask for 60m more: neither fits beside big (60 + 10 + 70 > 100).
  for (const uid of ["low", "high"]) {
    const resized = structuredClone(pods.get(uid)!);
    resized.spec.containers[0]!.resources = cpu("70m");
    pods.set(uid, resized);
    m.podUpdated(resized, hooks(pods, synced));
  }
  deepStrictEqual(m.pendingResizes(), ["high", "low"]);
  pods.delete("big");
  m.removePod("big");
  m.retryPendingResizes(hooks(pods, synced));
  // Room for one: the higher priority pod gets it; the other still waits.
  strictEqual(m.allocatedPod(pods.get("high")!).updated, false);
  strictEqual(m.allocatedPod(pods.get("low")!).updated, true);
  deepStrictEqual(m.pendingResizes(), ["low"]);
});
