/**
 * `/stats/summary` against a real containerd (tests/harness): N host-network
 * busybox pods started through the runtime manager, a StatsProvider kept in
 * step with them as the agent keeps it, then the route timed in-process
 * (latency p50/p99, this process's CPU per call). Unlike bench/stats.ts, the
 * runtime's answers are real: a request that waits on ListContainerStats or
 * ImageFsInfo shows it. The runtime calls made during the timed calls are
 * counted too (kubelet_runtime_operations_total).
 *
 * `deno run -A bench/stats_containerd.ts [--pods=50] [--calls=200]`; to measure
 * another commit, run this file from a checkout of it (docs/benchmarks.md has
 * the commands). Needs root; takes a few minutes.
 *
 * @module
 */

import { parseArgs } from "node:util";
import process from "node:process";
import { createRuntimeService } from "../lib/cri/mod.ts";
import { instrumentRuntime, KubeletMetrics } from "../lib/metrics/mod.ts";
import { statsHandlers } from "../lib/server/mod.ts";
import { startTestRuntime } from "../tests/harness/mod.ts";
import { runPod, testRuntimeManager, testStatsProvider } from "../tests/integration/_manager.ts";
import { hostNetworkPod, sampleValue } from "../tests/kit/mod.ts";
import { percentile } from "./_percentile.ts";

const { values } = parseArgs({
  options: { pods: { type: "string", default: "50" }, calls: { type: "string", default: "200" } },
});
const PODS = Number(values.pods);
const CALLS = Number(values.calls);
const WARMUP = 20;

const rt = await startTestRuntime({ name: "bench-stats" });
const runtime = createRuntimeService({ endpoint: rt.endpoint, timeoutMs: 60_000 });
const metrics = new KubeletMetrics();
const instrumented = instrumentRuntime(runtime, metrics);
const cleanups: (() => Promise<void>)[] = [];
try {
  const manager = testRuntimeManager(rt, runtime);
  const pods = [];
  const t0 = performance.now();
  for (let i = 0; i < PODS; i++) {
    const pod = hostNetworkPod(rt.images.busybox, {
      name: `p${i}`,
      namespace: "bench",
      containers: [{ name: "main", command: ["sleep", "3600"] }],
    });
    const running = await runPod(runtime, manager, pod);
    cleanups.push(running.cleanup);
    pods.push({ pod, runtime: running.status });
  }
  console.error(`${PODS} pods running in ${((performance.now() - t0) / 1000).toFixed(1)} s`);
  const provider = await testStatsProvider(rt, instrumented, {
    podLogsDir: `${rt.dir}/pod-logs`,
    housekeeping: { intervalMs: 10_000 },
  });
  cleanups.unshift(() => Promise.resolve(provider.stop()));
  provider.reconcile(pods);
  // Two housekeeping rounds (rates need two samples) and the filesystem loop's first read.
  await new Promise((r) => setTimeout(r, 12_000));
  const route = statsHandlers(provider, () => "")["/stats/summary"]!;
  const url = new URL("http://node/stats/summary");
  const call = async () => {
    const res = await route(new Request(url), url);
    await res.text();
  };
  for (let i = 0; i < WARMUP; i++) await call();
  const ops = () => {
    const text = metrics.render();
    return ["list_container_stats", "image_fs_info"].map((op) =>
      sampleValue(text, "kubelet_runtime_operations_total", { operation_type: op }) ?? 0
    );
  };
  const opsBefore = ops();
  const latencies: number[] = [];
  const cpu0 = process.cpuUsage();
  for (let i = 0; i < CALLS; i++) {
    const t = performance.now();
    await call();
    latencies.push(performance.now() - t);
  }
  const cpu = process.cpuUsage(cpu0);
  const opsAfter = ops();
  const ms = (v: number) => v.toFixed(1);
  console.log(
    `| ${PODS} pods, ${CALLS} sequential calls | ${ms(percentile(latencies, 50))} | ` +
      `${ms(percentile(latencies, 99))} | ${ms((cpu.user + cpu.system) / 1000 / CALLS)} | ` +
      `${opsAfter[0]! - opsBefore[0]!} / ${opsAfter[1]! - opsBefore[1]!} |`,
  );
} finally {
  for (const c of cleanups) await c().catch(() => {});
  runtime.close();
  await rt.stop();
}
