import assert from "node:assert/strict";
import { canonicalJson, compact, isRecord, sortKeys } from "../../lib/util/json.ts";

Deno.test("isRecord() accepts plain objects only", () => {
  assert.equal(isRecord({}), true);
  assert.equal(isRecord([]), false);
  assert.equal(isRecord(null), false);
  assert.equal(isRecord("x"), false);
});

Deno.test("compact() drops what Go's omitempty leaves out, at every depth", () => {
  assert.deepEqual(
    compact({
      a: "",
      b: null,
      c: [],
      d: undefined,
      e: 0,
      f: false,
      g: { h: "", i: [{ j: null }] },
    }),
    { e: 0, f: false, g: { i: [{}] } },
  );
});

Deno.test("sortKeys() orders keys as Go writes a map and drops undefined members", () => {
  const sorted = sortKeys({ b: 1, a: { d: [{ z: 1, y: 2 }], c: undefined } });
  assert.equal(JSON.stringify(sorted), '{"a":{"d":[{"y":2,"z":1}]},"b":1}');
  assert.equal(JSON.stringify(sorted), canonicalJson({ b: 1, a: { d: [{ z: 1, y: 2 }] } }));
});
