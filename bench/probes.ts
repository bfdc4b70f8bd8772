/**
 * The prober's benchmark, each figure printed next to its target
 * (docs/benchmarks.md keeps the tables): 110 pods, 3 probes each at
 * period 10 s, through a real {@link ProbeManager} with the real handlers,
 * the real clock and real sockets on 127.0.0.1.
 *
 * What is measured, in this process (the "agent"):
 * - CPU: `process.cpuUsage()` (user + system) over the window while the
 *   probes run, and over an idle window of the same length before any probe
 *   existed (same process, server child already up). The gated figure is the
 *   difference; both are reported.
 * - Latency the agent adds to each probe that a timer tick started:
 *   `handler end − tick due − server time`, where
 *   - tick due: when the worker's timer was due (arming time + delay; the
 *     k-th interval tick at start + k·period: the bench's clock arms
 *     intervals as chained setTimeouts so that each tick's due time is
 *     exact; realClock's setInterval drifts ~1 ms a tick, which stretches
 *     the period but adds no latency);
 *   - handler start/end: `performance.now()` around the ProbeRunner the
 *     worker calls (the real `runProbe`), so end − start is the handler's
 *     whole wall time, loopback network included;
 *   - server time: for httpGet, the server's own time from reading the
 *     request head to its response being ready, sent back in the body; for
 *     tcpSocket, 0 (the kernel completes the handshake; the server process
 *     does nothing within the probe's time).
 *   So loopback round trips and the server process's scheduling count
 *   against the agent: the figure is conservative. The machine's CPU
 *   pressure and this process's run-queue wait are reported next to it. Probes started by result changes or
 *   missed ticks (not by a tick) are counted, not timed.
 *
 * The servers run in a child `deno run` (bench/_probes_fixture.ts), so their
 * CPU is not the agent's. Exec probes need a container runtime and grpc
 * probes a grpc server: both are left out.
 *
 * `deno run -A bench/probes.ts [--pods=110] [--seconds=60] [--aligned]` prints the
 * markdown lines; bench/mod.ts calls {@link runProbesBench}.
 *
 * @module
 */

import process from "node:process";
import { ProbeManager, type ProbeOutcome, type ProbeRunner, runProbe } from "../lib/prober/mod.ts";
import type { RuntimeService } from "../lib/cri/types.ts";
import { createLogger } from "../lib/util/log.ts";
import {
  benchPod,
  cpuPressureUs,
  runningStatus,
  runQueueWaitMs,
  SERVER_TIME_PREFIX,
  startProbeServer,
  TickClock,
} from "./_probes_fixture.ts";
import { percentile } from "./_percentile.ts";

/** Options for {@link runProbesBench}. */
export interface ProbesBenchOptions {
  /** Pods, 3 probes each; 110 (the kubelet's default maxPods). */
  pods?: number;
  /** The measured window, and the idle baseline's; 60 s. */
  seconds?: number;
  /**
   * No start-up jitter: every first probe at once, as for pods admitted
   * together more than one period after the agent started (upstream jitters
   * only soon after a start). The worst case; false by default.
   */
  aligned?: boolean;
}

const PERIOD_S = 10;
const PROBES_PER_POD = 3;
/** One period plus a margin: every worker has run its jittered first probe. */
const WARMUP_MS = (PERIOD_S + 2) * 1000;
const REFERENCE_CONNECTS = 200;

type Handler = "httpGet" | "tcpSocket";

/** One probe a tick started (performance.now() ms). */
interface Sample {
  handler: Handler;
  due: number;
  fired: number;
  start: number;
  end: number;
  serverMs: number;
  ok: boolean;
}

/** p50 and p99 of a list, formatted. */
function p50p99(values: number[]): { p50: number; p99: number; text: string } {
  const p50 = percentile(values, 50), p99 = percentile(values, 99);
  return { p50, p99, text: `${p50.toFixed(2)} / ${p99.toFixed(2)} ms` };
}

