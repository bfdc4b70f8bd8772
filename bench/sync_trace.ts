/**
 * The sync trace's cost (issue #20), trace on (`--sync-trace-depth=20`, the
 * default) against off (`--sync-trace-depth=0`) in one run, rounds
 * alternating so both see the same machine:
 *
 * - CPU: the agent's CPU time (utime + stime) for a batch of 30 host-network
 *   static pods written at once, from the write until all run plus a settle
 *   window (every sync, PLEG event and status write of the batch);
 * - memory: RSS of each agent idle and with `--trace-pods` pods running (110
 *   by default, the node's pod limit), `--rss-agents` (2) agents per setting,
 *   trace on and off alternating, compared by growth from idle (agents with
 *   the same flags differ by up to ~10 MB idle); and, exactly, the memory
 *   the trace holds at that many pods × 20 syncs of the records a pod start
 *   makes (in-process, after GC: V8 heap and external buffers).
 *
 * - without containerd (`--sim`): the agent's sync path in a child process per
 *   setting (bench/_trace_sim.ts, against bench/_fake_containerd.ts), `--sim-runs`
 *   (3) per setting alternating, `--trace-pods` pods resynced every 5 s for
 *   `--sim-seconds` (150): its memory after GC, and with `--sim-gc` what V8
 *   promoted to the old space meanwhile. Not agent RSS: no servers, stats or logs.
 *
 * Run: `deno run -A --v8-flags=--expose-gc bench/sync_trace.ts [--rounds=2]
 * [--trace-pods=110] [--rss] [--rss-agents=2] [--sim] [--sim-runs=3] [--sim-seconds=150]
 * [--sim-gc]` (or `deno task bench --only=trace`); `--rss` adds the agents' RSS at
 * `--trace-pods` pods, on and off (several minutes per agent at 110 pods); `--rounds=0`
 * keeps only the in-process figures (and `--sim`'s, which need no containerd).
 *
 * @module
 */

import { join } from "node:path";
import { startTestRuntime, type TestRuntime } from "../tests/harness/mod.ts";
import { type AgentProcess, podManifest, startAgent } from "../tests/integration/_agent.ts";
import { waitFor } from "../tests/kit/mod.ts";
import { createRuntimeService, type RuntimeService } from "../lib/cri/mod.ts";
import { currentSync, describeRuntimeArgs, SyncTracer } from "../lib/trace/mod.ts";
import { FakeClock, realClock } from "../lib/util/clock.ts";
import { computePodActions } from "../lib/kuberuntime/compute_pod_actions.ts";
import { planRecord } from "../lib/kuberuntime/plan_reasons.ts";
import type { PodStatus } from "../lib/api/types.ts";
import { runtimePodStatus, testPod } from "../tests/kit/mod.ts";
import { procReading } from "./_proc.ts";
import { simulationRows } from "./_trace_sim.ts";

const BATCH = 30;
const SETTLE_MS = 10_000;

function arg(name: string, fallback: string): string {
  const a = Deno.args.find((x) => x.startsWith(`--${name}=`));
  return a ? a.slice(name.length + 3) : fallback;
}

function sleep(ms: number): Promise<void> {
  return new Promise((r) => setTimeout(r, ms));
}

/** Writes `count` pod manifests at once and waits until all run. */
async function runPods(rt: TestRuntime, agent: AgentProcess, count: number): Promise<void> {
  await Promise.all(Array.from({ length: count }, (_, i) =>
    Deno.writeTextFile(
      join(agent.manifestDir, `p-${i}.yaml`),
      podManifest({
        name: `p-${i}`,
        image: rt.images.busybox,
        command: ["sleep", "3600"],
        grace: 1,
      }),
    )));
  await waitFor(`${count} pods running`, async () => {
    const pods = await agent.pods();
    const running = pods.filter((p) => p.status?.containerStatuses?.[0]?.state.running);
    return running.length === count || undefined;
  }, { timeoutMs: 300_000, intervalMs: 250, log: agent.log });
}

