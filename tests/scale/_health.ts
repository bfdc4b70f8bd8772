/**
 * What the scale test watches and measures on a loaded node:
 *
 * - {@link watchNodeHealth}: a poll every second, for the whole run, of the Node's
 *   Ready condition (any status but True, a "PLEG" message, or a Ready transition is a
 *   finding), the age of its Lease's renewTime (older than the bound is a finding), the
 *   agent's `/healthz` (anything but 200 "ok" within 10 s is a finding), and the
 *   machine's available memory. A `/healthz` slower than 2 s is explained from
 *   {@link sampleMainThread}'s samples over its wait: how long the agent's main thread (its
 *   event loop) ran, waited for a CPU, and slept or blocked, with the kernel functions it
 *   was blocked in; and from {@link sampleMachine}'s, who had the CPUs meanwhile (CPU
 *   time by kind, runnable tasks, and the processes, kernel threads included, that took
 *   the most).
 * - {@link takeReading} / {@link window}: the agent's own figures at one moment (the
 *   PLEG relist and pod worker histograms of its `/metrics`, the pod start SLI, its RSS,
 *   the runtime's shims and containerd RSS, MemAvailable), and what changed between two.
 *
 * @module
 */

import type { Node } from "../../lib/api/cluster_types.ts";
import type { TestNode } from "../e2e/_node.ts";
import { NODE } from "../e2e/_node.ts";
import { sampleSum, sampleValue } from "../kit/metrics.ts";
import type { AdminApi } from "./_admin.ts";
import { cpuCgroupOf, cpuHierarchy } from "../harness/mounts.ts";

const MiB = 2 ** 20;

/** A coordination.k8s.io/v1 Lease, the fields read here. */
interface Lease {
  spec?: { renewTime?: string; leaseDurationSeconds?: number };
}

/** What {@link watchNodeHealth} saw over the run. */
export interface HealthReport {
  /** Polls done (each reads the Node, the Lease and /healthz). */
  polls: number;
  /** Node Ready not True, a PLEG message, or Ready's lastTransitionTime moved. */
  readyFindings: string[];
  /** Lease renewTime older than the bound. */
  leaseFindings: string[];
  /** /healthz not 200 "ok" (or no answer) within 10 s. */
  healthzFindings: string[];
  /** The oldest renewTime seen, ms before the poll that saw it. */
  maxLeaseAgeMs: number;
  /** The slowest apiserver read of a poll (the machine's load shows here first), ms. */
  maxApiMs: number;
  /** The slowest `/healthz` answer (the agent's event loop shows here), ms, and when. */
  maxHealthzMs: number;
  maxHealthzAt: string;
  /** Polls whose apiserver reads failed (a slow apiserver, not the agent). */
  apiErrors: number;
  /** Why the first of them failed (`""` while none did). */
  firstApiError: string;
  /** The least MemAvailable seen, bytes. */
  minMemAvailable: number;
  /** Each `/healthz` slower than 2 s (or unanswered): what the agent's main thread did meanwhile. */
  slowHealthz: string[];
}

/** A running watch; `stop()` ends it and returns what it saw. */
export interface HealthWatch {
  /** Time since the watch started, as its findings print it (`t+12.3s`). */
  elapsed(): string;
  /** MemAvailable at the last poll, bytes. */
  memAvailable(): number;
  stop(): Promise<HealthReport>;
}

/** @returns /proc/meminfo's MemAvailable, bytes */
export function memAvailable(): number {
  const m = /^MemAvailable:\s+(\d+) kB$/m.exec(Deno.readTextFileSync("/proc/meminfo"));
  return Number(m?.[1] ?? 0) * 1024;
}

/**
 * Starts polling once a second.
 * @param node the node under load
 * @param api an admin client
 * @param opts the Lease age bound (1.5 × the renew interval)
 */
