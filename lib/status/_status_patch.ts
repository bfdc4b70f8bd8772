/**
 * The pod status patch upstream's `statusutil.PatchPodStatus` sends: a
 * two-way strategic merge patch from `{status: old}` to
 * `{metadata: {uid}, status: new}`, so the patch always carries the pod's UID
 * and the apiserver refuses it (409) when the name now belongs to another pod.
 *
 * Strategic merge rules for PodStatus (k8s.io/api patch tags): `conditions`
 * merge by `type`, `podIPs`/`hostIPs` by `ip`, `resourceClaimStatuses` by
 * `name`; every other list (container statuses) is replaced whole. A changed
 * merge list also gets `$setElementOrder/<field>`, deletions inside it are
 * `{"$patch":"delete", key: value}` and removed fields are `null`.
 *
 * ```json
 * {"metadata":{"uid":"u1"},"status":{"$setElementOrder/conditions":[{"type":"Ready"}],
 *  "conditions":[{"lastTransitionTime":"…","status":"True","type":"Ready"}]}}
 * ```
 *
 * @module
 */

import type { PodStatus } from "../api/types.ts";
import { compact, isRecord, jsonEqual, type JsonObject, sortKeys } from "../util/json.ts";

/** The merge key of each PodStatus list that is patched element by element. */
const STATUS_MERGE_KEYS: Record<string, string> = {
  conditions: "type",
  podIPs: "ip",
  hostIPs: "ip",
  resourceClaimStatuses: "name",
};

/** What {@link podStatusPatch} returns. */
export interface PodStatusPatch {
  /** The patch body (keys sorted as Go writes them). */
  patch: JsonObject;
  /** True when the patch holds nothing but the UID precondition. */
  unchanged: boolean;
}

/**
 * Builds the strategic merge patch that turns `oldStatus` into `newStatus`.
 * @param uid the API pod's UID (the precondition)
 * @param oldStatus the status the apiserver has
 * @param newStatus the status to write
 * @returns the patch and whether it changes anything
 */
export function podStatusPatch(
  uid: string,
  oldStatus: PodStatus | undefined,
  newStatus: PodStatus,
): PodStatusPatch {
  const oldS = compact(oldStatus ?? {}) as JsonObject;
  const newS = compact(newStatus) as JsonObject;
  const statusPatch = diffObjects(oldS, newS, STATUS_MERGE_KEYS);
  const patch: JsonObject = { metadata: { uid } };
  const unchanged = Object.keys(statusPatch).length === 0;
  if (!unchanged) patch.status = statusPatch;
  return { patch: sortKeys(patch) as JsonObject, unchanged };
}

/** Two-way diff of two objects; `mergeKeys` names the lists merged by key at this level. */
function diffObjects(
  oldObj: JsonObject,
  newObj: JsonObject,
  mergeKeys: Record<string, string> = {},
): JsonObject {
  const patch: JsonObject = {};
  for (const [key, newVal] of Object.entries(newObj)) {
    const oldVal = oldObj[key];
    if (jsonEqual(oldVal, newVal)) continue;
    const mergeKey = mergeKeys[key];
    if (isRecord(oldVal) && isRecord(newVal)) {
      const sub = diffObjects(oldVal, newVal);
      if (Object.keys(sub).length > 0) patch[key] = sub;
    } else if (mergeKey !== undefined && Array.isArray(oldVal) && Array.isArray(newVal)) {
      diffMergeList(key, mergeKey, oldVal, newVal, patch);
    } else {
      patch[key] = newVal;
    }
  }
  for (const key of Object.keys(oldObj)) {
    if (!(key in newObj)) patch[key] = null;
  }
  return patch;
}

function keyOf(el: unknown, mergeKey: string): unknown {
  return isRecord(el) ? el[mergeKey] : undefined;
}

/** Element-wise diff of a list of objects merged by `mergeKey`. */
function diffMergeList(
  field: string,
  mergeKey: string,
  oldList: unknown[],
  newList: unknown[],
  patch: JsonObject,
): void {
  const items: JsonObject[] = [];
  for (const el of newList) {
    if (!isRecord(el)) continue;
    const k = el[mergeKey];
    const old = oldList.find((o) => keyOf(o, mergeKey) === k);
    if (!isRecord(old)) {
      items.push(el);
      continue;
    }
    const sub = diffObjects(old, el);
    if (Object.keys(sub).length > 0) items.push({ ...sub, [mergeKey]: k });
  }
  for (const old of oldList) {
    const k = keyOf(old, mergeKey);
    if (!newList.some((el) => keyOf(el, mergeKey) === k)) {
      items.push({ $patch: "delete", [mergeKey]: k });
    }
  }
  // The apiserver requires the patch list to follow the $setElementOrder
  // order ("The order in patch list ... doesn't match"): items keep the new
  // list's order, deletions go last.
  const position = (item: JsonObject) => {
    if (item.$patch === "delete") return newList.length;
    return newList.findIndex((el) => keyOf(el, mergeKey) === item[mergeKey]);
  };
  items.sort((a, b) => position(a) - position(b));
  if (items.length > 0) patch[field] = items;
  patch[`$setElementOrder/${field}`] = newList.map((el) => ({ [mergeKey]: keyOf(el, mergeKey) }));
}
