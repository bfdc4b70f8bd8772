/**
 * The planner's resize decision for one running container (upstream
 * `computePodResizeAction`), and whether a pod's resize is still being
 * actuated (upstream `IsPodResizeInProgress`). Pure.
 *
 * The *allocated* resources (the pod the planner gets is the allocated pod)
 * are compared with the *actuated* ones (what the runtime last accepted for
 * the container, lib/allocation `ResourceState`); a difference in cpu or
 * memory is applied in place with UpdateContainerResources unless the
 * container's `resizePolicy` for that resource is `RestartContainer`, which
 * restarts it instead:
 *
 * ```
 *  allocated == actuated ─────────────────────► keep, nothing to do
 *  a changed resource's policy RestartContainer ► kill + start (new limits)
 *  otherwise ──► update: memory (limit, else request) and cpu (limit, else
 *                request); decreases first, increases last, per resource
 * ```
 *
 * @module
 */

import { resourceNumbers, sameResourceNumbers } from "../api/resources.ts";
import type { Container, Pod, ResourceRequirements } from "../api/types.ts";
import type {
  ContainersToUpdate,
  ContainerToUpdate,
  ResizeResource,
  RuntimePodStatus,
} from "./types.ts";
import { currentInstance } from "./container_status.ts";

/** What {@link computeContainerResize} decided. */
export type ContainerResize =
  | { action: "keep" }
  | { action: "restart"; message: string }
  | {
    action: "update";
    /** Per resource whose value changes: the update and whether it shrinks. */
    updates: { resource: ResizeResource; update: ContainerToUpdate; decrease: boolean }[];
  };

/** A container's resize policy for a resource: NotRequired unless it says otherwise. */
function restartsOnResize(spec: Container, resource: ResizeResource): boolean {
  return spec.resizePolicy?.find((p) => p.resourceName === resource)?.restartPolicy ===
    "RestartContainer";
}

/**
 * Decides how to bring one running container to its allocated resources.
 * @param spec the allocated container spec
 * @param containerId its running instance
 * @param isInit whether it is an init container
 * @param actuated what the runtime last accepted for it (undefined: nothing
 *   recorded, which counts as all zero, as upstream: an update is then
 *   idempotent, a RestartContainer policy restarts it)
 * @returns keep, restart, or the in-place updates
 */
export function computeContainerResize(
  spec: Container,
  containerId: string,
  isInit: boolean,
  actuated: ResourceRequirements | undefined,
): ContainerResize {
  const desired = resourceNumbers(spec.resources);
  const current = resourceNumbers(actuated);
  if (sameResourceNumbers(desired, current)) return { action: "keep" };
  const memoryChanged = desired.memoryLimit !== current.memoryLimit ||
    desired.memoryRequest !== current.memoryRequest;
  const cpuChanged = desired.cpuLimit !== current.cpuLimit ||
    desired.cpuRequest !== current.cpuRequest;
  if (
    (memoryChanged && restartsOnResize(spec, "memory")) ||
    (cpuChanged && restartsOnResize(spec, "cpu"))
  ) {
    return { action: "restart", message: `Container ${spec.name} resize requires restart` };
  }
  const update: ContainerToUpdate = { name: spec.name, containerId, isInit, desired, current };
  const updates: { resource: ResizeResource; update: ContainerToUpdate; decrease: boolean }[] = [];
  // Upstream orders each resource by its limit when that changes, else by its request.
  if (desired.memoryLimit !== current.memoryLimit) {
    updates.push({
      resource: "memory",
      update,
      decrease: desired.memoryLimit < current.memoryLimit,
    });
  } else if (desired.memoryRequest !== current.memoryRequest) {
    updates.push({
      resource: "memory",
      update,
      decrease: desired.memoryRequest < current.memoryRequest,
    });
  }
  if (desired.cpuLimit !== current.cpuLimit) {
    updates.push({ resource: "cpu", update, decrease: desired.cpuLimit < current.cpuLimit });
  } else if (desired.cpuRequest !== current.cpuRequest) {
    updates.push({ resource: "cpu", update, decrease: desired.cpuRequest < current.cpuRequest });
  }
  return { action: "update", updates };
}

/**
 * Adds a container's updates to the plan's lists: a decrease goes first, an
 * increase last, so that a pod's total never overshoots while its containers
 * are updated one by one.
 * @param lists the plan's per-resource lists (modified)
 * @param resize an "update" decision
 */
export function addContainerUpdates(
  lists: ContainersToUpdate,
  resize: Extract<ContainerResize, { action: "update" }>,
): void {
  for (const { resource, update, decrease } of resize.updates) {
    if (decrease) lists[resource].unshift(update);
    else lists[resource].push(update);
  }
}

/**
 * Whether a resize of the pod is allocated but not yet actuated (upstream
 * `isContainerResourceResizeInProgress`): some running container's
 * allocated cpu or memory differs from what the runtime last accepted.
 * Containers that do not run are sized right when they start.
 * @param pod the allocated pod
 * @param status what the runtime holds for it
 * @param actuated the actuated resources, by container name
 * @returns true while a resize is in progress
 */
export function isPodResizeInProgress(
  pod: Pod,
  status: RuntimePodStatus,
  actuated: (name: string) => ResourceRequirements | undefined,
): boolean {
  for (const spec of [...(pod.spec.initContainers ?? []), ...pod.spec.containers]) {
    if (currentInstance(status, spec.name)?.state !== "running") continue;
    const want = resourceNumbers(spec.resources);
    if (!sameResourceNumbers(want, resourceNumbers(actuated(spec.name)))) return true;
  }
  return false;
}