export function watchNodeHealth(
  node: TestNode,
  api: AdminApi,
  opts: { leaseAgeBoundMs: number },
): HealthWatch {
  const started = Date.now();
  const at = () => `t+${((Date.now() - started) / 1000).toFixed(1)}s`;
  const report: HealthReport = {
    polls: 0,
    readyFindings: [],
    leaseFindings: [],
    healthzFindings: [],
    maxLeaseAgeMs: 0,
    maxApiMs: 0,
    maxHealthzMs: 0,
    maxHealthzAt: "",
    apiErrors: 0,
    firstApiError: "",
    minMemAvailable: memAvailable(),
    slowHealthz: [],
  };
  const thread = sampleMainThread(node.agent.pid);
  const machine = sampleMachine(new Map([[node.agent.pid, "the agent"]]));
  const slow: { from: number; to: number; label: string }[] = [];
  let readySince: string | undefined;
  let lastMem = report.minMemAvailable;
  let stopped = false;

  const timed = async <T>(get: () => Promise<T>): Promise<[T, number]> => {
    const began = Date.now();
    const got = await get();
    const ms = Date.now() - began;
    report.maxApiMs = Math.max(report.maxApiMs, ms);
    return [got, ms];
  };
  const pollNode = async () => {
    const [n] = await timed(() => api.get<Node>(`/api/v1/nodes/${NODE}`));
    const ready = n.status?.conditions?.find((c) => c.type === "Ready");
    if (ready?.status !== "True" || /PLEG/i.test(ready.message ?? "")) {
      report.readyFindings.push(
        `${at()} Ready=${ready?.status} ${ready?.reason ?? ""}: ${ready?.message ?? ""}`,
      );
    }
    const since = ready?.lastTransitionTime;
    if (readySince === undefined) readySince = since;
    else if (since !== readySince) {
      report.readyFindings.push(`${at()} Ready moved at ${since} (was ${readySince})`);
      readySince = since;
    }
  };
  const pollLease = async () => {
    const [lease, ms] = await timed(() =>
      api.get<Lease>(`/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases/${NODE}`)
    );
    const renewed = Date.parse(lease.spec?.renewTime ?? "");
    const age = Date.now() - renewed;
    if (!Number.isFinite(age)) {
      report.leaseFindings.push(`${at()} the Lease has no renewTime`);
      return;
    }
    report.maxLeaseAgeMs = Math.max(report.maxLeaseAgeMs, age);
    if (age > opts.leaseAgeBoundMs) {
      report.leaseFindings.push(
        `${at()} renewTime ${lease.spec?.renewTime} is ${age} ms old (bound ${opts.leaseAgeBoundMs} ms; this read took ${ms} ms, load ${loadAverage()})`,
      );
    }
  };
  const pollHealthz = async () => {
    const began = Date.now();
    const label = at();
    try {
      const resp = await fetch(`http://127.0.0.1:${node.agent.healthzPort}/healthz`, {
        signal: AbortSignal.timeout(10_000),
      });
      const body = await resp.text();
      if (Date.now() - began > report.maxHealthzMs) {
        report.maxHealthzMs = Date.now() - began;
        report.maxHealthzAt = at();
      }
      if (resp.status !== 200 || body !== "ok") {
        report.healthzFindings.push(`${at()} /healthz ${resp.status}: ${body.slice(0, 200)}`);
      }
    } catch (err) {
      report.healthzFindings.push(`${at()} /healthz: ${(err as Error).message}`);
    } finally {
      if (Date.now() - began > SLOW_HEALTHZ_MS) slow.push({ from: began, to: Date.now(), label });
    }
  };

  const loop = (async () => {
    while (!stopped) {
      const began = Date.now();
      const results = await Promise.allSettled([pollNode(), pollLease(), pollHealthz()]);
      const failed = results.slice(0, 2).find((r) => r.status === "rejected");
      if (failed) {
        report.apiErrors++;
        report.firstApiError ||= `${at()} ${String(failed.reason?.message ?? failed.reason)}`;
      }
      lastMem = memAvailable();
      report.minMemAvailable = Math.min(report.minMemAvailable, lastMem);
      report.polls++;
      const rest = 1_000 - (Date.now() - began);
      if (rest > 0 && !stopped) await new Promise((r) => setTimeout(r, rest));
    }
  })();

  return {
    elapsed: at,
    memAvailable: () => lastMem,
    async stop() {
      stopped = true;
      await loop;
      const samples = thread.stop();
      const seen = machine.stop();
      report.slowHealthz = slow.map((w) =>
        `${w.label} /healthz took ${w.to - w.from} ms: ${describeWindow(samples, w.from, w.to)}; ${
          describeMachine(seen, w.from, w.to)
        }`
      );
      return report;
    },
  };
}

/** A `/healthz` answer slower than this is explained from the thread samples. */
const SLOW_HEALTHZ_MS = 2_000;

