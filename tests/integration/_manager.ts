/**
 * The runtime manager and the stats provider as the integration tests drive them: on a
 * test runtime, with their dirs under the runtime's temp dir and pods under its cgroup
 * parent.
 *
 * @module
 */

import { KubeRuntimeManager, type KubeRuntimeManagerOptions } from "../../lib/kuberuntime/mod.ts";
import type { RuntimeService } from "../../lib/cri/mod.ts";
import { readMachineInfo, StatsProvider, type StatsProviderOptions } from "../../lib/stats/mod.ts";
import { realClock } from "../../lib/util/clock.ts";
import { silentLogger } from "../../lib/util/log.ts";
import { readLogTail } from "../../lib/logs/mod.ts";
import type { TestRuntime } from "../harness/mod.ts";

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
