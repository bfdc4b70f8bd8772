/**
 * The stats benchmark's fixture: a cgroup v2 tree in the kernel's formats, a
 * fake /proc, pods whose containers match it, a RuntimeService stand-in, and
 * a clock whose timers fire only when stepped.
 *
 * @module
 */

import { join } from "node:path";
import type { Pod } from "../lib/api/types.ts";
import type { ContainerStats, RuntimeService } from "../lib/cri/types.ts";
import type { RuntimePodStatus } from "../lib/kuberuntime/types.ts";
import type { MachineFacts } from "../lib/stats/mod.ts";
import type { Clock, Timer } from "../lib/util/clock.ts";

/** What the v2 reader opens per container. */
export const CGROUP_FILES: readonly string[] = [
  "cpu.stat",
  "memory.stat",
  "memory.current",
  "memory.max",
  "memory.events",
  "io.stat",
  "pids.current",
  "pids.max",
  "cpu.pressure",
  "memory.pressure",
  "io.pressure",
];

/**
 * What a housekeeping tick reads per container: all but the files read on
 * the limits' cadence (memory.max, pids.max, memory.events; see
 * LIMIT_REFRESH_TICKS).
 */
export const TICK_FILES: readonly string[] = CGROUP_FILES.filter(
  (name) => !["memory.max", "pids.max", "memory.events"].includes(name),
);

/**
 * A clock whose timers fire only when {@link StepClock.step} is called. All
 * housekeeping timers here share one delay, so a step is one O(n) sweep and
 * the clock adds next to nothing to a measured pass (FakeClock re-sorts its
 * queue on every timer: about 0.8 ms more per pass of 170 timers, measured).
 */
export class StepClock implements Clock {
  #now = Date.UTC(2026, 0, 1);
  #due: { at: number; fn: () => void; live: boolean }[] = [];

  now(): number {
    return this.#now;
  }

  /** It never steps: now(). */
  monotonic(): number {
    return this.#now;
  }