/** One look at a thread: its state letter, its schedstat, and where a blocked one waits. */
export interface ThreadSample {
  /** Date.now() when taken. */
  at: number;
  /** R running or runnable, S sleeping, D blocked in the kernel, … (proc(5)). */
  state: string;
  /** /proc/…/schedstat: ns on a CPU, ns waiting on a run queue, since the thread began. */
  runNs: number;
  waitNs: number;
  /** In state D: the kernel stack's first frames (root reads /proc/…/stack). */
  stack?: string;
  /**
   * Processes in the process's cpu cgroup (v1), itself and the children it runs
   * (mount(8), umount(8)) included: they share its CPU share.
   */
  groupProcs?: number;
}

/** The cgroup.procs file of a process's cpu cgroup (v1), or undefined without one. */
function cpuGroupProcsFile(pid: number): string | undefined {
  try {
    const [mount, path] = [cpuHierarchy(), cpuCgroupOf(pid)];
    return mount && path ? `${mount}${path === "/" ? "" : path}/cgroup.procs` : undefined;
  } catch {
    return undefined;
  }
}

/**
 * Samples a process's main thread (for the agent: its event loop, which answers
 * `/healthz` and renews the Lease) every 100 ms until stopped.
 * @param pid the process
 * @returns `stop()`, which ends the sampling and returns the samples
 */
export function sampleMainThread(pid: number): { stop(): ThreadSample[] } {
  const samples: ThreadSample[] = [];
  const dir = `/proc/${pid}/task/${pid}`;
  const procs = cpuGroupProcsFile(pid);
  const timer = setInterval(() => {
    try {
      const stat = Deno.readTextFileSync(`${dir}/stat`);
      const state = stat.slice(stat.lastIndexOf(")") + 2, stat.lastIndexOf(")") + 3);
      const [run, wait] = Deno.readTextFileSync(`${dir}/schedstat`).split(" ").map(Number);
      const sample: ThreadSample = { at: Date.now(), state, runNs: run ?? 0, waitNs: wait ?? 0 };
      if (state === "D") {
        try {
          sample.stack = Deno.readTextFileSync(`${dir}/stack`).split("\n").slice(0, 4)
            .map((l) => l.replace(/^\[<[0-9a-f]+>\] /, "").replace(/\+0x.*$/, "")).join("<");
        } catch { /* not root, or gone */ }
      }
      if (procs) {
        try {
          sample.groupProcs = Deno.readTextFileSync(procs).split("\n").filter(Boolean).length;
        } catch { /* the cgroup is gone */ }
      }
      samples.push(sample);
    } catch { /* the process has exited */ }
  }, 100);
  return {
    stop() {
      clearInterval(timer);
      return samples;
    },
  };
}

/**
 * What the main thread did between two moments, from the samples around them.
 * @returns "ran N ms, waited N ms for a CPU, slept/blocked N ms; states …; blocked in …"
 */
export function describeWindow(samples: ThreadSample[], from: number, to: number): string {
  const inside = samples.filter((s) => s.at >= from && s.at <= to);
  const first = samples.findLast((s) => s.at <= from) ?? inside[0];
  const last = samples.find((s) => s.at >= to) ?? inside.at(-1);
  if (!first || !last || first === last) return "no thread samples";
  const span = last.at - first.at;
  const ran = (last.runNs - first.runNs) / 1e6;
  const waited = (last.waitNs - first.waitNs) / 1e6;
  const states = new Map<string, number>();
  const stacks = new Map<string, number>();
  for (const s of inside) {
    states.set(s.state, (states.get(s.state) ?? 0) + 1);
    if (s.stack) stacks.set(s.stack, (stacks.get(s.stack) ?? 0) + 1);
  }
  const count = (m: Map<string, number>) =>
    [...m].sort((a, b) => b[1] - a[1]).map(([k, n]) => `${n}× ${k}`).join(", ");
  const groups = inside.flatMap((s) => s.groupProcs === undefined ? [] : [s.groupProcs]);
  const group = groups.length
    ? `; its cpu cgroup held ${Math.min(...groups)}–${Math.max(...groups)} processes`
    : "";
  return `over ${span} ms the agent's main thread ran ${Math.round(ran)} ms, waited ${
    Math.round(waited)
  } ms for a CPU, slept or blocked ${Math.round(span - ran - waited)} ms; samples ${
    count(states) || "none"
  }${stacks.size ? `; blocked in ${count(stacks)}` : ""}${group}; load ${loadAverage()}`;
}

