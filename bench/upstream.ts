/**
 * The side-by-side bench (issue #19): denolet and the upstream kubelet (v1.37.2, the
 * binary tools/e2e/build.sh builds and caches) run one after the other, each on a fresh
 * private containerd with the same host-network busybox static pods, and the figures
 * of one run are put side by side as ratios denolet ÷ upstream, against the issue's
 * targets. Sessions alternate (upstream, denolet, then denolet, upstream, …): this
 * machine is shared and noisy, so only ratios from the same run mean anything.
 *
 * Per agent (bench/_side_by_side.ts): idle RSS and CPU (0 pods); N pods at once, p50/p99
 * manifest written → CRI startedAt, beside the raw CRI floor of the same batch on the
 * same containerd; RSS and CPU with S pods steady; `/stats/summary` and
 * `/metrics/resource` latency and CPU per call at the last S; container death noticed.
 * Before the sessions, the RSS floors on Deno: idle (bench/_rss_floor.ts) and per pod
 * (the agent's PLEG and stats provider alone with the last S pods, bench/_floor_loops.ts).
 *
 * ```
 * deno run -A bench/upstream.ts [--counts=10,50] [--steady=1,50,110] [--idle-seconds=60]
 *   [--steady-seconds=60] [--settle-seconds=15] [--calls=100] [--deaths=20] [--rounds=1]
 *   [--out=FILE]
 * ```
 * Needs root and `bash tools/e2e/build.sh` (the upstream kubelet). Prints the Markdown
 * and writes it to `--out` (default `.cache/reports/bench-upstream-<time>.md`).
 *
 * @module
 */

import { parseArgs } from "node:util";
import { dirname } from "node:path";
import { e2eBinDir } from "../tests/e2e/_cluster.ts";
import { upstreamKubeletBin } from "../tests/harness/upstream_kubelet.ts";
import { percentile } from "./_percentile.ts";
import { idleRssFloors, type RssFloors } from "./_rss_floor.ts";
import { BUNDLE, bundleAgent } from "../tools/bundle.ts";
import {
  type AgentKind,
  type FloorFigures,
  runFloorSession,
  runSession,
  type SessionFigures,
  type SessionOptions,
  tearDownSessions,
  TIMED_PATHS,
  type Window,
} from "./_side_by_side.ts";

/** Options of {@link runUpstreamBench}: a session's sizes, and how many rounds. */
export interface UpstreamBenchOptions
  extends Omit<SessionOptions, "upstreamBin" | "denoletProgram"> {
  /** Rounds of one session per agent; their samples are pooled, windows take the median. */
  rounds: number;
}

/** The full run's sizes (issue #19). */
export const DEFAULT_OPTIONS: UpstreamBenchOptions = {
  counts: [10, 50],
  steady: [1, 50, 110],
  idleSeconds: 60,
  steadySeconds: 60,
  settleSeconds: 15,
  calls: 100,
  deaths: 20,
  rounds: 1,
};

/** Both agents' figures, their rounds merged. */
interface Merged {
  idle: Window;
  bursts: Map<number, number[]>;
  floor: Map<number, number[]>;
  steady: Map<number, Window>;
  latencies: Map<string, number[]>;
  cpuMsPerCall: Map<string, number>;
  deaths: number[];
}

function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = Math.floor(sorted.length / 2);
  return sorted.length % 2 ? sorted[mid]! : (sorted[mid - 1]! + sorted[mid]!) / 2;
}

