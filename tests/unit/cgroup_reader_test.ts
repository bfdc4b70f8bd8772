import assert from "node:assert/strict";
import {
  CgroupNotFoundError,
  cgroupPathFromRuntime,
  cgroupRefFromPath,
  cgroupRefFromPid,
  type CgroupStats,
  detectCgroupLayout,
  isCgroupNotFound,
  readCgroupStats,
  StatsFileError,
  StatsParseError,
} from "../../lib/cgroup/mod.ts";

const FIX = new URL("../fixtures/cgroup/", import.meta.url).pathname.replace(/\/$/, "");
const PROC = new URL("../fixtures/proc", import.meta.url).pathname;
const CFS = "/kubepods/burstable/pod1234/abc";
const SYSTEMD = "kubepods-burstable-pod1234.slice:cri-containerd:abc";

/** The figures every layout's fixture encodes, each from its own files. */
const EXPECTED_CPU = {
  usageNs: 5_000_000_000,
  userNs: 3_000_000_000,
  systemNs: 2_000_000_000,
  periods: 100,
  throttledPeriods: 7,
  throttledNs: 12_345_000,
};
const EXPECTED_MEMORY = {
  usageBytes: 104857600,
  workingSetBytes: 104857600 - 4194304,
  rssBytes: 73400320,
  cacheBytes: 25165824,
  pageFaults: 1000,
  majorPageFaults: 3,
  limitBytes: null,
  oomKills: 1,
  limitHits: 2,
};
const EXPECTED_IO = [
  { major: 8, minor: 0, readBytes: 4096, writeBytes: 8192, readOps: 1, writeOps: 2 },
  { major: 8, minor: 16, readBytes: 100, writeBytes: 0, readOps: 1, writeOps: 0 },
];

function withoutPressure(s: CgroupStats): CgroupStats {
  const { pressure: _p, ...rest } = s;
  return rest;
}

Deno.test("detectCgroupLayout() tells v2, v1 and hybrid trees apart", () => {
  const v2 = detectCgroupLayout({ cgroupRoot: `${FIX}/v2` });
  assert.equal(v2.mode, "v2");
  assert.ok(v2.unifiedControllers.includes("memory"));
  const v1 = detectCgroupLayout({ cgroupRoot: `${FIX}/v1` });
  assert.equal(v1.mode, "v1");
  assert.equal(v1.v1.cpu, `${FIX}/v1/cpu`);
  assert.equal(v1.v1.memory, `${FIX}/v1/memory`);
  const hybrid = detectCgroupLayout({ cgroupRoot: `${FIX}/hybrid` });
  assert.equal(hybrid.mode, "hybrid");
  assert.equal(hybrid.unified, `${FIX}/hybrid/unified`);
  assert.deepEqual(hybrid.unifiedControllers, ["hugetlb"]);
  assert.equal(hybrid.v1.blkio, `${FIX}/hybrid/blkio`);
});

Deno.test("detectCgroupLayout() fails naming the root when nothing is mounted", () => {
  assert.throws(
    () => detectCgroupLayout({ cgroupRoot: `${FIX}/nowhere` }),
    (e: unknown) => e instanceof StatsFileError && e.file === `${FIX}/nowhere`,
  );
});

Deno.test("readCgroupStats() reads every figure of a v2 container from a systemd cgroupsPath", () => {
  const layout = detectCgroupLayout({ cgroupRoot: `${FIX}/v2` });
  const stats = readCgroupStats(layout, cgroupRefFromPath(cgroupPathFromRuntime(SYSTEMD)));
  assert.deepEqual(stats.cpu, EXPECTED_CPU);
  assert.deepEqual(stats.memory, EXPECTED_MEMORY);
  assert.deepEqual(stats.io, EXPECTED_IO);
  assert.deepEqual(stats.pids, { current: 5, max: 1024 });
  assert.equal(stats.pressure?.cpu?.some.totalUs, 123456);
  assert.equal(stats.pressure?.memory?.full?.totalUs, 5);
  assert.equal(stats.pressure?.io?.full?.avg10, 0.1);
});

