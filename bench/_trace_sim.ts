/**
 * The agent's sync path in one process, for the sync trace's memory (issue #20)
 * without containerd: bench/sync_trace.ts `--sim` starts this file once per
 * setting, each in its own process with the agent's V8 flags (deno.json
 * `tasks.run`) and `--expose-gc`, against its own bench/_fake_containerd.ts.
 *
 * What runs is main.ts's sync path, not a model of it: the Kubelet (sync loop,
 * pod workers, PLEG relisting every second, status manager, probe manager)
 * over the KubeRuntimeManager, over `instrumentRuntime` (where every CRI call
 * is recorded), over the real gRPC client. Left out: the HTTP servers, stats,
 * eviction, cgroups, the file source (the pods are handed to the loop as the
 * file source would) and logging (silent).
 *
 * The run: idle 3 s; `--pods` static pods added at once, one in five named
 * `crash-*` (its container exits with code 1 after 20 s: PLEG events, restarts
 * after CrashLoopBackOff); every pod resynced every `--resync-ms` (the agent's
 * syncFrequency is 60 s: a shorter one records a full ring of syncs per pod in
 * minutes); `--seconds` later, memory read as is (max of 5 readings, 2 s
 * apart), then after `gc()`; a {@link SimResult} as JSON in `--out`.
 *
 * Run (what {@link simulate} does): `deno run -P=agent --no-code-cache
 * --v8-flags=<the run task's>,--expose-gc bench/_trace_sim.ts --endpoint=unix:///…
 * --out=FILE --depth=20 [--pods=110] [--seconds=150] [--resync-ms=5000] [--snapshot=FILE]`.
 *
 * @module
 */

import { dirname } from "node:path";
import { getHeapSpaceStatistics, writeHeapSnapshot } from "node:v8";
import { Kubelet } from "../lib/agent/kubelet.ts";
import { staticPodsFromManifest } from "../lib/config/mod.ts";
import type { PodUpdate } from "../lib/config/mod.ts";
import { createRuntimeService } from "../lib/cri/mod.ts";
import { KubeRuntimeManager } from "../lib/kuberuntime/mod.ts";
import { readLogTail } from "../lib/logs/mod.ts";
import { instrumentRuntime, KubeletMetrics } from "../lib/metrics/mod.ts";
import { EventChannel, GenericPleg } from "../lib/pleg/mod.ts";
import { ProbeManager } from "../lib/prober/mod.ts";
import { StatusManager } from "../lib/status/mod.ts";
import { SyncTracer } from "../lib/trace/mod.ts";
import { realClock } from "../lib/util/clock.ts";
import { silentLogger } from "../lib/util/log.ts";
import { TICK_GRID_MS } from "../lib/util/tick.ts";
import { podManifest } from "../tests/integration/_agent.ts";
import { sampleSum } from "../tests/kit/mod.ts";
import { runTaskOptions } from "../tools/run_task.ts";
import { type MemoryReading, memoryReading } from "./_proc.ts";

/** What one run prints: the setting, the work done and the readings. */
export interface SimResult {
  depth: number;
  pods: number;
  /** Syncs the pod workers ran (`kubelet_pod_worker_duration_seconds_count`). */
  syncs: number;
  /** Syncs the trace holds at the end (0 with depth 0). */
  recorded: number;
  idle: MemoryReading;
  /** The highest of 5 readings 2 s apart, no forced GC. */
  running: MemoryReading;
  /** After `gc()`, 200 ms, `gc()`. */
  afterGc: MemoryReading;
  /** With `gcTrace`: what V8's scavenges moved to the old space, and its full GCs. */
  gc?: { scavenges: number; promotedMb: number; markCompacts: number };
}

/** Options for {@link simulate}. */
export interface SimOptions {
  /** `--sync-trace-depth`: 0 is the trace off. */
  depth: number;
  pods: number;
  /** How long the pods run before the readings. */
  seconds: number;
  /** The pods' resync period. */
  resyncMs: number;
  /** Adds V8's `--trace-gc-nvp` and sums its scavenges' promoted bytes. */
  gcTrace?: boolean;
  /** Writes a heap snapshot after the readings. */
  snapshot?: string;
}

