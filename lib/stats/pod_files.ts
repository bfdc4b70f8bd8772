/**
 * The files the kubelet keeps for each pod outside its volumes: each
 * container's log files, the pod's log directory and its hosts file. Upstream
 * stats them for every Summary request (hostStatsProvider); here one loop
 * measures every tracked pod's files each period, with synchronous calls (a
 * listing and a few lstats a pod: as async calls they cost several times as
 * much), and a request only reads the last figures, each with the time it was
 * measured.
 *
 * @module
 */

import { podLogsDirectory } from "../kuberuntime/mod.ts";
import type { Clock, Timer } from "../util/clock.ts";
import { type Logger, silentLogger } from "../util/log.ts";
import { alignedDelay } from "../util/tick.ts";
import { etcHostsPath } from "../volumes/mod.ts";
import { type DiskUsage, filesUsage, fileUsage } from "./disk_usage.ts";

/** A measured usage and when it was measured. */
export interface MeasuredUsage extends DiskUsage {
  /** Epoch ms. */
  timeMs: number;
}

/** One pod's files, as last measured; a file not there is left out. */
export interface PodFilesUsage {
  /** Log files by container name. */
  containerLogs: Map<string, MeasuredUsage>;
  /** Every log file of the pod (its log directory). */
  podLogs?: MeasuredUsage;
  etcHosts?: MeasuredUsage;
}

/** A pod whose files are measured. */
export interface PodFilesTarget {
  uid: string;
  namespace: string;
  name: string;
  containers: readonly string[];
}

/** Options for {@link PodFilesCache}. */
export interface PodFilesCacheOptions {
  clock: Clock;
  /** `--root-dir` (the hosts files). */
  rootDir: string;
  /** Where pod logs live. */
  podLogsDir: string;
  /** The pods to measure, asked at each round. */
  pods: () => Iterable<PodFilesTarget>;
  /** How often; ≤ 0 measures only at start. */
  periodMs: number;
  /** Rounds each deadline to this grid (lib/util/tick.ts); 0 = none. */
  tickGridMs?: number;
  logger?: Logger;
}

/** Measures the pods' log and hosts files on a loop of its own. */
export class PodFilesCache {
  readonly #o: PodFilesCacheOptions;
  readonly #log: Logger;
  #latest = new Map<string, PodFilesUsage>();
  #timer: Timer | undefined;
  #stopped = true;
  #round: Promise<void> | undefined;
  #again = false;

  /** @param opts clock, directories, the pods, the period */
  constructor(opts: PodFilesCacheOptions) {
    this.#o = opts;
    this.#log = opts.logger ?? silentLogger;
  }

  /** Measures right away, then every period until {@link stop}. */
  start(): void {
    if (!this.#stopped) return;
    this.#stopped = false;
    void this.#tick();
  }

  /** Stops the loop. */
  stop(): void {
    this.#stopped = true;
    this.#timer?.cancel();
    this.#timer = undefined;
  }

  /**
   * The pod's last figures; never touches the disk.
   * @param uid the pod UID
   * @returns its files' usage, or undefined before they were first measured
   */
  get(uid: string): PodFilesUsage | undefined {
    return this.#latest.get(uid);
  }

  /**
   * Measures soon, for pods just added: starts a round now, or one more after
   * the round running. Never two rounds at once.
   */
  measureSoon(): void {
    if (this.#stopped) return;
    if (this.#round) {
      this.#again = true;
      return;
    }
    void this.#measure();
  }

  /**
   * One round over every pod, joining the round in flight if any.
   * @returns when the round is done
   */
  #measure(): Promise<void> {
    this.#round ??= Promise.resolve().then(() => this.#measureAll()).finally(() => {
      this.#round = undefined;
      if (this.#again) {
        this.#again = false;
        this.measureSoon();
      }
    });
    return this.#round;
  }

  /** Every pod's files, synchronously: a listing and a few lstats a pod. */
  #measureAll(): void {
    if (this.#stopped) return;
    const next = new Map<string, PodFilesUsage>();
    for (const p of this.#o.pods()) {
      const logDir = podLogsDirectory(this.#o.podLogsDir, p);
      const out: PodFilesUsage = { containerLogs: new Map() };
      for (const name of p.containers) {
        const logs = this.#measureOne(() => filesUsage(`${logDir}/${name}`), p, name);
        if (logs) out.containerLogs.set(name, logs);
      }
      const podLogs = this.#measureOne(() => filesUsage(logDir), p);
      if (podLogs) out.podLogs = podLogs;
      const hosts = this.#measureOne(() => fileUsage(etcHostsPath(this.#o.rootDir, p.uid)), p);
      if (hosts) out.etcHosts = hosts;
      next.set(p.uid, out);
    }
    this.#latest = next;
  }

  async #tick(): Promise<void> {
    try {
      await this.#measure();
    } catch (err) {
      this.#log.error("measuring the pods' log and hosts files failed", err);
    }
    if (this.#stopped || this.#o.periodMs <= 0) return;
    const delay = alignedDelay(this.#o.clock.now(), this.#o.periodMs, this.#o.tickGridMs ?? 0);
    this.#timer = this.#o.clock.setTimeout(() => void this.#tick(), delay);
  }

  /** A missing file is no usage; another error is logged. */
  #measureOne(
    what: () => DiskUsage | undefined,
    p: PodFilesTarget,
    container?: string,
  ): MeasuredUsage | undefined {
    const timeMs = this.#o.clock.now();
    try {
      const used = what();
      return used && { ...used, timeMs };
    } catch (err) {
      if (err instanceof Deno.errors.NotFound) return undefined;
      this.#log.v(4).info("Unable to measure pod files", {
        pod: `${p.namespace}/${p.name}`,
        ...(container !== undefined ? { container } : {}),
        err: String(err),
      });
      return undefined;
    }
  }
}