/** One look at the machine: /proc/stat's CPU times and /proc/loadavg's runnable count. */
export interface MachineSample {
  /** Date.now() when taken. */
  at: number;
  /** The `cpu` line of /proc/stat, in USER_HZ ticks (1/100 s). */
  cpu: CpuTicks;
  /** Tasks runnable at the moment, the agent's main thread and the sampler included. */
  runnable: number;
}

/** The `cpu` line's fields (proc(5)), summed over all CPUs. */
export interface CpuTicks {
  user: number;
  nice: number;
  system: number;
  idle: number;
  iowait: number;
  irq: number;
  softirq: number;
  steal: number;
}

/**
 * What the processes took between two censuses: CPU ticks by name and nice value. Their
 * own time only: a reaped child's time, which its parent (or init, for orphans) gains in
 * one step, would count twice; so short-lived processes between two censuses are missed.
 */
export interface CensusDelta {
  from: number;
  to: number;
  /** "comm (nice N)" → ticks of user + system time. */
  ticks: Map<string, number>;
}

const CPU_FIELDS = [
  "user",
  "nice",
  "system",
  "idle",
  "iowait",
  "irq",
  "softirq",
  "steal",
] as const;

/** @returns /proc/stat's `cpu` line */
export function readCpuTicks(text = Deno.readTextFileSync("/proc/stat")): CpuTicks {
  const values = (text.split("\n")[0] ?? "").trim().split(/\s+/).slice(1).map(Number);
  const out = {} as CpuTicks;
  CPU_FIELDS.forEach((f, i) => out[f] = values[i] ?? 0);
  return out;
}

/**
 * A process's name, with digits folded (kworker/1:2H-kblockd → kworker/N:NH-kblockd) so
 * that threads of one kind add up, and its nice value.
 */
export function censusKey(comm: string, nice: number): string {
  return `${comm.replace(/\d+/g, "N")} (nice ${nice})`;
}

/**
 * Reads every process's CPU ticks (utime + stime), name and nice value (kernel threads
 * included: they are processes in /proc).
 * @returns pid → [key, ticks]
 */
function census(labels: ReadonlyMap<number, string>): Map<number, [string, number]> {
  const out = new Map<number, [string, number]>();
  for (const entry of Deno.readDirSync("/proc")) {
    if (!/^\d+$/.test(entry.name)) continue;
    try {
      const stat = Deno.readTextFileSync(`/proc/${entry.name}/stat`);
      const comm = stat.slice(stat.indexOf("(") + 1, stat.lastIndexOf(")"));
      const f = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
      // After the state (f[0]): utime f[11], stime f[12], nice f[16].
      const ticks = Number(f[11]) + Number(f[12]);
      const pid = Number(entry.name);
      out.set(pid, [labels.get(pid) ?? censusKey(comm, Number(f[16])), ticks]);
    } catch { /* exited between the listing and the read */ }
  }
  return out;
}

/**
 * Samples the machine every 200 ms (CPU times by kind, runnable tasks) and takes a
 * census of every process's CPU time every second, until stopped: who had the CPUs
 * while the agent's main thread waited for one.
 * @param labels names for known processes (the agent), instead of their comm
 * @returns `stop()`, which ends the sampling and returns what was seen
 */
export function sampleMachine(
  labels: ReadonlyMap<number, string> = new Map(),
): { stop(): { samples: MachineSample[]; deltas: CensusDelta[] } } {
  const samples: MachineSample[] = [];
  const deltas: CensusDelta[] = [];
  const sample = () => {
    try {
      const runnable = Number(Deno.readTextFileSync("/proc/loadavg").split(" ")[3]?.split("/")[0]);
      samples.push({ at: Date.now(), cpu: readCpuTicks(), runnable });
    } catch { /* /proc unreadable: no sample */ }
  };
  let last = { at: Date.now(), procs: census(labels) };
  const fast = setInterval(sample, 200);
  const slow = setInterval(() => {
    const now = { at: Date.now(), procs: census(labels) };
    const ticks = new Map<string, number>();
    for (const [pid, [key, t]] of now.procs) {
      const before = last.procs.get(pid);
      // A new process counts from 0. (A kernel worker's name follows its current work
      // queue, so a pid seen before keeps its count under a new name.)
      const d = before && t >= before[1] ? t - before[1] : t;
      if (d > 0) ticks.set(key, (ticks.get(key) ?? 0) + d);
    }
    deltas.push({ from: last.at, to: now.at, ticks });
    last = now;
  }, 1_000);
  sample();
  return {
    stop() {
      clearInterval(fast);
      clearInterval(slow);
      return { samples, deltas };
    },
  };
}

