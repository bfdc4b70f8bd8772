/**
 * The container spec hash stored in the `io.kubernetes.container.hash`
 * annotation. A running container whose hash differs from its spec's is
 * restarted, as upstream does.
 *
 * @module
 */

import type { Container } from "../api/types.ts";

/** JSON with object keys sorted, so equal specs hash equally whatever their key order. */
function canonicalJson(value: unknown): string {
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
 * FNV-1a (32-bit) of a string's UTF-8 bytes.
 * @param text the input
 * @returns the hash as an unsigned 32-bit integer
 */
export function fnv32a(text: string): number {
  let h = 0x811c9dc5;
  for (const byte of new TextEncoder().encode(text)) {
    h ^= byte;
    h = Math.imul(h, 0x01000193) >>> 0;
  }
  return h >>> 0;
}

/**
 * Hashes a container spec as upstream's HashContainer does: FNV-1a over the
 * spec's JSON, printed in hex.
 * @param container the spec
 * @returns the hash, as stored in the annotation
 */
export function hashContainer(container: Container): string {
  return fnv32a(canonicalJson(container)).toString(16);
}
