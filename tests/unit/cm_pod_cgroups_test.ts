import { existsSync } from "node:fs";
import assert from "node:assert/strict";
import type { Pod, ResourceRequirements } from "../../lib/api/types.ts";
import {
  CgroupfsManager,
  findCgroupHierarchies,
  nodeAllocatableResourceConfig,
  ORPHAN_FULL_SCAN_ROUNDS,
  PodCgroupManager,
  type PodCgroupNaming,
} from "../../lib/cm/mod.ts";
import { createLogger, silentLogger } from "../../lib/util/log.ts";
import { cgroupV1Tree, cgroupV2Tree, testPod, withTempDirSync } from "../kit/mod.ts";

// Fixture trees in the kernel's layouts (tests/kit/cgroup_trees.ts) stand in for /sys/fs/cgroup.

const read = (path: string) => Deno.readTextFileSync(path).trim();
const naming: PodCgroupNaming = { cgroupRoot: "/", cgroupDriver: "cgroupfs", cgroupsPerQOS: true };

function manager(root: string, extra: Partial<PodCgroupNaming & { podPidsLimit: number }> = {}) {
  return new PodCgroupManager({
    ...naming,
    podPidsLimit: -1,
    ...extra,
    cgroups: new CgroupfsManager(findCgroupHierarchies(root)),
    logger: silentLogger,
  });
}

function pod(uid: string, ...resources: ResourceRequirements[]): Pod {
  return testPod({
    uid,
    containers: resources.map((r, i) => ({ name: `c${i}`, image: "busybox", resources: r })),
  });
}

Deno.test("findCgroupHierarchies() counts a joined mount once and tells v1, hybrid and v2 apart", () => {
  withTempDirSync((root) => {
    cgroupV1Tree(root);
    const h = findCgroupHierarchies(root);
    assert.equal(h.mode, "v1");
    assert.deepEqual(
      h.v1.map((x) => x.controllers.join(",")).sort(),
      ["cpu,cpuacct", "cpuset", "memory", "pids", "systemd"],
    );
    Deno.mkdirSync(`${root}/unified`);
    Deno.writeTextFileSync(`${root}/unified/cgroup.controllers`, "");
    assert.equal(findCgroupHierarchies(root).mode, "hybrid");
    assert.equal(findCgroupHierarchies(root).unified, `${root}/unified`);
  });
  withTempDirSync((root) => {
    cgroupV2Tree(root);
    assert.deepEqual(findCgroupHierarchies(root), { mode: "v2", v1: [], unified: root });
  });
});

Deno.test("v1: start() makes kubepods/burstable/besteffort in every hierarchy, besteffort at 2 shares", () => {
  withTempDirSync((root) => {
    cgroupV1Tree(root);
    // --cgroup-root must exist, as upstream checks.
    assert.throws(
      () => manager(root, { cgroupRoot: "/node" }).start(),
      /cgroup-root "\/node" does not exist/,
    );
    manager(root).start();
    for (const h of ["cpu,cpuacct", "memory", "pids", "cpuset", "systemd"]) {
      for (const dir of ["kubepods", "kubepods/burstable", "kubepods/besteffort"]) {
        assert.ok(Deno.statSync(`${root}/${h}/${dir}`).isDirectory, `${h}/${dir}`);
      }
    }
    assert.equal(read(`${root}/cpu/kubepods/besteffort/cpu.shares`), "2");
    // A new cpuset cgroup gets its parent's cpus and mems, or no task could join it.
    assert.equal(read(`${root}/cpuset/kubepods/burstable/cpuset.cpus`), "0-1");
    assert.equal(read(`${root}/cpuset/kubepods/burstable/cpuset.mems`), "0");
  });
});

Deno.test("v1: kubepods is limited to the node's allocatable, as upstream's node allocatable enforcement", () => {
  withTempDirSync((root) => {
    cgroupV1Tree(root);
    const allocatable = new Map([["cpu", 2000], ["memory", 4 * 1024 ** 3], ["pid", 4096]]);
    new PodCgroupManager({
      ...naming,
      podPidsLimit: -1,
      nodeAllocatable: nodeAllocatableResourceConfig(allocatable),
      cgroups: new CgroupfsManager(findCgroupHierarchies(root)),
      logger: silentLogger,
    }).start();
    assert.equal(read(`${root}/cpu/kubepods/cpu.shares`), "2048");
    assert.equal(read(`${root}/memory/kubepods/memory.limit_in_bytes`), String(4 * 1024 ** 3));
    assert.equal(read(`${root}/pids/kubepods/pids.max`), "4096");
  });
});

