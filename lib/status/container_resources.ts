/**
 * `containerStatuses[].resources` and `allocatedResources` (in-place resize),
 * as upstream's `convertContainerStatusResources` in kubelet_pods.go forms
 * them: the allocated resources, with the cpu and memory values replaced by
 * what the runtime reports the running container has (its cgroup values
 * turned back into quantities), else by what the kubelet last actuated,
 * else by the previous status's.
 *
 * Values that the cgroup cannot tell apart are reported as allocated: a cpu
 * request at or below 2m (the 2 shares floor) and a cpu limit at or below
 * 10m (the 1 ms quota floor), so `1m` stays `1m` though the kernel runs it as
 * `2m`.
 *
 * @module
 */

import { formatBinaryBytes, formatMilliCPU } from "../api/quantity.ts";
import { resourceNumbers } from "../api/resources.ts";
import type { Container, ContainerStatus, ResourceRequirements } from "../api/types.ts";
import type { RuntimeContainer } from "../kuberuntime/types.ts";

/** Upstream cm's MinShares and MinMilliCPULimit. */
const MIN_SHARES = 2;
const MIN_MILLI_CPU_LIMIT = 10;

/** The runtime's values with the kubelet's record filled in (upstream toKubeContainerStatus). */
interface Reported {
  cpuRequest?: number;
  cpuLimit?: number;
  memoryRequest?: number;
  memoryLimit?: number;
}

function reported(rc: RuntimeContainer, actuated: ResourceRequirements | undefined): Reported {
  const out: Reported = { ...rc.resources };
  if (rc.resources !== undefined && out.memoryRequest !== undefined) return out;
  if (actuated === undefined) return rc.resources === undefined ? {} : out;
  const a = resourceNumbers(actuated);
  // Nothing reported: the record is all there is. (Upstream takes its zeros
  // too, and would show an unset memory limit as "0"; an unset value stays unset here.)
  if (rc.resources === undefined) {
    return Object.fromEntries(Object.entries(a).filter(([, v]) => v > 0)) as Reported;
  }
  // The runtime never reports a memory request: take the record's, if it has one.
  if (a.memoryRequest > 0) out.memoryRequest = a.memoryRequest;
  return out;
}

/**
 * The resources a container status reports.
 * @param allocated the container's spec in the allocated pod
 * @param rc its current runtime instance
 * @param old the previous status of the container
 * @param actuated what the kubelet last actuated for it
 * @returns the resources (an empty object when it has none)
 */
export function statusResources(
  allocated: Container,
  rc: RuntimeContainer,
  old: ContainerStatus | undefined,
  actuated: ResourceRequirements | undefined,
): ResourceRequirements {
  const resources = structuredClone(allocated.resources ?? {});
  if (rc.state !== "running") return resources;
  const cs = reported(rc, actuated);
  const alloc = resourceNumbers(allocated.resources);
  const sameRunningContainer = old?.state.running !== undefined &&
    old.containerID === `containerd://${rc.id}`;
  const preserve = (list: "limits" | "requests", name: string) => {
    const prev = old?.resources?.[list]?.[name];
    const target = resources[list];
    if (sameRunningContainer && prev !== undefined && target) target[name] = prev;
  };
  const limits = resources.limits;
  if (limits) {
    if (cs.cpuLimit !== undefined) {
      if (cs.cpuLimit > MIN_MILLI_CPU_LIMIT || alloc.cpuLimit > MIN_MILLI_CPU_LIMIT) {
        limits.cpu = formatMilliCPU(cs.cpuLimit);
      }
    } else preserve("limits", "cpu");
    if (cs.memoryLimit !== undefined) limits.memory = formatBinaryBytes(cs.memoryLimit);
    else preserve("limits", "memory");
  }
  const requests = resources.requests;
  if (requests) {
    if (cs.cpuRequest !== undefined) {
      if (cs.cpuRequest > MIN_SHARES || alloc.cpuRequest > MIN_SHARES) {
        requests.cpu = formatMilliCPU(cs.cpuRequest);
      }
    } else preserve("requests", "cpu");
    if (cs.memoryRequest !== undefined) requests.memory = formatBinaryBytes(cs.memoryRequest);
    else preserve("requests", "memory");
  }
  return resources;
}
