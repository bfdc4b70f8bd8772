import assert from "node:assert/strict";
import type { NodeStatus } from "../../lib/api/cluster_types.ts";
import { intValue, milliValue } from "../../lib/api/mod.ts";
import type { ContainerConfig, RuntimeService } from "../../lib/cri/types.ts";
import {
  buildNodeStatus,
  computeNodeResources,
  formatBinarySI,
  formatDecimalSIMilli,
  initialNode,
  kubeletVersionString,
  nodeAllocatableAbsolute,
  nodeImages,
  NodeLabelError,
  nodeStatusChanged,
  type NodeStatusInput,
  nodeStatusPatch,
  readyMessage,
  reconcileExistingNode,
  restrictedNodeLabels,
} from "../../lib/nodestatus/mod.ts";
import {
  countCpuList,
  goArch,
  type MachineInfo,
  parseOsImage,
  readMachineInfo,
} from "../../lib/stats/mod.ts";
import {
  runtimePodStatus,
  testMachineInfo,
  testPod,
  unitRuntimeManager,
  withTempDir,
} from "../kit/mod.ts";

const GI = 2 ** 30;
const MI = 2 ** 20;

const machine = testMachineInfo();

const T0 = Date.UTC(2026, 0, 1);

function input(over: Partial<NodeStatusInput> = {}): NodeStatusInput {
  return {
    nodeName: "n1",
    machine,
    now: T0,
    maxPods: 110,
    evictionHard: { "memory.available": "100Mi", "nodefs.available": "10%" },
    nodeIPs: ["10.0.0.5"],
    hostname: "n1",
    kubeletPort: 10250,
    containerRuntimeVersion: "containerd://1.6.20",
    kubeletVersion: "v1.34.0-denolet.0.1.0",
    notReadyReasons: [],
    ...over,
  };
}

Deno.test("formatBinarySI() writes the largest exact binary suffix", () => {
  assert.deepEqual(formatBinarySI(3 * MI), "3Mi");
  assert.deepEqual(formatBinarySI(GI), "1Gi");
  assert.deepEqual(formatBinarySI(1536), "1536");
  assert.deepEqual(formatBinarySI(4 * GI - 100 * MI), "3996Mi");
  assert.deepEqual(formatBinarySI(0), "0");
  assert.deepEqual(formatBinarySI(512), "512");
});

Deno.test("formatDecimalSIMilli() writes millicores and whole numbers canonically", () => {
  assert.deepEqual(formatDecimalSIMilli(1900), "1900m");
  assert.deepEqual(formatDecimalSIMilli(2000), "2");
  assert.deepEqual(formatDecimalSIMilli(110_000), "110");
  assert.deepEqual(formatDecimalSIMilli(1_000_000), "1k");
});

const allocatableCases: {
  name: string;
  machine?: Partial<MachineInfo>;
  opts: Parameters<typeof computeNodeResources>[1];
  capacity: Record<string, string>;
  allocatable: Record<string, string>;
}[] = [
  {
    name: "default eviction thresholds only",
    opts: {
      maxPods: 110,
      evictionHard: { "memory.available": "100Mi", "nodefs.available": "10%" },
    },
    capacity: { cpu: "2", memory: "4Gi", "ephemeral-storage": "100Gi", pods: "110" },
    allocatable: {
      cpu: "2",
      memory: "3996Mi",
      "ephemeral-storage": "90Gi",
      pods: "110",
    },
  },
  {
    name: "kube and system reserved add up with the thresholds",
    opts: {
      maxPods: 50,
      kubeReserved: { cpu: "100m", memory: "256Mi", "ephemeral-storage": "1Gi" },
      systemReserved: { cpu: "0.2", memory: "128Mi", pid: "1000" },
      evictionHard: { "memory.available": "1Gi", "imagefs.available": "15%" },
    },
    capacity: { cpu: "2", memory: "4Gi", "ephemeral-storage": "100Gi", pods: "50" },
    allocatable: {
      cpu: "1700m",
      memory: "2688Mi",
      "ephemeral-storage": "99Gi",
      pods: "50",
    },
  },
  {
    name: "reservations larger than capacity give zero, not negative",
    opts: { maxPods: 110, kubeReserved: { cpu: "3", memory: "5Gi" }, evictionHard: {} },
    capacity: { cpu: "2", memory: "4Gi", "ephemeral-storage": "100Gi", pods: "110" },
    allocatable: { cpu: "0", memory: "0", "ephemeral-storage": "100Gi", pods: "110" },
  },
  {
    name: "hugepages are capacity of their own and come out of memory",
    machine: { hugepages: [{ pageSizeBytes: 2 * MI, numPages: 512 }] },
    opts: { maxPods: 110, evictionHard: { "memory.available": "100Mi" } },
    capacity: {
      cpu: "2",
      memory: "4Gi",
      "ephemeral-storage": "100Gi",
      pods: "110",
      "hugepages-2Mi": "1Gi",
    },
    allocatable: {
      cpu: "2",
      memory: "2972Mi",
      "ephemeral-storage": "100Gi",
      pods: "110",
      "hugepages-2Mi": "1Gi",
    },
  },
  {
    name: "localStorageCapacityIsolation false reports no ephemeral-storage (upstream GetCapacity)",
    opts: {
      maxPods: 110,
      kubeReserved: { "ephemeral-storage": "1Gi" },
      evictionHard: { "nodefs.available": "10%" },
      localStorageCapacityIsolation: false,
    },
    capacity: { cpu: "2", memory: "4Gi", pods: "110" },
    allocatable: { cpu: "2", memory: "4Gi", pods: "110" },
  },
];