function serverMs(outcome: ProbeOutcome): number {
  if (!outcome.output.startsWith(SERVER_TIME_PREFIX)) return 0;
  return Number(outcome.output.slice(SERVER_TIME_PREFIX.length)) / 1000 || 0;
}

function cpuMs(since: ReturnType<typeof process.cpuUsage>): number {
  const d = process.cpuUsage(since);
  return (d.user + d.system) / 1000;
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const pct = (v: number) => `${v.toFixed(2)}%`;
const met = (ok: boolean) => (ok ? "yes" : "**no**");
const loadavg = () =>
  Deno.readTextFile("/proc/loadavg").then((t) => t.trim().split(" ").slice(0, 3).join(" "))
    .catch(() => "?");

/** The exec seam: this bench has no exec probes, so any call is a bench bug. */
const noRuntime = new Proxy({} as RuntimeService, {
  get: (_t, method) => () => {
    throw new Error(`probe bench: no container runtime (RuntimeService.${String(method)})`);
  },
});

/** Sequential bare connects to a port: the loopback floor any tcp probe pays. */
async function referenceConnects(port: number): Promise<number[]> {
  const out: number[] = [];
  for (let i = 0; i < REFERENCE_CONNECTS; i++) {
    const t = performance.now();
    const conn = await Deno.connect({ hostname: "127.0.0.1", port });
    conn.close();
    out.push(performance.now() - t);
    await sleep(5);
  }
  return out;
}

/**
 * Runs the probe benchmark: an idle window, then the probes (after one
 * period of warm-up) over a window of the same length.
 * @param opts pod count, window length, aligned (no start-up jitter)
 * @returns markdown lines: a heading, a table of figures next to targets, the conditions, the command
 * @throws {Error} when the server child cannot be started
 */
export async function runProbesBench(opts: ProbesBenchOptions = {}): Promise<string[]> {
  const pods = Math.max(1, Math.floor(opts.pods ?? 110));
  const seconds = Math.max(1, opts.seconds ?? 60);
  const windowMs = seconds * 1000;
  const aligned = opts.aligned ?? false;
  const loadBefore = await loadavg();
  const server = await startProbeServer();
  const clock = new TickClock();
  const samples: Sample[] = [];
  let untimed: number[] = [];
  const timedRun: ProbeRunner = async (probe, target, signal) => {
    const tick = clock.current;
    const start = performance.now();
    const outcome = await runProbe(probe, target, signal);
    const end = performance.now();
    if (!tick) untimed.push(start);
    else {
      samples.push({
        handler: probe.httpGet ? "httpGet" : "tcpSocket",
        due: tick.due,
        fired: tick.fired,
        start,
        end,
        serverMs: serverMs(outcome),
        ok: outcome.result === "success",
      });
    }
    return outcome;
  };
  let probes: ProbeManager | undefined;
  try {
    // 1. Idle baseline: this process with no probes, same window length.
    const idleCpu0 = process.cpuUsage();
    await sleep(windowMs);
    const idleCpu = cpuMs(idleCpu0);

    // As at agent start-up: the manager is made, then the pods arrive within
    // one period (so first probes are spread over it, unless aligned).
    const manager = new ProbeManager({
      runtime: noRuntime,
      clock,
      // The agent's default verbosity: a failing probe logs only at v=1.
      logger: createLogger({ verbosity: 0 }),
      hostIP: "127.0.0.1",
      runProbe: timedRun,
      // Jitter in [0, 1) as after a start; 0 puts every first probe at once.
      ...(aligned ? { random: () => 0 } : {}),
    });
    probes = manager;

    // 2. The pods, driven as the sync loop drives them: addPod on ADD, and
    // after each sync updateContainers with the runtime status it used. A
    // result change wakes the pod's worker, whose sync reads the verdicts.
    const specs = Array.from({ length: pods }, (_, i) => benchPod(i, server.ports));
    const statuses = new Map(specs.map((p) => [p.metadata.uid!, runningStatus(p, Date.now())]));
    const byUid = new Map(specs.map((p) => [p.metadata.uid!, p]));
    let changes: number[] = [];
    manager.onResult((u) => {
      changes.push(performance.now());
      queueMicrotask(() => {
        const pod = byUid.get(u.podUID);
        if (!pod) return;
        manager.liveness(u.podUID);
        manager.startup(u.podUID);
        manager.updateContainers(pod, statuses.get(u.podUID)!);
        manager.readiness(u.podUID);
        manager.started(u.podUID);
      });
    });
    for (const pod of specs) {
      manager.addPod(pod);
      manager.updateContainers(pod, statuses.get(pod.metadata.uid!)!);
    }
    await sleep(WARMUP_MS);

    // 3. The window.
    samples.length = 0;
    untimed = [];
    changes = [];
    const serverCpu0 = server.cpuSeconds();
    const wait0 = runQueueWaitMs();
    const psi0 = cpuPressureUs();
    const t0 = performance.now();
    const cpu0 = process.cpuUsage();
    await sleep(windowMs);
    const probingCpu = cpuMs(cpu0);
    const t1 = performance.now();
    const waitMs = runQueueWaitMs() - wait0;
    const psi1 = cpuPressureUs();
    const serverCpu = server.cpuSeconds() - serverCpu0;
    const workers = manager.workerCount;
    manager.stop();
    await manager.settled();
    const reference = await referenceConnects(server.ports.tcp[0]);

    const inWindow = samples.filter((s) => s.start >= t0 && s.start < t1);
    const untimedN = untimed.filter((t) => t >= t0 && t < t1).length;
    const changesN = changes.filter((t) => t >= t0 && t < t1).length;
    const failed = inWindow.filter((s) => !s.ok).length;
    const added = (s: Sample) => s.end - s.due - s.serverMs;
    const of = (h: Handler) => inWindow.filter((s) => s.handler === h);
    const all = p50p99(inWindow.map(added));
    const netPct = ((probingCpu - idleCpu) / windowMs) * 100;
    const grossPct = (probingCpu / windowMs) * 100;
    const idlePct = (idleCpu / windowMs) * 100;
    const expected = Math.round((pods * PROBES_PER_POD * seconds) / PERIOD_S);
    const rows: string[] = [];
    const row = (what: string, measured: string, target = "–", ok?: boolean) =>
      rows.push(`| ${what} | ${measured} | ${target} | ${ok === undefined ? "–" : met(ok)} |`);
    row(
      "agent CPU for probing (probing window − idle window)",
      `${pct(netPct)} of one core`,
      "≤ 3%",
      netPct <= 3,
    );
    row("… probing window / idle window", `${pct(grossPct)} / ${pct(idlePct)}`);
    row(
      "latency added by the agent, all probes, p50 / p99",
      all.text,
      "p99 ≤ 5 ms",
      all.p99 <= 5,
    );
    for (const h of ["httpGet", "tcpSocket"] as const) {
      row(`… ${h}, p50 / p99`, p50p99(of(h).map(added)).text);
    }
    row(
      "… of which timer lag (tick fired − due)",
      p50p99(inWindow.map((s) => s.fired - s.due)).text,
    );
    row(
      "… of which tick → handler start (worker)",
      p50p99(inWindow.map((s) => s.start - s.fired)).text,
    );
    for (const h of ["httpGet", "tcpSocket"] as const) {
      row(`${h} handler wall time, p50 / p99`, p50p99(of(h).map((s) => s.end - s.start)).text);
    }
    row(
      "httpGet server's own time (subtracted), p50 / p99",
      p50p99(of("httpGet").map((s) => s.serverMs)).text,
    );
    row(
      `reference: bare Deno.connect + close to the server, ${REFERENCE_CONNECTS}×, p50 / p99`,
      p50p99(reference).text,
    );
    row(
      `probes timed in the window (expected ${expected}) / failed / untimed`,
      `${inWindow.length} / ${failed} / ${untimedN}`,
      "all succeed",
      failed === 0 && inWindow.length > 0,
    );
    row("result changes in the window (steady state: 0)", String(changesN));
    row(
      "machine: CPU pressure in the window (PSI some: share of time a task waited for a CPU)",
      psi0 === undefined || psi1 === undefined
        ? "n/a"
        : pct(((psi1 - psi0) / 1000 / windowMs) * 100),
    );
    row(
      "machine: this process's threads runnable but not running, in the window",
      `${waitMs.toFixed(0)} ms (${
        (waitMs / Math.max(1, inWindow.length)).toFixed(2)
      } ms per probe)`,
    );
    row(
      "server child CPU in the window (not counted above)",
      `${pct((serverCpu * 1000 / windowMs) * 100)} of one core`,
    );
    const loadAfter = await loadavg();
    return [
      `### Probes: ${pods} pods × ${PROBES_PER_POD} probes at period ${PERIOD_S} s` +
      `${aligned ? ", all in step (no start-up jitter)" : ""} (issue #4)`,
      "",
      "| figure | measured | target | met |",
      "| --- | --- | --- | --- |",
      ...rows,
      "",
      `Conditions: Deno ${Deno.version.deno}, ${navigator.hardwareConcurrency} CPUs shared with ` +
      `other work (loadavg before ${loadBefore}, after ${loadAfter}); one run, ${seconds} s ` +
      `window after ${WARMUP_MS / 1000} s warm-up, idle baseline of ${seconds} s before it.`,
      `- Agent side: a real ProbeManager (${workers} workers) on the real clock's timers ` +
      `(wrapped to note each tick's due time), the real handlers, logger at v=0, driven as the sync ` +
      `loop does (addPod, updateContainers with running containers started 60 s earlier; a ` +
      `result change triggers the sync's reads and updateContainers). ${
        aligned
          ? "No start-up jitter: all first probes at once, so every tick of every worker " +
            "falls in the same instant, period after period (pods admitted together later " +
            "than one period after start)."
          : "Pods added right after the manager was made, as at agent start: first probes " +
            "spread at random over one period (pods admitted together later would probe in " +
            "step: see --aligned)."
      }`,
      `- Pods: host network; container \`app\` with an httpGet readiness probe (named port) ` +
      `and a tcpSocket liveness probe, container \`sidecar\` with a tcpSocket liveness probe; ` +
      `default timeout 1 s, thresholds 1/3. A startup probe was not used: it stops after its ` +
      `first success and would not load the steady state. No exec probes (they need a ` +
      `container runtime; their cost is CRI ExecSync's) and no grpc probes.`,
      `- Servers: a child \`deno run\` (pid ${server.pid}) on 127.0.0.1: one HTTP port that ` +
      `answers 200 after reading the request head, two TCP ports that accept and close.`,
      `- Added latency = handler end − tick due − server time (httpGet: the server's ` +
      `request head read → response ready, from the body; tcpSocket: 0). Timer lag, the ` +
      `worker's own code, the HTTP client, loopback round trips and the server process's ` +
      `scheduling all count against the agent. Tick due times are exact: the bench's clock ` +
      `arms intervals as chained setTimeouts at start + k·period, delays rounded to the ` +
      `millisecond the runtime takes, so ±0.5 ms (realClock's setInterval ` +
      `re-arms from each fire and drifts ~1 ms a tick: a longer period, not latency). CPU ` +
      `is process.cpuUsage() of this process, so it includes the bench's recording wrapper.`,
      "",
      `Command: \`deno run -A bench/probes.ts --pods=${pods} --seconds=${seconds}${
        aligned ? " --aligned" : ""
      }\``,
    ];
  } finally {
    probes?.stop();
    await server.stop();
  }
}

if (import.meta.main) {
  const arg = (name: string) => {
    const a = Deno.args.find((x) => x.startsWith(`--${name}=`));
    return a ? Number(a.slice(name.length + 3)) : undefined;
  };
  const pods = arg("pods"), seconds = arg("seconds");
  const lines = await runProbesBench({
    aligned: Deno.args.includes("--aligned"),
    ...(pods === undefined ? {} : { pods }),
    ...(seconds === undefined ? {} : { seconds }),
  });
  console.log(lines.join("\n"));
}
