import assert from "node:assert/strict";
import { metaTime, microTime, optionalMetaTime } from "../../lib/util/time.ts";

const T = Date.UTC(2026, 0, 2, 3, 4, 5, 678);

Deno.test("metaTime() writes metav1.Time: UTC, sub-second part dropped", () => {
  assert.equal(metaTime(T), "2026-01-02T03:04:05Z");
  assert.equal(metaTime(T - 678), "2026-01-02T03:04:05Z");
});

Deno.test("optionalMetaTime() leaves out 0, which upstream writes as null", () => {
  assert.equal(optionalMetaTime(0), undefined);
  assert.equal(optionalMetaTime(T), "2026-01-02T03:04:05Z");
});

Deno.test("microTime() writes metav1.MicroTime: six fractional digits", () => {
  assert.equal(microTime(T), "2026-01-02T03:04:05.678000Z");
  assert.equal(microTime(T + 0.9), "2026-01-02T03:04:05.678000Z");
  assert.equal(microTime(T - 678), "2026-01-02T03:04:05.000000Z");
});

Deno.test("metaTime() hands out the text it made for a second again, and stays right past its bound", () => {
  const base = Date.UTC(2026, 0, 2, 3, 4, 5);
  // More distinct seconds than it keeps: each still formats right, before and after.
  for (let i = 0; i < 2000; i++) {
    const expected = new Date(base + i * 1000).toISOString().replace(".000Z", "Z");
    assert.equal(metaTime(base + i * 1000 + 999), expected);
  }
  assert.equal(metaTime(base), "2026-01-02T03:04:05Z");
  assert.equal(metaTime(base + 1999_000), "2026-01-02T03:37:24Z");
});
