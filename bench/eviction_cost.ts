/**
 * The eviction manager's own cost at 110 pods (issue #16: "≤ 0.2% of a core").
 *
 * - Rounds: the manager the agent builds (createEvictionManager, the agent's
 *   default thresholds — memory.available<100Mi, nodefs.available<10%,
 *   nodefs.inodesFree<5%, imagefs.available<15%, and the allocatable copy —
 *   with its two memory threshold notifiers, re-armed from each Summary as in
 *   a round) runs `synchronize()` over a 110-pod Summary, time stepped 10 s per
 *   round; CPU (process.cpuUsage) per round ÷ 10 s. Two cases: no threshold met
 *   (a node's normal state: signals, thresholds, conditions, local storage
 *   limits) and a memory threshold met on every round (ranking the 110 pods,
 *   the eviction message, the kill through a pod-workers stand-in that ends at
 *   once: the most a round does).
 * - The Summary (110 pods, 220 containers, with filesystems) comes from the
 *   stats bench's fixture (bench/_stats_fixture.ts: a generated cgroup v2 tree
 *   and /proc, a CRI stand-in answering at once) and is built once; its cost
 *   is the stats provider's, shared with `/stats/summary`, and given on its own
 *   line. It is not measured against a real containerd at 110 pods: 110 pods on
 *   this shared 2-core machine would take many minutes and gigabytes for the
 *   shims alone.
 * - Polls: the memory notifiers' 500 ms polls (kernelMemcgNotification off,
 *   the default), measured with the real clock on the real root memory cgroup
 *   (read only): two PollingCgroupNotifiers (memory.available and its
 *   allocatable copy; the root's usage file stands in for the pods' cgroup's,
 *   which is no dearer to read) over a window, the process's CPU compared with
 *   the same window idle.
 *
 * `deno run -A bench/eviction_cost.ts`; `deno task bench --only=eviction-cost`.
 *
 * @module
 */

import process from "node:process";
import { createEvictionManager } from "../lib/agent/eviction.ts";
import type { Pod } from "../lib/api/types.ts";
import { detectCgroupLayout } from "../lib/cgroup/mod.ts";
import {
  cgroupUsageReader,
  DEFAULT_POLL_INTERVAL_MS,
  PollingCgroupNotifier,
} from "../lib/eviction/cgroup_notifier.ts";
import type { EvictionManager } from "../lib/eviction/mod.ts";
import { parseFlags } from "../lib/options/mod.ts";
import type { UpdatePodOptions } from "../lib/pod_workers/types.ts";
import { StatsProvider } from "../lib/stats/mod.ts";
import type { Summary } from "../lib/stats/summary_types.ts";
import { type Clock, realClock, type Timer } from "../lib/util/clock.ts";
import { silentLogger } from "../lib/util/log.ts";
import { recordingEvents } from "../tests/kit/events.ts";
import {
  advanceCpu,
  buildFixture,
  type Fixture,
  RUNTIME_PID,
  StepClock,
} from "./_stats_fixture.ts";
import { percentile } from "./_percentile.ts";

const ROUND_MS = 10_000;
const PODS = 110;
const WARMUP_ROUNDS = 100;
const POLL_WINDOW_MS = 15_000;

/** Time that moves only when told; timers never fire (the rounds are driven by hand). */
class HandClock implements Clock {
  #now = Date.UTC(2026, 0, 1);
  now(): number {
    return this.#now;
  }
  monotonic(): number {
    return this.#now;
  }
  advance(ms: number): void {
    this.#now += ms;
  }
  setTimeout(): Timer {
    return { cancel() {} };
  }
  setInterval(): Timer {
    return { cancel() {} };
  }
  sleep(): Promise<void> {
    return new Promise(() => {});
  }
}

function cpuMsSince(start: ReturnType<typeof process.cpuUsage>): number {
  const d = process.cpuUsage(start);
  return (d.user + d.system) / 1000;
}

/** The 110-pod Summary, and its pods, from the stats fixture. */
async function fixtureSummary(f: Fixture): Promise<{ summary: Summary; buildMs: number }> {
  const clock = new StepClock();
  const provider = new StatsProvider({
    clock,
    cgroupRoot: f.cgroupRoot,
    procRoot: f.procRoot,
    rootDir: f.dir,
    podLogsDir: f.dir,
    runtime: f.runtime,
    nodeName: "bench-node",
    runtimePid: RUNTIME_PID,
    machine: f.machine,
    housekeeping: { intervalMs: ROUND_MS, random: () => 0, dynamic: false },
  });
  try {
    provider.reconcile(f.pods);
    clock.step(0);
    await advanceCpu(f, 2_500_000);
    clock.step(ROUND_MS);
    const summary = await provider.summary({ onlyCpuAndMemory: false });
    if (summary.pods.length !== PODS) throw new Error(`summary has ${summary.pods.length} pods`);
    for (let i = 0; i < 20; i++) await provider.summary({ onlyCpuAndMemory: false });
    const calls = 100;
    const start = process.cpuUsage();
    for (let i = 0; i < calls; i++) await provider.summary({ onlyCpuAndMemory: false });
    return { summary, buildMs: cpuMsSince(start) / calls };
  } finally {
    provider.stop();
  }
}

