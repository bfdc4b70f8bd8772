/**
 * Strategic merge patches for a Node's status, the body upstream's
 * PatchNodeStatus sends to `nodes/NAME/status`: only what changed; map keys
 * that went away set to null; conditions merged by `type` (with
 * `$setElementOrder` so the apiserver keeps our order); addresses replaced
 * as a whole, because the API marks them `patchStrategy=merge` on `type`
 * and a plain merge would keep a stale address of the same type.
 *
 * @module
 */

import type { Node, NodeStatus } from "../api/cluster_types.ts";
import { jsonEqual } from "../util/json.ts";
import { sameQuantity } from "./allocatable.ts";

function mapPatch<V>(
  before: Readonly<Record<string, V>> | undefined,
  after: Readonly<Record<string, V>> | undefined,
  same: (a: V | undefined, b: V | undefined) => boolean,
): Record<string, V | null> | undefined {
  const out: Record<string, V | null> = {};
  for (const [k, v] of Object.entries(after ?? {})) if (!same(before?.[k], v)) out[k] = v;
  for (const k of Object.keys(before ?? {})) if (!(k in (after ?? {}))) out[k] = null;
  return Object.keys(out).length > 0 ? out : undefined;
}

const differ = (a: unknown, b: unknown) => !jsonEqual(a, b);

/**
 * The status part of a strategic merge patch from `before` to `after`.
 * @param before the status the apiserver holds
 * @param after the status to write
 * @returns the `status` object of the patch, or undefined when nothing differs
 */
export function nodeStatusPatch(
  before: NodeStatus | undefined,
  after: NodeStatus,
): Record<string, unknown> | undefined {
  const out: Record<string, unknown> = {};
  const capacity = mapPatch(before?.capacity, after.capacity, sameQuantity);
  if (capacity) out.capacity = capacity;
  const allocatable = mapPatch(before?.allocatable, after.allocatable, sameQuantity);
  if (allocatable) out.allocatable = allocatable;
  if (differ(before?.conditions ?? [], after.conditions ?? [])) {
    out.conditions = after.conditions ?? [];
    out["$setElementOrder/conditions"] = (after.conditions ?? []).map((c) => ({ type: c.type }));
  }
  if (differ(before?.addresses ?? [], after.addresses ?? [])) {
    const list: unknown[] = [...(after.addresses ?? [])];
    if ((before?.addresses ?? []).length > 0) list.push({ $patch: "replace" });
    out.addresses = list;
  }
  for (const key of ["daemonEndpoints", "nodeInfo", "images"] as const) {
    if (after[key] !== undefined && differ(before?.[key], after[key])) out[key] = after[key];
  }
  return Object.keys(out).length > 0 ? out : undefined;
}

/**
 * A strategic merge patch of labels, annotations and status from `before`
 * to `after` (what registration reconciles on an existing Node).
 * @param before the Node the apiserver holds
 * @param after the Node wanted
 * @returns the patch, or undefined when nothing differs
 */
export function nodePatch(before: Node, after: Node): Record<string, unknown> | undefined {
  const patch: Record<string, unknown> = {};
  const meta: Record<string, unknown> = {};
  const eq = (a: string | undefined, b: string | undefined) => a === b;
  const labels = mapPatch(before.metadata.labels, after.metadata.labels, eq);
  if (labels) meta.labels = labels;
  const annotations = mapPatch(before.metadata.annotations, after.metadata.annotations, eq);
  if (annotations) meta.annotations = annotations;
  if (Object.keys(meta).length > 0) patch.metadata = meta;
  const status = after.status ? nodeStatusPatch(before.status, after.status) : undefined;
  if (status) patch.status = status;
  return Object.keys(patch).length > 0 ? patch : undefined;
}
