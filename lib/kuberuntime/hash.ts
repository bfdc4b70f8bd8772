/**
 * The container spec hash stored in the `io.kubernetes.container.hash`
 * annotation, computed exactly as upstream v1.37's HashContainer
 * (pkg/kubelet/container/helpers.go), so either kubelet adopts the other's
 * containers without a restart:
 *
 * - only `name` and `image` are hashed (upstream's pickFieldsToHash): the
 *   fields a running container cannot change. A change to any other field,
 *   including one the apiserver defaults, never restarts a container;
 * - they are encoded as Go's json.Marshal encodes a map (`{"image":…,"name":…}`,
 *   keys sorted, HTML characters escaped);
 * - that byte slice is printed as go-spew's `%#v` (`([]uint8)[123 34 …]`),
 *   upstream's DeepHashObject, and FNV-1a (32-bit) of the text is printed in hex.
 *
 * @module
 */

import type { Container } from "../api/types.ts";
import { goJson } from "../util/json.ts";

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
 * Hashes a container spec as upstream's HashContainer does (see the module doc).
 * @param container the spec
 * @returns the hash, as stored in the annotation
 */
export function hashContainer(container: Container): string {
  const json = new TextEncoder().encode(
    goJson({ image: container.image ?? "", name: container.name }),
  );
  return fnv32a(`([]uint8)[${json.join(" ")}]`).toString(16);
}
