/**
 * One session of the side-by-side bench (bench/upstream.ts): a fresh private
 * containerd, the raw CRI floor on it, then one agent (the upstream kubelet or
 * denolet) on it, measured phase by phase; both agents run the same host-network
 * busybox static pods with the same settings where both have them.
 *
 * ```
 * containerd up ─► raw floor (N at once, no agent) ─► agent up ─► idle window
 *   ─► N pods at once, timed, removed (each N) ─► fill to S pods, window (each S)
 *   ─► /stats/summary, /metrics/resource timed ─► deaths noticed ─► all gone
 * ```
 *
 * @module
 */

import type { Pod } from "../lib/api/types.ts";
import { createRuntimeService, type RuntimeService } from "../lib/cri/mod.ts";
import { DEFAULT_RELIST_PERIOD_MS } from "../lib/pleg/mod.ts";
import { startTestRuntime, type TestRuntime } from "../tests/harness/mod.ts";
import { startUpstreamKubeletOnOwnDirs } from "../tests/harness/upstream_kubelet.ts";
import { podManifest, startAgent } from "../tests/integration/_agent.ts";
import { waitFor } from "../tests/kit/mod.ts";
import { seededRandom } from "../tests/kit/suite.ts";
import { procReading } from "./_proc.ts";
import { hostDnsConfig, rawCriBatch, rawPodConfigs, startRawPod } from "./_raw_configs.ts";
import { runTaskOptions } from "../tools/run_task.ts";
import { bundleProgram } from "../tools/bundle.ts";
import { containerStartedAt, timeDeathNoticed } from "./_timing.ts";

/** The two agents. */
export type AgentKind = "upstream" | "denolet";

/** The sizes and windows of a session. */
export interface SessionOptions {
  /** Batches of pods started at once, each timed then removed (e.g. 10, 50). */
  counts: number[];
  /** Pod counts held steady, ascending (e.g. 50, 110); the last one hosts the timed calls. */
  steady: number[];
  /** The idle window (0 pods), s. */
  idleSeconds: number;
  /** Each steady window, s. */
  steadySeconds: number;
  /** The pause before each window, after the pods are running, s. */
  settleSeconds: number;
  /** Timed calls per endpoint. */
  calls: number;
  /** Containers stopped out of band, one per pod (at most the last steady count). */
  deaths: number;
  /** The upstream kubelet binary (tools/e2e/build.sh). */
  upstreamBin: string;
  /** denolet's program: the bundle `deno task compile` puts in the binary (tools/bundle.ts). */
  denoletProgram: string;
}

/** An agent's resource use over a window. */
export interface Window {
  /** The highest VmRSS sampled (each second), MiB. */
  rssMiB: number;
  /** RssAnon and RssFile in the sample of the highest VmRSS, MiB. */
  anonMiB: number;
  fileMiB: number;
  /** utime + stime over the window ÷ its length: cores (1 = one core busy). */
  cpuCores: number;
}

/** One endpoint timed. */
export interface EndpointFigures {
  /** Wall time per call (request sent → body read), ms. */
  latencies: number[];
  /** The agent's CPU per call, ms, its background rate at that pod count taken off. */
  cpuMsPerCall: number;
}

/** What one session measured. */
export interface SessionFigures {
  kind: AgentKind;
  idle: Window;
  /** Per batch size: each pod's ms from its manifest written to its CRI startedAt. */
  bursts: Map<number, number[]>;
  /** Per batch size: the raw CRI floor on the same containerd, before the agent ran. */
  floor: Map<number, number[]>;
  steady: Map<number, Window>;
  /** Per path, at the last steady count. */
  endpoints: Map<string, EndpointFigures>;
  /** ms from each stopped container's finishedAt to the agent's /pods showing it. */
  deaths: number[];
}

/** The paths timed at the last steady count, as a metrics pipeline would call them. */
export const TIMED_PATHS = ["/stats/summary", "/metrics/resource"] as const;

/** Seeds the deaths' moments (bench/_timing.ts `phaseMs`), the same for every session. */
const DEATH_PHASE_SEED = 19;

/** An agent under test, either kind. */
interface BenchAgent {
  pid: number;
  readOnlyPort: number;
  manifestDir: string;
  pods(): Promise<Pod[]>;
  log(): string;
  stop(): Promise<void>;
  /** After the runtime stopped: unmounts and removes what the agent made. */
  removeDirs(): Promise<void>;
}

