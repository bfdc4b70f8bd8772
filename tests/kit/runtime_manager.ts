/**
 * The runtime manager as unit tests drive it: over a fake CRI runtime, on a fake clock,
 * with every host path pointing nowhere unless the test gives it a directory.
 *
 * @module
 */

import type { RuntimeService } from "../../lib/cri/types.ts";
import { KubeRuntimeManager, type KubeRuntimeManagerOptions } from "../../lib/kuberuntime/mod.ts";
import { FakeClock } from "../../lib/util/clock.ts";
import { silentLogger } from "../../lib/util/log.ts";
import { readLogTail } from "../../lib/logs/mod.ts";

/**
 * A KubeRuntimeManager over `runtime` for node "node" (1 GiB of memory, allocatable 1 CPU
 * and 1Gi) on a fresh FakeClock, silent, with root and log directories under
 * /nonexistent and no resolv.conf, unless told otherwise.
 *
 * @param runtime the fake CRI runtime it calls
 * @param options the options that differ (clock, rootDir, podLogsDir, node facts...)
 */
export function unitRuntimeManager(
  runtime: RuntimeService,
  options: Partial<KubeRuntimeManagerOptions> = {},
): KubeRuntimeManager {
  return new KubeRuntimeManager({
    runtime,
    clock: new FakeClock(),
    logger: silentLogger,
    rootDir: "/nonexistent",
    podLogsDir: "/nonexistent/pod-logs",
    resolvConf: "",
    nodeName: "node",
    memoryCapacity: 1 << 30,
    nodeAllocatable: { cpu: "1", memory: "1Gi" },
    readLogTail,
    ...options,
  });
}
