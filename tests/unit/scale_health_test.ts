/** tests/scale/_health.ts: what a slow `/healthz` is explained with, from main-thread samples. */

import assert from "node:assert/strict";
import { describeWindow, type ThreadSample } from "../scale/_health.ts";

const ms = 1e6;

Deno.test("describeWindow splits the wait into run, run-queue wait and the rest, and names where it blocked", () => {
  const samples: ThreadSample[] = [
    { at: 900, state: "S", runNs: 10 * ms, waitNs: 5 * ms },
    { at: 1_100, state: "R", runNs: 20 * ms, waitNs: 900 * ms },
    { at: 1_300, state: "D", runNs: 30 * ms, waitNs: 1_200 * ms, stack: "cgroup_rmdir<vfs_rmdir" },
    { at: 1_500, state: "D", runNs: 30 * ms, waitNs: 1_200 * ms, stack: "cgroup_rmdir<vfs_rmdir" },
    { at: 3_100, state: "S", runNs: 110 * ms, waitNs: 1_405 * ms },
  ];
  const text = describeWindow(samples, 1_000, 3_000);
  // From the last sample before the wait (900) to the first after it (3100): 2200 ms.
  assert.match(
    text,
    /^over 2200 ms the agent's main thread ran 100 ms, waited 1400 ms for a CPU, slept or blocked 700 ms; samples 2× D, 1× R; blocked in 2× cgroup_rmdir<vfs_rmdir; load /,
  );
});

Deno.test("describeWindow says so when no samples cover the wait", () => {
  assert.equal(describeWindow([], 0, 1_000), "no thread samples");
  assert.equal(
    describeWindow([{ at: 5_000, state: "S", runNs: 0, waitNs: 0 }], 0, 1_000),
    "no thread samples",
  );
});
