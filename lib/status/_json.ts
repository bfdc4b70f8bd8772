/**
 * JSON value helpers for comparing and diffing API objects the way Go sees
 * them after a JSON round trip: `omitempty` fields vanish when empty, so an
 * absent field, `null`, `""` and `[]` all mean "not set".
 *
 * @module
 */

/** A JSON object. */
export type JsonObject = { [key: string]: unknown };

/**
 * Whether `v` is a plain JSON object (not an array, not null).
 * @param v any value
 * @returns true for `{...}`
 */
export function isObject(v: unknown): v is JsonObject {
  return typeof v === "object" && v !== null && !Array.isArray(v);
}

function isEmptyValue(v: unknown): boolean {
  return v === undefined || v === null || v === "" || (Array.isArray(v) && v.length === 0);
}

/**
 * A deep copy with every unset value dropped (undefined, null, "", []),
 * recursively; objects keep their other keys, arrays their order. Used on
 * both sides of a comparison or diff so that the apiserver leaving out an
 * `omitempty` field is not mistaken for a change.
 * @param v a JSON value
 * @returns the compacted copy
 */
export function compact(v: unknown): unknown {
  if (Array.isArray(v)) return v.map(compact);
  if (!isObject(v)) return v;
  const out: JsonObject = {};
  for (const [k, val] of Object.entries(v)) {
    if (isEmptyValue(val)) continue;
    out[k] = compact(val);
  }
  return out;
}

/**
 * Structural equality of two JSON values (key order ignored).
 * @param a one value
 * @param b the other
 * @returns true when equal
 */
export function deepEqual(a: unknown, b: unknown): boolean {
  if (a === b) return true;
  if (Array.isArray(a)) {
    if (!Array.isArray(b) || a.length !== b.length) return false;
    return a.every((x, i) => deepEqual(x, b[i]));
  }
  if (isObject(a) && isObject(b)) {
    const ka = Object.keys(a).filter((k) => a[k] !== undefined);
    const kb = Object.keys(b).filter((k) => b[k] !== undefined);
    if (ka.length !== kb.length) return false;
    return ka.every((k) => deepEqual(a[k], b[k]));
  }
  return false;
}

/**
 * A copy with object keys sorted, as Go's encoding/json writes a map, so
 * patches read (and compare in tests) the same as upstream's.
 * @param v a JSON value
 * @returns the sorted copy
 */
export function sortKeys(v: unknown): unknown {
  if (Array.isArray(v)) return v.map(sortKeys);
  if (!isObject(v)) return v;
  const out: JsonObject = {};
  for (const k of Object.keys(v).sort()) {
    if (v[k] !== undefined) out[k] = sortKeys(v[k]);
  }
  return out;
}