function merge(sessions: SessionFigures[]): Merged {
  const windows = (ws: Window[]): Window => ({
    rssMiB: median(ws.map((w) => w.rssMiB)),
    anonMiB: median(ws.map((w) => w.anonMiB)),
    fileMiB: median(ws.map((w) => w.fileMiB)),
    cpuCores: median(ws.map((w) => w.cpuCores)),
  });
  const pooled = <K>(pick: (s: SessionFigures) => Map<K, number[]>) => {
    const out = new Map<K, number[]>();
    for (const s of sessions) {
      for (const [k, v] of pick(s)) out.set(k, [...(out.get(k) ?? []), ...v]);
    }
    return out;
  };
  const steadyCounts = [...sessions[0]!.steady.keys()];
  return {
    idle: windows(sessions.map((s) => s.idle)),
    bursts: pooled((s) => s.bursts),
    floor: pooled((s) => s.floor),
    steady: new Map(steadyCounts.map((n) => [n, windows(sessions.map((s) => s.steady.get(n)!))])),
    latencies: pooled((s) => new Map([...s.endpoints].map(([p, e]) => [p, e.latencies]))),
    cpuMsPerCall: new Map(
      TIMED_PATHS.map((p) => [p, median(sessions.map((s) => s.endpoints.get(p)!.cpuMsPerCall))]),
    ),
    deaths: sessions.flatMap((s) => s.deaths),
  };
}

const ms = (v: number) => `${v >= 100 ? v.toFixed(0) : v.toFixed(1)} ms`;
const mib = (v: number) => `${v.toFixed(1)} MiB`;
const cores = (v: number) => `${(v * 100).toFixed(2)}% of a core`;
const times = (v: number) => `${v.toFixed(2)}×`;
const verdict = (ok: boolean) => ok ? "met" : "**not met**";

/** A window's RSS split into anonymous and file-backed pages, for each agent. */
function rssSplit(figure: string, up: Window, de: Window): string {
  const pair = (w: Window) => `${mib(w.anonMiB)} / ${mib(w.fileMiB)}`;
  return `| ${figure}: anonymous / file-backed (RssAnon / RssFile at the highest sample) | ${
    pair(up)
  } | ${pair(de)} | ${times(de.anonMiB / up.anonMiB)} / ${
    times(de.fileMiB / up.fileMiB)
  } | — | — |`;
}

/** One table row: a figure for each agent, their ratio, and the target when there is one. */
function row(
  figure: string,
  up: number,
  de: number,
  unit: (v: number) => string,
  target?: { text: string; max: number },
): string {
  const ratio = de / up;
  const t = target ? `${target.text} | ${verdict(ratio <= target.max)}` : "— | —";
  return `| ${figure} | ${unit(up)} | ${unit(de)} | ${times(ratio)} | ${t} |`;
}

/**
 * The table of one run: both agents' figures, denolet ÷ upstream, the targets of #19.
 * @returns Markdown lines
 */
