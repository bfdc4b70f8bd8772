/**
 * The pods' volume usage, measured off the request path as upstream's
 * fsResourceAnalyzer and volumeStatCalculator do (pkg/kubelet/server/stats):
 * each pod has its own timer that walks its volume directories (`du`, then
 * statfs for the filesystem's size), first right away and then every
 * `--volume-stats-agg-period` stretched by up to one more period of jitter;
 * `/stats/summary` only reads the last result. Volumes the kubelet writes
 * itself (configMap, secret, downwardAPI, projected) are measured once and
 * kept, as upstream's cached metrics.
 *
 * @module
 */

import type { Pod } from "../api/types.ts";
import type { Clock, Timer } from "../util/clock.ts";
import { type Logger, silentLogger } from "../util/log.ts";
import { alignedDelay } from "../util/tick.ts";
import { type PodVolumeDir, podVolumeDirs } from "../volumes/mod.ts";
import { diskUsage } from "./disk_usage.ts";
import { readFsStats } from "./node.ts";

/** One volume's figures, all known (upstream fills every field of a VolumeStats). */
export interface VolumeUsage {
  name: string;
  /** When it was measured, epoch ms. */
  timeMs: number;
  usedBytes: number;
  inodesUsed: number;
  /** The filesystem holding the volume. */
  capacityBytes: number;
  availableBytes: number;
  inodes: number;
  inodesFree: number;
}

/** A pod's volumes as upstream's PodVolumeStats splits them. */
export interface PodVolumeUsage {
  /** Local ephemeral volumes: counted in the pod's ephemeral storage. */
  ephemeral: VolumeUsage[];
  /** Every other measured volume. */
  persistent: VolumeUsage[];
}

/** Options for {@link PodVolumeStatsCache}. */
export interface PodVolumeStatsOptions {
  clock: Clock;
  /** `--root-dir`, where the pods' volume directories are. */
  rootDir: string;
  /** `volumeStatsAggPeriod` in ms (1 min by default upstream); ≤ 0 disables measuring. */
  periodMs: number;
  /** Rounds each timer's deadline to this grid (lib/util/tick.ts); 0 = none. */
  tickGridMs?: number;
  /** [0, 1) for the jitter; Math.random. */
  random?: () => number;
  logger?: Logger;
}

/** One pod's timer and last figures (upstream volumeStatCalculator). */
class PodVolumeCalculator {
  readonly #cache: PodVolumeStatsCache;
  readonly #pod: Pod;
  readonly #kept = new Map<string, VolumeUsage>();
  readonly #abort = new AbortController();
  #timer: Timer | undefined;
  latest: PodVolumeUsage | undefined;

  constructor(cache: PodVolumeStatsCache, pod: Pod) {
    this.#cache = cache;
    this.#pod = pod;
  }

  start(): void {
    void this.#run();
  }

  stop(): void {
    this.#abort.abort();
    this.#timer?.cancel();
  }

  async #run(): Promise<void> {
    try {
      this.latest = await this.#measure();
    } catch (err) {
      if (this.#abort.signal.aborted) return;
      this.#cache.log.v(4).info("Failed to calculate volume metrics", {
        pod: `${this.#pod.metadata.namespace}/${this.#pod.metadata.name}`,
        podUID: this.#pod.metadata.uid,
        err: String(err),
      });
    }
    if (this.#abort.signal.aborted) return;
    this.#timer = this.#cache.schedule(() => void this.#run());
  }

  async #measure(): Promise<PodVolumeUsage> {
    const out: PodVolumeUsage = { ephemeral: [], persistent: [] };
    for (const dir of podVolumeDirs(this.#cache.rootDir, this.#pod)) {
      const usage = this.#kept.get(dir.name) ?? await this.#measureOne(dir);
      if (!usage) continue;
      if (dir.kubeletWritten) this.#kept.set(dir.name, usage);
      (dir.localEphemeral ? out.ephemeral : out.persistent).push(usage);
    }
    return out;
  }

  /** Undefined for a volume not set up (yet). */
  async #measureOne(dir: PodVolumeDir): Promise<VolumeUsage | undefined> {
    const timeMs = this.#cache.clock.now();
    let used;
    try {
      used = await diskUsage(dir.path, this.#abort.signal);
    } catch (err) {
      if (err instanceof Deno.errors.NotFound) return undefined;
      throw new Error(`volume ${JSON.stringify(dir.name)}: ${String(err)}`, { cause: err });
    }
    const fs = readFsStats(dir.path);
    return {
      name: dir.name,
      timeMs,
      usedBytes: used.bytes,
      inodesUsed: used.inodes,
      capacityBytes: fs.capacityBytes,
      availableBytes: fs.availableBytes,
      inodes: fs.inodes,
      inodesFree: fs.inodesFree,
    };
  }
}

/**
 * The volume figures of every pod the stats provider tracks (upstream
 * fsResourceAnalyzer): a calculator starts for each new pod and stops when
 * the pod goes.
 */
export class PodVolumeStatsCache {
  readonly clock: Clock;
  readonly rootDir: string;
  readonly log: Logger;
  readonly #periodMs: number;
  readonly #gridMs: number;
  readonly #random: () => number;
  readonly #pods = new Map<string, PodVolumeCalculator>();

  /** @param opts clock, root dir, period */
  constructor(opts: PodVolumeStatsOptions) {
    this.clock = opts.clock;
    this.rootDir = opts.rootDir;
    this.log = opts.logger ?? silentLogger;
    this.#periodMs = opts.periodMs;
    this.#gridMs = opts.tickGridMs ?? 0;
    this.#random = opts.random ?? Math.random;
  }

  /**
   * Keeps one calculator per pod: starts them for new pods, stops them for
   * pods no longer given. A pod keeps the calculator it started with (a pod's
   * volumes do not change).
   * @param pods the pods to measure
   */
  update(pods: readonly Pod[]): void {
    if (this.#periodMs <= 0) return;
    const wanted = new Set<string>();
    for (const pod of pods) {
      const uid = pod.metadata.uid;
      if (!uid) continue;
      wanted.add(uid);
      if (this.#pods.has(uid)) continue;
      const calc = new PodVolumeCalculator(this, pod);
      this.#pods.set(uid, calc);
      calc.start();
    }
    for (const [uid, calc] of this.#pods) {
      if (wanted.has(uid)) continue;
      calc.stop();
      this.#pods.delete(uid);
    }
  }

  /**
   * The pod's last figures (upstream GetPodVolumeStats).
   * @param uid the pod UID
   * @returns its volumes, or undefined before the first measurement
   */
  get(uid: string): PodVolumeUsage | undefined {
    return this.#pods.get(uid)?.latest;
  }

  /** Stops every calculator. */
  stop(): void {
    for (const calc of this.#pods.values()) calc.stop();
    this.#pods.clear();
  }

  /** @internal the next run of a calculator: one period plus up to one more of jitter. */
  schedule(fn: () => void): Timer {
    const delay = this.#periodMs * (1 + this.#random());
    return this.clock.setTimeout(fn, alignedDelay(this.clock.now(), delay, this.#gridMs));
  }
}