for (const c of allocatableCases) {
  Deno.test(`computeNodeResources() subtracts reservations: ${c.name}`, () => {
    const got = computeNodeResources({ ...machine, ...c.machine }, c.opts);
    assert.deepEqual(got.capacity, c.capacity);
    assert.deepEqual(got.allocatable, c.allocatable);
  });
}

Deno.test("nodeAllocatableAbsolute() is capacity and pids less kube and system reserved only", () => {
  const got = nodeAllocatableAbsolute(
    testMachineInfo({ maxPid: 32768 }),
    {
      kubeReserved: { cpu: "100m", memory: "256Mi", pid: "1000" },
      systemReserved: { cpu: "5", memory: "512Mi" },
      // As main.ts passes its whole options: the thresholds must not come off.
      evictionHard: { "memory.available": "100Mi" },
    } as Parameters<typeof nodeAllocatableAbsolute>[1],
  );
  // No eviction threshold comes off, no "pods" count; never below zero.
  assert.equal(got.get("cpu"), 0);
  assert.equal(got.get("memory"), 4 * 2 ** 30 - 768 * 2 ** 20);
  assert.equal(got.get("pid"), 31768);
  assert.equal(got.has("pods"), false);
});

Deno.test("computeNodeResources() names the field of a malformed reservation", () => {
  assert.throws(
    () => computeNodeResources(machine, { maxPods: 110, kubeReserved: { memory: "lots" } }),
    /kubeReserved\["memory"\]/,
  );
});

Deno.test("buildNodeStatus() reports capacity, addresses, endpoints and nodeInfo", () => {
  const { status } = buildNodeStatus(input({ nodeIPs: ["10.0.0.5", "fd00::5"] }));
  assert.deepEqual(status.capacity?.memory, "4Gi");
  assert.deepEqual(status.allocatable?.memory, "3996Mi");
  assert.deepEqual(status.addresses, [
    { type: "InternalIP", address: "10.0.0.5" },
    { type: "InternalIP", address: "fd00::5" },
    { type: "Hostname", address: "n1" },
  ]);
  assert.deepEqual(status.daemonEndpoints, { kubeletEndpoint: { Port: 10250 } });
  assert.deepEqual(status.nodeInfo?.containerRuntimeVersion, "containerd://1.6.20");
  assert.deepEqual(status.nodeInfo?.kubeProxyVersion, "");
  assert.deepEqual(status.nodeInfo?.bootID, "boot-1");
  assert.deepEqual(status.nodeInfo?.architecture, "amd64");
});

Deno.test("buildNodeStatus() adds pressure conditions with their first events and Ready last", () => {
  const { status, events } = buildNodeStatus(input());
  assert.deepEqual(status.conditions?.map((c) => [c.type, c.status, c.reason]), [
    ["MemoryPressure", "False", "KubeletHasSufficientMemory"],
    ["DiskPressure", "False", "KubeletHasNoDiskPressure"],
    ["PIDPressure", "False", "KubeletHasSufficientPID"],
    ["Ready", "True", "KubeletReady"],
  ]);
  const ready = status.conditions?.at(-1);
  assert.deepEqual(ready?.message, "kubelet is posting ready status");
  assert.deepEqual(ready?.lastHeartbeatTime, "2026-01-01T00:00:00Z");
  assert.deepEqual(events.map((e) => e.reason), [
    "NodeHasSufficientMemory",
    "NodeHasNoDiskPressure",
    "NodeHasSufficientPID",
  ]);
  assert.deepEqual(events[0]?.message, "Node n1 status is now: NodeHasSufficientMemory");
});