function table(
  up: Merged,
  de: Merged,
  opts: UpstreamBenchOptions,
  floors: RssFloors,
  loops: FloorFigures,
): string[] {
  const p = percentile;
  const last = opts.steady.at(-1)!;
  const lines = [
    "| figure | upstream | denolet | denolet ÷ upstream | target (#19) | |",
    "|---|---|---|---|---|---|",
    row("idle RSS, 0 pods (max over the window)", up.idle.rssMiB, de.idle.rssMiB, mib, {
      text: "≤ 0.9×",
      max: 0.9,
    }),
    `| idle RSS floor on Deno (bench/_rss_floor.ts): the runtime alone / the agent's code loaded, nothing started | — | ${
      mib(floors.runtimeMiB)
    } / ${mib(floors.codeMiB)} | ${times(floors.runtimeMiB / up.idle.rssMiB)} / ${
      times(floors.codeMiB / up.idle.rssMiB)
    } | — | — |`,
    rssSplit("idle RSS", up.idle, de.idle),
    row("idle CPU, 0 pods", up.idle.cpuCores, de.idle.cpuCores, cores),
  ];
  for (const n of opts.counts) {
    const ub = up.bursts.get(n)!, db = de.bursts.get(n)!;
    const uf = up.floor.get(n)!, df = de.floor.get(n)!;
    lines.push(
      row(`${n} pods at once: manifest → running (CRI startedAt), p50`, p(ub, 50), p(db, 50), ms),
      row(`${n} pods at once: p99`, p(ub, 99), p(db, 99), ms, { text: "≤ 0.7×", max: 0.7 }),
      `| ${n} pods at once: raw CRI floor on the agent's containerd (before it ran), p50 / p99 | ${
        ms(p(uf, 50))
      } / ${ms(p(uf, 99))} | ${ms(p(df, 50))} / ${ms(p(df, 99))} | — | — | — |`,
      `| ${n} pods at once: agent p99 ÷ floor p99 | ${times(p(ub, 99) / p(uf, 99))} | ${
        times(p(db, 99) / p(df, 99))
      } | — | denolet ≤ 1.15× | ${verdict(p(db, 99) / p(df, 99) <= 1.15)} |`,
    );
  }
  for (const n of opts.steady) {
    const target = (max: number) => n === last ? { text: `≤ ${max}×`, max } : undefined;
    const u = up.steady.get(n)!, d = de.steady.get(n)!;
    const pods = n === 1 ? "1 pod" : `${n} pods`;
    lines.push(
      row(`RSS, ${pods} steady (max over the window)`, u.rssMiB, d.rssMiB, mib, target(0.8)),
      ...n === last ? [rssSplit(`RSS, ${pods} steady`, u, d)] : [],
      row(`CPU, ${pods} steady`, u.cpuCores, d.cpuCores, cores, target(0.4)),
    );
  }
  const perPodMiB = (v: number) => `${v.toFixed(3)} MiB`;
  // An agent's or the floor's RSS growth per pod from `from` pods (0: idle) to the last count.
  const growth = (m: { idle: Window; steady: Map<number, Window> }, from = 0) =>
    (m.steady.get(last)!.rssMiB - (from ? m.steady.get(from)! : m.idle).rssMiB) / (last - from);
  lines.push(
    `| RSS floor on Deno (bench/_floor_loops.ts): the agent's PLEG and stats provider alone, 0 / ${
      opts.steady.join(" / ")
    } pods | — | ${
      [loops.idle, ...opts.steady.map((n) => loops.steady.get(n)!)].map((w) => mib(w.rssMiB))
        .join(" / ")
    } | ${
      [
        loops.idle.rssMiB / up.idle.rssMiB,
        ...opts.steady.map((n) => loops.steady.get(n)!.rssMiB / up.steady.get(n)!.rssMiB),
      ].map(times).join(" / ")
    } | — | — |`,
    row(`RSS growth per pod (0 → ${last})`, growth(up), growth(de), perPodMiB, {
      text: "≤ 0.5×",
      max: 0.5,
    }),
    `| RSS growth per pod, that floor (0 → ${last}) | — | ${perPodMiB(growth(loops))} | ${
      times(growth(loops) / growth(up))
    } | — | — |`,
  );
  // The first pods bring costs that are not each pod's: code first run, threads.
  const first = opts.steady[0]!;
  if (first < last) {
    lines.push(
      row(
        `RSS growth per pod beyond the first ${
          first === 1 ? "pod" : `${first}`
        } (${first} → ${last})`,
        growth(up, first),
        growth(de, first),
        perPodMiB,
      ),
      `| RSS growth per pod beyond the first ${
        first === 1 ? "pod" : `${first}`
      }, that floor (${first} → ${last}) | — | ${perPodMiB(growth(loops, first))} | ${
        times(growth(loops, first) / growth(up, first))
      } | — | — |`,
    );
  }
  for (const path of TIMED_PATHS) {
    const u = up.latencies.get(path)!, d = de.latencies.get(path)!;
    const summary = path === "/stats/summary";
    lines.push(
      row(`\`${path}\` at ${last} pods, p50`, p(u, 50), p(d, 50), ms),
      row(
        `\`${path}\` at ${last} pods, p99`,
        p(u, 99),
        p(d, 99),
        ms,
        summary ? { text: "≤ 0.2×", max: 0.2 } : undefined,
      ),
      row(
        `\`${path}\` CPU per call`,
        up.cpuMsPerCall.get(path)!,
        de.cpuMsPerCall.get(path)!,
        ms,
        summary ? { text: "≤ 0.3×", max: 0.3 } : undefined,
      ),
    );
  }
  lines.push(
    row("container death noticed, p50", p(up.deaths, 50), p(de.deaths, 50), ms),
    `| container death noticed, p99 | ${ms(p(up.deaths, 99))} | ${ms(p(de.deaths, 99))} | ${
      times(p(de.deaths, 99) / p(up.deaths, 99))
    } | denolet ≤ 1.1 s | ${verdict(p(de.deaths, 99) <= 1100)} |`,
  );
  return lines;
}

