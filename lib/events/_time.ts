/**
 * `metav1.Time` text: RFC 3339, UTC, whole seconds.
 *
 * @module
 */

/**
 * Formats epoch ms as "2026-01-01T00:00:00Z".
 * @param ms epoch ms
 * @returns the RFC 3339 text
 */
export function rfc3339(ms: number): string {
  return new Date(Math.floor(ms / 1000) * 1000).toISOString().replace(/\.\d{3}Z$/, "Z");
}
