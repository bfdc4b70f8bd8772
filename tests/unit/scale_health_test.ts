/** tests/scale/_health.ts: what a slow `/healthz` is explained with, from main-thread samples. */

import assert from "node:assert/strict";
import {
  type CensusDelta,
  censusKey,
  type CpuTicks,
  describeMachine,
  describeWindow,
  type MachineSample,
  readCpuTicks,
  type ThreadSample,
} from "../scale/_health.ts";

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

Deno.test("describeWindow names how many processes shared the agent's cpu cgroup meanwhile", () => {
  const samples: ThreadSample[] = [
    { at: 900, state: "S", runNs: 0, waitNs: 0, groupProcs: 1 },
    { at: 1_100, state: "R", runNs: 0, waitNs: 0, groupProcs: 40 },
    { at: 1_300, state: "R", runNs: 0, waitNs: 0, groupProcs: 251 },
    { at: 3_100, state: "S", runNs: 0, waitNs: 0, groupProcs: 1 },
  ];
  assert.match(
    describeWindow(samples, 1_000, 3_000),
    /; its cpu cgroup held 40–251 processes; load /,
  );
});

Deno.test("describeWindow says so when no samples cover the wait", () => {
  assert.equal(describeWindow([], 0, 1_000), "no thread samples");
  assert.equal(
    describeWindow([{ at: 5_000, state: "S", runNs: 0, waitNs: 0 }], 0, 1_000),
    "no thread samples",
  );
});

const ticks = (over: Partial<CpuTicks>): CpuTicks => ({
  user: 0,
  nice: 0,
  system: 0,
  idle: 0,
  iowait: 0,
  irq: 0,
  softirq: 0,
  steal: 0,
  ...over,
});

Deno.test("readCpuTicks reads /proc/stat's cpu line; censusKey folds digits and keeps the nice value", () => {
  assert.deepEqual(
    readCpuTicks("cpu  775861 61138 627805 1553854 4210 0 12707 0 0 0\ncpu0 1 2 3 4 5 6 7 8 0 0\n"),
    ticks({
      user: 775861,
      nice: 61138,
      system: 627805,
      idle: 1553854,
      iowait: 4210,
      softirq: 12707,
    }),
  );
  assert.equal(censusKey("kworker/1:2H-kblockd", -20), "kworker/N:NH-kblockd (nice -20)");
});

Deno.test("describeMachine gives the CPU time by kind, the runnable tasks and who took the most over a window", () => {
  const samples: MachineSample[] = [
    { at: 900, cpu: ticks({ user: 100, system: 100, idle: 1000 }), runnable: 3 },
    { at: 1_500, cpu: ticks({ user: 150, system: 160, idle: 1000, softirq: 10 }), runnable: 150 },
    { at: 2_100, cpu: ticks({ user: 200, system: 220, idle: 1000, softirq: 20 }), runnable: 250 },
  ];
  const deltas: CensusDelta[] = [
    // Before the window: not counted.
    { from: 0, to: 800, ticks: new Map([["runc (nice 0)", 500]]) },
    { from: 800, to: 1_800, ticks: new Map([["runc (nice 0)", 60], ["the agent", 2]]) },
    {
      from: 1_800,
      to: 2_800,
      ticks: new Map([["runc (nice 0)", 40], ["kworker/N:NH-kblockd (nice -20)", 70]]),
    },
  ];
  // From the last sample before the window (900) to the first after it (2100): 240 ticks.
  assert.equal(
    describeMachine({ samples, deltas }, 1_000, 2_000),
    "CPUs 42% user, 50% system, 8% softirq; 134 runnable on average; most CPU runc (nice 0) 1.00 s, kworker/N:NH-kblockd (nice -20) 0.70 s, the agent 0.02 s",
  );
  assert.equal(describeMachine({ samples: [], deltas: [] }, 0, 1), "no machine samples");
});