// Both as an operator runs them: --v=0, the default file check, sync and housekeeping
// periods (20 s, 1 m, 10 s; the tests' launchers shorten them), static pods seen by
// inotify. The rest they share through the launchers: --cgroup-root (the harness's
// cgroup parent) with cgroupsPerQOS on (both default), the cgroupfs driver, the
// read-only port on loopback.
async function launchUpstream(rt: TestRuntime, bin: string): Promise<BenchAgent> {
  const { kubelet, dirs } = await startUpstreamKubeletOnOwnDirs("denolet-bench-upstream-", {
    bin,
    runtime: rt,
    verbosity: 0,
    config: { fileCheckFrequency: "20s", syncFrequency: "1m" },
  });
  return {
    pid: kubelet.pid,
    readOnlyPort: kubelet.readOnlyPort,
    manifestDir: dirs.manifestDir,
    pods: () => kubelet.pods(),
    log: () => kubelet.log(),
    stop: async () => {
      await kubelet.stop();
    },
    removeDirs: dirs.remove,
  };
}

async function launchDenolet(rt: TestRuntime, program: string): Promise<BenchAgent> {
  const agent = await startAgent({
    runtime: rt,
    program,
    extraArgs: ["--v=0", "--file-check-frequency=20s", "--housekeeping-interval=10s"],
  });
  return {
    pid: agent.pid,
    readOnlyPort: agent.readOnlyPort,
    manifestDir: agent.manifestDir,
    pods: () => agent.pods(),
    log: agent.log,
    stop: async () => void await agent.stop("SIGTERM"),
    removeDirs: () => agent.removeDirs(),
  };
}

/** CRI's PodSandboxState SANDBOX_READY and ContainerState CONTAINER_RUNNING. */
const SANDBOX_READY = 0, CONTAINER_RUNNING = 1;

const sleep = (s: number) => new Promise((r) => setTimeout(r, s * 1000));

function benchPod(name: string, image: string): string {
  return podManifest({ name, image, command: ["sleep", "3600"], grace: 1 });
}

/**
 * Writes each pod's manifest (host-network busybox, `sleep 3600`, grace 1 s) under a hidden
 * name first (both agents skip those), then renames it in.
 */
export async function writeManifests(dir: string, names: string[], image: string): Promise<void> {
  await Promise.all(names.map(async (name) => {
    await Deno.writeTextFile(`${dir}/.${name}.json`, benchPod(name, image));
    await Deno.rename(`${dir}/.${name}.json`, `${dir}/${name}.json`);
  }));
}

/** How many of `names` have a running container, as the runtime says. */
async function runningCount(cri: RuntimeService, names: string[]): Promise<number> {
  const wanted = new Set(names.map((n) => `${n}-testnode`));
  const running = await cri.listContainers({ state: { state: CONTAINER_RUNNING } });
  return new Set(
    running.map((c) => c.labels["io.kubernetes.pod.name"]).filter((n) => wanted.has(n!)),
  ).size;
}

async function waitRunning(agent: BenchAgent, cri: RuntimeService, names: string[]) {
  await waitFor(`${names.length} pods running`, async () => {
    return await runningCount(cri, names) === names.length || undefined;
  }, { timeoutMs: 600_000, intervalMs: 100, log: agent.log });
}

/** Removes the manifests and waits until the agent lists none and their sandboxes are down. */
async function removePods(agent: BenchAgent, cri: RuntimeService, names: string[]) {
  await Promise.all(names.map((n) => Deno.remove(`${agent.manifestDir}/${n}.json`)));
  const gone = new Set(names.map((n) => `${n}-testnode`));
  await waitFor(`${names.length} pods gone`, async () => {
    const listed = (await agent.pods()).some((p) => gone.has(p.metadata.name!));
    const ready = (await cri.listPodSandbox())
      .some((s) => s.state === SANDBOX_READY && gone.has(s.labels["io.kubernetes.pod.name"]!));
    return !listed && !ready;
  }, { timeoutMs: 600_000, intervalMs: 250, log: agent.log });
}

/** Samples the agent each second over `seconds`. */
async function measureWindow(pid: number, seconds: number): Promise<Window> {
  const first = procReading(pid);
  let top = first;
  const t0 = performance.now();
  for (let s = 0; s < seconds; s++) {
    await sleep(1);
    const now = procReading(pid);
    if (now.rssBytes > top.rssBytes) top = now;
  }
  const last = procReading(pid);
  const elapsed = (performance.now() - t0) / 1000;
  const mib = (bytes: number) => bytes / 1048576;
  return {
    rssMiB: mib(top.rssBytes),
    anonMiB: mib(top.anonBytes),
    fileMiB: mib(top.fileBytes),
    cpuCores: (last.cpuSeconds - first.cpuSeconds) / elapsed,
  };
}

