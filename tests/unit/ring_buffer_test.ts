import assert from "node:assert/strict";
import { ringCapacity, SampleRing } from "../../lib/stats/ring_buffer.ts";

Deno.test("ringCapacity() keeps 2 minutes of 10s samples plus one", () => {
  assert.equal(ringCapacity(120_000, 10_000), 13);
  assert.equal(ringCapacity(60_000, 7_000), 10);
  assert.throws(() => ringCapacity(120_000, 0), RangeError);
});

Deno.test("SampleRing.push() overwrites the oldest row once full", () => {
  const ring = new SampleRing(3, 2);
  for (let i = 1; i <= 5; i++) ring.push([i, i * 10]);
  assert.equal(ring.length, 3);
  assert.deepEqual([...ring.at(0)!], [3, 30]);
  assert.deepEqual([...ring.at(-1)!], [5, 50]);
  assert.equal(ring.value(1, 1), 40);
  assert.equal(ring.at(3), undefined);
  assert.equal(ring.value(0, 2), undefined);
});

Deno.test("SampleRing.push() stores missing trailing values as NaN and copies on read", () => {
  const ring = new SampleRing(2, 3);
  ring.push([1]);
  const row = ring.at(0)!;
  assert.equal(row[0], 1);
  assert.ok(Number.isNaN(row[1]!) && Number.isNaN(row[2]!));
  row[0] = 99;
  assert.equal(ring.value(0, 0), 1);
  ring.clear();
  assert.equal(ring.length, 0);
  assert.equal(ring.byteLength, 2 * 3 * 8);
});