const ROOT = new URL("../", import.meta.url).pathname;
const SELF = new URL(import.meta.url).pathname;
const FAKE = new URL("./_fake_containerd.ts", import.meta.url).pathname;

/** Sums `--trace-gc-nvp` lines: scavenges, their promoted bytes, full GCs. */
function gcSummary(text: string): NonNullable<SimResult["gc"]> {
  const out = { scavenges: 0, promotedMb: 0, markCompacts: 0 };
  for (const m of text.matchAll(/GC: (\{[^\n]*\})/g)) {
    let entry: { gc?: string; promoted?: number };
    try {
      entry = JSON.parse(m[1]!);
    } catch {
      continue; // a line cut by the pipe's buffering
    }
    if (entry.gc === "s") {
      out.scavenges++;
      out.promotedMb += (entry.promoted ?? 0) / 1048576;
    } else if (entry.gc === "mc") out.markCompacts++;
  }
  return out;
}

/**
 * One run of the sync path in a child process with the agent's V8 flags, against
 * its own fake containerd (another process).
 * @param opts the setting and the workload
 * @returns the child's readings
 * @throws Error with the child's stderr when it fails
 */
export async function simulate(opts: SimOptions): Promise<SimResult> {
  const fake = new Deno.Command(Deno.execPath(), {
    args: ["run", "-A", FAKE],
    cwd: ROOT,
    stdout: "piped",
    stderr: "piped",
  }).spawn();
  const dir = await Deno.makeTempDir({ prefix: "denolet-trace-sim-out-" });
  let endpoint = "";
  try {
    const reader = fake.stdout.pipeThrough(new TextDecoderStream()).getReader();
    let first = "";
    while (!first.includes("\n")) {
      const { value, done } = await reader.read();
      if (done) {
        const why = await new Response(fake.stderr).text();
        throw new Error(`the fake containerd ended before it listened: ${why}`);
      }
      first += value;
    }
    await reader.cancel();
    endpoint = first.trim();
    const v8 = `,--expose-gc${opts.gcTrace ? ",--trace-gc-nvp" : ""}`;
    const runOptions = runTaskOptions().map((o) => o.startsWith("--v8-flags=") ? o + v8 : o);
    const out = await new Deno.Command(Deno.execPath(), {
      args: [
        "run",
        ...runOptions,
        SELF,
        `--endpoint=${endpoint}`,
        `--depth=${opts.depth}`,
        `--pods=${opts.pods}`,
        `--seconds=${opts.seconds}`,
        `--resync-ms=${opts.resyncMs}`,
        `--out=${dir}/result.json`,
        ...(opts.snapshot ? [`--snapshot=${opts.snapshot}`] : []),
      ],
      cwd: ROOT,
      stdout: "piped",
      stderr: "piped",
    }).output();
    if (!out.success) {
      throw new Error(
        `trace sim (depth ${opts.depth}) failed: ${new TextDecoder().decode(out.stderr)}`,
      );
    }
    const result = JSON.parse(await Deno.readTextFile(`${dir}/result.json`)) as SimResult;
    if (opts.gcTrace) result.gc = gcSummary(new TextDecoder().decode(out.stdout));
    return result;
  } finally {
    try {
      fake.kill("SIGTERM");
    } catch {
      // Ended already: grpc-js's server under Deno can trip an nghttp2 assertion
      // (and abort) as the child's client goes away; its stderr says only that.
    }
    await fake.status;
    await fake.stderr.cancel().catch(() => {});
    if (endpoint) await Deno.remove(dirname(endpoint.slice("unix://".length)), { recursive: true });
    await Deno.remove(dir, { recursive: true });
  }
}