async function timeEndpoint(
  agent: BenchAgent,
  path: string,
  calls: number,
  backgroundCores: number,
): Promise<EndpointFigures> {
  const url = `http://127.0.0.1:${agent.readOnlyPort}${path}`;
  const call = async () => {
    const resp = await fetch(url);
    if (!resp.ok) throw new Error(`${path} answered ${resp.status}`);
    await resp.arrayBuffer();
  };
  for (let i = 0; i < 5; i++) await call();
  const latencies: number[] = [];
  const before = procReading(agent.pid);
  const t0 = performance.now();
  for (let i = 0; i < calls; i++) {
    const t = performance.now();
    await call();
    latencies.push(performance.now() - t);
  }
  const elapsed = (performance.now() - t0) / 1000;
  const cpu = procReading(agent.pid).cpuSeconds - before.cpuSeconds - backgroundCores * elapsed;
  return { latencies, cpuMsPerCall: Math.max(0, cpu) * 1000 / calls };
}

/** The teardowns of the sessions under way ({@link tearDownSessions}). */
const live = new Set<() => Promise<void>>();

const range = (from: number, to: number, prefix: string) =>
  Array.from({ length: to - from }, (_, i) => `${prefix}${from + i}`);

/**
 * Runs one session: a fresh containerd, its raw floor, then `kind` through every phase.
 * @param kind the agent
 * @param opts sizes and windows
 * @param progress called with a line per phase
 * @returns the session's figures
 */
export async function runSession(
  kind: AgentKind,
  opts: SessionOptions,
  progress: (line: string) => void,
): Promise<SessionFigures> {
  const rt = await startTestRuntime({ name: `bench-${kind}` });
  const cri = createRuntimeService({ endpoint: rt.endpoint, timeoutMs: 300_000 });
  const image = rt.images.busybox;
  let agent: BenchAgent | undefined;
  let tearingDown: Promise<void> | undefined;
  const tearDown = () =>
    tearingDown ??= (async () => {
      await agent?.stop().catch((err) => console.error(`stopping ${kind}:`, err));
      cri.close();
      try {
        await rt.stop();
      } finally {
        await agent?.removeDirs();
      }
    })();
  live.add(tearDown);
  try {
    // The floor first, while no agent would remove its sandboxes as orphans; one pod
    // beforehand warms the fresh containerd (snapshots, the CNI cache), for the agent too.
    const rawLogs = `${rt.dir}/raw-logs`;
    await Deno.mkdir(rawLogs);
    const rawPods = (names: string[]) => names.map((n) => JSON.parse(benchPod(n, image)) as Pod);
    await rawCriBatch(rt, cri, rawPods(["warm"]), rawLogs);
    const floor = new Map<number, number[]>();
    for (const n of opts.counts) {
      floor.set(n, await rawCriBatch(rt, cri, rawPods(range(0, n, `raw${n}-`)), rawLogs));
    }
    progress(`${kind}: raw CRI floor taken; starting the agent`);
    agent = kind === "upstream"
      ? await launchUpstream(rt, opts.upstreamBin)
      : await launchDenolet(rt, opts.denoletProgram);
    const a = agent;
    await sleep(opts.settleSeconds);
    const idle = await measureWindow(a.pid, opts.idleSeconds);
    progress(`${kind}: idle ${idle.rssMiB.toFixed(1)} MiB`);

    const bursts = new Map<number, number[]>();
    for (const n of opts.counts) {
      const names = range(0, n, `b${n}-`);
      const t0 = Date.now();
      await writeManifests(a.manifestDir, names, image);
      await waitRunning(a, cri, names);
      const started = await Promise.all(
        names.map(async (name) => (await containerStartedAt(cri, `${name}-testnode`))! - t0),
      );
      bursts.set(n, started);
      await removePods(a, cri, names);
      progress(`${kind}: ${n} pods at once timed and removed`);
    }

    const steady = new Map<number, Window>();
    let have = 0;
    for (const n of opts.steady) {
      await writeManifests(a.manifestDir, range(have, n, "s-"), image);
      await waitRunning(a, cri, range(0, n, "s-"));
      have = n;
      await sleep(opts.settleSeconds);
      steady.set(n, await measureWindow(a.pid, opts.steadySeconds));
      progress(`${kind}: ${n} pods steady ${steady.get(n)!.rssMiB.toFixed(1)} MiB`);
    }

    const endpoints = new Map<string, EndpointFigures>();
    const background = steady.get(have)?.cpuCores ?? idle.cpuCores;
    for (const path of TIMED_PATHS) {
      endpoints.set(path, await timeEndpoint(a, path, opts.calls, background));
    }
    progress(`${kind}: endpoints timed at ${have} pods`);

    // Each death at a random moment of the agents' 1 s relist period (upstream's too), the same moments
    // for every session (one seed).
    const deaths: number[] = [];
    const random = seededRandom(DEATH_PHASE_SEED);
    for (const name of range(0, Math.min(opts.deaths, have), "s-")) {
      deaths.push(
        await timeDeathNoticed(cri, () => a.pods(), name, {
          log: a.log,
          phaseMs: DEFAULT_RELIST_PERIOD_MS,
          random,
        }),
      );
    }
    progress(`${kind}: ${deaths.length} deaths noticed`);
    return { kind, idle, bursts, floor, steady, endpoints, deaths };
  } finally {
    await tearDown();
    live.delete(tearDown);
  }
}

