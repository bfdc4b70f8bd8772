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
