import assert from "node:assert/strict";
import type { Pod, ResourceRequirements } from "../../lib/api/types.ts";
import {
  cpuWeightFromShares,
  milliCPUToQuota,
  milliCPUToShares,
  resourceConfigForPod,
} from "../../lib/cm/mod.ts";
import { testPod } from "../kit/mod.ts";

// Upstream's cases: pkg/kubelet/cm/helpers_linux_test.go (v1.37.2).

Deno.test("milliCPUToQuota() matches upstream's TestMilliCPUToQuota", () => {
  const cases: [number, number][] = [
    [0, 0],
    [5, 1000],
    [9, 1000],
    [10, 1000],
    [200, 20000],
    [500, 50000],
    [1000, 100000],
    [1500, 150000],
  ];
  for (const [milli, quota] of cases) assert.equal(milliCPUToQuota(milli), quota, `${milli}m`);
});

Deno.test("milliCPUToShares() maps 0 to 2 and clamps to the kernel's range", () => {
  assert.equal(milliCPUToShares(0), 2);
  assert.equal(milliCPUToShares(1), 2);
  assert.equal(milliCPUToShares(100), 102);
  assert.equal(milliCPUToShares(1000), 1024);
  assert.equal(milliCPUToShares(1_000_000), 262144);
});

Deno.test("cpuWeightFromShares() is upstream's shares → cpu.weight for cgroup v2", () => {
  assert.equal(cpuWeightFromShares(2), 1);
  assert.equal(cpuWeightFromShares(1024), 39);
  assert.equal(cpuWeightFromShares(262144), 10000);
});

function pod(...resources: ResourceRequirements[]): Pod {
  return testPod({
    containers: resources.map((r, i) => ({ name: `c${i}`, image: "busybox", resources: r })),
  });
}

const list = (cpu: string, memory: string) => ({
  ...(cpu ? { cpu } : {}),
  ...(memory ? { memory } : {}),
});
const Mi = 1024 * 1024;

Deno.test("resourceConfigForPod() matches upstream's TestResourceConfigForPod", () => {
  // besteffort
  assert.deepEqual(resourceConfigForPod(pod({})), { cpuShares: 2 });
  // burstable-no-limits
  assert.deepEqual(
    resourceConfigForPod(pod({ requests: list("100m", "100Mi") })),
    { cpuShares: milliCPUToShares(100) },
  );
  // burstable-with-limits
  const withLimits = pod({ requests: list("100m", "100Mi"), limits: list("200m", "200Mi") });
  assert.deepEqual(resourceConfigForPod(withLimits), {
    cpuShares: milliCPUToShares(100),
    cpuQuota: 20000,
    cpuPeriod: 100000,
    memory: 200 * Mi,
  });
  // burstable-with-limits-no-cpu-enforcement
  assert.deepEqual(resourceConfigForPod(withLimits, { enforceCPULimits: false }), {
    cpuShares: milliCPUToShares(100),
    cpuQuota: -1,
    cpuPeriod: 100000,
    memory: 200 * Mi,
  });
  // burstable-with-limits-with-tuned-quota
  assert.deepEqual(resourceConfigForPod(withLimits, { cpuPeriod: 5000 }), {
    cpuShares: milliCPUToShares(100),
    cpuQuota: 1000,
    cpuPeriod: 5000,
    memory: 200 * Mi,
  });
  // burstable-partial-limits
  assert.deepEqual(
    resourceConfigForPod(pod(
      { requests: list("100m", "100Mi"), limits: list("200m", "200Mi") },
      { requests: list("100m", "100Mi") },
    )),
    { cpuShares: milliCPUToShares(200) },
  );
  // guaranteed
  const g = pod({ requests: list("100m", "100Mi"), limits: list("100m", "100Mi") });
  assert.deepEqual(resourceConfigForPod(g), {
    cpuShares: milliCPUToShares(100),
    cpuQuota: 10000,
    cpuPeriod: 100000,
    memory: 100 * Mi,
  });
  // guaranteed-no-cpu-enforcement
  assert.deepEqual(resourceConfigForPod(g, { enforceCPULimits: false }), {
    cpuShares: milliCPUToShares(100),
    cpuQuota: -1,
    cpuPeriod: 100000,
    memory: 100 * Mi,
  });
});

Deno.test("resourceConfigForPod() adds the pod overhead to requests and to non-zero limits", () => {
  const p = pod({ requests: list("100m", "100Mi"), limits: list("200m", "200Mi") });
  p.spec.overhead = { cpu: "250m", memory: "120Mi" };
  assert.deepEqual(resourceConfigForPod(p), {
    cpuShares: milliCPUToShares(350),
    cpuQuota: 45000,
    cpuPeriod: 100000,
    memory: 320 * Mi,
  });
  // A Burstable pod without limits gets the overhead in its shares only.
  const noLimits = pod({ requests: list("100m", "") });
  noLimits.spec.overhead = { cpu: "250m", memory: "120Mi" };
  assert.deepEqual(resourceConfigForPod(noLimits), { cpuShares: milliCPUToShares(350) });
});

Deno.test("resourceConfigForPod() counts init containers and sidecars as upstream's PodLimits", () => {
  const p = pod({ requests: list("100m", "100Mi"), limits: list("100m", "100Mi") });
  p.spec.initContainers = [
    // A plain init container runs alone: the pod needs at least its limits.
    { name: "init", image: "busybox", resources: { limits: list("500m", "300Mi") } },
    // A sidecar runs with the app containers: its limits add up.
    {
      name: "side",
      image: "busybox",
      restartPolicy: "Always",
      resources: { limits: list("50m", "50Mi") },
    },
  ];
  const config = resourceConfigForPod(p);
  assert.equal(config.cpuQuota, 50000);
  assert.equal(config.memory, 300 * Mi);
});