Deno.test("buildNodeStatus() keeps transition times and records nothing when nothing flips", () => {
  const first = buildNodeStatus(input()).status;
  const later = buildNodeStatus(input({ previous: first, now: T0 + 10_000 }));
  assert.deepEqual(later.events, []);
  for (const c of later.status.conditions ?? []) {
    assert.deepEqual(c.lastTransitionTime, "2026-01-01T00:00:00Z");
    assert.deepEqual(c.lastHeartbeatTime, "2026-01-01T00:00:10Z");
  }
  assert(!nodeStatusChanged(first, later.status));
});

Deno.test("buildNodeStatus() flips Ready with upstream's reason, message and event", () => {
  const first = buildNodeStatus(input()).status;
  const down = buildNodeStatus(input({
    previous: first,
    now: T0 + 10_000,
    notReadyReasons: [
      "container runtime is down",
      "PLEG is not healthy: pleg has yet to be successful",
    ],
  }));
  const ready = down.status.conditions?.at(-1);
  assert.deepEqual(ready?.status, "False");
  assert.deepEqual(ready?.reason, "KubeletNotReady");
  assert.deepEqual(
    ready?.message,
    "[container runtime is down, PLEG is not healthy: pleg has yet to be successful]",
  );
  assert.deepEqual(ready?.lastTransitionTime, "2026-01-01T00:00:10Z");
  assert.deepEqual(down.events.map((e) => e.reason), ["NodeNotReady"]);
  assert(nodeStatusChanged(first, down.status));
  const up = buildNodeStatus(input({ previous: down.status, now: T0 + 20_000 }));
  assert.deepEqual(up.events.map((e) => e.reason), ["NodeReady"]);
});

Deno.test("buildNodeStatus() records Rebooted when the boot ID changed", () => {
  const first = buildNodeStatus(input()).status;
  const rebooted = buildNodeStatus(input({
    previous: first,
    machine: { ...machine, bootID: "boot-2" },
  }));
  assert.deepEqual(rebooted.events, [{
    type: "Warning",
    reason: "Rebooted",
    message: "Node n1 has been rebooted, boot id: boot-2",
  }]);
});

Deno.test("buildNodeStatus() keeps conditions and capacities it does not own", () => {
  const previous: NodeStatus = {
    capacity: { "example.com/gpu": "4" },
    allocatable: { "example.com/gpu": "3" },
    conditions: [{ type: "NetworkUnavailable", status: "False", reason: "RouteCreated" }],
  };
  const { status } = buildNodeStatus(input({ previous }));
  assert.deepEqual(status.conditions?.[0]?.type, "NetworkUnavailable");
  assert.deepEqual(status.conditions?.at(-1)?.type, "Ready");
  assert.deepEqual(status.capacity?.["example.com/gpu"], "4");
  assert.deepEqual(status.allocatable?.["example.com/gpu"], "3");
});

Deno.test("buildNodeStatus() caps images at 50 and names at 5", () => {
  const images = Array.from({ length: 60 }, (_, i) => ({
    names: ["a", "b", "c", "d", "e", "f"].map((n) => `${n}${i}`),
    sizeBytes: 1000 - i,
  }));
  const { status } = buildNodeStatus(input({ images }));
  assert.deepEqual(status.images?.length, 50);
  assert.deepEqual(status.images?.[0]?.names?.length, 5);
});

Deno.test("buildNodeStatus() lists every image with nodeStatusMaxImages -1 and none with 0", () => {
  const images = Array.from({ length: 60 }, (_, i) => ({ names: [`img${i}`], sizeBytes: 60 - i }));
  assert.equal(buildNodeStatus(input({ images, maxImages: -1 })).status.images?.length, 60);
  assert.deepEqual(buildNodeStatus(input({ images, maxImages: 0 })).status.images, []);
});

