import assert from "node:assert/strict";
import type { Pod, ResourceRequirements } from "../../lib/api/types.ts";
import {
  cgroupNameToCgroupfs,
  cgroupNameToSystemd,
  childCgroupName,
  nodeAllocatableRoot,
  parseCgroupfsToCgroupName,
  parseSystemdToCgroupName,
  podCgroupParent,
} from "../../lib/cm/mod.ts";
import { generatePodSandboxConfig } from "../../lib/kuberuntime/sandbox_config.ts";
import { testPod } from "../kit/mod.ts";

// The cases below are upstream's own (pkg/kubelet/cm/cgroup_manager_linux_test.go and
// pod_container_manager_linux_test.go, v1.37.2).

Deno.test("childCgroupName() appends components as upstream's NewCgroupName, refusing / and _", () => {
  const a = parseCgroupfsToCgroupName("/a/");
  const ab = childCgroupName(a, "b");
  assert.deepEqual(ab, ["a", "", "b"]);
  assert.deepEqual(childCgroupName(ab, "c"), ["a", "", "b", "c"]);
  // The parent is not changed by a second child.
  childCgroupName(ab, "d");
  assert.deepEqual(ab, ["a", "", "b"]);
  assert.throws(() => childCgroupName([], "a_b"), /invalid character/);
  assert.throws(() => childCgroupName([], "a/b"), /invalid character/);
});

Deno.test("cgroupNameToSystemd() gives upstream's slice basenames (TestCgroupNameToSystemdBasename)", () => {
  const cases: [string[], string][] = [
    [[], "/"],
    [["system"], "system.slice"],
    [["system", "Burstable"], "system-Burstable.slice"],
    [["Burstable", "pod-123"], "Burstable-pod_123.slice"],
    [["test", "a", "b"], "test-a-b.slice"],
    [["test", "a", "b", "Burstable"], "test-a-b-Burstable.slice"],
    [["Burstable"], "Burstable.slice"],
    [
      ["BestEffort", "pod-6c1a4e95-6bb6-11e6-bc26-28d2444e470d"],
      "BestEffort-pod_6c1a4e95_6bb6_11e6_bc26_28d2444e470d.slice",
    ],
  ];
  for (const [name, want] of cases) {
    const got = cgroupNameToSystemd(name);
    assert.equal(got === "/" ? "/" : got.slice(got.lastIndexOf("/") + 1), want, name.join(","));
  }
});

Deno.test("cgroupNameToSystemd() nests the slices as upstream (TestCgroupNameToSystemd)", () => {
  const cases: [string[], string][] = [
    [[], "/"],
    [["Burstable"], "/Burstable.slice"],
    [["Burstable", "pod-123"], "/Burstable.slice/Burstable-pod_123.slice"],
    [
      ["BestEffort", "pod-6c1a4e95-6bb6-11e6-bc26-28d2444e470d"],
      "/BestEffort.slice/BestEffort-pod_6c1a4e95_6bb6_11e6_bc26_28d2444e470d.slice",
    ],
    [["kubepods"], "/kubepods.slice"],
  ];
  for (const [name, want] of cases) assert.equal(cgroupNameToSystemd(name), want);
});

Deno.test("cgroupfs names and parsing match upstream (TestCgroupNameToCgroupfs, TestParseSystemdToCgroupName)", () => {
  assert.equal(cgroupNameToCgroupfs([]), "/");
  assert.equal(cgroupNameToCgroupfs(["Burstable"]), "/Burstable");
  assert.deepEqual(parseCgroupfsToCgroupName("/"), []);
  assert.deepEqual(parseCgroupfsToCgroupName("/denolet-test/x"), ["denolet-test", "x"]);
  assert.deepEqual(parseSystemdToCgroupName("/test"), ["test"]);
  assert.deepEqual(parseSystemdToCgroupName("/test.slice"), ["test"]);
  assert.deepEqual(
    parseSystemdToCgroupName(
      "/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-poda_b.slice",
    ),
    ["kubepods", "burstable", "poda-b"],
  );
});

