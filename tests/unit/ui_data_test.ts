import assert from "node:assert/strict";
import type { NodeStatus } from "../../lib/api/cluster_types.ts";
import type { ContainerStatus, Pod } from "../../lib/api/types.ts";
import type { Sample } from "../../lib/stats/mod.ts";
import {
  buildNodePageData,
  LocalNodeStatus,
  type NodePageInput,
  probeHandler,
  SPARK_WINDOW_MS,
} from "../../lib/ui/mod.ts";
import { FakeClock } from "../../lib/util/clock.ts";
import { shellExec, testMachineInfo, testPod } from "../kit/mod.ts";

const NOW = Date.parse("2026-12-02T05:00:00Z");

function status(name: string, s: Partial<ContainerStatus>): ContainerStatus {
  return {
    name,
    state: {},
    lastState: {},
    ready: false,
    restartCount: 0,
    image: "busybox",
    imageID: "",
    ...s,
  };
}

/** One sample every 10 s over the last 2 minutes: a quarter core, memory rising 1 MiB a sample. */
function samples(count: number): Sample[] {
  return Array.from({ length: count }, (_, i) => ({
    timestampMs: NOW - (count - 1 - i) * 10_000,
    cpuUsageNs: i * 2_500_000_000,
    memoryWorkingSetBytes: (i + 1) * 2 ** 20,
  }));
}

const crashing: Pod = {
  ...testPod({ name: "crasher", uid: "u-crash", containers: ["main"] }),
  status: {
    phase: "Running",
    qosClass: "BestEffort",
    containerStatuses: [status("main", {
      containerID: "containerd://c-old",
      restartCount: 4,
      state: {
        waiting: {
          reason: "CrashLoopBackOff",
          message: "back-off 1m20s restarting failed container=main pod=crasher_default(u-crash)",
        },
      },
      lastState: {
        terminated: { exitCode: 1, reason: "Error", finishedAt: "2026-12-02T04:59:50Z" },
      },
    })],
  },
};

const probed: Pod = {
  ...testPod({
    name: "web",
    namespace: "apps",
    uid: "u-web",
    containers: [{
      name: "server",
      image: "busybox",
      livenessProbe: { httpGet: { port: 8080, path: "/healthz" }, periodSeconds: 5 },
      readinessProbe: { ...shellExec("test -f /tmp/ready") },
    }],
    spec: {
      initContainers: [
        { name: "setup", image: "busybox" },
        { name: "proxy", image: "busybox", restartPolicy: "Always" },
      ],
    },
  }),
  status: {
    phase: "Running",
    podIP: "10.0.0.7",
    initContainerStatuses: [
      status("setup", { state: { terminated: { exitCode: 0, reason: "Completed" } } }),
      status("proxy", {
        containerID: "containerd://c-proxy",
        started: true,
        ready: true,
        state: { running: { startedAt: "2026-12-02T04:50:00Z" } },
      }),
    ],
    containerStatuses: [status("server", {
      containerID: "containerd://c-server",
      started: true,
      state: { running: { startedAt: "2026-12-02T04:50:00Z" } },
    })],
  },
};

const nodeStatus: NodeStatus = {
  capacity: { cpu: "2", memory: "4Gi", pods: 110 },
  allocatable: { cpu: "2", memory: "3900Mi", pods: 110 },
  conditions: [
    { type: "MemoryPressure", status: "False", reason: "KubeletHasSufficientMemory" },
    { type: "DiskPressure", status: "True", reason: "KubeletHasDiskPressure" },
    {
      type: "Ready",
      status: "True",
      reason: "KubeletReady",
      message: "kubelet is posting ready status",
      lastTransitionTime: "2026-12-02T04:00:00Z",
    },
  ],
  nodeInfo: {
    machineID: "m",
    systemUUID: "s",
    bootID: "b",
    kernelVersion: "6.1.0",
    osImage: "Debian GNU/Linux 12 (bookworm)",
    containerRuntimeVersion: "containerd://1.6.20",
    kubeletVersion: "v1.34.0-denolet.0.1.0",
    kubeProxyVersion: "",
    operatingSystem: "linux",
    architecture: "amd64",
  },
};