Deno.test("nodeImages() lists the runtime's images largest first, ties by ID descending, digests before tags", () => {
  const image = (id: string, size: number, tags: string[], digests: string[] = []) => ({
    id,
    size,
    repoTags: tags,
    repoDigests: digests,
    username: "",
    pinned: false,
  });
  assert.deepEqual(
    nodeImages([
      image("sha256:a", 10, ["small:1"]),
      image("sha256:b", 300, ["big:1", "big:latest"], ["big@sha256:0b"]),
      image("sha256:c", 10, ["same:1"]),
    ]),
    [
      { names: ["big@sha256:0b", "big:1", "big:latest"], sizeBytes: 300 },
      { names: ["same:1"], sizeBytes: 10 },
      { names: ["small:1"], sizeBytes: 10 },
    ],
  );
});

Deno.test("nodeStatusChanged() compares quantities by value", () => {
  const a = buildNodeStatus(input()).status;
  const b = structuredClone(a);
  b.capacity!.memory = String(4 * GI);
  assert(!nodeStatusChanged(a, b));
  b.capacity!.memory = "5Gi";
  assert(nodeStatusChanged(a, b));
});

Deno.test("nodeStatusPatch() sends conditions, replaces addresses and nulls gone capacities", () => {
  const before = buildNodeStatus(input()).status;
  before.capacity!["hugepages-1Gi"] = "0";
  const after = buildNodeStatus(input({
    previous: before,
    now: T0 + 10_000,
    nodeIPs: ["10.0.0.6"],
  })).status;
  delete after.capacity!["hugepages-1Gi"];
  const patch = nodeStatusPatch(before, after)!;
  assert.deepEqual(patch.capacity, { "hugepages-1Gi": null });
  assert.deepEqual(patch.addresses, [
    { type: "InternalIP", address: "10.0.0.6" },
    { type: "Hostname", address: "n1" },
    { $patch: "replace" },
  ]);
  assert.deepEqual((patch.conditions as unknown[]).length, 4);
  assert.deepEqual(patch.nodeInfo, undefined);
});

Deno.test("readyMessage() aggregates like upstream's error aggregate", () => {
  assert.deepEqual(readyMessage([]), "kubelet is posting ready status");
  assert.deepEqual(readyMessage(["container runtime is down"]), "container runtime is down");
  assert.deepEqual(readyMessage(["a", "a", "b"]), "[a, b]");
});

Deno.test("kubeletVersionString() says denolet in a semver pre-release", () => {
  assert.deepEqual(kubeletVersionString("v0.1.0-denolet"), "v1.34.0-denolet.0.1.0");
  // VERSION as lib/util/version.ts has it: already the node's form, kept as it is.
  assert.deepEqual(kubeletVersionString("v1.34.0-denolet.0.1.0"), "v1.34.0-denolet.0.1.0");
  assert.match(kubeletVersionString("v2.3.4"), /^v\d+\.\d+\.\d+-denolet\.2\.3\.4$/);
});

Deno.test("restrictedNodeLabels() allows the kubelet's labels and rejects other kubernetes.io ones", () => {
  assert.deepEqual(
    restrictedNodeLabels({
      "kubernetes.io/hostname": "x",
      "node.kubernetes.io/instance-type": "big",
      "node-role.kubernetes.io/worker": "",
      "example.kubelet.kubernetes.io/a": "1",
      "team.example.com/owner": "me",
      "k8s.io/foo": "1",
    }),
    ["k8s.io/foo", "node-role.kubernetes.io/worker"],
  );
});

Deno.test("initialNode() sets default labels, node labels, taints and the attach annotation", () => {
  const node = initialNode({
    nodeName: "n1",
    hostname: "host-1",
    operatingSystem: "linux",
    architecture: "arm64",
    nodeLabels: { "example.com/pool": "a" },
    registerWithTaints: [{ key: "dedicated", value: "x", effect: "NoSchedule" }],
    status: buildNodeStatus(input()).status,
  });
  assert.deepEqual(node.metadata.labels, {
    "kubernetes.io/hostname": "host-1",
    "kubernetes.io/os": "linux",
    "kubernetes.io/arch": "arm64",
    "beta.kubernetes.io/os": "linux",
    "beta.kubernetes.io/arch": "arm64",
    "example.com/pool": "a",
  });
  assert.deepEqual(node.metadata.annotations, {
    "volumes.kubernetes.io/controller-managed-attach-detach": "true",
  });
  assert.deepEqual(node.spec?.taints, [{ key: "dedicated", value: "x", effect: "NoSchedule" }]);
  assert.throws(
    () =>
      initialNode({
        nodeName: "n1",
        hostname: "n1",
        operatingSystem: "linux",
        architecture: "amd64",
        nodeLabels: { "node-role.kubernetes.io/master": "" },
        status: {},
      }),
    NodeLabelError,
  );
});

