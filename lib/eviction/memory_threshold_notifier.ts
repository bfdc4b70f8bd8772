/**
 * The memory threshold notifier (upstream's memory_threshold_notifier_others.go): lets
 * the eviction manager see `memory.available` (root memory cgroup) or
 * `allocatableMemory.available` (the pods' cgroup) cross its eviction threshold when
 * it happens, instead of at the next housekeeping tick.
 *
 * The kernel watches usage, not availability; so, as upstream, the threshold on usage is
 * `capacity − eviction threshold + inactive_file`, from the latest Summary: the manager
 * is told when the working set reaches `capacity − eviction threshold`. Each
 * {@link MemoryThresholdNotifier.updateThreshold} re-arms with fresh figures.
 *
 * Upstream makes these only with `kernelMemcgNotification: true` (default false), and on
 * cgroup v2 its notifier does nothing; here v2 polls the cgroup's usage instead.
 *
 * ```ts
 * const notifiers = createMemoryNotifiers({
 *   thresholds, podCgroupRoot: "/kubepods", layout: detectCgroupLayout(),
 *   handler: (msg) => manager.synchronizeSoon(msg), clock: realClock, log,
 * });
 * for (const n of notifiers) n.start();
 * // every 10 s (upstream's notifierRefreshInterval): n.updateThreshold(summary)
 * ```
 *
 * @module
 */

import type { CgroupLayout } from "../cgroup/types.ts";
import type { Summary } from "../stats/summary_types.ts";
import type { Clock } from "../util/clock.ts";
import type { Logger } from "../util/log.ts";
import {
  type CgroupNotifier,
  cgroupUsageReader,
  DEFAULT_POLL_INTERVAL_MS,
  EventfdCgroupNotifier,
  PollingCgroupNotifier,
} from "./cgroup_notifier.ts";

/** The two signals a memory threshold notifier serves. */
export type MemorySignal = "memory.available" | "allocatableMemory.available";

/**
 * The part of an eviction threshold the notifier reads (structurally a subset of the
 * manager's threshold): the signal, its value as a quantity in bytes or a fraction of
 * capacity, and its grace period (0 or absent: a hard threshold).
 */
export interface MemoryThresholdSpec {
  signal: string;
  value: { quantity?: number | undefined; percentage?: number | undefined };
  gracePeriodMs?: number | undefined;
}

/** Which way the cgroup is watched. */
export type NotifierBackend = "eventfd" | "poll";

/** The summary lacked the figures a threshold is computed from. */
export class IncompleteSummaryError extends Error {
  /** @param message what is missing */
  constructor(message: string) {
    super(message);
    this.name = "IncompleteSummaryError";
  }
}

/** A usage threshold computed from a Summary, and the capacity it relates to. */
export interface MemcgThreshold {
  /** Bytes of cgroup usage at which the eviction threshold is reached. */
  usageBytes: number;
  /** available + working set: the node's (or the pods' cgroup's) memory. */
  capacityBytes: number;
}

/**
 * Whether `threshold` is for the pods' cgroup rather than the node.
 * @param threshold the threshold
 * @returns true for allocatableMemory.available
 */
export function isAllocatableThreshold(threshold: MemoryThresholdSpec): boolean {
  return threshold.signal === "allocatableMemory.available";
}

/**
 * Whether the notifier serves `threshold` (upstream: memory.available and
 * allocatableMemory.available only).
 * @param threshold the threshold
 * @returns true for the two memory signals
 */
export function isMemoryThreshold(threshold: MemoryThresholdSpec): boolean {
  return threshold.signal === "memory.available" ||
    threshold.signal === "allocatableMemory.available";
}

/**
 * Upstream's memcg threshold: capacity − eviction threshold + inactive_file, where
 * capacity = available + working set and inactive_file = usage − working set, taken from
 * the node's memory (memory.available) or the "pods" system container
 * (allocatableMemory.available).
 * @param threshold the eviction threshold
 * @param summary the latest Summary
 * @returns the usage threshold in bytes and the capacity
 * @throws {IncompleteSummaryError} when the figures are missing
 */
export function memcgThreshold(threshold: MemoryThresholdSpec, summary: Summary): MemcgThreshold {
  let memory = summary.node.memory;
  if (isAllocatableThreshold(threshold)) {
    const pods = summary.node.systemContainers?.find((c) => c.name === "pods");
    if (pods === undefined) throw new IncompleteSummaryError('system container "pods" not found');
    memory = pods.memory;
  }
  const usage = memory?.usageBytes;
  const workingSet = memory?.workingSetBytes;
  const available = memory?.availableBytes;
  if (usage === undefined || workingSet === undefined || available === undefined) {
    throw new IncompleteSummaryError(
      `summary was incomplete: expected usageBytes, workingSetBytes and availableBytes, got ${
        JSON.stringify(memory ?? null)
      }`,
    );
  }
  const capacity = available + workingSet;
  const inactiveFile = usage - workingSet;
  const { quantity, percentage } = threshold.value;
  // Upstream: int64(float64(capacity) * float64(percentage)), its percentage a float32.
  const evictAt = quantity ?? Math.trunc(capacity * Math.fround(percentage ?? 0));
  return { usageBytes: capacity - evictAt + inactiveFile, capacityBytes: capacity };
}

