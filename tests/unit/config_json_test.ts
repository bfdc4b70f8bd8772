/** The config mux's JSON equality: same verdicts as comparing canonical encodings. */

import assert from "node:assert/strict";
import { canonicalJson, jsonEqual } from "../../lib/util/json.ts";

Deno.test("jsonEqual() ignores key order and undefined members, and nothing else", () => {
  assert.ok(jsonEqual({ a: 1, b: { c: [1, "x"] } }, { b: { c: [1, "x"] }, a: 1 }));
  assert.ok(jsonEqual({ a: 1, gone: undefined }, { a: 1 }));
  assert.ok(jsonEqual({ a: 1 }, { a: 1, gone: undefined }));
  assert.ok(!jsonEqual({ a: 1 }, { a: 1, b: null }));
  assert.ok(!jsonEqual({ a: [1, 2] }, { a: [2, 1] }));
  assert.ok(!jsonEqual({ a: "1" }, { a: 1 }));
  assert.ok(!jsonEqual([], {}));
  assert.ok(!jsonEqual({}, []));
  assert.ok(!jsonEqual(null, {}));
  assert.ok(!jsonEqual({ a: {} }, { a: undefined }));
});

Deno.test("jsonEqual() agrees with comparing canonicalJson() on generated values", () => {
  let seed = 7;
  const rand = (n: number) => (seed = (seed * 1103515245 + 12345) % 2 ** 31) % n;
  const value = (depth: number): unknown => {
    switch (depth > 2 ? rand(4) : rand(7)) {
      case 0:
        return rand(3);
      case 1:
        return ["a", "b", ""][rand(3)];
      case 2:
        return [null, true, false][rand(3)];
      case 3:
        return rand(5) === 0 ? undefined : rand(2);
      case 4:
      case 5: {
        const o: Record<string, unknown> = {};
        for (let i = rand(4); i > 0; i--) o[["x", "y", "z", "w"][rand(4)]!] = value(depth + 1);
        return o;
      }
      default:
        return Array.from({ length: rand(3) }, () => value(depth + 1));
    }
  };
  let equal = 0;
  for (let i = 0; i < 5000; i++) {
    const a = { v: value(0) };
    const b = rand(3) === 0 ? structuredClone(a) : { v: value(0) };
    const expected = canonicalJson(a) === canonicalJson(b);
    if (expected) equal++;
    assert.equal(jsonEqual(a, b), expected, `${canonicalJson(a)} vs ${canonicalJson(b)}`);
  }
  assert.ok(equal > 500, `only ${equal} equal pairs were generated`);
});
