/**
 * `/containerLogs/{namespace}/{pod}/{container}`, as upstream's
 * getContainerLogs (pkg/kubelet/server) with GetKubeletContainerLogs and
 * validateContainerLogStatus (pkg/kubelet): which container instance's log
 * to read follows from the pod's status (`previous` reads the last
 * terminated instance), and the runtime tells where that instance's log is.
 *
 * @module
 */

import { findContainer } from "../api/pod.ts";
import type { Pod, PodStatus } from "../api/types.ts";
import { isNotFound } from "../cri/errors.ts";
import type { RuntimeService } from "../cri/types.ts";
import { type Clock, realClock } from "../util/clock.ts";
import { type Logger, silentLogger } from "../util/log.ts";
import { LogQueryError, logReadOptions, parsePodLogQuery } from "./log_options.ts";
import { openContainerLog } from "./read_logs.ts";
import { type Handler, textResponse } from "./_http.ts";

/** CRI ContainerState RUNNING. */
const CONTAINER_RUNNING = 1;

/** Options for {@link containerLogsHandler}. */
export interface ContainerLogsOptions {
  /** The pod the kubelet knows by namespace and name (with its status). */
  getPodByName(namespace: string, name: string): Pod | undefined;
  /**
   * The pod's latest status as the kubelet computed it (the status manager's),
   * when newer than `pod.status`; upstream falls back to the pod's own status.
   */
  getPodStatus?(pod: Pod): PodStatus | undefined;
  /** ContainerStatus (the log path, and whether a follow goes on). */
  runtime: Pick<RuntimeService, "containerStatus">;
  /** `sinceSeconds` counts back from this clock; it also times a follow's re-checks. */
  clock?: Clock;
  logger?: Logger;
}

/** The container's spec exists in the pod (containers, init or ephemeral containers). */
function hasContainer(pod: Pod, name: string): boolean {
  return findContainer(pod, name) !== undefined;
}

/**
 * The runtime id of the instance whose log a request reads, as upstream's
 * validateContainerLogStatus.
 * @param podName for messages
 * @param status the pod's status
 * @param containerName the container
 * @param previous whether the previous (last terminated) instance is asked for
 * @returns the container id (without the `containerd://` prefix)
 * @throws Error with upstream's message when there is no such instance
 */
export function containerIdForLogs(
  podName: string,
  status: PodStatus,
  containerName: string,
  previous: boolean,
): string {
  const cs = [
    ...(status.containerStatuses ?? []),
    ...(status.initContainerStatuses ?? []),
    ...(status.ephemeralContainerStatuses ?? []),
  ].find((c) => c.name === containerName);
  const what = `container "${containerName}" in pod "${podName}"`;
  if (!cs) throw new Error(`${what} is not available`);
  const last = cs.lastState?.terminated;
  const { waiting, running, terminated } = cs.state ?? {};
  let id: string | undefined;
  if (previous) {
    if (!last?.containerID) throw new Error(`previous terminated ${what} not found`);
    id = last.containerID;
  } else if (running) {
    id = cs.containerID;
  } else if (terminated) {
    // The next instance did not start: its terminated state has no id, the last one does.
    id = terminated.containerID || last?.containerID;
    if (!id) throw new Error(`${what} is terminated`);
  } else if (last) {
    if (!last.containerID) throw new Error(`${what} is terminated`);
    id = last.containerID;
  } else if (waiting) {
    const reason = waiting.reason ?? "";
    if (reason === "ErrImagePull") {
      throw new Error(`${what} is waiting to start: image can't be pulled`);
    }
    if (reason === "ImagePullBackOff") {
      throw new Error(`${what} is waiting to start: trying and failing to pull image`);
    }
    throw new Error(`${what} is waiting to start: ${reason}`);
  } else {
    throw new Error(`${what} is waiting to start - no logs yet`);
  }
  return (id ?? "").replace(/^[^:]*:\/\//, "");
}

/**
 * Splits `/containerLogs/{namespace}/{pod}/{container}`.
 * @returns the three names, or undefined when the path is not of that shape
 */
function pathParts(pathname: string): [string, string, string] | undefined {
  const m = /^\/containerLogs\/([^/]+)\/([^/]+)\/([^/]+)\/?$/.exec(pathname);
  if (!m) return undefined;
  try {
    return [decodeURIComponent(m[1]!), decodeURIComponent(m[2]!), decodeURIComponent(m[3]!)];
  } catch {
    return undefined;
  }
}

/**
 * The `/containerLogs/` handler.
 * @param opts pod lookup, the runtime, clock and logger
 * @returns a handler for `GET /containerLogs/{namespace}/{pod}/{container}`
 */
export function containerLogsHandler(opts: ContainerLogsOptions): Handler {
  const clock = opts.clock ?? realClock;
  const logger = (opts.logger ?? silentLogger).with({ component: "logs" });
  return async (req, url) => {
    if (req.method !== "GET") return textResponse(405, "405: Method Not Allowed");
    const parts = pathParts(url.pathname);
    if (!parts) return textResponse(404, "404: Page Not Found");
    const [namespace, podName, containerName] = parts;

    let query;
    try {
      query = parsePodLogQuery(url.searchParams);
    } catch (err) {
      if (err instanceof LogQueryError) return textResponse(err.status, err.message);
      throw err;
    }
    const pod = opts.getPodByName(namespace, podName);
    if (!pod) return textResponse(404, `pod "${podName}" does not exist`);
    if (!hasContainer(pod, containerName)) {
      return textResponse(404, `container "${containerName}" not found in pod "${podName}"`);
    }
    const status = opts.getPodStatus?.(pod) ?? pod.status ?? {};
    let containerId: string;
    try {
      containerId = containerIdForLogs(podName, status, containerName, query.previous);
    } catch (err) {
      return textResponse(400, (err as Error).message);
    }

    // Upstream has already sent 200 when these fail and writes the message
    // into the body; a status that says so serves clients better.
    let logPath: string;
    try {
      logPath = (await opts.runtime.containerStatus(containerId, { signal: req.signal })).status
        .logPath;
    } catch (err) {
      logger.v(4).info("Failed to get container status", {
        containerID: containerId,
        err: (err as Error).message,
      });
      return textResponse(400, `unable to retrieve container logs for containerd://${containerId}`);
    }
    let body: ReadableStream<Uint8Array>;
    try {
      body = await openContainerLog({
        path: logPath,
        options: logReadOptions(query, clock.now()),
        isRunning: async (signal) => {
          try {
            const r = await opts.runtime.containerStatus(containerId, { signal });
            return r.status.state === CONTAINER_RUNNING;
          } catch (err) {
            if (isNotFound(err)) return false;
            throw err;
          }
        },
        signal: req.signal,
        clock,
        logger,
      });
    } catch (err) {
      return textResponse(400, (err as Error).message);
    }
    return new Response(body, {
      status: 200,
      headers: { "content-type": "text/plain; charset=utf-8" },
    });
  };
}
