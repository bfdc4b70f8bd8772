/**
 * Carries out a plan's in-place resize (upstream `doPodResizeAction` and
 * `updatePodContainerResources`): memory first, then cpu; within each, the
 * containers in the planner's order (decreases first). Each container gets
 * CRI UpdateContainerResources with the new value of that resource and the
 * last actuated value of the other, and once the runtime accepts it, the
 * actuated record moves on. The first failure stops the resize; the next
 * sync plans what is left.
 *
 * A memory limit is not lowered below what the container uses (upstream
 * `validateMemoryResizeAction`): the resize fails with upstream's message
 * and is retried.
 *
 * The pod's cgroup (lib/cm, through `ctx.podCgroup`) is set around the
 * containers' updates as upstream does: limits that grow are raised before
 * them, limits that shrink lowered after them.
 *
 * @module
 */

import { formatBinaryBytes, formatMilliCPU } from "../api/quantity.ts";
import type { ResourceNumbers } from "../api/resources.ts";
import { findContainer, podKey } from "../api/pod.ts";
import type { Pod, ResourceRequirements } from "../api/types.ts";
import type { ManagerContext, SyncStep } from "./_context.ts";
import { errorText } from "../util/log.ts";
import { containerResources } from "./container_config.ts";
import { podIdentity } from "./container_status.ts";
import type { ContainersToUpdate, ContainerToUpdate, ResizeResource } from "./types.ts";

/** Upstream's sync action and error for a resize (`ResizePodInPlace`, `ErrResizePodInPlace`). */
export const RESIZE_ACTION = "ResizePodInPlace";
export const RESIZE_ERROR = "ResizePodInPlaceError";

/**
 * Resource requirements from numbers, leaving zeros out (they mean unset).
 * @param n cpu in millicores, memory in bytes
 * @returns the requirements
 */
export function requirementsFromNumbers(n: ResourceNumbers): ResourceRequirements {
  const requests: Record<string, string> = {};
  const limits: Record<string, string> = {};
  if (n.cpuRequest > 0) requests.cpu = formatMilliCPU(n.cpuRequest);
  if (n.memoryRequest > 0) requests.memory = formatBinaryBytes(n.memoryRequest);
  if (n.cpuLimit > 0) limits.cpu = formatMilliCPU(n.cpuLimit);
  if (n.memoryLimit > 0) limits.memory = formatBinaryBytes(n.memoryLimit);
  const out: ResourceRequirements = {};
  if (Object.keys(requests).length > 0) out.requests = requests;
  if (Object.keys(limits).length > 0) out.limits = limits;
  return out;
}

/** The values one step applies: the resized resource's new values, the other's actuated ones. */
function stepValues(u: ContainerToUpdate, resource: ResizeResource): ResourceNumbers {
  return resource === "memory"
    ? {
      cpuRequest: u.current.cpuRequest,
      cpuLimit: u.current.cpuLimit,
      memoryRequest: u.desired.memoryRequest,
      memoryLimit: u.desired.memoryLimit,
    }
    : {
      cpuRequest: u.desired.cpuRequest,
      cpuLimit: u.desired.cpuLimit,
      memoryRequest: u.current.memoryRequest,
      memoryLimit: u.current.memoryLimit,
    };
}

/** The pod with each container to update at the resources the runtime has applied. */
function podInForce(pod: Pod, updates: ContainersToUpdate): Pod {
  const current = new Map<string, ResourceNumbers>();
  for (const u of [...updates.memory, ...updates.cpu]) current.set(u.name, u.current);
  const inForce = structuredClone(pod);
  for (const list of [inForce.spec.initContainers, inForce.spec.containers]) {
    for (const c of list ?? []) {
      const n = current.get(c.name);
      if (n) c.resources = requirementsFromNumbers(n);
    }
  }
  return inForce;
}

/** A memory limit that is added or lowered must stay above what the container uses now. */
async function checkMemoryDecrease(ctx: ManagerContext, u: ContainerToUpdate): Promise<void> {
  const limit = u.desired.memoryLimit;
  if (limit === 0 || (u.current.memoryLimit !== 0 && limit >= u.current.memoryLimit)) return;
  const stats = await ctx.runtime.containerStats(u.containerId);
  const usage = stats.memory?.usageBytes?.value;
  if (usage === undefined) {
    throw new Error(`cannot decrease memory limits: missing container "${u.name}" memory usage`);
  }
  if (usage >= limit) {
    throw new Error(
      `cannot decrease memory limits: attempting to set container "${u.name}" memory limit (${limit}) below current usage (${usage})`,
    );
  }
}

/**
 * Applies the plan's resource updates.
 * @param ctx the manager context
 * @param pod the allocated pod
 * @param updates the plan's `containersToUpdate`
 * @returns the step: failed with the runtime's message when an update did not go through
 */
export async function resizePod(
  ctx: ManagerContext,
  pod: Pod,
  updates: ContainersToUpdate,
): Promise<SyncStep> {
  const id = podIdentity(pod);
  const target = podKey(id);
  try {
    for (const u of updates.memory) await checkMemoryDecrease(ctx, u);
    ctx.podCgroup?.resizePodCgroup(pod, podInForce(pod, updates));
    for (const resource of ["memory", "cpu"] as const) {
      for (const u of updates[resource]) {
        const spec = findContainer(pod, u.name)?.spec;
        if (!spec) continue;
        const values = stepValues(u, resource);
        const resources = requirementsFromNumbers(values);
        const linux = containerResources(pod, { ...spec, resources }, ctx.memoryCapacity);
        await ctx.runtime.updateContainerResources(u.containerId, linux);
        ctx.actuated.setContainer(id.uid, u.name, resources);
        // The other resource's step (if any) starts from what is now actuated.
        u.current = values;
        ctx.logger.v(2).info("Updated container resources", {
          pod: target,
          podUID: id.uid,
          container: u.name,
          resource,
        });
      }
    }
    ctx.podCgroup?.resizePodCgroup(pod);
    return { action: RESIZE_ACTION, target };
  } catch (err) {
    return {
      action: RESIZE_ACTION,
      target,
      error: { reason: RESIZE_ERROR, message: errorText(err) },
    };
  }
}
