/**
 * {@link StatsProvider}: the stats path's front. It keeps the housekeeping set
 * equal to what runs (the node, denolet's own cgroup, the runtime's, the
 * kubepods cgroup, each pod cgroup with its network, each running container),
 * and turns the cached samples into a {@link StatsSnapshot} that the Summary
 * API and both Prometheus renderers are built from.
 *
 * Cgroups are found by the names the agent gives them rather than by
 * searching the cgroup tree. With the cgroupfs driver a pod's sandbox has
 * `linux.cgroupParent` = `<cgroupRoot>/kubepods[/qos]/pod<uid>` and
 * containerd puts each container, the pause container included, at
 * `<cgroupParent>/<containerId>` (systemd driver: `<slice>:cri-containerd:<id>`).
 * A pod's network is read from /proc/<pid>/net/dev of the pause container's
 * first process, found in its cgroup.procs: a cgroup read, not a /proc scan.
 *
 * No request calls the runtime or walks a directory. The pods come from
 * {@link StatsProvider.reconcile} (the agent's relist), CPU and memory from
 * housekeeping, which reads nothing but cgroup and /proc files. The runtime's
 * filesystem figures (ImageFsInfo, ListContainerStats for writable layers) are
 * read on their own loop ({@link RuntimeFsCache}), the pods' log and hosts
 * files are measured on another ({@link PodFilesCache}; upstream stats them
 * per request) and volumes are walked on per-pod timers
 * ({@link PodVolumeStatsCache}). `snapshot({ withFs: true })` adds only a
 * statfs of the root and log filesystems (and of the runtime's mountpoints)
 * and /proc/loadavg, read then, to the last figures of those loops, each
 * stamped with the time it was read.
 *
 * @module
 */

import type { Pod } from "../api/types.ts";
import {
  type CgroupLayout,
  cgroupPathFromRuntime,
  type CgroupRef,
  cgroupRefFromPath,
  cgroupRefFromPid,
  type CgroupStats,
  DEFAULT_CGROUP_ROOT,
  DEFAULT_PROC_ROOT,
  detectCgroupLayout,
  isCgroupNotFound,
  readCgroupStats,
  readOptionalText,
} from "../cgroup/mod.ts";
import type { RuntimeService } from "../cri/types.ts";
import { nodeAllocatableRoot, podCgroupParent } from "../cm/mod.ts";
import type { RuntimePodStatus } from "../kuberuntime/types.ts";
import type { Clock } from "../util/clock.ts";
import { type Logger, silentLogger } from "../util/log.ts";
import {
  type Collector,
  Housekeeper,
  type HousekeeperOptions,
  NODE_ID,
  type Sample,
} from "./housekeeping.ts";
import { readFsStats, readLoad, readNetworkStats, readNodeUsage } from "./node.ts";
import { type MeasuredUsage, PodFilesCache, type PodFilesTarget } from "./pod_files.ts";
import {
  DEFAULT_RUNTIME_FS_PERIOD_MS,
  RuntimeFsCache,
  type RuntimeFsFigure,
} from "./runtime_fs.ts";
import type {
  CgroupSnapshot,
  FsUsage,
  MachineFacts,
  NetworkSnapshot,
  NodeSnapshot,
  PodSnapshot,
  StatsSnapshot,
  SystemContainerSnapshot,
} from "./snapshot.ts";
import { buildSummary } from "./summary.ts";
import type { Summary } from "./summary_types.ts";
import { PodVolumeStatsCache } from "./volume_stats.ts";

/** Options for {@link StatsProvider}. */
export interface StatsProviderOptions {
  clock: Clock;
  /** Interval (`--housekeeping-interval`, 10s), jitter, storage; clock and log come from here. */
  housekeeping?: Omit<HousekeeperOptions, "clock" | "log">;
  /** cgroup mount root; /sys/fs/cgroup. */
  cgroupRoot?: string;
  /** procfs root; /proc. */
  procRoot?: string;
  /** `--root-dir`, whose filesystem is the node's fs; "/var/lib/kubelet". */
  rootDir?: string;
  /** Where pod logs live (their filesystem is each container's `logs`); /var/log/pods. */
  podLogsDir?: string;
  /** `volumeStatsAggPeriod` in ms: how often each pod's volumes are walked; 60000. ≤ 0: never. */
  volumeStatsAggPeriodMs?: number;
  /** For ImageFsInfo and writable layers (ListContainerStats). */
  runtime: RuntimeService;
  /**
   * How often those, and the pods' log and hosts files, are read
   * (lib/stats/runtime_fs.ts, pod_files.ts); 10000. ≤ 0: once at start (and
   * the runtime's for each imageFsStats()).
   */
  fsStatsPeriodMs?: number;
  nodeName: string;
  /** `--cgroup-root`; "/". */
  podCgroupRoot?: string;
  /** `--cgroup-driver`; "cgroupfs". */
  cgroupDriver?: "cgroupfs" | "systemd";
  /** `--cgroups-per-qos`; true. False: pods sit right under `podCgroupRoot`. */
  cgroupsPerQOS?: boolean;
  /** The machine's facts, read once at start-up (`readMachineInfo()`). */
  machine: MachineFacts;
  /** `--runtime-cgroups`: the runtime's cgroup, for the "runtime" system container. */
  runtimeCgroup?: string;
  /** Or the runtime's PID, whose /proc/PID/cgroup names it. Without either, "runtime" is left out. */
  runtimePid?: number;
  logger?: Logger;
}

