/**
 * Times as the API server stores them: RFC 3339, UTC, whole seconds.
 *
 * @module
 */

/**
 * Formats epoch ms as "2026-01-01T00:00:00Z" (sub-second part dropped, as
 * `metav1.Time` serializes).
 * @param ms epoch ms
 * @returns the RFC 3339 text
 */
export function rfc3339(ms: number): string {
  return new Date(Math.floor(ms / 1000) * 1000).toISOString().replace(/\.\d{3}Z$/, "Z");
}

/**
 * Like {@link rfc3339}, but undefined for 0 ("unknown"), which upstream
 * serializes as null.
 * @param ms epoch ms, or 0
 * @returns the text, or undefined
 */
export function optionalRfc3339(ms: number): string | undefined {
  return ms > 0 ? rfc3339(ms) : undefined;
}