/** Removes every manifest and waits until the runtime holds no sandbox. */
async function removePods(agent: AgentProcess, cri: RuntimeService): Promise<void> {
  for await (const f of Deno.readDir(agent.manifestDir)) {
    await Deno.remove(join(agent.manifestDir, f.name));
  }
  await waitFor(
    "every sandbox removed",
    async () => (await cri.listPodSandbox()).length === 0 || undefined,
    {
      timeoutMs: 300_000,
      intervalMs: 500,
      log: agent.log,
    },
  );
}

/** One agent's CPU seconds for the 30-pod batch, and (trace on) the syncs it recorded. */
async function batchCpu(
  rt: TestRuntime,
  cri: RuntimeService,
  depth: number,
): Promise<{ cpu: number; syncs: number }> {
  const agent = await startAgent({
    runtime: rt,
    extraArgs: ["--v=0", "--file-check-frequency=1s", `--sync-trace-depth=${depth}`],
  });
  try {
    await sleep(3_000); // start-up done
    const before = procReading(agent.pid).cpuSeconds;
    await runPods(rt, agent, BATCH);
    await sleep(SETTLE_MS);
    const cpu = procReading(agent.pid).cpuSeconds - before;
    let syncs = 0;
    if (depth > 0) {
      for (let i = 0; i < BATCH; i++) {
        const resp = await fetch(
          `http://127.0.0.1:${agent.readOnlyPort}/debug/pods/default/p-${i}-testnode/syncs`,
        );
        syncs += resp.ok ? (await resp.json()).syncs.length : (await resp.body?.cancel(), 0);
      }
    }
    await removePods(agent, cri);
    return { cpu, syncs };
  } finally {
    await agent.stop("SIGTERM");
    await agent.removeDirs();
  }
}

/** Max of `n` RSS samples of a process, 2 s apart, in MB. */
async function maxRssMb(pid: number, n: number): Promise<number> {
  let rss = 0;
  for (let i = 0; i < n; i++) {
    rss = Math.max(rss, procReading(pid).rssBytes);
    await sleep(2_000);
  }
  return rss / 1048576;
}

/**
 * One agent's RSS idle (no pod, after start-up) and with `pods` pods running
 * (max of 5 samples, 2 s apart). Agents with the same flags differ by up to
 * ~10 MB idle, before any sync is recorded, so the growth from idle is what
 * compares settings.
 */
async function podsRss(
  rt: TestRuntime,
  cri: RuntimeService,
  depth: number,
  pods: number,
): Promise<{ idle: number; running: number }> {
  const agent = await startAgent({
    runtime: rt,
    extraArgs: ["--v=0", "--file-check-frequency=1s", `--sync-trace-depth=${depth}`],
  });
  try {
    await sleep(3_000); // start-up done
    const idle = await maxRssMb(agent.pid, 3);
    await runPods(rt, agent, pods);
    await sleep(SETTLE_MS);
    const running = await maxRssMb(agent.pid, 5);
    await removePods(agent, cri);
    return { idle, running };
  } finally {
    await agent.stop("SIGTERM");
    await agent.removeDirs();
  }
}

/**
 * The memory a full trace holds, in the V8 heap and outside it (the finished
 * syncs' bytes): `pods` pods × `depth` syncs, each with the records of a pod
 * start seen on real containerd (triggers, a plan with two reasons, 10 CRI
 * calls, 2 steps, a status).
 */
