/**
 * Helpers for JSON values: telling objects apart in untrusted decoded
 * JSON/YAML, a canonical encoding (the static pod UID is a digest of it),
 * equality that ignores key order, and the Go views of a value (`omitempty`
 * fields gone, map keys sorted, Go's escapes) that status patches compare and
 * write and that the container hash and annotations encode.
 *
 * @module
 */

/** A JSON object. */
export type JsonObject = { [key: string]: unknown };

/**
 * Tells a plain object from null, arrays and scalars.
 * @param v any value
 * @returns true for a non-null, non-array object
 */
export function isRecord(v: unknown): v is JsonObject {
  return typeof v === "object" && v !== null && !Array.isArray(v);
}

/**
 * JSON with object keys sorted and undefined members dropped, so that two
 * equal values encode equally whatever their key order.
 * @param value any JSON-compatible value
 * @returns the canonical encoding
 */
export function canonicalJson(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonicalJson).join(",")}]`;
  if (value !== null && typeof value === "object") {
    const entries = Object.entries(value as Record<string, unknown>)
      .filter(([, v]) => v !== undefined)
      .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
    return `{${entries.map(([k, v]) => `${JSON.stringify(k)}:${canonicalJson(v)}`).join(",")}}`;
  }
  return JSON.stringify(value) ?? "null";
}

/**
 * A value as Go's encoding/json writes it (`json.Marshal`, Go 1.22 or later):
 * JSON.stringify's text with `<`, `>`, `&`, U+2028 and U+2029 escaped as
 * `\u00XX`/`\u20XX`, as Go does. Member order is the caller's: Go writes
 * struct fields in declaration order and map keys sorted.
 * @param value any JSON-compatible value
 * @returns the encoding, byte for byte as Go's
 */
export function goJson(value: unknown): string {
  return (JSON.stringify(value) ?? "null").replace(
    /[<>&\u2028\u2029]/g,
    (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, "0")}`,
  );
}

/**
 * Deep equality of JSON-compatible values, ignoring key order and undefined
 * members: the same verdict as comparing their {@link canonicalJson}, without
 * building either string (the config mux compares pods on every delivery).
 * @param a one value
 * @param b the other
 * @returns true when they encode equally
 */
export function jsonEqual(a: unknown, b: unknown): boolean {
  if (a === b) return true;
  if (Array.isArray(a)) {
    if (!Array.isArray(b) || a.length !== b.length) return false;
    for (let i = 0; i < a.length; i++) if (!jsonEqual(a[i] ?? null, b[i] ?? null)) return false;
    return true;
  }
  if (isRecord(a)) {
    if (!isRecord(b)) return false;
    let defined = 0;
    for (const key in a) {
      const value = a[key];
      if (value === undefined) continue;
      defined++;
      if (!Object.hasOwn(b, key) || !jsonEqual(value, b[key])) return false;
    }
    for (const key in b) if (b[key] !== undefined) defined--;
    return defined === 0;
  }
  // Distinct scalars, or a scalar against an object or array.
  return false;
}

function isEmptyValue(v: unknown): boolean {
  return v === undefined || v === null || v === "" || (Array.isArray(v) && v.length === 0);
}

/**
 * A deep copy with every unset value dropped (undefined, null, "", []),
 * recursively; objects keep their other keys, arrays their order. Go's
 * `omitempty` leaves such fields out, so compacting both sides of a
 * comparison or diff keeps the apiserver's omission from looking like a change.
 * @param v a JSON value
 * @returns the compacted copy
 */
export function compact(v: unknown): unknown {
  if (Array.isArray(v)) return v.map(compact);
  if (!isRecord(v)) return v;
  const out: JsonObject = {};
  for (const [k, val] of Object.entries(v)) {
    if (isEmptyValue(val)) continue;
    out[k] = compact(val);
  }
  return out;
}

/**
 * A copy with object keys sorted, as Go's encoding/json writes a map, so
 * patches read (and compare in tests) the same as upstream's.
 * @param v a JSON value
 * @returns the sorted copy
 */
export function sortKeys(v: unknown): unknown {
  if (Array.isArray(v)) return v.map(sortKeys);
  if (!isRecord(v)) return v;
  const out: JsonObject = {};
  for (const k of Object.keys(v).sort()) {
    if (v[k] !== undefined) out[k] = sortKeys(v[k]);
  }
  return out;
}