interface ContainerEntry {
  id: string;
  name: string;
  image: string;
  startTimeMs: number;
  path: string;
}

interface PodEntry {
  uid: string;
  name: string;
  namespace: string;
  startTimeMs: number;
  /** The pod's `linux.cgroupParent` as the runtime names it. */
  cgroupParent: string;
  /** Its cgroup path. */
  path: string;
  sandboxPath?: string;
  hostNetwork: boolean;
  sandboxPid?: number;
  network?: NetworkSnapshot;
  containers: ContainerEntry[];
}

interface SystemEntry {
  name: SystemContainerSnapshot["name"];
  ref: CgroupRef;
  path: string;
}

const POD_KEY = "pod:";
const SYSTEM_KEY = "system:";
function parseTime(text: string | undefined): number | undefined {
  if (!text) return undefined;
  const ms = Date.parse(text);
  return Number.isNaN(ms) ? undefined : ms;
}

/** What reconcile was last given: each pod and status object, and the pod's start time then. */
type Observed = { pod: Pod; runtime: RuntimePodStatus; startTime: string | undefined }[];

/**
 * Whether an observation holds the very same pod and status objects, in order, as
 * the last one, with the same start times (the config mux updates a pod's status
 * in place).
 */
function sameObserved(
  last: Observed | undefined,
  now: readonly { pod: Pod; runtime: RuntimePodStatus }[],
): boolean {
  if (last === undefined || last.length !== now.length) return false;
  for (let i = 0; i < now.length; i++) {
    const a = last[i]!, b = now[i]!;
    if (a.pod !== b.pod || a.runtime !== b.runtime) return false;
    if (a.startTime !== b.pod.status?.startTime) return false;
  }
  return true;
}

/** Keeps the housekeeping set in step with the pods and serves snapshots. */
export class StatsProvider {
  readonly #clock: Clock;
  readonly #log: Logger;
  readonly #layout: CgroupLayout;
  readonly #hk: Housekeeper;
  readonly #procRoot: string;
  readonly #rootDir: string;
  readonly #podLogsDir: string;
  readonly #runtimeFs: RuntimeFsCache;
  readonly #podFiles: PodFilesCache;
  readonly #nodeName: string;
  readonly #podCgroupRoot: string;
  readonly #cgroupsPerQOS: boolean;
  readonly #driver: "cgroupfs" | "systemd";
  readonly #machine: MachineFacts;
  readonly #system: SystemEntry[] = [];
  readonly #pods = new Map<string, PodEntry>();
  readonly #volumes: PodVolumeStatsCache;
  #nodeNetwork: NetworkSnapshot | undefined;
  #collectors = new Map<string, Collector>();
  /** What the last reconcile was given: the same pods and statuses again change nothing. */
  #observed: Observed | undefined;

