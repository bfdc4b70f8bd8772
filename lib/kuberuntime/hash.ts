/**
 * The container spec hash stored in the `io.kubernetes.container.hash`
 * annotation. A running container whose hash differs from its spec's is
 * restarted, as upstream does.
 *
 * @module
 */

import type { Container } from "../api/types.ts";
import { canonicalJson } from "../util/json.ts";

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
 * spec's JSON (canonical, so equal specs hash equally whatever their key
 * order), printed in hex.
 * @param container the spec
 * @returns the hash, as stored in the annotation
 */
export function hashContainer(container: Container): string {
  return fnv32a(canonicalJson(container)).toString(16);
}
