import { deepStrictEqual as assertEquals } from "node:assert/strict";
import { alignedDelay, everyAligned } from "../../lib/util/tick.ts";
import { FakeClock } from "../../lib/util/clock.ts";

Deno.test("alignedDelay() rounds the deadline to the nearest grid step", () => {
  assertEquals(alignedDelay(10_003, 1000, 1000), 997);
  assertEquals(alignedDelay(10_600, 1000, 1000), 1400);
  assertEquals(alignedDelay(10_000, 12_345, 1000), 12_000);
});

Deno.test("alignedDelay() never returns a deadline in the past or now", () => {
  assertEquals(alignedDelay(10_400, 0, 1000), 600);
  assertEquals(alignedDelay(10_000, 0, 1000), 1000);
});

Deno.test("alignedDelay() with grid 0 keeps the delay", () => {
  assertEquals(alignedDelay(10_003, 1234, 0), 1234);
});

Deno.test("everyAligned() fires on grid steps once per period and stops on cancel", () => {
  const clock = new FakeClock(100_250);
  const fired: number[] = [];
  const timer = everyAligned(clock, 2000, 1000, () => fired.push(clock.now()));
  clock.tick(10_000);
  assertEquals(fired, [102_000, 104_000, 106_000, 108_000, 110_000]);
  timer.cancel();
  clock.tick(10_000);
  assertEquals(fired.length, 5);
});

Deno.test("everyAligned() timers with different periods share wake-ups on the grid", () => {
  const clock = new FakeClock(50_730);
  const a: number[] = [];
  const b: number[] = [];
  everyAligned(clock, 1000, 1000, () => a.push(clock.now()));
  everyAligned(clock, 2000, 1000, () => b.push(clock.now()));
  clock.tick(5000);
  for (const t of b) assertEquals(a.includes(t), true);
  assertEquals(a.every((t) => t % 1000 === 0), true);
});