async function traceMemoryMb(
  pods: number,
  depth: number,
): Promise<{ heap: number; external: number }> {
  const gc = (globalThis as { gc?: () => void }).gc;
  if (!gc) return { heap: NaN, external: NaN }; // needs --v8-flags=--expose-gc
  gc();
  const before = Deno.memoryUsage();
  const tracer = new SyncTracer({ depth, clock: new FakeClock() });
  const id = "0123456789abcdef".repeat(4);
  for (let p = 0; p < pods; p++) {
    const pod = {
      uid: `${id.slice(0, 28)}${String(p).padStart(4, "0")}`,
      namespace: "default",
      name: `p-${p}-testnode`,
    };
    for (let s = 0; s < depth; s++) {
      tracer.noteTrigger(pod, "pleg", `ContainerStarted ${id.slice(0, 13)}`);
      await tracer.run(pod, "sync", () => {
        const t = currentSync()!;
        t.plan({
          killPod: false,
          createSandbox: true,
          start: ["main"],
          kill: [],
          backoff: [],
          update: [],
          reasons: [
            "create sandbox (attempt 0): no sandbox",
            "start container main: never started in this sandbox",
          ],
        });
        for (let c = 0; c < 10; c++) {
          t.call(
            "createContainer",
            `sandbox=${id.slice(0, 13)} name=main image=docker.io/denolet/busybox:test`,
            94.2,
          );
        }
        t.step({ action: "CreatePodSandbox", target: id });
        t.step({ action: "StartContainer", target: "main" });
        t.status({
          phase: "Running",
          containerStatuses: [{
            name: "main",
            state: { running: { startedAt: "2026-12-02T05:24:40Z" } },
            lastState: {},
            ready: true,
            restartCount: 0,
            image: "busybox",
            imageID: "",
          }],
        });
        return Promise.resolve();
      });
    }
  }
  // The buffers a ring outgrew are freed by V8's concurrent sweeper, after the GC.
  gc();
  await sleep(100);
  gc();
  const after = Deno.memoryUsage();
  if (tracer.podCount !== pods) throw new Error("trace lost pods");
  return {
    heap: (after.heapUsed - before.heapUsed) / 1048576,
    external: (after.external - before.external) / 1048576,
  };
}

/**
 * The recorder's own CPU per sync, in µs: the records of a pod start (10 CRI
 * calls, the plan with its reasons, 2 steps, a status) made with the trace
 * on, less the same calls with it off.
 */
async function perSyncMicros(n: number): Promise<number> {
  const pod = testPod({ uid: "u1", namespace: "default", name: "p" });
  const input = {
    pod,
    status: runtimePodStatus({ uid: "u1", name: "p", sandboxes: [] }),
    backoff: new Map(),
    now: 0,
  };
  const actions = computePodActions(input);
  const status: PodStatus = {
    phase: "Running",
    containerStatuses: [{
      name: "main",
      state: { running: { startedAt: "2026-12-02T05:24:40Z" } },
      lastState: {},
      ready: true,
      restartCount: 0,
      image: "busybox",
      imageID: "",
    }],
  };
  const time = async (depth: number) => {
    const tracer = new SyncTracer({ depth, clock: realClock });
    const traced = { uid: "u1", namespace: "default", name: "p" };
    const t0 = performance.now();
    for (let i = 0; i < n; i++) {
      tracer.noteTrigger(traced, "pleg", "ContainerStarted 0123456789abc");
      await tracer.run(traced, "sync", () => {
        const t = currentSync();
        t?.plan(planRecord(input, actions));
        for (let c = 0; c < 10; c++) {
          t?.call("createContainer", describeRuntimeArgs("createContainer", ARGS), 94.2);
        }
        t?.step({ action: "CreatePodSandbox", target: "0123456789abcdef" });
        t?.step({ action: "StartContainer", target: "main" });
        t?.status(status);
        return Promise.resolve();
      });
    }
    return performance.now() - t0;
  };
  await time(20); // warm up
  await time(0);
  const on = await time(20);
  const off = await time(0);
  return ((on - off) / n) * 1000;
}

const ARGS = [
  "0123456789abcdef0123456789abcdef",
  { metadata: { name: "main", attempt: 0 }, image: { image: "docker.io/denolet/busybox:test" } },
  {},
];

/**
 * Runs the benchmark.
 * @returns markdown lines for docs/benchmarks.md
 */