function arg(name: string, fallback: string): string {
  const a = Deno.args.find((x) => x.startsWith(`--${name}=`));
  return a ? a.slice(name.length + 3) : fallback;
}

function sleep(ms: number): Promise<void> {
  return new Promise((r) => setTimeout(r, ms));
}

/** This process's memory, with V8's old space (size and used) from node:v8. */
function reading(): MemoryReading {
  const old = getHeapSpaceStatistics().find((s) => s.space_name === "old_space");
  return memoryReading(Deno.pid, Deno.memoryUsage(), {
    size: old?.space_size ?? 0,
    used: old?.space_used_size ?? 0,
  });
}

/** Per field, the highest of the readings. */
function highest(readings: MemoryReading[]): MemoryReading {
  const out = { ...readings[0]! };
  for (const r of readings) {
    for (const k of Object.keys(out) as (keyof MemoryReading)[]) out[k] = Math.max(out[k], r[k]);
  }
  return out;
}

/** `mean (min–max)` of some runs' figure. */
function spread(xs: number[], digits = 1): string {
  const mean = xs.reduce((a, b) => a + b, 0) / xs.length;
  if (xs.length === 1) return mean.toFixed(digits);
  return `${mean.toFixed(digits)} (${Math.min(...xs).toFixed(digits)}–${
    Math.max(...xs).toFixed(digits)
  })`;
}

/**
 * The sync path without containerd, trace on (depth 20) and off, `runs` times
 * each alternating (which goes first alternating too), as a markdown table.
 * @param opts pods, runs per setting, seconds per run, and whether to trace V8's GCs
 * @returns markdown lines for docs/benchmarks.md
 */
export async function simulationRows(
  opts: { pods: number; runs: number; seconds: number; gcTrace: boolean },
): Promise<string[]> {
  const { pods, runs, seconds, gcTrace } = opts;
  const on: SimResult[] = [];
  const off: SimResult[] = [];
  for (let r = 0; r < runs; r++) {
    for (const depth of r % 2 === 0 ? [20, 0] : [0, 20]) {
      const result = await simulate({ depth, pods, seconds, resyncMs: 5_000, gcTrace });
      (depth > 0 ? on : off).push(result);
    }
  }
  const mean = (xs: number[]) => xs.reduce((a, b) => a + b, 0) / xs.length;
  const row = (label: string, pick: (r: SimResult) => number, digits = 1) =>
    `| ${label} | ${spread(on.map(pick), digits)} | ${spread(off.map(pick), digits)} | ${
      (mean(on.map(pick)) - mean(off.map(pick))).toFixed(digits)
    } |`;
  return [
    `### Sync path without containerd (${runs} runs per setting, alternating; ${pods} pods, ` +
    `resync 5 s, read after ${seconds} s; mean (min–max), MiB)`,
    "",
    "| | trace on (depth 20) | trace off (depth 0) | on − off |",
    "|---|---|---|---|",
    row("syncs run", (r) => r.syncs, 0),
    row("syncs held by the trace", (r) => r.recorded, 0),
    row("heapUsed after GC", (r) => r.afterGc.heapUsed),
    row("heapTotal after GC", (r) => r.afterGc.heapTotal),
    row("external after GC", (r) => r.afterGc.external),
    row("old space held after GC", (r) => r.afterGc.oldSpace),
    row("RSS after GC", (r) => r.afterGc.rss),
    row("of which anonymous", (r) => r.afterGc.anon),
    row("RSS running (max of 5 readings)", (r) => r.running.rss),
    row("heapTotal running", (r) => r.running.heapTotal),
    ...(gcTrace
      ? [
        row("promoted to the old space by scavenges", (r) => r.gc!.promotedMb),
        row("scavenges", (r) => r.gc!.scavenges, 0),
      ]
      : []),
    "",
  ];
}