/** Options for {@link MemoryThresholdNotifier}. */
export interface MemoryThresholdNotifierOptions {
  threshold: MemoryThresholdSpec;
  /** The memory cgroup directory watched (root memory cgroup, or the pods' cgroup). */
  cgroupDir: string;
  /** eventfd where cgroup v1's event_control exists, else poll. */
  backend: NotifierBackend;
  /** Called with upstream's message ("eviction manager: … crossed") on each crossing. */
  handler: (message: string) => void;
  /** Drives the poll backend. */
  clock: Clock;
  log: Logger;
  /** Poll backend's interval; {@link DEFAULT_POLL_INTERVAL_MS} by default. */
  pollIntervalMs?: number;
  /**
   * Polling only, never a kernel registration (kernelMemcgNotification off);
   * by default eventfd where the memory controller is v1.
   */
  pollOnly?: boolean;
}

/**
 * One eviction threshold watched on one memory cgroup; implements the eviction
 * manager's `ThresholdNotifier` (start, updateThreshold, description, stop). Nothing is
 * watched until the first {@link updateThreshold}, as upstream.
 */
export class MemoryThresholdNotifier {
  readonly #opts: MemoryThresholdNotifierOptions;
  readonly #backend: NotifierBackend;
  #current: CgroupNotifier | undefined;
  #armedAt: number | undefined;
  #started = false;
  #stopped = false;
  #loggedDisarm = false;
  readonly #logged = new Set<string>();
  readonly #releasing = new Set<Promise<void>>();

  /** @param opts the threshold, cgroup, backend, handler, clock and logger */
  constructor(opts: MemoryThresholdNotifierOptions) {
    this.#opts = opts;
    this.#backend = opts.backend;
  }

  /** The memory cgroup watched. */
  get cgroupDir(): string {
    return this.#opts.cgroupDir;
  }

  /** The backend asked for at construction. */
  get preferredBackend(): NotifierBackend {
    return this.#backend;
  }

  /** The backend armed now: poll where eventfd was chosen but its registration failed. */
  get backend(): NotifierBackend | undefined {
    if (this.#current === undefined) return undefined;
    return this.#current instanceof EventfdCgroupNotifier ? "eventfd" : "poll";
  }

  /** The usage threshold armed now, in bytes, if any. */
  get armedThreshold(): number | undefined {
    return this.#armedAt;
  }

  /** Starts delivering crossings to the handler (until {@link stop}). */
  start(): void {
    if (this.#started || this.#stopped) return;
    this.#started = true;
    this.#opts.log.info("Eviction manager: created memoryThresholdNotifier", {
      notifier: this.description(),
      cgroup: this.#opts.cgroupDir,
      backend: this.#backend,
    });
    this.#current?.start(() => this.#crossed());
  }