async function output(cmd: string, args: string[]): Promise<string> {
  const out = await new Deno.Command(cmd, { args, stdout: "piped", stderr: "null" }).output()
    .catch(() => undefined);
  return out?.success ? new TextDecoder().decode(out.stdout).trim() : "unknown";
}

/**
 * Runs the bench: `rounds` rounds of one session per agent, alternating which goes first.
 * @param opts sizes, windows and rounds ({@link DEFAULT_OPTIONS} for the full run)
 * @param progress a line per phase (stderr by default)
 * @returns Markdown lines: a heading with date, commit and settings, the table, the method
 * @throws Error naming tools/e2e/build.sh when the upstream kubelet is not built
 */
export async function runUpstreamBench(
  opts: UpstreamBenchOptions = DEFAULT_OPTIONS,
  progress: (line: string) => void = (line) => console.error(`${new Date().toISOString()} ${line}`),
): Promise<string[]> {
  const upstreamBin = upstreamKubeletBin(e2eBinDir());
  if (opts.deaths > opts.steady.at(-1)!) {
    throw new Error(`--deaths=${opts.deaths} exceeds the last steady count ${opts.steady.at(-1)}`);
  }
  const root = new URL("..", import.meta.url).pathname;
  const started = new Date().toISOString();
  const commit = await output("git", ["-C", root, "rev-parse", "--short", "HEAD"]);
  const dirty = await output("git", ["-C", root, "status", "--porcelain", "--untracked-files=no"]);
  const load = (await Deno.readTextFile("/proc/loadavg")).split(" ").slice(0, 3).join(" ");
  progress(`denolet's program: ${BUNDLE} (tools/bundle.ts)`);
  const denoletProgram = await bundleAgent();
  progress("idle RSS floors on Deno (bench/_rss_floor.ts)");
  const floors = await idleRssFloors(
    denoletProgram,
    opts.settleSeconds,
    Math.min(20, opts.idleSeconds),
  );
  progress("the per-pod RSS floor on Deno (bench/_floor_loops.ts)");
  const loops = await runFloorSession(opts, progress);
  const sessions: Record<AgentKind, SessionFigures[]> = { upstream: [], denolet: [] };
  const order: AgentKind[] = [];
  for (let r = 0; r < opts.rounds; r++) {
    const kinds: AgentKind[] = r % 2 === 0 ? ["upstream", "denolet"] : ["denolet", "upstream"];
    for (const kind of kinds) {
      order.push(kind);
      sessions[kind].push(
        await runSession(kind, { ...opts, upstreamBin, denoletProgram }, progress),
      );
    }
  }
  const finished = new Date().toISOString();
  const up = merge(sessions.upstream), de = merge(sessions.denolet);
  return [
    `## Side by side with the upstream kubelet (issue #19): run of ${started} – ${finished}`,
    "",
    `Commit ${commit}${dirty === "" ? "" : " (with uncommitted changes)"}; ` +
    `upstream ${await output(upstreamBin, ["--version"])}; ` +
    `${await output("containerd", ["--version"])}; ` +
    `${navigator.hardwareConcurrency} cores, load average ${load} at the start. ` +
    `\`deno run -A bench/upstream.ts ${Deno.args.join(" ")}\`; sessions in order ${
      order.join(", ")
    }.`,
    "",
    ...table(up, de, opts, floors, loops),
    "",
    `How it was measured: each session is a fresh private containerd (tests/harness) with ` +
    `one agent, as an operator runs it (denolet: \`deno run\` with the options of \`deno task ` +
    `run\` on ${BUNDLE}, the program \`deno task compile\` puts in the binary, built by ` +
    `tools/bundle.ts at the start of the run; --v=0; file check 20 s, sync 1 m, housekeeping ` +
    `10 s, the defaults), cgroupsPerQOS on with --cgroup-root under the harness's cgroup ` +
    `parent, the cgroupfs driver, the read-only port on loopback; the pods are ` +
    `host-network busybox static pods (\`sleep 3600\`, grace 1 s), each manifest written ` +
    `under a hidden name and renamed in. RSS is VmRSS sampled each second over a ` +
    `${opts.steadySeconds} s window (idle: ${opts.idleSeconds} s) after ${opts.settleSeconds} s ` +
    `of settling, the highest sample; CPU is utime + stime over the window. "Pods at once": ` +
    `all manifests written together, each pod timed from then to its container's CRI ` +
    `startedAt, then removed; the floor is the same batch of RunPodSandbox + CreateContainer ` +
    `+ StartContainer (the configs denolet would send) on the same containerd before the ` +
    `agent started. Endpoints: ${opts.calls} sequential GETs on the read-only port after 5 ` +
    `warm-up calls; CPU per call is the agent's CPU over the calls less its steady rate at ` +
    `that pod count. Death noticed: ${opts.deaths} containers stopped out of band (CRI ` +
    `StopContainer, no grace), one after another, each after a random wait of 0–1 s (the ` +
    `same seeded waits in every session) so that deaths fall at any moment of the agents' ` +
    `1 s relist period, from the CRI finishedAt to the first GET /pods (polled every ` +
    `50 ms) showing it terminated. ${opts.rounds} round(s): latency samples pooled, windows ` +
    `and CPU per call the median of the rounds. The idle RSS floors: the Deno runtime started ` +
    `with the agent's \`deno run\` options, waiting, and the same with ${BUNDLE} imported ` +
    `(every module of the agent evaluated, nothing started), measured before the sessions like an ` +
    `idle window (the highest of one sample a second over ${Math.min(20, opts.idleSeconds)} s, ` +
    `after ${opts.settleSeconds} s). The per-pod floor: bench/_floor_loops.ts, the agent's ` +
    `PLEG (relist every second) and stats provider (each pod and container cgroup read every ` +
    `10 s into its 2-minute ring, the runtime's filesystem figures on their loop) and its C heap ` +
    `trimmer, with the pods' specs held and nothing else, started with the agent's \`deno run\` ` +
    `options on a fresh containerd before the sessions; windows as the agents' (idle, then ` +
    `${opts.steady.join(", ")} of the same pods started by raw CRI calls, 10 at a time).`,
    "",
  ];
}