  setTimeout(fn: () => void, ms: number): Timer {
    const t = { at: this.#now + Math.max(0, ms), fn, live: true };
    this.#due.push(t);
    return { cancel: () => void (t.live = false) };
  }

  setInterval(): Timer {
    throw new Error("StepClock: setInterval is not used by the housekeeper");
  }

  sleep(): Promise<void> {
    return Promise.reject(new Error("StepClock: sleep is not used by the housekeeper"));
  }

  /** Moves time by `ms` and fires every timer then due (once). */
  step(ms: number): void {
    this.#now += ms;
    const now = this.#now;
    const due = this.#due;
    this.#due = [];
    for (const t of due) {
      if (!t.live) continue;
      if (t.at <= now) t.fn();
      else this.#due.push(t);
    }
  }
}

function hex(n: number, len: number): string {
  return n.toString(16).padStart(8, "0").repeat(Math.ceil(len / 8)).slice(0, len);
}

/** Every key a 6.x kernel writes to memory.stat, so parsing costs what it costs on a node. */
export const MEMORY_STAT_KEYS: readonly string[] = (
  "anon file kernel kernel_stack pagetables sec_pagetables percpu sock vmalloc shmem zswap " +
  "zswapped file_mapped file_dirty file_writeback swapcached anon_thp file_thp shmem_thp " +
  "inactive_anon active_anon inactive_file active_file unevictable slab_reclaimable " +
  "slab_unreclaimable slab workingset_refault_anon workingset_refault_file " +
  "workingset_activate_anon workingset_activate_file workingset_restore_anon " +
  "workingset_restore_file workingset_nodereclaim pgscan pgsteal pgscan_kswapd pgscan_direct " +
  "pgsteal_kswapd pgsteal_direct pgfault pgmajfault pgrefill pgactivate pgdeactivate " +
  "pglazyfree pglazyfreed zswpin zswpout thp_fault_alloc thp_collapse_alloc"
).split(" ");

function cpuStat(usageUs: number): string {
  return `usage_usec ${usageUs}\nuser_usec ${Math.floor(usageUs * 0.7)}\n` +
    `system_usec ${Math.floor(usageUs * 0.3)}\ncore_sched.force_idle_usec 0\n` +
    `nr_periods 4210\nnr_throttled 12\nthrottled_usec 53120\nnr_bursts 0\nburst_usec 0\n`;
}

function pressure(full: boolean): string {
  const line = (k: string, t: number) => `${k} avg10=0.12 avg60=0.05 avg300=0.01 total=${t}\n`;
  return line("some", 81234) + (full ? line("full", 40211) : line("full", 0));
}

/** Writes one cgroup v2 directory in the kernel's formats. */
async function writeCgroup(dir: string, seed: number, root = false): Promise<void> {
  await Deno.mkdir(dir, { recursive: true });
  const anon = 40 * 2 ** 20 + seed * 4096;
  const file = 12 * 2 ** 20;
  const stat = MEMORY_STAT_KEYS.map((k) => {
    const v = k === "anon" || k === "active_anon"
      ? anon
      : k === "file"
      ? file
      : k === "inactive_file"
      ? file / 4
      : k === "active_file"
      ? (file * 3) / 4
      : seed * 7 + k.length;
    return `${k} ${v}\n`;
  }).join("");
  const files: Record<string, string> = {
    "cpu.stat": cpuStat(1_000_000 + seed * 1000),
    "memory.stat": stat,
    "cpu.pressure": pressure(false),
    "memory.pressure": pressure(true),
    "io.pressure": pressure(true),
  };
  if (!root) {
    Object.assign(files, {
      "memory.current": `${anon + file + 2 ** 20}\n`,
      "memory.max": seed % 2 === 0 ? "max\n" : `${256 * 2 ** 20}\n`,
      "memory.events": "low 0\nhigh 0\nmax 3\noom 0\noom_kill 0\noom_group_kill 0\n",
      "io.stat": `8:0 rbytes=${seed * 4096} wbytes=8192 rios=3 wios=2 dbytes=0 dios=0\n` +
        "259:0 rbytes=1048576 wbytes=0 rios=12 wios=0 dbytes=0 dios=0\n",
      "pids.current": `${1 + (seed % 5)}\n`,
      "pids.max": "max\n",
      "cgroup.procs": "",
    });
  } else {
    files["cgroup.controllers"] = "cpuset cpu io memory hugetlb pids rdma misc\n";
  }
  await Promise.all(
    Object.entries(files).map(([name, text]) => Deno.writeTextFile(join(dir, name), text)),
  );
}

const NET_HEADER =
  "Inter-|   Receive                                                |  Transmit\n" +
  " face |bytes    packets errs drop fifo frame compressed multicast|bytes    packets errs drop fifo colls carrier compressed\n";

function netDev(names: string[]): string {
  return NET_HEADER +
    names.map((n, i) =>
      `${n.padStart(6)}: ${1000 + i * 7919} 42 0 0 0 0 0 0 ${2000 + i * 104729} 37 0 0 0 0 0 0\n`
    ).join("");
}

/** "Key:value …" in kB → /proc/meminfo's layout ("MemTotal:       32768000 kB"). */
function meminfo(pairs: string): string {
  return pairs.split(" ").map((pair) => {
    const [key = "", value = ""] = pair.split(":");
    return `${key}:${value.padStart(16)}${key.startsWith("HugePages_") ? "" : " kB"}\n`;
  }).join("");
}

/** A built fixture; remove `dir` when done. */
export interface Fixture {
  /** The temporary directory holding everything (also the root and logs dir). */
  dir: string;
  /** A cgroup v2 mount root (has cgroup.controllers). */
  cgroupRoot: string;
  procRoot: string;
  /** What `StatsProvider.reconcile` takes: each pod with its runtime status. */
  pods: { pod: Pod; runtime: RuntimePodStatus }[];
  /** Each container's cgroup path, relative to cgroupRoot. */
  containerPaths: string[];
  /** Answers ImageFsInfo and ListContainerStats at once; nothing else. */
  runtime: RuntimeService;
  /** The fake machine's facts, as readMachineInfo() would read them from the fake /proc. */
  machine: MachineFacts;
}

/** The runtime's PID in the fake /proc (its cgroup is the "runtime" system container). */
export const RUNTIME_PID = 900;

/**
 * Builds the fixture tree, the fake /proc and the pods that match them.
 * @param containers running containers, two per pod (the last pod may have one)
 * @returns the fixture, in a new temporary directory
 */
export async function buildFixture(containers: number): Promise<Fixture> {
  const dir = await Deno.makeTempDir({ prefix: "denolet-bench-stats-" });
  const cgroupRoot = join(dir, "cgroup");
  const procRoot = join(dir, "proc");
  await writeCgroup(cgroupRoot, 0, true);
  for (const p of ["/kubepods", "/kubepods/burstable", "/system.slice/denolet.service"]) {
    await writeCgroup(join(cgroupRoot, p), 1);
  }
  await writeCgroup(join(cgroupRoot, "/system.slice/containerd.service"), 2);

  const cpus = 8;
  const cpuLine = (name: string, k: number) =>
    `${name} ${k * 1000} 50 ${k * 300} ${k * 8000} 100 10 20 5 0 0\n`;
  const files: Record<string, string> = {
    "stat": cpuLine("cpu ", cpus) +
      Array.from({ length: cpus }, (_, i) => cpuLine(`cpu${i}`, 1)).join("") +
      "intr 12345 0 0\nctxt 99999\nbtime 1700000000\nprocesses 5678\n" +
      "procs_running 3\nprocs_blocked 0\nsoftirq 1 2 3\n",
    "meminfo": meminfo(
      "MemTotal:32768000 MemFree:8192000 MemAvailable:20480000 Buffers:200000 " +
        "Cached:9000000 SwapCached:0 Active:12000000 Inactive:6000000 Active(anon):7000000 " +
        "Inactive(anon):300000 Active(file):5000000 Inactive(file):5700000 AnonPages:7200000 " +
        "Shmem:120000 HugePages_Total:0 Hugepagesize:2048",
    ),
    "net/dev": netDev(["lo", "eth0", "eth1", "veth0a1b2c", "veth9f8e7d"]),
    "loadavg": "0.50 0.25 0.10 2/345 6789\n",
    "sys/kernel/pid_max": "4194304\n",
    "sys/kernel/threads-max": "126000\n",
    "sys/kernel/random/boot_id": "3f9d1c2e-0000-4000-8000-000000000001\n",
    "self/cgroup": "0::/system.slice/denolet.service\n",
    [`${RUNTIME_PID}/cgroup`]: "0::/system.slice/containerd.service\n",
  };

  const pods: Fixture["pods"] = [];
  const containerPaths: string[] = [];
  const layers: ContainerStats[] = [];
  const podCount = Math.ceil(containers / 2);
  const created = Date.UTC(2026, 0, 1) - 3_600_000;
  for (let p = 0; p < podCount; p++) {
    const uid = `0000${hex(p, 4)}-0000-4000-8000-${hex(p, 12)}`;
    const podPath = `/kubepods/burstable/pod${uid}`;
    const sandboxId = `5a${hex(p, 62)}`;
    const pid = 10_000 + p;
    await writeCgroup(join(cgroupRoot, podPath), p);
    await writeCgroup(join(cgroupRoot, podPath, sandboxId), p);
    await Deno.writeTextFile(join(cgroupRoot, podPath, sandboxId, "cgroup.procs"), `${pid}\n`);
    files[`${pid}/net/dev`] = netDev(["lo", "eth0"]);
    const names = containers - p * 2 >= 2 ? ["app", "sidecar"] : ["app"];
    const running: RuntimePodStatus["containers"] = [];
    for (const [i, name] of names.entries()) {
      const id = `c${i}${hex(p, 62)}`;
      await writeCgroup(join(cgroupRoot, podPath, id), p * 2 + i);
      containerPaths.push(`${podPath}/${id}`);
      running.push({
        id,
        sandboxId,
        name,
        state: "running",
        createdAt: created,
        startedAt: created + 500,
        finishedAt: 0,
        exitCode: 0,
        reason: "",
        message: "",
        image: "registry.local/bench/app:1.0",
        imageRef: `sha256:${hex(7, 64)}`,
        restartCount: 0,
        hash: "1",
      });
      layers.push({
        attributes: { id, metadata: { name, attempt: 0 }, labels: {}, annotations: {} },
        writableLayer: { timestamp: 0, usedBytes: { value: 65_536 }, inodesUsed: { value: 12 } },
      });
    }
    const pod: Pod = {
      metadata: { name: `bench-${p}`, namespace: "bench", uid },
      spec: {
        containers: names.map((name) => ({ name, resources: { requests: { cpu: "50m" } } })),
      },
      status: { startTime: new Date(created).toISOString() },
    };
    pods.push({
      pod,
      runtime: {
        uid,
        name: pod.metadata.name!,
        namespace: "bench",
        sandboxes: [{
          id: sandboxId,
          state: "ready",
          attempt: 0,
          createdAt: created,
          ip: `10.88.0.${p + 2}`,
          additionalIps: [],
          hostNetwork: false,
        }],
        containers: running,
      },
    });
  }
  for (const [name, text] of Object.entries(files)) {
    const path = join(procRoot, name);
    await Deno.mkdir(join(path, ".."), { recursive: true });
    await Deno.writeTextFile(path, text);
  }

  // Answers at once: the benchmark is of denolet's code, not of containerd.
  const runtime = {
    imageFsInfo: () =>
      Promise.resolve({
        imageFilesystems: [{
          timestamp: 0,
          fsId: { mountpoint: dir },
          usedBytes: { value: 512 * 2 ** 20 },
          inodesUsed: { value: 4000 },
        }],
        containerFilesystems: [],
      }),
    listContainerStats: () => Promise.resolve(layers),
  } as unknown as RuntimeService;
  const machine: MachineFacts = {
    bootTimeMs: 1_700_000_000_000,
    maxPid: 126000,
    numCores: cpus,
    memoryCapacityBytes: 32768000 * 1024,
    bootID: "3f9d1c2e-0000-4000-8000-000000000001",
    machineID: hex(3, 32),
    systemUUID: "",
  };
  return { dir, cgroupRoot, procRoot, pods, containerPaths, runtime, machine };
}

/**
 * Bumps every container's CPU counter so that rates are non-zero.
 * @param f the fixture
 * @param byUs CPU µs added to each container's usage
 */
export async function advanceCpu(f: Fixture, byUs: number): Promise<void> {
  for (const [i, path] of f.containerPaths.entries()) {
    await Deno.writeTextFile(
      join(f.cgroupRoot, path, "cpu.stat"),
      cpuStat(1_000_000 + i * 1000 + byUs),
    );
  }
}