/**
 * Gives the Summary's signal figures the time `ms`, as a fresh Summary has: the manager
 * acts only on a threshold whose stats changed since its last round (upstream
 * thresholdsUpdatedStats).
 */
function restamp(summary: Summary, ms: number): Summary {
  const time = new Date(ms).toISOString();
  const node = summary.node;
  for (
    const s of [
      node.memory,
      node.systemContainers?.find((c) => c.name === "pods")?.memory,
      node.fs,
      node.runtime?.imageFs,
      node.runtime?.containerFs,
      node.rlimit,
    ]
  ) {
    if (s) s.time = time;
  }
  return summary;
}

/** A manager as the agent builds it, over a fixed Summary and pods, on a hand-driven clock. */
function fixtureManager(
  f: Fixture,
  summary: Summary,
  pods: Pod[],
  flags: string[],
  clock: HandClock,
): { manager: EvictionManager; kills: () => number } {
  const parsed = parseFlags([`--root-dir=${f.dir}`, ...flags]);
  if (parsed.kind !== "run") throw new Error(`flags: ${parsed.kind}`);
  let kills = 0;
  const manager = createEvictionManager({
    opts: parsed.options,
    clock,
    logger: silentLogger,
    nodeName: "bench-node",
    events: recordingEvents(),
    stats: { summary: () => Promise.resolve(restamp(summary, clock.now())) },
    runtime: f.runtime,
    kubelet: () => ({
      podWorkers: {
        updatePod: (u: UpdatePodOptions) => {
          kills++;
          u.statusFn?.({ phase: "Running" });
          u.onTerminated?.();
        },
        podIsFinished: () => true,
      },
      allocatedActivePods: () => pods,
    }),
    // The agent's notifiers, on the fixture's cgroup tree (v2: polls; they never fire here).
    memoryCgroups: {
      layout: detectCgroupLayout({ cgroupRoot: f.cgroupRoot }),
      podCgroupRoot: "/kubepods",
    },
  });
  return { manager, kills: () => kills };
}

/** CPU ms per synchronize() over `rounds` rounds, 10 s of hand-clock time apart. */
async function timeRounds(manager: EvictionManager, clock: HandClock, rounds: number) {
  for (let i = 0; i < WARMUP_ROUNDS; i++) {
    clock.advance(ROUND_MS);
    await manager.synchronize();
  }
  const wall: number[] = [];
  const start = process.cpuUsage();
  for (let i = 0; i < rounds; i++) {
    clock.advance(ROUND_MS);
    const t = performance.now();
    await manager.synchronize();
    wall.push(performance.now() - t);
  }
  return { cpuMs: cpuMsSince(start) / rounds, wallP50: percentile(wall, 50) };
}

/** Process CPU ms over a window of the real clock, with `poll` running or not. */
async function windowCpu(poll: boolean): Promise<number> {
  const root = detectCgroupLayout();
  const dir = root.v1.memory ?? root.unified ?? root.root;
  const notifiers = poll
    ? [0, 1].map(() =>
      new PollingCgroupNotifier({
        cgroupDir: dir,
        // Never crossed: the cost of a poll that finds nothing.
        threshold: Number.MAX_SAFE_INTEGER,
        readUsage: cgroupUsageReader(dir),
        clock: realClock,
        intervalMs: DEFAULT_POLL_INTERVAL_MS,
        log: silentLogger,
      })
    )
    : [];
  for (const n of notifiers) n.start(() => {});
  const start = process.cpuUsage();
  await new Promise((resolve) => setTimeout(resolve, POLL_WINDOW_MS));
  const ms = cpuMsSince(start);
  for (const n of notifiers) n.stop();
  await Promise.all(notifiers.map((n) => n.stopped));
  return ms;
}

const DRIVEN_POLLS = 20_000;

/**
 * CPU ms of one poll of a PollingCgroupNotifier on the root memory cgroup, its
 * interval callback called by hand (the poll's own work: the read, the parse, the
 * comparison; not the event loop's wake-up).
 */