function podWith(uid: string, resources: ResourceRequirements): Pod {
  return testPod({ uid, containers: [{ name: "container", image: "busybox", resources }] });
}

const guaranteed = (uid: string) =>
  podWith(uid, {
    requests: { cpu: "1000m", memory: "1G" },
    limits: { cpu: "1000m", memory: "1G" },
  });
const burstable = (uid: string) => podWith(uid, { requests: { cpu: "1000m", memory: "1G" } });
const bestEffort = (uid: string) => podWith(uid, {});

Deno.test("podCgroupParent() is upstream's GetPodContainerName literal for both drivers (TestGetPodContainerName)", () => {
  // Upstream's test puts the QoS cgroups at the root; with kubepods they sit one level down.
  const cgroupfs = { cgroupRoot: "/", cgroupDriver: "cgroupfs" as const, cgroupsPerQOS: true };
  const systemd = { ...cgroupfs, cgroupDriver: "systemd" as const };
  assert.equal(podCgroupParent(guaranteed("fake-uid-1"), cgroupfs), "/kubepods/podfake-uid-1");
  assert.equal(
    podCgroupParent(guaranteed("fake-uid-2"), systemd),
    "/kubepods.slice/kubepods-podfake_uid_2.slice",
  );
  assert.equal(
    podCgroupParent(burstable("fake-uid-3"), cgroupfs),
    "/kubepods/burstable/podfake-uid-3",
  );
  assert.equal(
    podCgroupParent(burstable("fake-uid-4"), systemd),
    "/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-podfake_uid_4.slice",
  );
  assert.equal(
    podCgroupParent(bestEffort("fake-uid-5"), cgroupfs),
    "/kubepods/besteffort/podfake-uid-5",
  );
  assert.equal(
    podCgroupParent(bestEffort("fake-uid-6"), systemd),
    "/kubepods.slice/kubepods-besteffort.slice/kubepods-besteffort-podfake_uid_6.slice",
  );
});

Deno.test("podCgroupParent() puts the hierarchy under --cgroup-root", () => {
  const naming = {
    cgroupRoot: "/denolet-test",
    cgroupDriver: "cgroupfs" as const,
    cgroupsPerQOS: true,
  };
  assert.equal(podCgroupParent(burstable("u"), naming), "/denolet-test/kubepods/burstable/podu");
  assert.equal(nodeAllocatableRoot(naming), "/denolet-test/kubepods");
  assert.equal(
    nodeAllocatableRoot({ ...naming, cgroupDriver: "systemd" }),
    "/denolet_test.slice/denolet_test-kubepods.slice",
  );
  assert.equal(
    nodeAllocatableRoot({ ...naming, cgroupRoot: "/", cgroupDriver: "systemd" }),
    "/kubepods.slice",
  );
  // Without cgroupsPerQOS pods sit right under the root.
  assert.equal(
    podCgroupParent(burstable("u"), { ...naming, cgroupsPerQOS: false }),
    "/denolet-test",
  );
  assert.equal(nodeAllocatableRoot({ ...naming, cgroupsPerQOS: false }), "/denolet-test");
});

Deno.test("generatePodSandboxConfig() hands CRI the systemd form of the pod cgroup as CgroupParent", () => {
  const pod = burstable("6c1a4e95-6bb6-11e6-bc26-28d2444e470d");
  const systemd = generatePodSandboxConfig(pod, { cgroupDriver: "systemd" });
  assert.equal(
    systemd.linux?.cgroupParent,
    "/kubepods.slice/kubepods-burstable.slice/" +
      "kubepods-burstable-pod6c1a4e95_6bb6_11e6_bc26_28d2444e470d.slice",
  );
  const cgroupfs = generatePodSandboxConfig(pod, { cgroupRoot: "/denolet-test" });
  assert.equal(
    cgroupfs.linux?.cgroupParent,
    "/denolet-test/kubepods/burstable/pod6c1a4e95-6bb6-11e6-bc26-28d2444e470d",
  );
});
