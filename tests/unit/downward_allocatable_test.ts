/**
 * A container's unset limits, as the downward API shows them, are node
 * allocatable as the Node reports it (capacity less kube/system reservations
 * and hard eviction thresholds), not the machine's capacity.
 */

import assert from "node:assert/strict";
import { intValue, milliValue } from "../../lib/api/mod.ts";
import type { Pod } from "../../lib/api/types.ts";
import type { ContainerConfig, RuntimeService } from "../../lib/cri/types.ts";
import { KubeRuntimeManager } from "../../lib/kuberuntime/mod.ts";
import { buildNodeStatus, computeNodeResources } from "../../lib/nodestatus/mod.ts";
import type { MachineInfo } from "../../lib/stats/mod.ts";
import { FakeClock } from "../../lib/util/clock.ts";
import { silentLogger } from "../../lib/util/log.ts";

const GI = 2 ** 30;

const machine: MachineInfo = {
  numCores: 4,
  memoryCapacityBytes: 8 * GI,
  bootTimeMs: 0,
  ephemeralStorageCapacityBytes: 100 * GI,
  hugepages: [],
  machineID: "m-1",
  systemUUID: "",
  bootID: "boot-1",
  kernelVersion: "6.1.0",
  osImage: "Linux",
  operatingSystem: "linux",
  architecture: "amd64",
};

/** The reservations and thresholds the agent's options carry. */
const reservations = {
  maxPods: 110,
  kubeReserved: { cpu: "500m", memory: "1Gi" },
  systemReserved: { cpu: "250m", memory: "512Mi" },
  evictionHard: { "memory.available": "100Mi", "nodefs.available": "10%" },
};

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
  const root = await Deno.makeTempDir({ prefix: "denolet-allocatable-" });
  const created: ContainerConfig[] = [];
  try {
    // As main.ts wires it: one reading of the machine, allocatable computed from the options.
    const manager = new KubeRuntimeManager({
      runtime: recordingRuntime(created),
      clock: new FakeClock(),
      logger: silentLogger,
      rootDir: `${root}/kubelet`,
      podLogsDir: `${root}/logs`,
      resolvConf: "",
      nodeName: "n1",
      memoryCapacity: machine.memoryCapacityBytes,
      nodeAllocatable: computeNodeResources(machine, reservations).allocatable,
    });
    const limit = (name: string, resource: string, divisor = "1") => ({
      name,
      valueFrom: { resourceFieldRef: { resource, divisor } },
    });
    const pod: Pod = {
      metadata: { name: "web", namespace: "prod", uid: "u1" },
      spec: {
        containers: [{
          name: "app",
          image: "busybox:1.36",
          env: [
            limit("CPU_LIMIT", "limits.cpu", "1m"),
            limit("MEMORY_LIMIT", "limits.memory"),
            limit("STORAGE_LIMIT", "limits.ephemeral-storage"),
          ],
        }],
      },
    };
    const empty = { uid: "u1", name: "web", namespace: "prod", sandboxes: [], containers: [] };
    const sync = await manager.syncPod(pod, empty, new AbortController().signal);
    assert.deepEqual(sync.steps.filter((s) => s.error), []);
    const env = Object.fromEntries((created[0]?.envs ?? []).map((e) => [e.key, e.value]));

    const { status } = buildNodeStatus({
      ...reservations,
      nodeName: "n1",
      machine,
      now: 0,
      nodeIPs: [],
      hostname: "n1",
      kubeletPort: 10250,
      containerRuntimeVersion: "containerd://2.0.0",
      kubeletVersion: "v1.34.0",
      notReadyReasons: [],
    });
    const allocatable = status.allocatable!;
    assert.equal(env.CPU_LIMIT, String(milliValue(allocatable.cpu!)));
    assert.equal(env.MEMORY_LIMIT, String(intValue(allocatable.memory!)));
    assert.equal(env.STORAGE_LIMIT, String(intValue(allocatable["ephemeral-storage"]!)));
    // Not the machine's capacity.
    assert.equal(env.CPU_LIMIT, "3250");
    assert.equal(env.MEMORY_LIMIT, String(8 * GI - GI - 512 * 2 ** 20 - 100 * 2 ** 20));
    assert.equal(env.STORAGE_LIMIT, String(90 * GI));
  } finally {
    await Deno.remove(root, { recursive: true });
  }
});