Deno.test("reconcileExistingNode() updates owned labels and keeps the others", () => {
  const wanted = initialNode({
    nodeName: "n1",
    hostname: "n1",
    operatingSystem: "linux",
    architecture: "amd64",
    status: buildNodeStatus(input()).status,
  });
  const existing = structuredClone(wanted);
  existing.metadata.labels = {
    "kubernetes.io/hostname": "old-name",
    "topology.kubernetes.io/zone": "z1",
    "team.example.com/owner": "me",
    "kubernetes.io/os": "linux",
    "kubernetes.io/arch": "amd64",
    "beta.kubernetes.io/os": "linux",
    "beta.kubernetes.io/arch": "amd64",
  };
  const { node, changed } = reconcileExistingNode(wanted, existing);
  assert(changed);
  assert.deepEqual(node.metadata.labels?.["kubernetes.io/hostname"], "n1");
  assert.deepEqual(node.metadata.labels?.["team.example.com/owner"], "me");
  assert.deepEqual(node.metadata.labels?.["topology.kubernetes.io/zone"], "z1");
  assert(!reconcileExistingNode(wanted, node).changed);
});

Deno.test("countCpuList() counts ranges and singles", () => {
  assert.deepEqual(countCpuList("0-3,5,7-8\n"), 7);
  assert.deepEqual(countCpuList("0\n"), 1);
  assert.throws(() => countCpuList("3-1"), /bad CPU range/);
});

Deno.test("parseOsImage() reads PRETTY_NAME and falls back to Linux", () => {
  assert.deepEqual(
    parseOsImage('NAME="Debian"\nPRETTY_NAME="Debian GNU/Linux 12 (bookworm)"\n'),
    "Debian GNU/Linux 12 (bookworm)",
  );
  assert.deepEqual(parseOsImage(undefined), "Linux");
  assert.deepEqual(goArch("x86_64"), "amd64");
  assert.deepEqual(goArch("aarch64"), "arm64");
});

/** Runs `fn` on a temporary host tree; `write` puts a file in it. */
async function withHostTree(
  fn: (root: string, write: (rel: string, text: string) => Promise<void>) => Promise<void>,
): Promise<void> {
  await withTempDir((root) =>
    fn(root, async (rel, text) => {
      const path = `${root}/${rel}`;
      await Deno.mkdir(path.slice(0, path.lastIndexOf("/")), { recursive: true });
      await Deno.writeTextFile(path, text);
    }), "nodestatus-");
}

Deno.test("readMachineInfo() reads a fixture host tree and names a missing boot ID", async () => {
  await withHostTree(async (root, write) => {
    await write("sys/devices/system/cpu/online", "0-3\n");
    await write("sys/kernel/mm/hugepages/hugepages-2048kB/nr_hugepages", "16\n");
    await write("etc/machine-id", "abc123\n");
    await write("etc/os-release", 'PRETTY_NAME="Test OS 1"\n');
    const capacities = () => ({ memoryBytes: 8 * GI, fsBytes: 50 * GI });
    await assert.rejects(
      readMachineInfo({ rootDir: root, hostRoot: root, capacities }),
      /boot_id: no boot ID/,
    );
    await write("proc/sys/kernel/random/boot_id", "b-1\n");
    const info = await readMachineInfo({ rootDir: root, hostRoot: root, capacities });
    assert.deepEqual(info.numCores, 4);
    assert.deepEqual(info.hugepages, [{ pageSizeBytes: 2 * MI, numPages: 16 }]);
    assert.deepEqual(info.machineID, "abc123");
    assert.deepEqual(info.systemUUID, "");
    assert.deepEqual(info.bootID, "b-1");
    assert.deepEqual(info.osImage, "Test OS 1");
    assert.deepEqual(info.memoryCapacityBytes, 8 * GI);
  });
});