Deno.test("v1: a pod cgroup gets upstream's limits and podPidsLimit; QoS shares follow the active pods, listed only when a cgroup is made", () => {
  withTempDirSync((root) => {
    cgroupV1Tree(root);
    const m = manager(root, { podPidsLimit: 100 });
    m.start();
    const burstable = pod("b1", {
      requests: { cpu: "250m", memory: "32Mi" },
      limits: { cpu: "500m", memory: "64Mi" },
    });
    const other = pod("b2", { requests: { cpu: "750m" } });
    const bestEffort = pod("e1", {});
    assert.equal(m.exists(burstable), false);
    m.ensureExists(burstable, () => [burstable, other, bestEffort]);
    assert.equal(m.exists(burstable), true);
    const dir = "kubepods/burstable/podb1";
    assert.equal(read(`${root}/cpu/${dir}/cpu.shares`), "256");
    assert.equal(read(`${root}/cpu/${dir}/cpu.cfs_period_us`), "100000");
    assert.equal(read(`${root}/cpu/${dir}/cpu.cfs_quota_us`), "50000");
    assert.equal(read(`${root}/memory/${dir}/memory.limit_in_bytes`), String(64 * 1024 * 1024));
    assert.equal(read(`${root}/pids/${dir}/pids.max`), "100");
    // Burstable's shares: the Burstable pods' summed requests (250m + 750m).
    assert.equal(read(`${root}/cpu/kubepods/burstable/cpu.shares`), "1024");
    assert.equal(read(`${root}/cpu/kubepods/besteffort/cpu.shares`), "2");

    m.ensureExists(bestEffort, () => [burstable, other, bestEffort]);
    assert.equal(read(`${root}/cpu/kubepods/besteffort/pode1/cpu.shares`), "2");
    // A pod whose cgroup exists needs no QoS update: the active pods are not even listed.
    m.ensureExists(burstable, () => assert.fail("listed the active pods for an existing cgroup"));
    assert.equal(read(`${root}/pids/kubepods/besteffort/pode1/pids.max`), "100");
    // No memory limit and no quota for a pod without limits.
    assert.throws(() =>
      Deno.statSync(`${root}/memory/kubepods/besteffort/pode1/memory.limit_in_bytes`)
    );
    assert.throws(() => Deno.statSync(`${root}/cpu/kubepods/besteffort/pode1/cpu.cfs_quota_us`));

    assert.deepEqual(
      [...m.podsFromCgroups()].sort(),
      [["b1", "/kubepods/burstable/podb1"], ["e1", "/kubepods/besteffort/pode1"]],
    );
    m.updateQOSCgroups([bestEffort]);
    assert.equal(read(`${root}/cpu/kubepods/burstable/cpu.shares`), "2");
  });
});

Deno.test("v1: cleanupOrphans() finds an orphan in the memory hierarchy each round, one elsewhere only at a full scan", () => {
  withTempDirSync((root) => {
    cgroupV1Tree(root);
    const m = manager(root);
    m.start();
    const besteffort = (h: string, uid: string) => `${root}/${h}/kubepods/besteffort/pod${uid}`;
    const everywhere = ["cpu,cpuacct", "memory", "pids", "cpuset", "systemd"];
    const make = (uid: string, hierarchies: string[]) => {
      for (const h of hierarchies) Deno.mkdirSync(besteffort(h, uid));
    };
    const left = (uid: string) => everywhere.filter((h) => existsSync(besteffort(h, uid)));
    // Round 0 lists every hierarchy: a cgroup left in pids alone is removed.
    make("early", ["pids"]);
    make("kept", everywhere);
    m.cleanupOrphans(new Set(["kept"]));
    assert.deepEqual(left("early"), []);
    // Then an orphan in every hierarchy goes at the next round, from all of them;
    // one in pids alone waits for the next full scan; a possibly running pod's stays.
    make("whole", everywhere);
    make("partial", ["pids"]);
    m.cleanupOrphans(new Set(["kept"]));
    assert.deepEqual(left("whole"), []);
    assert.deepEqual(left("partial"), ["pids"]);
    for (let round = 2; round < ORPHAN_FULL_SCAN_ROUNDS; round++) {
      m.cleanupOrphans(new Set(["kept"]));
    }
    assert.deepEqual(left("partial"), ["pids"]);
    m.cleanupOrphans(new Set(["kept"]));
    assert.deepEqual(left("partial"), []);
    assert.deepEqual(left("kept"), everywhere);
  });
});

