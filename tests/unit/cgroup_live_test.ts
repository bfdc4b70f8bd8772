// Reads this machine's real /sys/fs/cgroup and /proc: run with -A (Deno 2.9
// refuses /proc and /sys reads without --allow-all).
import assert from "node:assert/strict";
import { cgroupRefFromPid, detectCgroupLayout, readCgroupStats } from "../../lib/cgroup/mod.ts";

Deno.test("detectCgroupLayout() classifies this machine and its own cgroup reads non-negative", () => {
  const layout = detectCgroupLayout();
  assert.ok(["v2", "v1", "hybrid"].includes(layout.mode), `mode ${layout.mode}`);
  const stats = readCgroupStats(layout, cgroupRefFromPid("self"));
  const numbers: number[] = [];
  const walk = (v: unknown) => {
    if (typeof v === "number") numbers.push(v);
    else if (v && typeof v === "object") Object.values(v).forEach(walk);
  };
  walk(stats);
  assert.ok(stats.cpu || stats.memory, "expected CPU or memory figures for our own cgroup");
  assert.ok(numbers.length > 0);
  for (const n of numbers) assert.ok(Number.isFinite(n) && n >= 0, `bad value ${n}`);
});