/**
 * Who had the CPUs between two moments: CPU time by kind (as a share of all CPUs),
 * the mean runnable count, and the processes that took the most.
 * @returns "CPUs 62% user, 30% system, …; runnable 180 on average; most CPU: …"
 */
export function describeMachine(
  seen: { samples: MachineSample[]; deltas: CensusDelta[] },
  from: number,
  to: number,
  top = 6,
): string {
  const first = seen.samples.findLast((s) => s.at <= from) ?? seen.samples[0];
  const last = seen.samples.find((s) => s.at >= to) ?? seen.samples.at(-1);
  if (!first || !last || first === last) return "no machine samples";
  const total = CPU_FIELDS.reduce((n, f) => n + last.cpu[f] - first.cpu[f], 0);
  const kinds = CPU_FIELDS
    .map((f) => [f, total > 0 ? (last.cpu[f] - first.cpu[f]) / total * 100 : 0] as const)
    .filter(([, pct]) => pct >= 0.5)
    .map(([f, pct]) => `${Math.round(pct)}% ${f}`);
  const inside = seen.samples.filter((s) => s.at >= first.at && s.at <= last.at);
  const runnable = inside.reduce((n, s) => n + s.runnable, 0) / Math.max(1, inside.length);
  const ticks = new Map<string, number>();
  for (const d of seen.deltas) {
    if (d.to < from || d.from > to) continue;
    for (const [key, t] of d.ticks) ticks.set(key, (ticks.get(key) ?? 0) + t);
  }
  const most = [...ticks].sort((a, b) => b[1] - a[1]).slice(0, top)
    .map(([key, t]) => `${key} ${(t / 100).toFixed(2)} s`).join(", ");
  return `CPUs ${kinds.join(", ")}; ${Math.round(runnable)} runnable on average; most CPU ${
    most || "none"
  }`;
}

/** @returns /proc/loadavg's 1-minute figure, as text */
export function loadAverage(): string {
  return Deno.readTextFileSync("/proc/loadavg").split(" ")[0] ?? "?";
}

/** The agent's and the runtime's figures at one moment. */
export interface Reading {
  /** Date.now() when taken. */
  at: number;
  relistSum: number;
  relistCount: number;
  /** Relist histogram buckets, le (seconds) → cumulative count. */
  relistBuckets: Map<number, number>;
  workerSum: number;
  workerCount: number;
  sliSum: number;
  sliCount: number;
  /** The agent's VmRSS, bytes. */
  agentRss: number;
  /** The agent's CPU time (user + system), seconds. */
  agentCpu: number;
  /** The runtime's shims' VmRSS summed, bytes, and how many there are. */
  shimRss: number;
  shims: number;
  containerdRss: number;
  memAvailable: number;
}

const RELIST = "kubelet_pleg_relist_duration_seconds";
const WORKER = "kubelet_pod_worker_duration_seconds";
const SLI = "kubelet_pod_start_sli_duration_seconds";

/** utime + stime of /proc/<pid>/stat, seconds (USER_HZ is 100 on Linux). */
function cpuSeconds(pid: number): number {
  try {
    const stat = Deno.readTextFileSync(`/proc/${pid}/stat`);
    const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
    return (Number(fields[11]) + Number(fields[12])) / 100;
  } catch {
    return 0;
  }
}

function vmRss(pid: number | string): number {
  try {
    const m = /^VmRSS:\s+(\d+) kB$/m.exec(Deno.readTextFileSync(`/proc/${pid}/status`));
    return Number(m?.[1] ?? 0) * 1024;
  } catch {
    return 0; // exited between the listing and the read
  }
}

/**
 * The runtime's processes: containerd and its shims, told from other engineers' by the
 * runtime's directory in their command line.
 */
function runtimeProcesses(dir: string): { containerd: number[]; shims: number[] } {
  const out = { containerd: [] as number[], shims: [] as number[] };
  for (const entry of Deno.readDirSync("/proc")) {
    if (!/^\d+$/.test(entry.name)) continue;
    let cmdline: string;
    try {
      cmdline = Deno.readTextFileSync(`/proc/${entry.name}/cmdline`);
    } catch {
      continue;
    }
    if (!cmdline.includes(dir)) continue;
    const argv0 = cmdline.split("\0")[0] ?? "";
    if (argv0.endsWith("containerd-shim-runc-v2")) out.shims.push(Number(entry.name));
    else if (argv0.endsWith("/containerd") || argv0 === "containerd") {
      out.containerd.push(Number(entry.name));
    }
  }
  return out;
}

