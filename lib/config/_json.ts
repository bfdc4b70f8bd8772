/**
 * Small helpers for untrusted decoded JSON/YAML values.
 *
 * @module
 */

/**
 * Tells a plain object from null, arrays and scalars.
 * @param v any value
 * @returns true for a non-null, non-array object
 */
export function isRecord(v: unknown): v is Record<string, unknown> {
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
 * Deep equality of JSON-compatible values, ignoring key order and undefined members.
 * @param a one value
 * @param b the other
 * @returns true when they encode equally
 */
export function jsonEqual(a: unknown, b: unknown): boolean {
  return canonicalJson(a) === canonicalJson(b);
}
