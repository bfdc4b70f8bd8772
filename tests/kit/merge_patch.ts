/**
 * What a fake apiserver does with a strategic merge patch, for the fields denolet patches
 * (pod and node status): enough of the apiserver's rules to check what the patch means,
 * not a general implementation.
 *
 * @module
 */

/** A JSON object. */
export type JsonObject = Record<string, unknown>;

const isObject = (v: unknown): v is JsonObject =>
  typeof v === "object" && v !== null && !Array.isArray(v);

/**
 * Applies `patch` to `target` as the apiserver applies a strategic merge patch: `null`
 * deletes a field; objects merge recursively; a list whose field has a merge key merges
 * element by element (`$patch: delete` removes one, `$setElementOrder/<field>` orders
 * them, elements it does not name last); a list holding `{ $patch: replace }` replaces the
 * field with its other elements; any other list or value replaces the field.
 *
 * @param target the stored object (not modified)
 * @param patch the patch body
 * @param mergeKeys each list field's merge key, by field name at any depth
 *   (e.g. `{ conditions: "type" }`)
 * @returns the patched copy
 */
export function applyStrategicMergePatch(
  target: JsonObject,
  patch: JsonObject,
  mergeKeys: Readonly<Record<string, string>> = {},
): JsonObject {
  const out: JsonObject = { ...target };
  for (const [key, value] of Object.entries(patch)) {
    if (key.startsWith("$setElementOrder/")) continue;
    const mergeKey = mergeKeys[key];
    if (value === null) {
      delete out[key];
    } else if (Array.isArray(value)) {
      const elements = value as unknown[];
      if (elements.some((e) => isObject(e) && e.$patch === "replace")) {
        out[key] = elements.filter((e) => !(isObject(e) && e.$patch === "replace"));
      } else if (mergeKey !== undefined) {
        out[key] = mergeList(
          Array.isArray(out[key]) ? out[key] as JsonObject[] : [],
          elements as JsonObject[],
          mergeKey,
          patch[`$setElementOrder/${key}`] as JsonObject[] | undefined,
          mergeKeys,
        );
      } else {
        out[key] = value;
      }
    } else if (isObject(value)) {
      out[key] = applyStrategicMergePatch(isObject(out[key]) ? out[key] : {}, value, mergeKeys);
    } else {
      out[key] = value;
    }
  }
  return out;
}

function mergeList(
  current: JsonObject[],
  elements: JsonObject[],
  mergeKey: string,
  order: JsonObject[] | undefined,
  mergeKeys: Readonly<Record<string, string>>,
): JsonObject[] {
  let list = [...current];
  for (const element of elements) {
    const i = list.findIndex((x) => x[mergeKey] === element[mergeKey]);
    if (element.$patch === "delete") list = list.filter((x) => x[mergeKey] !== element[mergeKey]);
    else if (i >= 0) list[i] = applyStrategicMergePatch(list[i]!, element, mergeKeys);
    else list.push(element);
  }
  if (order === undefined) return list;
  const rank = (x: JsonObject) => {
    const i = order.findIndex((o) => o[mergeKey] === x[mergeKey]);
    return i < 0 ? order.length : i;
  };
  return list.sort((a, b) => rank(a) - rank(b));
}
