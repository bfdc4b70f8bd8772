/**
 * `deno task bench`: denolet against the raw CRI sequence on a private
 * containerd, in one run (machines here are shared and noisy, so only ratios
 * taken in the same run mean anything).
 *
 * 1. Static pod start-up: manifest written → container started (CRI startedAt),
 *    over N host-network pods with the image present, next to the raw
 *    RunPodSandbox + CreateContainer + StartContainer sequence timed the same way.
 * 2. Death noticed: a container is stopped out of band; time from its
 *    finishedAt to `/pods` showing it terminated.
 * 3. Idle cost: the agent's RSS and CPU over an idle window with 0, 10, 50 pods.
 * 4. The stats paths at 110 containers (bench/stats.ts) and 110 pods × 3
 *    probes (bench/probes.ts).
 * 5. 30 pods through a real apiserver (bench/cluster.ts).
 * 6. The secure port: a 100 MB log followed, 20 exec sessions against the
 *    runtime's own streaming server, the authn/authz caches (bench/server.ts).
 * 7. Eviction reaction: a memory threshold crossed → the notifier's handler
 *    (bench/eviction.ts); the pods' working set crossing allocatableMemory.available
 *    → the eviction manager's kill, on a real containerd, with each notifier and
 *    none (bench/eviction_kill.ts); the manager's own CPU at 110 pods
 *    (bench/eviction_cost.ts).
 * 8. The sync trace's cost, on against off (bench/sync_trace.ts).
 *
 * Options: `--pods=N` (default 20), `--idle-seconds=S` (default 60),
 * `--idle-counts=0,10,50`, `--eviction-rounds=N` (evictions per way of watching, default 4),
 * `--only=agent,stats,probes,cluster,server,eviction,eviction-kill,eviction-cost,trace` (the
 * sections to run, default all: 1–3 are `agent`).
 *
 * @module
 */

import { join } from "node:path";
import { startTestRuntime, type TestRuntime } from "../tests/harness/mod.ts";
import { podManifest, startAgent } from "../tests/integration/_agent.ts";
import { waitFor } from "../tests/kit/mod.ts";
import { createRuntimeService, type RuntimeService } from "../lib/cri/mod.ts";
import { runStatsBench } from "./stats.ts";
import { runProbesBench } from "./probes.ts";
import { runClusterBench } from "./cluster.ts";
import { runServerBench } from "./server.ts";
import { runEvictionBench } from "./eviction.ts";
import { runEvictionKillBench } from "./eviction_kill.ts";
import { runEvictionCostBench } from "./eviction_cost.ts";
import { runSyncTraceBench } from "./sync_trace.ts";
import { rawCriBatch } from "./_raw_configs.ts";
import { containerStartedAt, timeDeathNoticed } from "./_timing.ts";
import { percentile } from "./_percentile.ts";
import { procReading } from "./_proc.ts";

function arg(name: string, fallback: string): string {
  const a = Deno.args.find((x) => x.startsWith(`--${name}=`));
  return a ? a.slice(name.length + 3) : fallback;
}

const PODS = Number(arg("pods", "20"));
const IDLE_SECONDS = Number(arg("idle-seconds", "60"));
const IDLE_COUNTS = arg("idle-counts", "0,10,50").split(",").map(Number);
const EVICTION_ROUNDS = Number(arg("eviction-rounds", "4"));
const ALL_SECTIONS = [
  "agent",
  "stats",
  "probes",
  "cluster",
  "server",
  "eviction",
  "eviction-kill",
  "eviction-cost",
  "trace",
];
const SECTIONS = new Set(arg("only", ALL_SECTIONS.join(",")).split(","));
for (const s of SECTIONS) {
  if (!ALL_SECTIONS.includes(s)) {
    throw new Error(`--only: unknown section "${s}" (known: ${ALL_SECTIONS.join(", ")})`);
  }
}

function fmt(ms: number): string {
  return `${ms.toFixed(1)} ms`;
}

/**
 * One raw CRI sequence with the very requests the agent would send for the
 * same pod (same generated sandbox and container configs), minus the agent.
 * @returns ms from the first call to the container's CRI startedAt
 */
async function rawCriStartup(
  rt: TestRuntime,
  cri: RuntimeService,
  i: number,
  logs: string,
): Promise<number> {
  const pod = JSON.parse(
    podManifest({
      name: `raw-${i}`,
      image: rt.images.busybox,
      command: ["sleep", "3600"],
      grace: 1,
    }),
  );
  const [started] = await rawCriBatch(rt, cri, [pod], logs);
  return started!;
}

/**
 * Parts 1–3: static pod start-up next to raw CRI, container death noticed,
 * and the idle agent.
 * @returns markdown lines for docs/benchmarks.md
 */