Deno.test("v1: resizePodCgroup() raises what grows before the containers and lowers what shrinks after", () => {
  withTempDirSync((root) => {
    cgroupV1Tree(root);
    const m = manager(root);
    m.start();
    const before = pod("g1", {
      requests: { cpu: "1", memory: "128Mi" },
      limits: { cpu: "1", memory: "128Mi" },
    });
    m.ensureExists(before, () => [before]);
    assert.equal(read(`${root}/cpu/kubepods/podg1/cpu.cfs_quota_us`), "100000");
    // cpu grows to 2, memory shrinks to 64Mi.
    const after = structuredClone(before);
    after.spec.containers[0]!.resources = {
      requests: { cpu: "2", memory: "64Mi" },
      limits: { cpu: "2", memory: "64Mi" },
    };
    const memory = () => read(`${root}/memory/kubepods/podg1/memory.limit_in_bytes`);
    m.resizePodCgroup(after, before);
    assert.equal(read(`${root}/cpu/kubepods/podg1/cpu.cfs_quota_us`), "200000");
    assert.equal(read(`${root}/cpu/kubepods/podg1/cpu.shares`), "2048");
    assert.equal(
      memory(),
      String(128 * 1024 * 1024),
      "memory is lowered only after the containers",
    );
    m.resizePodCgroup(after);
    assert.equal(read(`${root}/cpu/kubepods/podg1/cpu.cfs_quota_us`), "200000");
    assert.equal(memory(), String(64 * 1024 * 1024));
  });
});

Deno.test("v2: the unified tree gets the hierarchy, enabled controllers, cpu.weight, cpu.max, memory.max, pids.max", () => {
  withTempDirSync((root) => {
    cgroupV2Tree(root);
    const m = manager(root, { podPidsLimit: 64 });
    m.start();
    assert.equal(read(`${root}/cgroup.subtree_control`), "+cpu +memory +pids");
    assert.equal(read(`${root}/kubepods/besteffort/cpu.weight`), "1");
    // Memory protection reset as upstream does with MemoryQoS off.
    assert.equal(read(`${root}/kubepods/burstable/memory.low`), "0");
    assert.equal(read(`${root}/kubepods/memory.min`), "0");
    const g = pod("g1", {
      requests: { cpu: "1", memory: "64Mi" },
      limits: { cpu: "1", memory: "64Mi" },
    });
    const b = pod("b1", { requests: { cpu: "500m" } });
    m.ensureExists(g, () => [g, b]);
    m.ensureExists(b, () => [g, b]);
    assert.equal(read(`${root}/kubepods/podg1/cpu.weight`), "39");
    assert.equal(read(`${root}/kubepods/podg1/cpu.max`), "100000 100000");
    assert.equal(read(`${root}/kubepods/podg1/memory.max`), String(64 * 1024 * 1024));
    assert.equal(read(`${root}/kubepods/podg1/pids.max`), "64");
    assert.equal(
      read(`${root}/kubepods/burstable/podb1/cpu.weight`),
      String(1 + Math.trunc((512 - 2) * 9999 / 262142)),
    );
    assert.throws(() => Deno.statSync(`${root}/kubepods/burstable/podb1/cpu.max`));
    assert.equal(
      read(`${root}/kubepods/burstable/cpu.weight`),
      String(1 + Math.trunc((512 - 2) * 9999 / 262142)),
    );
  });
});

Deno.test("the systemd driver and cgroupsPerQOS=false make no cgroups", () => {
  withTempDirSync((root) => {
    cgroupV1Tree(root);
    const lines: string[] = [];
    const systemd = new PodCgroupManager({
      ...naming,
      cgroupDriver: "systemd",
      podPidsLimit: 10,
      cgroups: new CgroupfsManager(findCgroupHierarchies(root)),
      logger: createLogger({ write: (l) => lines.push(l), caller: false }),
    });
    systemd.start();
    assert.match(lines.join("\n"), /cgroupDriver systemd: .* not applied/);
    const p = pod("x", {});
    systemd.ensureExists(p, () => [p]);
    const perQOSOff = manager(root, { cgroupsPerQOS: false });
    perQOSOff.start();
    perQOSOff.ensureExists(p, () => [p]);
    assert.deepEqual([...Deno.readDirSync(`${root}/memory`)].map((e) => e.name), ["cgroup.procs"]);
  });
});