/**
 * Reads the agent's `/metrics` (read-only port) and the processes' memory.
 * @param node the node
 * @returns the reading
 */
export async function takeReading(node: TestNode): Promise<Reading> {
  const resp = await fetch(`http://127.0.0.1:${node.agent.readOnlyPort}/metrics`, {
    signal: AbortSignal.timeout(30_000),
  });
  if (!resp.ok) throw new Error(`/metrics answered ${resp.status}`);
  const text = await resp.text();
  const relistBuckets = new Map<number, number>();
  for (const m of text.matchAll(new RegExp(`^${RELIST}_bucket\\{le="([^"]+)"\\} (\\S+)$`, "gm"))) {
    relistBuckets.set(m[1] === "+Inf" ? Infinity : Number(m[1]), Number(m[2]));
  }
  const procs = runtimeProcesses(node.runtime.dir);
  return {
    at: Date.now(),
    relistSum: sampleValue(text, `${RELIST}_sum`) ?? 0,
    relistCount: sampleValue(text, `${RELIST}_count`) ?? 0,
    relistBuckets,
    workerSum: sampleSum(text, `${WORKER}_sum`),
    workerCount: sampleSum(text, `${WORKER}_count`),
    sliSum: sampleValue(text, `${SLI}_sum`) ?? 0,
    sliCount: sampleValue(text, `${SLI}_count`) ?? 0,
    agentRss: vmRss(node.agent.pid),
    agentCpu: cpuSeconds(node.agent.pid),
    shimRss: procs.shims.reduce((n, pid) => n + vmRss(pid), 0),
    shims: procs.shims.length,
    containerdRss: procs.containerd.reduce((n, pid) => n + vmRss(pid), 0),
    memAvailable: memAvailable(),
  };
}

/** What happened between two readings, as the report prints it. */
export interface Window {
  /** Relists in the window, their mean (ms) and the bucket bound all of them fell under (ms; Infinity: some took over 10 s, the largest bucket). */
  relists: number;
  relistMeanMs: number;
  relistMaxLeMs: number;
  /** Pod worker syncs in the window and their mean (ms). */
  syncs: number;
  syncMeanMs: number;
  /** Pods whose start the SLI observed in the window and their mean (s). */
  starts: number;
  startMeanS: number;
  /** The agent's CPU time in the window, s, and the share of one core it is of the window. */
  agentCpuS: number;
  agentCores: number;
  /** At the end of the window: RSS of the agent, the shims (summed), containerd, MiB. */
  agentRssMiB: number;
  shimRssMiB: number;
  shims: number;
  containerdRssMiB: number;
  memAvailableMiB: number;
}

const round = (x: number, digits = 1) => Number.isFinite(x) ? Number(x.toFixed(digits)) : 0;

/**
 * @param from the earlier reading
 * @param to the later one
 * @returns the window's figures
 */
export function window(from: Reading, to: Reading): Window {
  const relists = to.relistCount - from.relistCount;
  const syncs = to.workerCount - from.workerCount;
  const starts = to.sliCount - from.sliCount;
  let maxLe = 0;
  for (const [le, count] of [...to.relistBuckets].sort(([a], [b]) => a - b)) {
    const before = from.relistBuckets.get(le) ?? 0;
    if (count - before >= relists) {
      maxLe = le;
      break;
    }
  }
  return {
    relists,
    relistMeanMs: round(relists ? (to.relistSum - from.relistSum) / relists * 1000 : NaN, 2),
    relistMaxLeMs: Number.isFinite(maxLe) ? round(maxLe * 1000, 0) : Infinity,
    syncs,
    syncMeanMs: round(syncs ? (to.workerSum - from.workerSum) / syncs * 1000 : NaN),
    starts,
    startMeanS: round(starts ? (to.sliSum - from.sliSum) / starts : NaN, 2),
    agentCpuS: round(to.agentCpu - from.agentCpu, 2),
    agentCores: round((to.agentCpu - from.agentCpu) / Math.max(0.001, (to.at - from.at) / 1000), 2),
    agentRssMiB: round(to.agentRss / MiB),
    shimRssMiB: round(to.shimRss / MiB),
    shims: to.shims,
    containerdRssMiB: round(to.containerdRss / MiB),
    memAvailableMiB: round(to.memAvailable / MiB, 0),
  };
}