/** What the per-pod floor measured ({@link runFloorSession}). */
export interface FloorFigures {
  /** The loops with no pod. */
  idle: Window;
  /** Per pod count held, after the settle. */
  steady: Map<number, Window>;
}

/**
 * The per-pod RSS floor on Deno: bench/_floor_loops.ts (the agent's PLEG and stats
 * provider at the agent's periods, nothing else), bundled as the agent is
 * (tools/bundle.ts) and started with the agent's `deno run` options on a fresh
 * containerd, measured like an agent: a window with no pod, then for each steady count
 * the bench's pods started up to it through raw CRI calls (the configs the agent would
 * send, 10 at a time) and held, and a window after the settle.
 * @param opts the windows (idle, steady, settle) and the pod counts held, ascending
 * @param progress called with a line per phase
 * @returns the windows
 * @throws Error with the loops' stderr when they exit before being measured
 */
export async function runFloorSession(
  opts: Pick<SessionOptions, "idleSeconds" | "steadySeconds" | "settleSeconds" | "steady">,
  progress: (line: string) => void,
): Promise<FloorFigures> {
  const rt = await startTestRuntime({ name: "bench-floor" });
  const cri = createRuntimeService({ endpoint: rt.endpoint, timeoutMs: 300_000 });
  let loops: Deno.ChildProcess | undefined;
  let stderr: Promise<string> = Promise.resolve("");
  let tearingDown: Promise<void> | undefined;
  const tearDown = () =>
    tearingDown ??= (async () => {
      try {
        loops?.kill("SIGKILL");
      } catch { /* already gone */ }
      await loops?.status;
      cri.close();
      await rt.stop();
    })();
  live.add(tearDown);
  try {
    const logs = `${rt.dir}/raw-logs`;
    await Deno.mkdir(logs);
    const podsFile = `${rt.dir}/floor-pods.json`;
    await Deno.writeTextFile(podsFile, "[]");
    const image = rt.images.busybox;
    await rawCriBatch(rt, cri, [JSON.parse(benchPod("warm", image)) as Pod], logs);
    const config = { endpoint: rt.endpoint, dir: rt.dir, cgroupRoot: rt.cgroupParent, podsFile };
    const program = await bundleProgram("bench/_floor_loops.ts", "dist/floor-loops.js");
    loops = new Deno.Command(Deno.execPath(), {
      args: ["run", ...runTaskOptions(), "--quiet", program, JSON.stringify(config)],
      cwd: new URL("..", import.meta.url).pathname,
      stdin: "null",
      stdout: "null",
      stderr: "piped",
    }).spawn();
    stderr = new Response(loops.stderr).text();
    const child = loops;
    const measure = async (seconds: number) => {
      try {
        return await measureWindow(child.pid, seconds);
      } catch (err) {
        await tearDown();
        throw new Error(`bench/_floor_loops.ts exited early: ${(await stderr).slice(-500)}`, {
          cause: err,
        });
      }
    };
    await sleep(opts.settleSeconds);
    const idle = await measure(opts.idleSeconds);
    progress(`floor: idle ${idle.rssMiB.toFixed(1)} MiB`);
    const dns = await hostDnsConfig();
    const started: Pod[] = [];
    const steady = new Map<number, Window>();
    for (const n of opts.steady) {
      const names = range(started.length, n, "s-");
      for (let i = 0; i < names.length; i += 10) {
        await Promise.all(
          names.slice(i, i + 10).map(async (name) => {
            const plan = rawPodConfigs(rt, JSON.parse(benchPod(name, image)) as Pod, logs, dns);
            await startRawPod(cri, plan);
            started.push(plan.pod);
          }),
        );
      }
      // Renamed in whole: the loops re-read the file when its size changes.
      await Deno.writeTextFile(`${podsFile}.new`, JSON.stringify(started));
      await Deno.rename(`${podsFile}.new`, podsFile);
      await sleep(opts.settleSeconds);
      steady.set(n, await measure(opts.steadySeconds));
      progress(`floor: ${n} pod${n === 1 ? "" : "s"} ${steady.get(n)!.rssMiB.toFixed(1)} MiB`);
    }
    return { idle, steady };
  } finally {
    await tearDown();
    await stderr.catch(() => "");
    live.delete(tearDown);
  }
}

/**
 * Tears down the sessions under way (agent, containerd, dirs), for a bench interrupted
 * by a signal: a containerd left behind keeps its shims, mounts and cgroups.
 */
export async function tearDownSessions(): Promise<void> {
  await Promise.all([...live].map((t) => t()));
}