  /**
   * @param opts clock, roots, runtime, node name and cgroup naming
   * @throws {StatsFileError} when no cgroup hierarchy is mounted under cgroupRoot
   * @throws {StatsPermissionError} when Deno refuses /sys or /proc (run with -A)
   */
  constructor(opts: StatsProviderOptions) {
    this.#clock = opts.clock;
    this.#log = opts.logger ?? silentLogger;
    this.#layout = detectCgroupLayout({ cgroupRoot: opts.cgroupRoot ?? DEFAULT_CGROUP_ROOT });
    this.#hk = new Housekeeper({ ...opts.housekeeping, clock: opts.clock, log: this.#log });
    this.#procRoot = opts.procRoot ?? DEFAULT_PROC_ROOT;
    this.#rootDir = opts.rootDir ?? "/var/lib/kubelet";
    this.#podLogsDir = opts.podLogsDir ?? "/var/log/pods";
    const grid = opts.housekeeping?.tickGridMs !== undefined
      ? { tickGridMs: opts.housekeeping.tickGridMs }
      : {};
    this.#runtimeFs = new RuntimeFsCache({
      clock: opts.clock,
      runtime: opts.runtime,
      ...(opts.fsStatsPeriodMs !== undefined ? { periodMs: opts.fsStatsPeriodMs } : {}),
      ...grid,
      logger: this.#log,
    });
    this.#nodeName = opts.nodeName;
    this.#podCgroupRoot = opts.podCgroupRoot ?? "/";
    this.#driver = opts.cgroupDriver ?? "cgroupfs";
    this.#cgroupsPerQOS = opts.cgroupsPerQOS ?? true;
    this.#machine = opts.machine;
    this.#podFiles = new PodFilesCache({
      clock: opts.clock,
      rootDir: this.#rootDir,
      podLogsDir: this.#podLogsDir,
      pods: () => this.#filesTargets(),
      periodMs: opts.fsStatsPeriodMs ?? DEFAULT_RUNTIME_FS_PERIOD_MS,
      ...grid,
      logger: this.#log,
    });
    this.#volumes = new PodVolumeStatsCache({
      clock: opts.clock,
      rootDir: this.#rootDir,
      periodMs: opts.volumeStatsAggPeriodMs ?? 60_000,
      ...grid,
      logger: this.#log,
    });

    const procOpts = { procRoot: this.#procRoot };
    try {
      const self = cgroupRefFromPid("self", procOpts);
      this.#system.push({ name: "kubelet", ref: self, path: self.unified ?? self.v1.cpu ?? "/" });
    } catch (err) {
      this.#log.error("cannot find denolet's own cgroup; no kubelet system container", err);
    }
    if (opts.runtimeCgroup !== undefined) {
      const path = cgroupPathFromRuntime(opts.runtimeCgroup);
      this.#system.push({ name: "runtime", ref: cgroupRefFromPath(path), path });
    } else if (opts.runtimePid !== undefined) {
      try {
        const ref = cgroupRefFromPid(opts.runtimePid, procOpts);
        this.#system.push({ name: "runtime", ref, path: ref.unified ?? ref.v1.cpu ?? "/" });
      } catch (err) {
        this.#log.error("cannot find the runtime's cgroup", err, { pid: opts.runtimePid });
      }
    }
    // Upstream's node allocatable root: <root>/kubepods, or the root itself without cgroupsPerQOS.
    const kubepods = cgroupPathFromRuntime(nodeAllocatableRoot({
      cgroupRoot: this.#podCgroupRoot,
      cgroupDriver: this.#driver,
      cgroupsPerQOS: this.#cgroupsPerQOS,
    }));
    this.#system.push({ name: "pods", ref: cgroupRefFromPath(kubepods), path: kubepods });
    this.reconcile([]);
    this.#runtimeFs.start();
    this.#podFiles.start();
  }

  /** The detected cgroup layout. */
  get layout(): CgroupLayout {
    return this.#layout;
  }

  /** The housekeeper (read-only use: samples, ids). */
  get housekeeper(): Housekeeper {
    return this.#hk;
  }

  /**
   * The samples housekeeping keeps (the last `storageMs`, 2 min by default), oldest first.
   * @param of the node, a pod by UID, or a running container by CRI ID
   * @returns decoded samples; [] for what is not tracked
   */
  samples(of: "node" | { podUID: string } | { containerID: string }): Sample[] {
    if (of === "node") return this.#hk.samples(NODE_ID);
    return this.#hk.samples("podUID" in of ? POD_KEY + of.podUID : of.containerID);
  }

  /**
   * Starts housekeeping new running containers and pod cgroups and stops it
   * for those gone; call after each relist. Pods with neither a ready sandbox
   * nor a running container are dropped. Given the same pod and status objects
   * as last time (the PLEG's cache keeps a status until the pod changes), it
   * returns at once: nothing it would build could differ.
   * @param pods each desired pod with the runtime's view of it
   */
  reconcile(pods: readonly { pod: Pod; runtime: RuntimePodStatus }[]): void {
    if (sameObserved(this.#observed, pods)) return;
    this.#observed = pods.map(({ pod, runtime }) => ({
      pod,
      runtime,
      startTime: pod.status?.startTime,
    }));
    const wanted = new Map<string, Collector>();
    wanted.set(NODE_ID, this.#collectors.get(NODE_ID) ?? (() => this.#collectNode()));
    for (const s of this.#system) {
      const key = SYSTEM_KEY + s.name;
      wanted.set(key, this.#collectors.get(key) ?? (() => readCgroupStats(this.#layout, s.ref)));
    }
    const next = new Map<string, PodEntry>();
    const measured: Pod[] = [];
    for (const { pod, runtime } of pods) {
      const entry = this.#podEntry(pod, runtime);
      if (!entry) continue;
      next.set(entry.uid, entry);
      measured.push(pod);
      const key = POD_KEY + entry.uid;
      wanted.set(key, this.#collectors.get(key) ?? (() => this.#collectPod(entry.uid)));
      for (const c of entry.containers) {
        const ref = cgroupRefFromPath(c.path);
        wanted.set(c.id, this.#collectors.get(c.id) ?? (() => readCgroupStats(this.#layout, ref)));
      }
    }
    const added = [...next.values()].some((e) => {
      const before = this.#pods.get(e.uid);
      return !before || e.containers.some((c) => !before.containers.some((b) => b.id === c.id));
    });
    this.#pods.clear();
    for (const [uid, e] of next) this.#pods.set(uid, e);
    if (added) this.#podFiles.measureSoon();
    this.#collectors = wanted;
    this.#hk.reconcile(wanted);
    this.#volumes.update(measured);
  }

  /** Stops every housekeeping, volume and runtime filesystem timer. */
  stop(): void {
    this.#hk.stop();
    this.#volumes.stop();
    this.#runtimeFs.stop();
    this.#podFiles.stop();
  }

  /**
   * The cached figures of the node and every tracked pod and container;
   * never calls the runtime.
   * @param opts withFs: also add the runtime's last image and writable-layer
   *   figures and the pods' last volume figures, statfs the root and log
   *   filesystems, and measure log and hosts files
   * @returns the snapshot (containers whose cgroup has vanished are left out),
   *   resolved at once: nothing in it waits on I/O
   */
  snapshot(opts: { withFs: boolean }): Promise<StatsSnapshot> {
    const now = this.#clock.now();
    const node: NodeSnapshot = {
      nodeName: this.#nodeName,
      startTimeMs: this.#machine.bootTimeMs,
      cgroup: this.#view(NODE_ID, "/"),
      machine: this.#machine,
      systemContainers: this.#system.map((s) => ({
        name: s.name,
        startTimeMs: this.#machine.bootTimeMs,
        cgroup: this.#view(SYSTEM_KEY + s.name, s.path),
      })),
    };
    if (this.#nodeNetwork) node.network = this.#nodeNetwork;
    const pods: PodSnapshot[] = [];
    for (const e of this.#pods.values()) {
      const pod: PodSnapshot = {
        uid: e.uid,
        name: e.name,
        namespace: e.namespace,
        startTimeMs: e.startTimeMs,
        cgroup: this.#view(POD_KEY + e.uid, e.path),
        containers: [],
      };
      if (e.network) pod.network = e.network;
      for (const c of e.containers) {
        if (isCgroupNotFound(this.#hk.lastError(c.id))) continue;
        pod.containers.push({
          id: c.id,
          name: c.name,
          image: c.image,
          startTimeMs: c.startTimeMs,
          cgroup: this.#view(c.id, c.path),
        });
      }
      pods.push(pod);
    }
    if (opts.withFs) this.#addFs(now, node, pods);
    return Promise.resolve({ timeMs: now, node, pods });
  }

  /**
   * The image filesystem, as upstream's ImageFsStats (what image GC reads): used
   * bytes and inodes from a fresh ImageFsInfo (joining the read in flight, if
   * any), capacity and availability from statfs of the mountpoint it names
   * (left out when statfs fails).
   * @param opts signal: stops waiting for the runtime
   * @returns the image filesystem's figures
   * @throws the signal's reason, or Error when the runtime reports no image filesystem
   */
  async imageFsStats(opts: { signal?: AbortSignal } = {}): Promise<FsUsage> {
    const image = (await this.#runtimeFs.refresh(opts.signal)).imageFs;
    if (!image) throw new Error("imageFs information is unavailable");
    const now = this.#clock.now();
    return runtimeFsUsage(image, (path) => {
      try {
        return { timeMs: now, ...readFsStats(path) };
      } catch (err) {
        this.#log.v(2).info("statfs failed", { path, err: String(err) });
        return undefined;
      }
    });
  }

  /**
   * The Summary API.
   * @param opts onlyCpuAndMemory: `?only_cpu_and_memory=true` (no filesystems then);
   *   fresh: every cgroup read now rather than at its last housekeeping (the
   *   eviction manager's rounds after a threshold notifier fired or an eviction)
   * @returns the Summary
   */
  async summary(opts: { onlyCpuAndMemory: boolean; fresh?: boolean }): Promise<Summary> {
    if (opts.fresh) this.#hk.refresh();
    const snap = await this.snapshot({ withFs: !opts.onlyCpuAndMemory });
    return buildSummary(snap, opts);
  }

  #view(key: string, path: string): CgroupSnapshot {
    const out: CgroupSnapshot = { path };
    const sample = this.#hk.latest(key);
    const rate = this.#hk.usageNanoCores(key);
    const stats = this.#hk.latestStats(key);
    if (sample) out.sample = sample;
    if (rate !== undefined) out.usageNanoCores = rate;
    if (stats) out.stats = stats;
    return out;
  }

  #podEntry(pod: Pod, runtime: RuntimePodStatus): PodEntry | undefined {
    const sandbox = runtime.sandboxes.find((s) => s.state === "ready");
    const running = runtime.containers.filter((c) => c.state === "running");
    if (!sandbox && running.length === 0) return undefined;
    const uid = pod.metadata.uid ?? runtime.uid;
    const previous = this.#pods.get(uid);
    // Recorded when the pod is first seen, not on every relist: the sandbox's
    // cgroup parent is fixed when it is made, and a pod's QoS class never changes.
    const parent = previous?.cgroupParent ??
      podCgroupParent(pod, {
        cgroupRoot: this.#podCgroupRoot,
        cgroupDriver: this.#driver,
        cgroupsPerQOS: this.#cgroupsPerQOS,
      });
    const path = previous?.path ?? cgroupPathFromRuntime(parent);
    const child = (id: string) =>
      this.#driver === "systemd"
        ? cgroupPathFromRuntime(`${parent.slice(parent.lastIndexOf("/") + 1)}:cri-containerd:${id}`)
        : `${path === "/" ? "" : path}/${id}`;
    const entry: PodEntry = {
      uid,
      name: pod.metadata.name ?? runtime.name,
      namespace: pod.metadata.namespace ?? runtime.namespace,
      startTimeMs: parseTime(pod.status?.startTime) ?? sandbox?.createdAt ?? this.#clock.now(),
      cgroupParent: parent,
      path,
      hostNetwork: sandbox?.hostNetwork ?? pod.spec.hostNetwork === true,
      containers: running.map((c) => ({
        id: c.id,
        name: c.name,
        image: c.image,
        startTimeMs: c.startedAt > 0 ? c.startedAt : c.createdAt,
        path: child(c.id),
      })),
    };
    if (sandbox) entry.sandboxPath = child(sandbox.id);
    if (previous && previous.sandboxPath === entry.sandboxPath) {
      if (previous.sandboxPid !== undefined) entry.sandboxPid = previous.sandboxPid;
      if (previous.network) entry.network = previous.network;
    }
    return entry;
  }

  #collectNode(): CgroupStats {
    let rootMemory;
    try {
      rootMemory = readCgroupStats(this.#layout, cgroupRefFromPath("/")).memory;
    } catch {
      // The root cgroup lacks memory files on v2: meminfo gives the figures instead.
    }
    const procOpts = { procRoot: this.#procRoot };
    const usage = readNodeUsage(procOpts, rootMemory);
    try {
      this.#nodeNetwork = {
        timeMs: this.#clock.now(),
        interfaces: readNetworkStats(procOpts).filter((i) => !ignoredInterface(i.name)),
      };
    } catch (err) {
      this.#log.error("reading node network failed", err);
    }
    return { cpu: usage.cpu, memory: usage.memory };
  }

  #collectPod(uid: string): CgroupStats {
    const e = this.#pods.get(uid);
    if (!e) return {};
    const stats = readCgroupStats(this.#layout, cgroupRefFromPath(e.path));
    if (!e.hostNetwork && e.sandboxPath !== undefined) {
      try {
        const pid = e.sandboxPid ?? readFirstPid(this.#layout, e.sandboxPath);
        if (pid !== undefined) {
          e.sandboxPid = pid;
          e.network = {
            timeMs: this.#clock.now(),
            interfaces: readNetworkStats({ procRoot: this.#procRoot, pid })
              .filter((i) => i.name !== "lo"),
          };
        }
      } catch (err) {
        delete e.sandboxPid;
        this.#log.v(4).info("pod network unavailable", { podUID: uid, err: String(err) });
      }
    }
    return stats;
  }

  #addFs(now: number, node: NodeSnapshot, pods: PodSnapshot[]): void {
    const statfs = new Map<string, FsUsage | undefined>();
    const fsOf = (path: string): FsUsage | undefined => {
      if (!statfs.has(path)) {
        try {
          statfs.set(path, { timeMs: now, ...readFsStats(path) });
        } catch (err) {
          this.#log.v(2).info("statfs failed", { path, err: String(err) });
          statfs.set(path, undefined);
        }
      }
      return statfs.get(path);
    };
    const rootFs = fsOf(this.#rootDir);
    if (rootFs) node.fs = rootFs;
    try {
      node.rlimit = { timeMs: now, curproc: readLoad({ procRoot: this.#procRoot }).threads };
      if (this.#machine.maxPid !== undefined) node.rlimit.maxPid = this.#machine.maxPid;
    } catch (err) {
      this.#log.error("reading /proc/loadavg failed", err);
    }
    const runtimeFs = this.#runtimeFs.latest();
    const usage = (f: RuntimeFsFigure) => runtimeFsUsage(f, fsOf);
    if (runtimeFs.imageFs) node.imageFs = usage(runtimeFs.imageFs);
    if (runtimeFs.containerFs) node.containerFs = usage(runtimeFs.containerFs);
    const logsFs = fsOf(this.#podLogsDir) ?? rootFs;
    for (const p of pods) {
      const files = this.#podFiles.get(p.uid);
      for (const c of p.containers) {
        const layer = runtimeFs.layers?.get(c.id);
        if (layer) c.rootfs = usage(layer);
        const logs = files?.containerLogs.get(c.name);
        if (logs) c.logs = withUsage(logsFs, logs);
      }
      if (files?.podLogs) p.podLogs = withUsage(logsFs, files.podLogs);
      if (files?.etcHosts) p.etcHosts = withUsage(rootFs, files.etcHosts);
      const volumes = this.#volumes.get(p.uid);
      if (volumes) p.volumes = volumes;
    }
  }

  #filesTargets(): PodFilesTarget[] {
    return [...this.#pods.values()].map((e) => ({
      uid: e.uid,
      namespace: e.namespace,
      name: e.name,
      containers: e.containers.map((c) => c.name),
    }));
  }
}

/**
 * A filesystem the runtime reports (ImageFsInfo, a writable layer): its used
 * bytes and inodes as the runtime counted them, at the time it counted them,
 * over the statfs figures of its mountpoint.
 */
function runtimeFsUsage(
  f: RuntimeFsFigure,
  fsOf: (path: string) => FsUsage | undefined,
): FsUsage {
  const u = f.usage;
  const base = u.fsId?.mountpoint ? fsOf(u.fsId.mountpoint) : undefined;
  const out: FsUsage = { ...(base ?? {}), timeMs: f.timeMs };
  if (u.usedBytes) out.usedBytes = u.usedBytes.value;
  if (u.inodesUsed) out.inodesUsed = u.inodesUsed.value;
  return out;
}

/**
 * A filesystem's size with a measured usage in it (upstream
 * metricsByPathToFsStats), at the time the usage was measured.
 */
function withUsage(fs: FsUsage | undefined, used: MeasuredUsage): FsUsage {
  const { usedBytes: _u, inodesUsed: _i, timeMs: _t, ...size } = fs ?? { timeMs: 0 };
  return { ...size, timeMs: used.timeMs, usedBytes: used.bytes, inodesUsed: used.inodes };
}

/** cAdvisor leaves these out of a container's (and the machine's) network. */
function ignoredInterface(name: string): boolean {
  return name === "lo" || /^(veth|docker|nerdctl)/.test(name);
}

/** The first process of a cgroup (the pause process of a sandbox's cgroup). */
function readFirstPid(layout: CgroupLayout, path: string): number | undefined {
  const mounts = [layout.unified, layout.v1.pids, layout.v1.memory, layout.v1.cpu];
  for (const mount of mounts) {
    if (mount === undefined) continue;
    const text = readOptionalText(`${mount}${path === "/" ? "" : path}/cgroup.procs`);
    const first = text?.split("\n").find((l) => l.trim() !== "");
    if (first !== undefined) return Number(first.trim());
  }
  return undefined;
}
