import assert from "node:assert/strict";
import {
  CgroupfsManager,
  findCgroupHierarchies,
  nodeAllocatableEnforcement,
  type NodeAllocatableInput,
  PodCgroupManager,
  reservedCgroupConfig,
} from "../../lib/cm/mod.ts";
import { enforcementAmounts } from "../../lib/nodestatus/mod.ts";
import { validateEnforceNodeAllocatable } from "../../lib/options/validation.ts";
import type { KubeletConfiguration } from "../../lib/options/mod.ts";
import type { MachineInfo } from "../../lib/stats/mod.ts";
import { FakeClock } from "../../lib/util/clock.ts";
import { silentLogger } from "../../lib/util/log.ts";
import { cgroupV1Tree, cgroupV2Tree, withTempDirSync } from "../kit/mod.ts";

const GI = 1024 ** 3;
const MACHINE = {
  numCores: 4,
  memoryCapacityBytes: 8 * GI,
  ephemeralStorageCapacityBytes: 100 * GI,
  hugepages: [],
  maxPid: 32768,
} as unknown as MachineInfo;

function input(enforce: string[], extra: Partial<NodeAllocatableInput> = {}): NodeAllocatableInput {
  return {
    ...enforcementAmounts(MACHINE, {
      kubeReserved: { memory: "1Gi", cpu: "500m", pid: "1000" },
      systemReserved: { cpu: "250m", memory: "512Mi" },
    }),
    enforce,
    cgroupsPerQOS: true,
    systemReservedCgroup: "/system.slice",
    kubeReservedCgroup: "/kube.slice",
    ...extra,
  };
}

Deno.test("nodeAllocatableEnforcement() limits kubepods to capacity less both reservations with [pods]", () => {
  const d = nodeAllocatableEnforcement(input(["pods"]));
  // getNodeAllocatableInternalAbsolute: 4000m − 500m − 250m; 8Gi − 1Gi − 512Mi; pid 32768 − 1000.
  assert.deepEqual(d.kubepods, {
    memory: 8 * GI - GI - 512 * 1024 ** 2,
    cpuShares: Math.trunc(3250 * 1024 / 1000),
    pidsLimit: 31768,
  });
  assert.deepEqual(d.reserved, []);
});

Deno.test("nodeAllocatableEnforcement() limits kubepods to the whole capacity without pods (none, [])", () => {
  for (const enforce of [["none"], [], ["kube-reserved"]]) {
    const d = nodeAllocatableEnforcement(input(enforce));
    assert.deepEqual(
      d.kubepods,
      { memory: 8 * GI, cpuShares: 4096, pidsLimit: 32768 },
      JSON.stringify(enforce),
    );
  }
});

Deno.test("nodeAllocatableEnforcement() limits the reserved cgroups to their reservations, compressible only cpu", () => {
  const d = nodeAllocatableEnforcement(input(["pods", "system-reserved", "kube-reserved"]));
  assert.deepEqual(d.reserved, [
    {
      key: "system-reserved",
      title: "System Reserved",
      cgroup: "/system.slice",
      config: { memory: 512 * 1024 ** 2, cpuShares: 256 },
    },
    {
      key: "kube-reserved",
      title: "Kube Reserved",
      cgroup: "/kube.slice",
      config: { memory: GI, cpuShares: 512, pidsLimit: 1000 },
    },
  ]);
  const c = nodeAllocatableEnforcement(
    input(["system-reserved-compressible", "kube-reserved-compressible"]),
  );
  assert.deepEqual(c.reserved.map((r) => [r.key, r.config]), [
    ["system-reserved-compressible", { cpuShares: 256 }],
    ["kube-reserved-compressible", { cpuShares: 512 }],
  ]);
  // An unset reservation is upstream's "cgroup is not configured properly".
  assert.equal(reservedCgroupConfig(new Map(), false), undefined);
});

