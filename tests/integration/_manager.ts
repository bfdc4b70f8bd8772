/**
 * The runtime manager and the stats provider as the integration tests drive them: on a
 * test runtime, with their dirs under the runtime's temp dir and pods under its cgroup
 * parent.
 *
 * @module
 */

import assert from "node:assert/strict";
import type { Pod } from "../../lib/api/types.ts";
import {
  KubeRuntimeManager,
  type KubeRuntimeManagerOptions,
  type RuntimePodStatus,
} from "../../lib/kuberuntime/mod.ts";
import type { RuntimeService } from "../../lib/cri/mod.ts";
import { readMachineInfo, StatsProvider, type StatsProviderOptions } from "../../lib/stats/mod.ts";
import { realClock } from "../../lib/util/clock.ts";
import { silentLogger } from "../../lib/util/log.ts";
import { readLogTail } from "../../lib/logs/mod.ts";
import type { TestRuntime } from "../harness/mod.ts";
import { waitFor } from "../kit/mod.ts";

/** The test node's memory and allocatable: what OOM scores and unset limits are computed from. */
export const TEST_NODE = {
  memoryCapacity: 4 * 2 ** 30,
  nodeAllocatable: { cpu: "2", memory: "4Gi", "ephemeral-storage": "10Gi" },
} as const;

/**
 * Makes a KubeRuntimeManager for a test runtime.
 * @param rt the test runtime (its dir and cgroup parent are used)
 * @param runtime a CRI client for it
 * @param extra options that differ from the test defaults
 * @returns the manager
 */
export function testRuntimeManager(
  rt: TestRuntime,
  runtime: RuntimeService,
  extra: Partial<KubeRuntimeManagerOptions> = {},
): KubeRuntimeManager {
  return new KubeRuntimeManager({
    runtime,
    clock: realClock,
    logger: silentLogger,
    rootDir: `${rt.dir}/kubelet`,
    podLogsDir: `${rt.dir}/pod-logs`,
    containerLogsDir: `${rt.dir}/containers`,
    cgroupRoot: rt.cgroupParent,
    nodeName: "test-node",
    hostIPs: ["127.0.0.1"],
    ...TEST_NODE,
    readLogTail,
    ...extra,
  });
}

/**
 * Makes a StatsProvider for a test runtime, on this machine's facts, housekeeping every
 * second.
 * @param rt the test runtime (its dir and cgroup parent are used)
 * @param runtime a CRI client for it
 * @param extra options that differ from the test defaults
 * @returns the provider
 */
export async function testStatsProvider(
  rt: TestRuntime,
  runtime: RuntimeService,
  extra: Partial<StatsProviderOptions> = {},
): Promise<StatsProvider> {
  return new StatsProvider({
    clock: realClock,
    runtime,
    nodeName: "test-node",
    podCgroupRoot: rt.cgroupParent,
    rootDir: rt.dir,
    machine: await readMachineInfo({ rootDir: rt.dir }),
    housekeeping: { intervalMs: 1000 },
    ...extra,
  });
}

/** A pod {@link runPod} started: its status once every container ran, and what to do with it. */
export interface RunningTestPod {
  status: RuntimePodStatus;
  /** Runs a command in a container (CRI ExecSync, 10 s). */
  exec(container: string, cmd: string[]): Promise<{ code: number; out: string; err: string }>;
  /** Runs a command in a container and returns its stdout. */
  read(container: string, cmd: string[]): Promise<string>;
  /** Stops and removes the pod. */
  cleanup(): Promise<void>;
}

/**
 * Syncs a pod through the runtime manager (no step may fail) and waits until every
 * container runs.
 * @param runtime the CRI client the manager uses
 * @param manager the runtime manager
 * @param pod the pod
 * @returns the running pod
 */
export async function runPod(
  runtime: RuntimeService,
  manager: KubeRuntimeManager,
  pod: Pod,
): Promise<RunningTestPod> {
  const signal = new AbortController().signal;
  const uid = pod.metadata.uid!;
  const res = await manager.syncPod(pod, await manager.getPodStatus(uid), signal);
  assert.deepEqual(res.steps.filter((s) => s.error), []);
  const status: RuntimePodStatus = await waitFor(
    `${pod.metadata.name} running`,
    () => manager.getPodStatus(uid),
    {
      timeoutMs: 20_000,
      intervalMs: 200,
      until: (s) =>
        s.containers.length === pod.spec.containers.length &&
        s.containers.every((c) => c.state === "running"),
    },
  );
  const text = new TextDecoder();
  const exec = async (container: string, cmd: string[]) => {
    const id = status.containers.find((c) => c.name === container)!.id;
    const r = await runtime.execSync(id, cmd, 10);
    return { code: r.exitCode, out: text.decode(r.stdout), err: text.decode(r.stderr) };
  };
  return {
    status,
    exec,
    read: async (container, cmd) => (await exec(container, cmd)).out,
    cleanup: async () => {
      await manager.killPod(pod, status, 0, signal);
      await manager.removePod(await manager.getPodStatus(uid), signal);
    },
  };
}