async function runAgentBench(): Promise<string[]> {
  const rt = await startTestRuntime({ name: "bench" });
  const cri = createRuntimeService({ endpoint: rt.endpoint, timeoutMs: 60_000 });
  const report: string[] = [];
  try {
    // The agent as an operator runs it: default verbosity and file check period.
    // It runs during the raw sequences too, so both see the same background load.
    const agent = await startAgent({
      runtime: rt,
      extraArgs: ["--v=0", "--file-check-frequency=20s"],
    });
    const rawLogs = await Deno.makeTempDir({ prefix: "denolet-bench-raw-" });
    try {
      const agentStart: number[] = [];
      const raw: number[] = [];
      // Warm containerd once, then alternate raw and agent starts.
      await rawCriStartup(rt, cri, -1, rawLogs);
      for (let i = 0; i < PODS; i++) {
        raw.push(await rawCriStartup(rt, cri, i, rawLogs));
        const name = `start-${i}`;
        const t0 = Date.now();
        await Deno.writeTextFile(
          join(agent.manifestDir, `${name}.yaml`),
          podManifest({ name, image: rt.images.busybox, command: ["sleep", "3600"], grace: 1 }),
        );
        const started = await waitFor(
          `${name} started`,
          () => containerStartedAt(cri, `${name}-testnode`),
          {
            timeoutMs: 30_000,
            log: agent.log,
          },
        );
        agentStart.push(started - t0);
      }
      await Deno.remove(rawLogs, { recursive: true });
      const rawP50 = percentile(raw, 50), rawP99 = percentile(raw, 99);
      const agP50 = percentile(agentStart, 50), agP99 = percentile(agentStart, 99);
      report.push(
        `### Static pod start-up (${PODS} host-network pods, image present, raw and agent runs alternating)`,
        "",
        "| | p50 | p99 |",
        "|---|---|---|",
        `| raw CRI (RunPodSandbox + CreateContainer + StartContainer) | ${fmt(rawP50)} | ${
          fmt(rawP99)
        } |`,
        `| denolet (manifest written → container started) | ${fmt(agP50)} | ${fmt(agP99)} |`,
        `| overhead | ${((agP50 / rawP50 - 1) * 100).toFixed(1)}% | ${
          ((agP99 / rawP99 - 1) * 100).toFixed(1)
        }% |`,
        "",
      );

      // Death noticed: stop containers out of band and watch /pods.
      const deaths: number[] = [];
      for (let i = 0; i < PODS; i++) {
        const name = `start-${i}`;
        // Polled every 250 ms, as the runs in docs/benchmarks.md were.
        deaths.push(
          await timeDeathNoticed(cri, () => agent.pods(), name, {
            intervalMs: 250,
            log: agent.log,
          }),
        );
      }
      report.push(
        `### Container death noticed (${PODS} containers stopped out of band)`,
        "",
        `finishedAt → /pods shows it: p50 ${fmt(percentile(deaths, 50))}, p99 ${
          fmt(percentile(deaths, 99))
        }`,
        "",
      );

      // Idle cost with 0, 10, 50 pods.
      for (const f of await Array.fromAsync(Deno.readDir(agent.manifestDir))) {
        await Deno.remove(join(agent.manifestDir, f.name));
      }
      await waitFor("all pods gone", async () => (await agent.pods()).length === 0 || undefined, {
        timeoutMs: 60_000,
      });
      report.push(
        `### Idle agent (${IDLE_SECONDS}s window per row, after pods settled)`,
        "",
        "| pods | RSS (max) | CPU (% of one core, mean) |",
        "|---|---|---|",
      );
      let have = 0;
      for (const count of IDLE_COUNTS) {
        for (; have < count; have++) {
          await Deno.writeTextFile(
            join(agent.manifestDir, `idle-${have}.yaml`),
            podManifest({
              name: `idle-${have}`,
              image: rt.images.busybox,
              command: ["sleep", "3600"],
              grace: 1,
            }),
          );
        }
        await waitFor(`${count} pods running`, async () => {
          const pods = await agent.pods();
          const runningPods = pods.filter((p) => p.status?.containerStatuses?.[0]?.state.running);
          return runningPods.length === count || undefined;
        }, { timeoutMs: 120_000, log: agent.log });
        await new Promise((r) => setTimeout(r, 5_000));
        const first = procReading(agent.pid);
        let maxRss = first.rssBytes;
        for (let s = 0; s < IDLE_SECONDS; s += 5) {
          await new Promise((r) => setTimeout(r, 5_000));
          maxRss = Math.max(maxRss, procReading(agent.pid).rssBytes);
        }
        const last = procReading(agent.pid);
        const cpu = ((last.cpuSeconds - first.cpuSeconds) / IDLE_SECONDS) * 100;
        report.push(`| ${count} | ${(maxRss / 1048576).toFixed(1)} MB | ${cpu.toFixed(2)}% |`);
      }
      report.push("");
    } finally {
      await agent.stop("SIGTERM");
      await rt.stop();
      await agent.removeDirs();
    }
  } finally {
    cri.close();
    await rt.stop();
  }
  return report;
}

const report: string[] = [];
if (SECTIONS.has("agent")) report.push(...await runAgentBench());
// The stats paths at 110 containers, on a generated cgroup fixture.
if (SECTIONS.has("stats")) report.push(...await runStatsBench());
// 110 pods × 3 probes at period 10s against local servers.
if (SECTIONS.has("probes")) report.push(...await runProbesBench());
if (SECTIONS.has("cluster")) report.push(...await runClusterBench());
if (SECTIONS.has("server")) report.push(...await runServerBench());
// Memory threshold crossed → the notifier's handler, on a cgroup of the bench's own.
if (SECTIONS.has("eviction")) report.push(...await runEvictionBench());
// The same crossing on a real containerd → the eviction manager's kill, notifier off and on.
if (SECTIONS.has("eviction-kill")) report.push(...await runEvictionKillBench(EVICTION_ROUNDS));
// The eviction manager's rounds and polls at 110 pods.
if (SECTIONS.has("eviction-cost")) report.push(...await runEvictionCostBench());
// The sync trace on and off: a 30-pod batch's CPU, RSS at 110 pods (bench/sync_trace.ts).
if (SECTIONS.has("trace")) report.push(...await runSyncTraceBench());
console.log(`\n## deno task bench (${new Date().toISOString()})\n\n${report.join("\n")}`);
