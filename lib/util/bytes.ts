/**
 * Byte-array helpers (what @std/bytes would give; JSR is out of reach here).
 *
 * @module
 */

/**
 * The parts one after another, in a new array.
 * @param parts the byte arrays, in order
 * @returns their concatenation
 */
export function concatBytes(parts: readonly Uint8Array[]): Uint8Array<ArrayBuffer> {
  const out = new Uint8Array(parts.reduce((n, p) => n + p.length, 0));
  let at = 0;
  for (const p of parts) {
    out.set(p, at);
    at += p.length;
  }
  return out;
}