export async function runSyncTraceBench(): Promise<string[]> {
  const rounds = Number(arg("rounds", "2"));
  const tracePods = Number(arg("trace-pods", "110"));
  const held = await traceMemoryMb(tracePods, 20);
  const micros = await perSyncMicros(20_000);
  const sim = Deno.args.includes("--sim")
    ? await simulationRows({
      pods: tracePods,
      runs: Number(arg("sim-runs", "3")),
      seconds: Number(arg("sim-seconds", "150")),
      gcTrace: Deno.args.includes("--sim-gc"),
    })
    : [];
  const rss = tracePods > 0 && Deno.args.includes("--rss");
  const rt = rounds > 0 || rss ? await startTestRuntime({ name: "trace-bench" }) : undefined;
  const cri = rt && createRuntimeService({ endpoint: rt.endpoint, timeoutMs: 60_000 });
  const on: number[] = [];
  const off: number[] = [];
  const recorded: number[] = [];
  const rssAgents = Number(arg("rss-agents", "2"));
  const rssOn: { idle: number; running: number }[] = [];
  const rssOff: { idle: number; running: number }[] = [];
  try {
    for (let r = 0; rt && cri && r < rounds; r++) {
      // Alternate which goes first, so a drift of the machine's load favours neither.
      for (const depth of r % 2 === 0 ? [20, 0] : [0, 20]) {
        const { cpu, syncs } = await batchCpu(rt, cri, depth);
        (depth > 0 ? on : off).push(cpu);
        if (depth > 0) recorded.push(syncs);
      }
    }
    for (let a = 0; rt && cri && rss && a < rssAgents; a++) {
      for (const depth of a % 2 === 0 ? [20, 0] : [0, 20]) {
        (depth > 0 ? rssOn : rssOff).push(await podsRss(rt, cri, depth, tracePods));
      }
    }
  } finally {
    cri?.close();
    await rt?.stop();
  }
  const sum = (xs: number[]) => xs.reduce((a, b) => a + b, 0);
  const cpuOn = sum(on), cpuOff = sum(off);
  const growth = (xs: { idle: number; running: number }[]) =>
    sum(xs.map((x) => x.running - x.idle)) / xs.length;
  const rssCell = (xs: { idle: number; running: number }[]) =>
    xs.map((x) => `${x.idle.toFixed(1)} → ${x.running.toFixed(1)} MB`).join(", ");
  return [
    `### Sync trace cost (${rounds} rounds, trace on and off alternating)`,
    "",
    `| | trace on (depth 20) | trace off (depth 0) | on − off |`,
    "|---|---|---|---|",
    ...(rounds > 0
      ? [
        `| agent CPU for a ${BATCH}-pod batch (write → all running + ${
          SETTLE_MS / 1000
        } s), per round | ${on.map((x) => `${x.toFixed(2)} s`).join(", ")} | ${
          off.map((x) => `${x.toFixed(2)} s`).join(", ")
        } | ${((cpuOn / cpuOff - 1) * 100).toFixed(1)}% (total ${cpuOn.toFixed(2)} s vs ${
          cpuOff.toFixed(2)
        } s) |`,
      ]
      : []),
    ...(rssOn.length > 0
      ? [
        `| agent RSS idle → with ${tracePods} pods running, per agent | ${rssCell(rssOn)} | ${
          rssCell(rssOff)
        } | ${(growth(rssOn) - growth(rssOff)).toFixed(1)} MB (mean growth ${
          growth(rssOn).toFixed(1)
        } vs ${growth(rssOff).toFixed(1)} MB) |`,
      ]
      : []),
    Number.isNaN(held.heap)
      ? "| memory held by a full trace | (run with `--v8-flags=--expose-gc`) | | |"
      : `| memory held by a full trace (${tracePods} pods × 20 syncs of a pod start's records, after GC: V8 heap + external) | ${
        held.heap.toFixed(2)
      } + ${held.external.toFixed(2)} MB | 0 | ${(held.heap + held.external).toFixed(2)} MB |`,
    `| the recorder's own CPU per sync (a pod start's records, in-process, 20 000 syncs) | ${
      micros.toFixed(1)
    } µs | | ${
      recorded.length > 0
        ? `× ${recorded.join(", ")} syncs recorded per batch = ${
          ((Math.max(...recorded) * micros) / 1e6 / Math.min(...on) * 100).toFixed(3)
        }% of the batch's CPU at most`
        : ""
    } |`,
    "",
    ...sim,
  ];
}

if (import.meta.main) {
  console.log((await runSyncTraceBench()).join("\n"));
}
