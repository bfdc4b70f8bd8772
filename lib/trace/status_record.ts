/**
 * The status a sync wrote, cut down to what explains the pod: its phase and
 * each container's state, reason, exit code and restarts.
 *
 * @module
 */

import type { ContainerState, ContainerStatus, PodStatus } from "../api/types.ts";
import { clip } from "./_clip.ts";
import type { ContainerStatusRecord, StatusRecord } from "./types.ts";

function containerRecord(c: ContainerStatus): ContainerStatusRecord {
  const s: ContainerState = c.state ?? {};
  const state = s.running
    ? "running"
    : s.terminated
    ? "terminated"
    : s.waiting
    ? "waiting"
    : "unknown";
  const detail = s.waiting ?? s.terminated;
  return {
    name: c.name,
    state,
    ...(detail?.reason ? { reason: clip(detail.reason) } : {}),
    ...(detail?.message ? { message: clip(detail.message) } : {}),
    ...(s.terminated ? { exitCode: s.terminated.exitCode } : {}),
    restartCount: c.restartCount,
    ...(c.lastState?.terminated ? { lastExitCode: c.lastState.terminated.exitCode } : {}),
  };
}

/**
 * Summarises a pod status for the trace.
 * @param status the status written
 * @returns phase, reason and the containers (init containers first)
 */
export function statusRecord(status: PodStatus): StatusRecord {
  return {
    phase: status.phase ?? "",
    ...(status.reason ? { reason: clip(status.reason) } : {}),
    ...(status.message ? { message: clip(status.message) } : {}),
    containers: [...(status.initContainerStatuses ?? []), ...(status.containerStatuses ?? [])]
      .map(containerRecord),
  };
}