Deno.test("readMachineInfo() reads the boot time and the process limit the stats report", async () => {
  await withHostTree(async (root, write) => {
    const capacities = () => ({ memoryBytes: 8 * GI, fsBytes: 50 * GI });
    await write("proc/sys/kernel/random/boot_id", "b-1\n");
    const bare = await readMachineInfo({ rootDir: root, hostRoot: root, capacities });
    assert.deepEqual([bare.bootTimeMs, bare.maxPid], [0, undefined]);
    await write("proc/stat", "cpu  1 2 3 4\ncpu0 1 2 3 4\nbtime 1700000000\nprocesses 5\n");
    await write("proc/sys/kernel/pid_max", "4194304\n");
    await write("proc/sys/kernel/threads-max", "126000\n");
    const info = await readMachineInfo({ rootDir: root, hostRoot: root, capacities });
    assert.deepEqual(info.bootTimeMs, 1_700_000_000_000);
    assert.deepEqual(info.maxPid, 126000); // min(pid_max, threads-max)
  });
});

Deno.test("readMachineInfo() reads this machine", async () => {
  const info = await readMachineInfo({ rootDir: "/" });
  assert(info.numCores >= 1);
  assert(info.memoryCapacityBytes > 0);
  assert(info.ephemeralStorageCapacityBytes > 0);
  assert.match(info.bootID, /^[0-9a-f-]{36}$/);
  assert.deepEqual(info.operatingSystem, "linux");
});

/** A runtime that runs one sandbox and records the containers it is asked to create. */
function recordingRuntime(created: ContainerConfig[]): RuntimeService {
  return {
    imageStatus: (spec: { image: string }) =>
      Promise.resolve({
        id: "sha256:img",
        repoTags: [spec.image],
        repoDigests: [],
        size: 1,
        username: "",
        pinned: false,
      }),
    runPodSandbox: () => Promise.resolve("sb1"),
    podSandboxStatus: () =>
      Promise.resolve({ status: { id: "sb1", network: { ip: "10.0.0.2" } }, info: {} }),
    createContainer: (_sandbox: string, config: ContainerConfig) => {
      created.push(config);
      return Promise.resolve("c1");
    },
    startContainer: () => Promise.resolve(),
  } as unknown as RuntimeService;
}

Deno.test("KubeRuntimeManager: the downward API's default for unset limits is the Node's allocatable", async () => {
  const created: ContainerConfig[] = [];
  const node = input({
    kubeReserved: { cpu: "500m", memory: "1Gi" },
    systemReserved: { cpu: "250m", memory: "512Mi" },
  });
  await withTempDir(async (root) => {
    // As main.ts wires it: one reading of the machine, allocatable computed from the options.
    const manager = unitRuntimeManager(recordingRuntime(created), {
      rootDir: `${root}/kubelet`,
      podLogsDir: `${root}/logs`,
      nodeName: "n1",
      memoryCapacity: machine.memoryCapacityBytes,
      nodeAllocatable: computeNodeResources(machine, node).allocatable,
    });
    const limit = (name: string, resource: string, divisor = "1") => ({
      name,
      valueFrom: { resourceFieldRef: { resource, divisor } },
    });
    const pod = testPod({
      namespace: "prod",
      containers: [{
        name: "app",
        image: "busybox:1.36",
        env: [
          limit("CPU_LIMIT", "limits.cpu", "1m"),
          limit("MEMORY_LIMIT", "limits.memory"),
          limit("STORAGE_LIMIT", "limits.ephemeral-storage"),
        ],
      }],
    });
    const empty = runtimePodStatus({ namespace: "prod", sandboxes: [] });
    const sync = await manager.syncPod(pod, empty, new AbortController().signal);
    assert.deepEqual(sync.steps.filter((s) => s.error), []);
    const env = Object.fromEntries((created[0]?.envs ?? []).map((e) => [e.key, e.value]));

    const allocatable = buildNodeStatus(node).status.allocatable!;
    assert.equal(env.CPU_LIMIT, String(milliValue(allocatable.cpu!)));
    assert.equal(env.MEMORY_LIMIT, String(intValue(allocatable.memory!)));
    assert.equal(env.STORAGE_LIMIT, String(intValue(allocatable["ephemeral-storage"]!)));
    // Not the machine's capacity (2 CPUs, 4Gi, 100Gi).
    assert.equal(env.CPU_LIMIT, "1250");
    assert.equal(env.MEMORY_LIMIT, String(4 * GI - GI - 512 * MI - 100 * MI));
    assert.equal(env.STORAGE_LIMIT, String(90 * GI));
  }, "denolet-allocatable-");
});