function fixture(): NodePageInput {
  return {
    now: NOW,
    nodeName: "testnode",
    nodeSource: "apiserver",
    nodeStatus,
    nodeSamples: samples(13),
    pods: [
      // Out of order on purpose: the page sorts by namespace and name.
      { pod: crashing, probes: [], samples: samples(13), containerSamples: new Map() },
      {
        pod: probed,
        probes: [
          { container: "server", probeType: "Liveness", result: "success", output: "" },
          {
            container: "server",
            probeType: "Readiness",
            result: "failure",
            output: "exit status 1",
          },
        ],
        samples: samples(13),
        containerSamples: new Map([["c-server", samples(3)], ["c-old", samples(3)]]),
      },
    ],
  };
}

Deno.test("buildNodePageData() shows the node's conditions, pressure, resources and info", () => {
  const { node, windowMs, generatedAt } = buildNodePageData(fixture());
  assert.equal(windowMs, SPARK_WINDOW_MS);
  assert.equal(generatedAt, "2026-12-02T05:00:00.000Z");
  assert.equal(node.name, "testnode");
  assert.equal(node.source, "apiserver");
  assert.deepEqual(node.conditions.map((c) => [c.type, c.status, c.ok]), [
    ["MemoryPressure", "False", true],
    ["DiskPressure", "True", false],
    ["Ready", "True", true],
  ]);
  assert.equal(node.conditions[2]!.since, "2026-12-02T04:00:00Z");
  assert.deepEqual(node.pressure, ["DiskPressure"]);
  assert.deepEqual(node.capacity, { cpu: "2", memory: "4Gi", pods: "110" });
  assert.equal(node.allocatable.memory, "3900Mi");
  assert.equal(node.info.runtime, "containerd://1.6.20");
  assert.equal(node.info.kernel, "6.1.0");
});

Deno.test("buildNodePageData() draws the last 2 minutes of samples as sparklines", () => {
  const { node, pods } = buildNodePageData(fixture());
  // 13 samples 10 s apart: 13 memory points, 12 CPU rates of a quarter core.
  assert.equal(node.memory.points, 13);
  assert.equal(node.memory.last, 13 * 2 ** 20);
  assert.equal(node.cpu.points, 12);
  assert.equal(node.cpu.last, 0.25);
  // A flat quarter core is a line along the top edge from x=10 (the first rate) to the right.
  assert.match(node.cpu.d, /^M10 0L20 0.*L120 0$/);
  // The oldest memory sample is at the left edge, the newest (the max) at the top right.
  assert.match(node.memory.d, /^M0 22.2L.*L120 0$/);
  assert.equal(pods[1]!.memory.points, 13);
});

Deno.test("buildNodePageData() leaves out samples older than the window", () => {
  const input = fixture();
  input.nodeSamples = samples(20);
  const { node } = buildNodePageData(input);
  assert.equal(node.memory.points, 13);
});

Deno.test("buildNodePageData() shows a crash-looping container with its back-off and last exit", () => {
  const { pods } = buildNodePageData(fixture());
  const crasher = pods.find((p) => p.name === "crasher")!;
  assert.equal(crasher.status, "CrashLoopBackOff");
  assert.equal(crasher.phase, "Running");
  assert.equal(crasher.ready, "0/1");
  assert.equal(crasher.restarts, 4);
  assert.equal(crasher.trace, "debug/pods/default/crasher/syncs");
  const main = crasher.containers[0]!;
  assert.equal(main.state, "waiting");
  assert.equal(main.reason, "CrashLoopBackOff");
  assert.match(main.message, /^back-off 1m20s restarting failed container=main/);
  assert.equal(main.lastTermination, "Error, exit 1, at 2026-12-02T04:59:50Z");
  // A waiting container has no usage, even if samples of its last instance remain.
  assert.equal(main.cpu, undefined);
});

