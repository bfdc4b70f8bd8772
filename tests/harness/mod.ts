/**
 * The integration test harness: a private containerd (with runc, a CNI bridge network
 * and locally built busybox and pause images) per test, in a temporary directory, torn
 * down completely afterwards.
 *
 * ```ts
 * import { startTestRuntime } from "../harness/mod.ts";
 *
 * Deno.test("a pod runs", async () => {
 *   const rt = await startTestRuntime({ name: "pods" });
 *   try {
 *     // talk CRI to rt.endpoint, run rt.images.busybox under rt.cgroupParent
 *   } finally {
 *     await rt.stop();
 *   }
 * });
 * ```
 *
 * Tests that need it fail (never skip) when not root or when containerd, runc, busybox
 * or the CNI plugins are missing; `.ci/run` installs them.
 *
 * @module
 */

export { startTestRuntime, type StartTestRuntimeOptions, type TestRuntime } from "./runtime.ts";
export { requireRoot } from "./require_root.ts";
export { exec, type ExecOptions, type ExecResult } from "./_exec.ts";
export { startTestHost, type TestHost } from "./test_host.ts";
export { TEST_RUNTIME_HANDLER } from "./config.ts";
export { createCpuCgroup, removeCgroupParent } from "./mounts.ts";
export {
  buildFillerImage,
  buildTestImages,
  BUSYBOX_IMAGE,
  cacheDir,
  PAUSE_IMAGE,
  type TestImage,
  type TestImages,
} from "./images.ts";
