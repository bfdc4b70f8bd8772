/**
 * `instrumentRuntime`: a decorator around the CRI seam that counts and times
 * every call under upstream's operation names
 * (pkg/kubelet/kuberuntime/instrumented_services.go). It is a RuntimeService
 * itself, so the code that calls the runtime does not know it is measured.
 * A call made inside a traced sync (lib/trace `currentSync`) is also added to
 * that sync's record, with its key arguments.
 *
 * @module
 */

import type { RuntimeService } from "../cri/types.ts";
import { currentSync, describeRuntimeArgs } from "../trace/mod.ts";

/** Upstream's operation_type for each RuntimeService method. */
export const OPERATION_NAMES: Readonly<Record<Exclude<keyof RuntimeService, "close">, string>> = {
  version: "version",
  status: "status",
  runPodSandbox: "run_podsandbox",
  stopPodSandbox: "stop_podsandbox",
  removePodSandbox: "remove_podsandbox",
  podSandboxStatus: "podsandbox_status",
  listPodSandbox: "list_podsandbox",
  createContainer: "create_container",
  startContainer: "start_container",
  stopContainer: "stop_container",
  removeContainer: "remove_container",
  listContainers: "list_containers",
  containerStatus: "container_status",
  execSync: "exec_sync",
  exec: "exec",
  attach: "attach",
  portForward: "port_forward",
  containerStats: "container_stats",
  listContainerStats: "list_container_stats",
  reopenContainerLog: "reopen_container_log",
  updateContainerResources: "update_container",
  listImages: "list_images",
  imageStatus: "image_status",
  pullImage: "pull_image",
  removeImage: "remove_image",
  imageFsInfo: "image_fs_info",
};

/** What the decorator reports to; {@link KubeletMetrics} implements it. */
export interface RuntimeOperationObserver {
  observeRuntimeOperation(operation: string, durationMs: number, failed: boolean): void;
}

/**
 * Wraps a RuntimeService so that every call is counted, timed and, when it
 * rejects, counted as an error; results and errors pass through unchanged.
 * @param runtime the CRI client (or any RuntimeService)
 * @param metrics where observations go
 * @param now monotonic ms source; performance.now by default
 * @returns a RuntimeService with the same behaviour
 */
export function instrumentRuntime(
  runtime: RuntimeService,
  metrics: RuntimeOperationObserver,
  now: () => number = () => performance.now(),
): RuntimeService {
  const wrapped = { close: () => runtime.close() } as Record<string, unknown>;
  for (const [method, operation] of Object.entries(OPERATION_NAMES)) {
    const fn = (runtime as unknown as Record<string, (...a: unknown[]) => Promise<unknown>>)[
      method
    ]!;
    wrapped[method] = async (...args: unknown[]) => {
      const start = now();
      const trace = currentSync();
      try {
        const result = await fn.apply(runtime, args);
        const ms = now() - start;
        metrics.observeRuntimeOperation(operation, ms, false);
        trace?.call(method, describeRuntimeArgs(method, args), ms);
        return result;
      } catch (err) {
        const ms = now() - start;
        metrics.observeRuntimeOperation(operation, ms, true);
        trace?.call(method, describeRuntimeArgs(method, args), ms, err);
        throw err;
      }
    };
  }
  return wrapped as unknown as RuntimeService;
}
