/**
 * The sync trace's cost (issue #20), trace on (`--sync-trace-depth=20`, the
 * default) against off (`--sync-trace-depth=0`) in one run, rounds
 * alternating so both see the same machine:
 *
 * - CPU: the agent's CPU time (utime + stime) for a batch of 30 host-network
 *   static pods written at once, from the write until all run plus a settle
 *   window (every sync, PLEG event and status write of the batch);
 * - memory: RSS of the agent with `--trace-pods` pods running (110 by
 *   default, the node's pod limit), trace on and off; and, exactly, the heap
 *   the trace holds at that many pods × 20 syncs of the records a pod start
 *   makes (in-process, after GC).
 *
 * Run: `deno run -A --v8-flags=--expose-gc bench/sync_trace.ts [--rounds=2]
 * [--trace-pods=110]` (or `deno task bench --only=trace`).
 *
 * @module
 */

import { join } from "node:path";
import { startTestRuntime, type TestRuntime } from "../tests/harness/mod.ts";
import { type AgentProcess, podManifest, startAgent } from "../tests/integration/_agent.ts";
import { waitFor } from "../tests/kit/mod.ts";
import { createRuntimeService, type RuntimeService } from "../lib/cri/mod.ts";
import { currentSync, SyncTracer } from "../lib/trace/mod.ts";
import { FakeClock } from "../lib/util/clock.ts";
import { procReading } from "./_proc.ts";

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

/** One agent's CPU seconds for the 30-pod batch. */
async function batchCpu(rt: TestRuntime, cri: RuntimeService, depth: number): Promise<number> {
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
    await removePods(agent, cri);
    return cpu;
  } finally {
    await agent.stop("SIGTERM");
    await agent.removeDirs();
  }
}

/** One agent's RSS (max of 5 samples, 2 s apart) with `pods` pods running. */
async function podsRss(
  rt: TestRuntime,
  cri: RuntimeService,
  depth: number,
  pods: number,
): Promise<number> {
  const agent = await startAgent({
    runtime: rt,
    extraArgs: ["--v=0", "--file-check-frequency=1s", `--sync-trace-depth=${depth}`],
  });
  try {
    await runPods(rt, agent, pods);
    await sleep(SETTLE_MS);
    let rss = 0;
    for (let i = 0; i < 5; i++) {
      rss = Math.max(rss, procReading(agent.pid).rssBytes);
      await sleep(2_000);
    }
    await removePods(agent, cri);
    return rss / 1048576;
  } finally {
    await agent.stop("SIGTERM");
    await agent.removeDirs();
  }
}

/**
 * The heap a full trace holds: `pods` pods × `depth` syncs, each with the
 * records of a pod start seen on real containerd (triggers, a plan with two
 * reasons, 10 CRI calls, 2 steps, a status).
 */
async function traceHeapMb(pods: number, depth: number): Promise<number> {
  const gc = (globalThis as { gc?: () => void }).gc;
  if (!gc) return NaN; // needs --v8-flags=--expose-gc
  gc();
  const before = Deno.memoryUsage().heapUsed;
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
  gc();
  const after = Deno.memoryUsage().heapUsed;
  if (tracer.podCount !== pods) throw new Error("trace lost pods");
  return (after - before) / 1048576;
}

/**
 * Runs the benchmark.
 * @returns markdown lines for docs/benchmarks.md
 */
export async function runSyncTraceBench(): Promise<string[]> {
  const rounds = Number(arg("rounds", "2"));
  const tracePods = Number(arg("trace-pods", "110"));
  const heap = await traceHeapMb(tracePods, 20);
  const rt = await startTestRuntime({ name: "trace-bench" });
  const cri = createRuntimeService({ endpoint: rt.endpoint, timeoutMs: 60_000 });
  const on: number[] = [];
  const off: number[] = [];
  let rssOn = NaN, rssOff = NaN;
  try {
    for (let r = 0; r < rounds; r++) {
      // Alternate which goes first, so a drift of the machine's load favours neither.
      for (const depth of r % 2 === 0 ? [20, 0] : [0, 20]) {
        (depth > 0 ? on : off).push(await batchCpu(rt, cri, depth));
      }
    }
    if (tracePods > 0) {
      rssOn = await podsRss(rt, cri, 20, tracePods);
      rssOff = await podsRss(rt, cri, 0, tracePods);
    }
  } finally {
    cri.close();
    await rt.stop();
  }
  const sum = (xs: number[]) => xs.reduce((a, b) => a + b, 0);
  const cpuOn = sum(on), cpuOff = sum(off);
  return [
    `### Sync trace cost (${rounds} rounds, trace on and off alternating)`,
    "",
    `| | trace on (depth 20) | trace off (depth 0) | on − off |`,
    "|---|---|---|---|",
    `| agent CPU for a ${BATCH}-pod batch (write → all running + ${
      SETTLE_MS / 1000
    } s), per round | ${on.map((x) => `${x.toFixed(2)} s`).join(", ")} | ${
      off.map((x) => `${x.toFixed(2)} s`).join(", ")
    } | ${((cpuOn / cpuOff - 1) * 100).toFixed(1)}% (total ${cpuOn.toFixed(2)} s vs ${
      cpuOff.toFixed(2)
    } s) |`,
    ...(tracePods > 0
      ? [
        `| agent RSS with ${tracePods} pods running | ${rssOn.toFixed(1)} MB | ${
          rssOff.toFixed(1)
        } MB | ${(rssOn - rssOff).toFixed(1)} MB |`,
      ]
      : []),
    Number.isNaN(heap)
      ? "| heap held by a full trace | (run with `--v8-flags=--expose-gc`) | | |"
      : `| heap held by a full trace (${tracePods} pods × 20 syncs of a pod start's records, after GC) | ${
        heap.toFixed(2)
      } MB | 0 | ${heap.toFixed(2)} MB |`,
    "",
  ];
}

if (import.meta.main) {
  console.log((await runSyncTraceBench()).join("\n"));
}