Deno.test("validateEnforceNodeAllocatable() refuses what upstream's validation refuses", () => {
  const kc = (k: Partial<KubeletConfiguration>) => k as KubeletConfiguration;
  assert.deepEqual(validateEnforceNodeAllocatable(kc({ enforceNodeAllocatable: ["pods"] })), []);
  assert.deepEqual(
    validateEnforceNodeAllocatable(kc({
      enforceNodeAllocatable: ["pods", "system-reserved", "kube-reserved-compressible"],
      systemReservedCgroup: "/s",
      kubeReservedCgroup: "/k",
    })),
    [],
  );
  const cases: [Partial<KubeletConfiguration>, RegExp][] = [
    [
      { enforceNodeAllocatable: ["pods"], cgroupsPerQOS: false },
      /cgroupsPerQOS .* must be set to true when "pods"/,
    ],
    [
      { enforceNodeAllocatable: ["system-reserved"] },
      /systemReservedCgroup \(--system-reserved-cgroup\) must be specified/,
    ],
    [
      { enforceNodeAllocatable: ["kube-reserved-compressible"] },
      /kubeReservedCgroup \(--kube-reserved-cgroup\) must be specified/,
    ],
    [
      { enforceNodeAllocatable: ["none", "pods"] },
      /may not contain additional enforcements when "none"/,
    ],
    [{ enforceNodeAllocatable: ["pods", "pods"] }, /duplicated enforcements "pods"/],
    [
      { enforceNodeAllocatable: ["memory"] },
      /option "memory" specified for enforceNodeAllocatable .* Valid options are "pods", "system-reserved", "system-reserved-compressible", "kube-reserved", "kube-reserved-compressible" or "none"/,
    ],
    [
      {
        enforceNodeAllocatable: ["kube-reserved", "kube-reserved-compressible"],
        kubeReservedCgroup: "/k",
      },
      /both "kube-reserved" and "kube-reserved-compressible" cannot be specified together/,
    ],
  ];
  for (const [config, want] of cases) {
    const problems = validateEnforceNodeAllocatable(kc(config));
    assert.ok(problems.some((p) => want.test(p)), `${JSON.stringify(config)}: ${problems}`);
  }
  assert.deepEqual(
    validateEnforceNodeAllocatable(kc({ enforceNodeAllocatable: [], cgroupsPerQOS: false })),
    [],
  );
});

function manager(root: string, enforce: string[], extra: Partial<NodeAllocatableInput> = {}) {
  const d = nodeAllocatableEnforcement(input(enforce, extra));
  return new PodCgroupManager({
    cgroupRoot: "/",
    cgroupDriver: "cgroupfs",
    cgroupsPerQOS: true,
    podPidsLimit: -1,
    nodeAllocatable: d.kubepods,
    reservedCgroups: d.reserved,
    cgroups: new CgroupfsManager(findCgroupHierarchies(root)),
    logger: silentLogger,
  });
}

const read = (path: string) => Deno.readTextFileSync(path).trim();

Deno.test("v1: start() writes the reserved cgroups' limits, and refuses one that does not exist", () => {
  withTempDirSync((root) => {
    cgroupV1Tree(root);
    assert.throws(
      () => manager(root, ["pods", "system-reserved"]).start(),
      /Failed to enforce System Reserved Cgroup Limits on "\/system.slice": cgroup "\/system.slice" does not exist/,
    );
    for (const h of ["cpu", "memory", "pids", "cpuset", "systemd"]) {
      for (const dir of ["system.slice", "kube.slice"]) Deno.mkdirSync(`${root}/${h}/${dir}`);
    }
    manager(root, ["pods", "system-reserved", "kube-reserved"]).start();
    assert.equal(
      read(`${root}/memory/system.slice/memory.limit_in_bytes`),
      String(512 * 1024 ** 2),
    );
    assert.equal(read(`${root}/cpu/system.slice/cpu.shares`), "256");
    assert.equal(read(`${root}/memory/kube.slice/memory.limit_in_bytes`), String(GI));
    assert.equal(read(`${root}/cpu/kube.slice/cpu.shares`), "512");
    assert.equal(read(`${root}/pids/kube.slice/pids.max`), "1000");
    assert.equal(read(`${root}/cpu/kubepods/cpu.shares`), String(Math.trunc(3250 * 1024 / 1000)));
    // Unset reservation: refused as upstream ("not configured properly").
    assert.throws(
      () =>
        manager(root, ["kube-reserved"], {
          kubeReserved: new Map(),
        }).start(),
      /Failed to enforce Kube Reserved Cgroup Limits on "\/kube.slice": "\/kube.slice" cgroup is not configured properly/,
    );
  });
});