  /**
   * Re-arms from the latest Summary: a new registration replaces the old one (which is
   * released) unless the threshold is unchanged. Errors are logged, never thrown: the
   * manager's housekeeping still sees the signal.
   * @param summary the latest Summary
   */
  updateThreshold(summary: Summary): void {
    if (this.#stopped) return;
    let computed: MemcgThreshold;
    try {
      computed = memcgThreshold(this.#opts.threshold, summary);
    } catch (err) {
      this.#opts.log.info("Eviction manager: failed to update notifier", {
        notifier: this.description(),
        err: err instanceof Error ? err.message : String(err),
      });
      return;
    }
    const bytes = computed.usageBytes;
    // ≤ 0: the threshold is met whatever the usage; above capacity (an eviction threshold
    // below inactive_file): usage never gets there. No crossing to watch either way;
    // housekeeping decides.
    if (bytes <= 0 || bytes > computed.capacityBytes) {
      this.#disarm();
      if (!this.#loggedDisarm) {
        this.#loggedDisarm = true;
        this.#opts.log.info("Eviction manager: memory threshold cannot be watched, not armed", {
          notifier: this.description(),
          thresholdBytes: bytes,
          capacityBytes: computed.capacityBytes,
        });
      }
      return;
    }
    this.#loggedDisarm = false;
    if (bytes === this.#armedAt) return;
    this.#opts.log.v(3).info("Eviction manager: setting notifier to capacity", {
      notifier: this.description(),
      capacity: bytes,
    });
    this.#disarm();
    this.#current = this.#arm(bytes);
    if (this.#current === undefined) return;
    this.#armedAt = bytes;
    if (this.#started) this.#current.start(() => this.#crossed());
  }

  #arm(bytes: number): CgroupNotifier | undefined {
    const { cgroupDir, log, clock } = this.#opts;
    if (this.#backend === "eventfd") {
      try {
        return new EventfdCgroupNotifier({ cgroupDir, threshold: bytes, log });
      } catch (err) {
        this.#logOnce("eventfd", "Eviction manager: memcg threshold events failed, polling", err);
      }
    }
    try {
      return new PollingCgroupNotifier({
        cgroupDir,
        threshold: bytes,
        readUsage: cgroupUsageReader(cgroupDir),
        clock,
        intervalMs: this.#opts.pollIntervalMs ?? DEFAULT_POLL_INTERVAL_MS,
        log,
      });
    } catch (err) {
      this.#logOnce("poll", "Eviction manager: cannot watch memory usage", err);
      return undefined;
    }
  }

  #logOnce(what: string, msg: string, err: unknown): void {
    if (this.#logged.has(what)) return;
    this.#logged.add(what);
    this.#opts.log.error(msg, err, { notifier: this.description() });
  }

  #disarm(): void {
    const current = this.#current;
    if (current !== undefined) {
      this.#releasing.add(current.stopped);
      void current.stopped.then(() => this.#releasing.delete(current.stopped));
      current.stop();
    }
    this.#current = undefined;
    this.#armedAt = undefined;
  }

  #crossed(): void {
    if (this.#stopped) return;
    this.#opts.handler(`eviction manager: ${this.description()} crossed`);
  }

  /** Upstream's wording: "hard memory eviction threshold", "soft allocatable memory …". */
  description(): string {
    const kind = (this.#opts.threshold.gracePeriodMs ?? 0) === 0 ? "hard" : "soft";
    const allocatable = isAllocatableThreshold(this.#opts.threshold) ? "allocatable " : "";
    return `${kind} ${allocatable}memory eviction threshold`;
  }

  /** Stops watching; the eventfd and its worker thread are released (see {@link stopped}). */
  stop(): void {
    if (this.#stopped) return;
    this.#stopped = true;
    this.#disarm();
  }

  /** Resolves once every registration made so far is released (for tests and shutdown). */
  stopped(): Promise<void> {
    return Promise.all(this.#releasing).then(() => {});
  }
}

/** Options for {@link createMemoryNotifiers}. */
export interface CreateMemoryNotifiersOptions {
  /** The manager's thresholds; only the memory ones get a notifier. */
  thresholds: readonly MemoryThresholdSpec[];
  /** The pods' cgroup under the hierarchy root (cgroupfs form, e.g. "/kubepods"). */
  podCgroupRoot: string;
  /** From detectCgroupLayout(). */
  layout: CgroupLayout;
  /** Called on each crossing (the manager synchronizes). */
  handler: (message: string) => void;
  clock: Clock;
  log: Logger;
  /** Poll backend's interval; {@link DEFAULT_POLL_INTERVAL_MS} by default. */
  pollIntervalMs?: number;
  /**
   * Polling only, never a kernel registration (kernelMemcgNotification off);
   * by default eventfd where the memory controller is v1.
   */
  pollOnly?: boolean;
}

/**
 * One notifier per memory threshold (as upstream's manager Start), on the root memory
 * cgroup for memory.available and on the pods' cgroup for allocatableMemory.available;
 * eventfd where the memory controller is v1 (v1 or hybrid), polling on v2.
 * @param opts the thresholds, cgroup layout and handler
 * @returns the notifiers, not started and not armed
 */
export function createMemoryNotifiers(
  opts: CreateMemoryNotifiersOptions,
): MemoryThresholdNotifier[] {
  const v1Memory = opts.layout.v1.memory;
  const mount = v1Memory ?? opts.layout.unified ?? opts.layout.root;
  return opts.thresholds.filter(isMemoryThreshold).map((threshold) => {
    const cgroupDir = isAllocatableThreshold(threshold)
      ? `${mount}${opts.podCgroupRoot === "/" ? "" : opts.podCgroupRoot}`
      : mount;
    return new MemoryThresholdNotifier({
      threshold,
      cgroupDir,
      // Chosen by layout: the pods' cgroup may not exist yet. A failed registration
      // falls back to polling at arm time.
      backend: v1Memory !== undefined && !opts.pollOnly ? "eventfd" : "poll",
      handler: opts.handler,
      clock: opts.clock,
      log: opts.log,
      ...(opts.pollIntervalMs === undefined ? {} : { pollIntervalMs: opts.pollIntervalMs }),
    });
  });
}