Deno.test("readCgroupStats() gives the same figures from v1 and hybrid files", () => {
  const v2 = readCgroupStats(
    detectCgroupLayout({ cgroupRoot: `${FIX}/v2` }),
    cgroupRefFromPath(cgroupPathFromRuntime(SYSTEMD)),
  );
  const v1 = readCgroupStats(
    detectCgroupLayout({ cgroupRoot: `${FIX}/v1` }),
    cgroupRefFromPath(CFS),
  );
  const hybrid = readCgroupStats(
    detectCgroupLayout({ cgroupRoot: `${FIX}/hybrid` }),
    cgroupRefFromPath(CFS),
  );
  assert.deepEqual(v1, withoutPressure(v2));
  assert.equal(v1.pressure, undefined);
  assert.deepEqual(hybrid, v2); // hybrid takes PSI from its v2 tree
});

Deno.test("readCgroupStats() finds a container's cgroups through /proc/PID/cgroup", () => {
  const layout = detectCgroupLayout({ cgroupRoot: `${FIX}/hybrid` });
  const ref = cgroupRefFromPid(4242, { procRoot: PROC });
  assert.equal(ref.unified, CFS);
  assert.equal(ref.v1.cpuacct, CFS);
  assert.equal(readCgroupStats(layout, ref).memory?.workingSetBytes, 104857600 - 4194304);
  const v2ref = cgroupRefFromPid(7, { procRoot: PROC });
  const v2 = readCgroupStats(detectCgroupLayout({ cgroupRoot: `${FIX}/v2` }), v2ref);
  assert.equal(v2.cpu?.usageNs, 5_000_000_000);
});

Deno.test("readCgroupStats() leaves out groups whose files are missing", () => {
  const stats = readCgroupStats(
    detectCgroupLayout({ cgroupRoot: `${FIX}/v2` }),
    cgroupRefFromPath("/sparse"),
  );
  assert.deepEqual(stats, { cpu: { usageNs: 42_000 } });
});

Deno.test("readCgroupStats() uses the v2 cpu.stat on hybrid when v1 has no such cgroup", () => {
  const layout = detectCgroupLayout({ cgroupRoot: `${FIX}/hybrid` });
  const stats = readCgroupStats(layout, cgroupRefFromPath("/only-v2"));
  assert.deepEqual(stats.cpu, { usageNs: 777_000, userNs: 700_000, systemNs: 77_000 });
  assert.equal(stats.memory, undefined);
});

Deno.test("readCgroupStats() computes the v2 root working set from memory.stat", () => {
  const stats = readCgroupStats(
    detectCgroupLayout({ cgroupRoot: `${FIX}/v2` }),
    cgroupRefFromPath("/"),
  );
  assert.equal(stats.memory?.usageBytes, 536870912 + 268435456);
  assert.equal(stats.memory?.workingSetBytes, 536870912 + 268435456 - 134217728);
  assert.equal(stats.cpu?.usageNs, 9_000_000_000);
});

Deno.test("readCgroupStats() throws CgroupNotFoundError for a vanished cgroup", () => {
  for (const mode of ["v2", "v1", "hybrid"]) {
    const layout = detectCgroupLayout({ cgroupRoot: `${FIX}/${mode}` });
    assert.throws(() => readCgroupStats(layout, cgroupRefFromPath("/gone")), (e: unknown) => {
      assert.ok(isCgroupNotFound(e));
      assert.ok(e instanceof CgroupNotFoundError);
      assert.match(e.message, /gone: cgroup does not exist/);
      return true;
    });
  }
});

Deno.test("readCgroupStats() reports an empty or malformed file by name instead of crashing", () => {
  const layout = detectCgroupLayout({ cgroupRoot: `${FIX}/v2` });
  assert.throws(() => readCgroupStats(layout, cgroupRefFromPath("/broken")), (e: unknown) => {
    assert.ok(e instanceof StatsParseError);
    assert.match(e.file, /\/v2\/broken\/(cpu\.stat|memory\.current|io\.stat|cpu\.pressure)$/);
    return true;
  });
});