Deno.test("buildNodePageData() lists init containers, sidecars and app containers with their probes", () => {
  const { pods } = buildNodePageData(fixture());
  assert.deepEqual(pods.map((p) => `${p.namespace}/${p.name}`), ["apps/web", "default/crasher"]);
  const web = pods[0]!;
  assert.equal(web.status, "Running");
  assert.equal(web.ready, "0/1");
  assert.equal(web.podIP, "10.0.0.7");
  assert.deepEqual(web.containers.map((c) => [c.name, c.kind, c.state, c.reason]), [
    ["setup", "init", "terminated", "Completed"],
    ["proxy", "sidecar", "running", ""],
    ["server", "app", "running", ""],
  ]);
  assert.equal(web.containers[0]!.exitCode, 0);
  const server = web.containers[2]!;
  assert.deepEqual(server.probes, [
    {
      type: "Liveness",
      handler: "GET http://:8080/healthz",
      periodSeconds: 5,
      result: "success",
      output: "",
    },
    {
      type: "Readiness",
      handler: "exec sh -c test -f /tmp/ready",
      periodSeconds: 10,
      result: "failure",
      output: "exit status 1",
    },
  ]);
  assert.equal(server.memory?.points, 3);
  // Tracked by housekeeping only while it runs: the sidecar has no samples in the fixture.
  assert.equal(web.containers[1]!.cpu, undefined);
});

Deno.test("buildNodePageData() names an init container's failure as kubectl does", () => {
  const input = fixture();
  const pod: Pod = structuredClone(probed);
  pod.status!.initContainerStatuses![0] = status("setup", {
    state: { waiting: { reason: "CrashLoopBackOff" } },
  });
  input.pods = [{ pod, probes: [], samples: [], containerSamples: new Map() }];
  assert.equal(buildNodePageData(input).pods[0]!.status, "Init:CrashLoopBackOff");
});

Deno.test("probeHandler() says what each kind of probe does", () => {
  assert.equal(probeHandler({ tcpSocket: { port: 6379 } }), "tcp :6379");
  assert.equal(probeHandler({ grpc: { port: 9000, service: "health" } }), "grpc :9000 health");
  assert.equal(
    probeHandler({ httpGet: { port: "http", scheme: "HTTPS", host: "10.0.0.1", path: "/x" } }),
    "GET https://10.0.0.1:http/x",
  );
});

Deno.test("LocalNodeStatus computes the node's status and keeps transition times between calls", async () => {
  const clock = new FakeClock(NOW);
  let reasons: string[] = [];
  let disk = false;
  let versionCalls = 0;
  const local = new LocalNodeStatus({
    nodeName: "testnode",
    hostname: "testnode",
    nodeIPs: ["10.0.0.1"],
    kubeletPort: 10250,
    machine: testMachineInfo(),
    allocatable: { maxPods: 110, evictionHard: { "memory.available": "100Mi" } },
    clock,
    runtimeVersion: () => {
      versionCalls++;
      return Promise.resolve({ runtimeName: "containerd", runtimeVersion: "1.6.20" });
    },
    notReadyReasons: () => reasons,
    pressure: () => ({ disk }),
  });
  const first = await local.status();
  const ready = () => first.conditions!.find((c) => c.type === "Ready")!;
  assert.equal(ready().status, "True");
  assert.equal(first.nodeInfo?.containerRuntimeVersion, "containerd://1.6.20");
  assert.equal(first.capacity?.pods, "110");
  assert.equal(first.allocatable?.memory, "3996Mi"); // 4Gi less the 100Mi hard threshold

  clock.tick(30_000);
  const second = await local.status();
  const ready2 = second.conditions!.find((c) => c.type === "Ready")!;
  assert.equal(ready2.lastTransitionTime, ready().lastTransitionTime);
  assert.notEqual(ready2.lastHeartbeatTime, ready().lastHeartbeatTime);

  reasons = ["container runtime is down"];
  disk = true;
  const third = await local.status();
  const byType = new Map(third.conditions!.map((c) => [c.type, c]));
  assert.equal(byType.get("Ready")?.status, "False");
  assert.equal(byType.get("Ready")?.message, "container runtime is down");
  assert.equal(byType.get("DiskPressure")?.status, "True");
  assert.equal(versionCalls, 1);
});