function drivenPollMs(): number {
  const layout = detectCgroupLayout();
  const dir = layout.v1.memory ?? layout.unified ?? layout.root;
  let tick: (() => void) | undefined;
  const clock: Clock = {
    now: () => Date.now(),
    monotonic: () => Date.now(),
    setTimeout: () => ({ cancel() {} }),
    setInterval: (fn) => {
      tick = fn;
      return { cancel() {} };
    },
    sleep: () => new Promise(() => {}),
  };
  const n = new PollingCgroupNotifier({
    cgroupDir: dir,
    threshold: Number.MAX_SAFE_INTEGER,
    readUsage: cgroupUsageReader(dir),
    clock,
    intervalMs: DEFAULT_POLL_INTERVAL_MS,
    log: silentLogger,
  });
  n.start(() => {});
  if (!tick) throw new Error("the notifier set no interval");
  for (let i = 0; i < 1000; i++) tick();
  const start = process.cpuUsage();
  for (let i = 0; i < DRIVEN_POLLS; i++) tick();
  const ms = cpuMsSince(start) / DRIVEN_POLLS;
  n.stop();
  return ms;
}

/**
 * Runs the cost benchmark.
 * @param rounds timed rounds per case
 * @returns the report's lines (Markdown)
 */
export async function runEvictionCostBench(rounds = 600): Promise<string[]> {
  const f = await buildFixture(PODS * 2);
  const pods = f.pods.map((p) => p.pod);
  const pct = (ms: number, periodMs: number) => `${((ms / periodMs) * 100).toFixed(4)}%`;
  const rows: string[] = [];
  const loadBefore = Deno.loadavg()[0]!;
  try {
    const { summary, buildMs } = await fixtureSummary(f);
    const cases: [string, string[], (kills: number) => string][] = [
      ["no threshold met (agent defaults)", [], (k) => (k === 0 ? "" : ` (**${k} kills**)`)],
      [
        "memory.available met every round: 110 pods ranked, one evicted",
        ["--eviction-hard=memory.available<1000Gi"],
        (k) => (k >= rounds ? "" : ` (**only ${k} kills**)`),
      ],
    ];
    for (const [name, flags, check] of cases) {
      const clock = new HandClock();
      const { manager, kills } = fixtureManager(f, summary, pods, flags, clock);
      const r = await timeRounds(manager, clock, rounds);
      await manager.stop();
      rows.push(
        `| round, ${name}${check(kills())} | ${r.cpuMs.toFixed(3)} ms | ${
          pct(r.cpuMs, ROUND_MS)
        } |`,
      );
    }
    rows.push(
      `| the Summary itself (110 pods, with fs; the stats provider's, shared with /stats/summary) | ${
        buildMs.toFixed(3)
      } ms | ${pct(buildMs, ROUND_MS)} |`,
    );
  } finally {
    await Deno.remove(f.dir, { recursive: true });
  }
  // Alternating windows; the least disturbed of each kind.
  const idleRuns: number[] = [];
  const pollRuns: number[] = [];
  for (let i = 0; i < 2; i++) {
    idleRuns.push(await windowCpu(false));
    pollRuns.push(await windowCpu(true));
  }
  const idle = Math.min(...idleRuns);
  const polling = Math.min(...pollRuns);
  const poll = drivenPollMs();
  const loadAfter = Deno.loadavg()[0]!;
  return [
    `### Eviction manager's cost at ${PODS} pods (${rounds} rounds per case, one round per 10 s)`,
    "",
    "| what | CPU per round | % of one core at one round per 10 s |",
    "|---|---|---|",
    ...rows,
    "",
    `Memory notifiers' polls (two, every ${DEFAULT_POLL_INTERVAL_MS} ms, root memory cgroup, real clock): ` +
    `process CPU over ${POLL_WINDOW_MS / 1000} s (least of two windows each) ${
      polling.toFixed(1)
    } ms polling vs ${idle.toFixed(1)} ms idle → ${
      pct(Math.max(0, polling - idle), POLL_WINDOW_MS)
    } of a core (wake-ups included; noisy on a shared machine); one poll driven by hand ` +
    `${(poll * 1000).toFixed(1)} µs of CPU (mean of ${DRIVEN_POLLS}) → ${
      pct(poll * 2 * (1000 / DEFAULT_POLL_INTERVAL_MS), 1000)
    } for two notifiers' polls without the wake-ups. 1-min load ${loadBefore.toFixed(1)} → ${
      loadAfter.toFixed(1)
    }.`,
    "",
  ];
}

if (import.meta.main) {
  const rounds = Deno.args.find((a) => a.startsWith("--rounds="));
  console.log(
    (await runEvictionCostBench(rounds ? Number(rounds.slice(9)) : undefined)).join("\n"),
  );
}