if (import.meta.main) {
  const { values } = parseArgs({
    options: {
      counts: { type: "string" },
      steady: { type: "string" },
      "idle-seconds": { type: "string" },
      "steady-seconds": { type: "string" },
      "settle-seconds": { type: "string" },
      calls: { type: "string" },
      deaths: { type: "string" },
      rounds: { type: "string" },
      out: { type: "string" },
    },
  });
  const list = (v: string | undefined, d: number[]) => v ? v.split(",").map(Number) : d;
  const num = (v: string | undefined, d: number) => v ? Number(v) : d;
  const d = DEFAULT_OPTIONS;
  const opts: UpstreamBenchOptions = {
    counts: list(values.counts, d.counts),
    steady: list(values.steady, d.steady).sort((a, b) => a - b),
    idleSeconds: num(values["idle-seconds"], d.idleSeconds),
    steadySeconds: num(values["steady-seconds"], d.steadySeconds),
    settleSeconds: num(values["settle-seconds"], d.settleSeconds),
    calls: num(values.calls, d.calls),
    deaths: num(values.deaths, d.deaths),
    rounds: num(values.rounds, d.rounds),
  };
  const root = new URL("..", import.meta.url).pathname;
  const out = values.out ??
    `${root}.cache/reports/bench-upstream-${new Date().toISOString().replaceAll(":", "")}.md`;
  for (const signal of ["SIGINT", "SIGTERM"] as const) {
    Deno.addSignalListener(signal, async () => {
      console.error(`${signal}: tearing down the session under way`);
      await tearDownSessions();
      Deno.exit(130);
    });
  }
  const markdown = (await runUpstreamBench(opts)).join("\n");
  console.log(markdown);
  await Deno.mkdir(dirname(out), { recursive: true });
  await Deno.writeTextFile(out, markdown + "\n");
  console.error(`written to ${out}`);
}