Deno.test("v2: start() writes a compressible reservation as cpu.weight only", () => {
  withTempDirSync((root) => {
    cgroupV2Tree(root);
    Deno.mkdirSync(`${root}/system.slice`);
    manager(root, ["pods", "system-reserved-compressible"]).start();
    // shares 256 → weight 1 + (254 × 9999) / 262142 = 10.
    assert.equal(read(`${root}/system.slice/cpu.weight`), "10");
    assert.throws(() => Deno.statSync(`${root}/system.slice/memory.max`));
  });
});

Deno.test("start() refuses reserved-cgroup enforcement with the systemd driver", () => {
  withTempDirSync((root) => {
    cgroupV1Tree(root);
    const d = nodeAllocatableEnforcement(input(["pods", "kube-reserved"]));
    const m = new PodCgroupManager({
      cgroupRoot: "/",
      cgroupDriver: "systemd",
      cgroupsPerQOS: true,
      podPidsLimit: -1,
      nodeAllocatable: d.kubepods,
      reservedCgroups: d.reserved,
      cgroups: new CgroupfsManager(findCgroupHierarchies(root)),
      logger: silentLogger,
    });
    assert.throws(() => m.start(), /kube-reserved: denolet cannot limit cgroups through systemd/);
  });
});

Deno.test("reportNodeAllocatable() records upstream's Node events and retries a refused kubepods limit every minute", () => {
  withTempDirSync((root) => {
    cgroupV1Tree(root);
    for (const h of ["cpu", "memory", "pids", "cpuset", "systemd"]) {
      for (const dir of ["kubepods", "kube.slice"]) Deno.mkdirSync(`${root}/${h}/${dir}`);
    }
    // The kernel refusing the memory limit (usage above it), stood in for by a file that
    // cannot be written.
    Deno.mkdirSync(`${root}/memory/kubepods/memory.limit_in_bytes`);
    const m = manager(root, ["pods", "kube-reserved"]);
    m.start();
    const events: string[] = [];
    const clock = new FakeClock();
    m.reportNodeAllocatable(clock, (type, reason, message) => {
      events.push(`${type} ${reason}: ${message}`);
    });
    assert.equal(events.length, 2);
    assert.match(
      events[0]!,
      /^Warning FailedNodeAllocatableEnforcement: Failed to update Node Allocatable Limits \["kubepods"\]: /,
    );
    assert.equal(
      events[1],
      "Normal NodeAllocatableEnforced: Updated limits on kube reserved cgroup /kube.slice",
    );
    clock.tick(60_000);
    assert.match(events[2]!, /^Warning FailedNodeAllocatableEnforcement/);
    Deno.removeSync(`${root}/memory/kubepods/memory.limit_in_bytes`);
    clock.tick(60_000);
    assert.equal(
      events[3],
      "Normal NodeAllocatableEnforced: Updated Node Allocatable limit across pods",
    );
    assert.equal(
      read(`${root}/memory/kubepods/memory.limit_in_bytes`),
      String(8 * GI - GI - 512 * 1024 ** 2),
    );
    // Done: no more tries.
    clock.tick(120_000);
    assert.equal(events.length, 4);
    m.stop();
  });
});