async function main(): Promise<void> {
  const endpoint = arg("endpoint", "");
  const depth = Number(arg("depth", "20"));
  const podCount = Number(arg("pods", "110"));
  const seconds = Number(arg("seconds", "150"));
  const resyncMs = Number(arg("resync-ms", "5000"));
  const snapshot = arg("snapshot", "");
  const outFile = arg("out", "");
  const gc = (globalThis as { gc?: () => void }).gc;
  if (!endpoint || !outFile || !gc) {
    throw new Error("needs --endpoint=, --out= and --v8-flags=--expose-gc");
  }
  const dir = await Deno.makeTempDir({ prefix: "denolet-trace-sim-" });
  const clock = realClock;
  const logger = silentLogger;
  const metrics = new KubeletMetrics();
  const criClient = createRuntimeService({ endpoint, timeoutMs: 60_000 });
  const cri = instrumentRuntime(criClient, metrics);
  const runtime = new KubeRuntimeManager({
    runtime: cri,
    clock,
    logger,
    rootDir: `${dir}/root`,
    podLogsDir: `${dir}/pods`,
    containerLogsDir: `${dir}/containers`,
    resolvConf: "",
    nodeName: "testnode",
    memoryCapacity: 8 << 30,
    nodeAllocatable: { cpu: "2", memory: "8Gi" },
    readLogTail,
  });
  const pleg = new GenericPleg({
    listPods: (signal) => runtime.listPods(signal),
    getPodStatus: (uid, signal) => runtime.getPodStatus(uid, signal),
    clock,
    logger,
    onRelistDuration: (ms) => metrics.observePlegRelist(ms, clock.now()),
    tickGridMs: TICK_GRID_MS,
  });
  const probes = new ProbeManager({ runtime: cri, clock, logger, hostIP: "127.0.0.1" });
  const trace = depth > 0 ? new SyncTracer({ depth, clock }) : undefined;
  const kubelet = new Kubelet({
    runtime,
    ...(trace ? { trace } : {}),
    pleg,
    clock,
    logger,
    nodeName: "testnode",
    hostIP: "127.0.0.1",
    statuses: new StatusManager({ clock, logger }),
    syncFrequencyMs: resyncMs,
    metrics,
    probes,
    tickGridMs: TICK_GRID_MS,
  });
  const updates = new EventChannel<PodUpdate>(100);
  kubelet.start({ updates, seenAllSources: () => true });
  try {
    await sleep(3_000);
    gc();
    const idle = reading();
    const pods = Array.from({ length: podCount }, (_, i) =>
      staticPodsFromManifest(
        podManifest({
          name: i % 5 === 4 ? `crash-${i}` : `p-${i}`,
          image: "docker.io/denolet/busybox:test",
          command: ["sleep", "3600"],
          grace: 1,
        }),
        {
          nodeName: "testnode",
          source: "file",
          origin: `${dir}/manifests/p-${i}.yaml`,
          now: clock.now(),
        },
      )[0]!);
    updates.send({ op: "ADD", pods, source: "file" });
    await sleep(seconds * 1000);
    const samples: MemoryReading[] = [];
    for (let i = 0; i < 5; i++) {
      samples.push(reading());
      await sleep(2_000);
    }
    // Buffers are freed by V8's concurrent sweeper, after the GC that found them dead.
    gc();
    await sleep(200);
    gc();
    const afterGc = reading();
    let recorded = 0;
    for (const pod of pods) {
      recorded += trace?.trace(pod.metadata.namespace!, pod.metadata.name!)?.syncs.length ?? 0;
    }
    const result: SimResult = {
      depth,
      pods: podCount,
      syncs: sampleSum(metrics.render(), "kubelet_pod_worker_duration_seconds_count"),
      recorded,
      idle,
      running: highest(samples),
      afterGc,
    };
    if (snapshot) writeHeapSnapshot(snapshot);
    await Deno.writeTextFile(outFile, JSON.stringify(result));
  } finally {
    await kubelet.stop();
    criClient.close();
    await Deno.remove(dir, { recursive: true });
  }
}

if (import.meta.main) await main();
