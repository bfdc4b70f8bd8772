import assert from "node:assert/strict";
import { concatBytes } from "../../lib/util/bytes.ts";

Deno.test("concatBytes() puts the parts one after another in a new array", () => {
  const a = Uint8Array.of(1, 2);
  const out = concatBytes([a, new Uint8Array(), Uint8Array.of(3)]);
  assert.deepEqual([...out], [1, 2, 3]);
  const one = concatBytes([a]);
  assert.deepEqual([...one], [1, 2]);
  assert.notEqual(one, a);
  assert.equal(concatBytes([]).length, 0);
});
