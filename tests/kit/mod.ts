/**
 * The test kit: what tests under tests/ (and the benchmarks and demo that drive a real
 * agent) share instead of copying.
 *
 * - ./wait.ts: {@link waitFor}, the one poll with a deadline for real things, and
 *   {@link deferred};
 * - ./fake_time.ts: driving code on a FakeClock ({@link flush}, {@link settle},
 *   {@link advance}, {@link drive}, {@link flushUntil});
 * - ./fixtures.ts: pods, runtime sandboxes, containers and pod statuses, plans, probe
 *   results, a machine, exec handlers;
 * - ./fake_runtime.ts: a runtime the test fills by hand ({@link fakePodRuntime});
 * - ./runtime_manager.ts: a runtime manager over a fake CRI runtime
 *   ({@link unitRuntimeManager});
 * - ./fake_objects.ts: the API objects a pod refers to ({@link FakePodObjects});
 * - ./summary.ts: Summary API fixtures ({@link testSummary}, {@link podSummary});
 * - ./scratch.ts: temporary directories (or copies of fixture trees), free ports,
 *   {@link pathExists};
 * - ./metrics.ts: reading Prometheus text ({@link sampleValue});
 * - ./merge_patch.ts: a fake apiserver's strategic merge ({@link applyStrategicMergePatch}).
 *
 * ```ts
 * import { runtimePodStatus, testPod, waitFor } from "../kit/mod.ts";
 *
 * // A unit test's pod and what the runtime holds for it:
 * const pod = testPod({ containers: ["a", "b"] });
 * const running = runtimePodStatus({ uid: pod.metadata.uid! });
 *
 * // Waiting on something real, e.g. a daemon that writes its port once it listens:
 * const port = await waitFor("the daemon's port file", async () => {
 *   return await Deno.readTextFile("/run/daemon.port").catch(() => undefined);
 * }, { timeoutMs: 10_000 });
 * ```
 *
 * @module
 */

export {
  type Deferred,
  deferred,
  delay,
  LOG_TAIL_LINES,
  waitFor,
  type WaitForOptions,
  WaitTimeoutError,
} from "./wait.ts";
export { advance, drive, flush, flushUntil, settle } from "./fake_time.ts";
export {
  containerAt,
  exitedContainer,
  hostNetworkPod,
  podActions,
  probeResult,
  runtimeContainer,
  runtimePodStatus,
  runtimeSandbox,
  shellExec,
  testMachineInfo,
  testPod,
  type TestPodOptions,
} from "./fixtures.ts";
export { type FakePodRuntime, fakePodRuntime, type FakePodRuntimeOptions } from "./fake_runtime.ts";
export { unitRuntimeManager } from "./runtime_manager.ts";
export { type RecordedEvent, recordingEvents } from "./events.ts";
export { FakePodObjects } from "./fake_objects.ts";
export { podSummary, type TestNodeFigures, type TestPodFigures, testSummary } from "./summary.ts";
export { freePort, pathExists, tempCopySync, withTempDir, withTempDirSync } from "./scratch.ts";
export { cgroupV1Tree, cgroupV2Tree } from "./cgroup_trees.ts";
export { sampleSum, sampleValue } from "./metrics.ts";
export { applyStrategicMergePatch, type JsonObject } from "./merge_patch.ts";
export { chromiumPath, runChromium, type RunChromiumOptions } from "./chromium.ts";
