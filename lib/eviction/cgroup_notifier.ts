/**
 * Being told when a memory cgroup's usage crosses a byte threshold, two ways:
 *
 * - {@link EventfdCgroupNotifier}: cgroup v1's memory thresholds, as upstream's
 *   threshold_notifier_linux.go: an eventfd registered through
 *   `cgroup.event_control` as "<eventfd> <fd of memory.usage_in_bytes> <bytes>"; the
 *   kernel signals it when usage crosses the threshold in either direction. A read of
 *   the eventfd blocks a worker thread (FFI `nonblocking`), never the event loop.
 * - {@link PollingCgroupNotifier}: cgroup v2 has no such interface (upstream then has no
 *   notifier at all and relies on its 10 s housekeeping); we read the cgroup's usage,
 *   one small file, every interval on the injected clock, and report a crossing in
 *   either direction the same way.
 *
 * ```
 *  new ──► armed ──start(fn)──► watching ──crossed──► fn() ─┐
 *            │                     ▲  └─────────────────────┘
 *            └──────stop()─────────┴──stop()──► stopped (fds closed, thread back)
 * ```
 *
 * @module
 */

import type { Clock, Timer } from "../util/clock.ts";
import type { Logger } from "../util/log.ts";
import {
  acquireLibc,
  closeFd,
  createEventfd,
  O_RDONLY,
  O_WRONLY,
  openFd,
  readEventfd,
  releaseLibc,
  signalEventfd,
  writeText,
} from "./_ffi.ts";

/** A usage threshold being watched on one cgroup. */
export interface CgroupNotifier {
  /**
   * Calls `onCrossed` each time usage crosses the threshold (up or down) until
   * {@link stop}. Called at most once.
   */
  start(onCrossed: () => void): void;
  /** Stops watching and releases what was held; may be called repeatedly. */
  stop(): void;
  /** Resolves once everything is released (after {@link stop}). */
  readonly stopped: Promise<void>;
}

/** A notifier could not be set up on a cgroup (missing file, refused write). */
export class CgroupNotifierError extends Error {
  /**
   * @param cgroupDir the cgroup
   * @param message what failed
   * @param options the cause
   */
  constructor(readonly cgroupDir: string, message: string, options?: ErrorOptions) {
    super(`memory threshold notifier on ${cgroupDir}: ${message}`, options);
    this.name = "CgroupNotifierError";
  }
}

/** Calls the handler; a throw is logged, so it stops neither the watch nor the process. */
function report(onCrossed: () => void, log: Logger, cgroupDir: string): void {
  try {
    onCrossed();
  } catch (err) {
    log.error("Eviction manager: memory threshold handler failed", err, { cgroup: cgroupDir });
  }
}

/** The file upstream watches (memoryUsageAttribute). */
export const MEMORY_USAGE_ATTRIBUTE = "memory.usage_in_bytes";

/**
 * Whether `cgroupDir` offers cgroup v1 memory threshold events.
 * @param cgroupDir a memory cgroup directory
 * @returns true when it has cgroup.event_control and memory.usage_in_bytes
 */
export function hasEventControl(cgroupDir: string): boolean {
  try {
    Deno.statSync(`${cgroupDir}/cgroup.event_control`);
    Deno.statSync(`${cgroupDir}/${MEMORY_USAGE_ATTRIBUTE}`);
    return true;
  } catch {
    return false;
  }
}

/** Options for {@link EventfdCgroupNotifier}. */
export interface EventfdCgroupNotifierOptions {
  /** The v1 memory cgroup directory (e.g. /sys/fs/cgroup/memory/kubepods). */
  cgroupDir: string;
  /** Bytes of memory.usage_in_bytes; must be positive. */
  threshold: number;
  /** Where a failed read of the eventfd is logged. */
  log: Logger;
}

/** cgroup v1 memory threshold events through an eventfd. */
export class EventfdCgroupNotifier implements CgroupNotifier {
  readonly stopped: Promise<void>;
  readonly #cgroupDir: string;
  readonly #log: Logger;
  #eventfd = -1;
  #state: "armed" | "watching" | "stopping" | "stopped" = "armed";
  #release!: () => void;

  /**
   * Registers the threshold with the kernel (synchronously, so a refusal is thrown here).
   * @param opts the cgroup and threshold
   * @throws {CgroupNotifierError} when a file cannot be opened or the kernel refuses
   */
  constructor(opts: EventfdCgroupNotifierOptions) {
    this.#cgroupDir = opts.cgroupDir;
    this.#log = opts.log;
    this.stopped = new Promise((resolve) => this.#release = resolve);
    if (!(opts.threshold > 0) || !Number.isSafeInteger(opts.threshold)) {
      throw new CgroupNotifierError(opts.cgroupDir, `invalid threshold ${opts.threshold}`);
    }
    acquireLibc();
    let watch = -1;
    let control = -1;
    let eventfd = -1;
    let failure: unknown;
    try {
      watch = openFd(`${opts.cgroupDir}/${MEMORY_USAGE_ATTRIBUTE}`, O_RDONLY);
      control = openFd(`${opts.cgroupDir}/cgroup.event_control`, O_WRONLY);
      eventfd = createEventfd();
      writeText(control, `${eventfd} ${watch} ${opts.threshold}`, "cgroup.event_control");
    } catch (err) {
      failure = err;
    }
    // The kernel keeps its own reference to the watched file: only the eventfd stays open.
    if (watch >= 0) closeFd(watch);
    if (control >= 0) closeFd(control);
    if (failure !== undefined) {
      if (eventfd >= 0) closeFd(eventfd);
      releaseLibc();
      this.#state = "stopped";
      this.#release();
      throw new CgroupNotifierError(opts.cgroupDir, "cannot register the threshold", {
        cause: failure,
      });
    }
    this.#eventfd = eventfd;
  }

  start(onCrossed: () => void): void {
    if (this.#state !== "armed") return;
    this.#state = "watching";
    void this.#watch(onCrossed);
  }

  async #watch(onCrossed: () => void): Promise<void> {
    try {
      for (;;) {
        const count = await readEventfd(this.#eventfd);
        if (this.#state !== "watching") return;
        if (count === undefined) {
          this.#log.info("Eviction manager: error reading memcg events", {
            cgroup: this.#cgroupDir,
          });
          return;
        }
        report(onCrossed, this.#log, this.#cgroupDir);
      }
    } finally {
      this.#close();
    }
  }

  stop(): void {
    switch (this.#state) {
      case "armed":
        this.#close();
        return;
      case "watching":
        // The worker thread is blocked in read(2): our own signal wakes it, then it closes.
        this.#state = "stopping";
        signalEventfd(this.#eventfd);
        return;
      default:
        return;
    }
  }

  #close(): void {
    if (this.#eventfd < 0) return;
    // Closing the eventfd is what unregisters the threshold in the kernel.
    closeFd(this.#eventfd);
    this.#eventfd = -1;
    releaseLibc();
    this.#state = "stopped";
    this.#release();
  }
}

/**
 * A reader of a cgroup's memory usage in bytes from its smallest file: memory.current
 * (v2), memory.usage_in_bytes (v1), or, in the v2 root which has neither, anon + file
 * of memory.stat (what the stats path reports as the root's usage).
 * @param cgroupDir the memory cgroup directory
 * @returns a function reading the usage now
 * @throws {CgroupNotifierError} when the directory has no memory usage file
 */
export function cgroupUsageReader(cgroupDir: string): () => number {
  for (const file of ["memory.current", MEMORY_USAGE_ATTRIBUTE]) {
    const path = `${cgroupDir}/${file}`;
    try {
      Deno.statSync(path);
    } catch {
      continue;
    }
    return () => {
      const value = Number(Deno.readTextFileSync(path).trim());
      if (!Number.isFinite(value)) throw new CgroupNotifierError(cgroupDir, `bad ${file}`);
      return value;
    };
  }
  const stat = `${cgroupDir}/memory.stat`;
  try {
    Deno.statSync(stat);
  } catch (cause) {
    throw new CgroupNotifierError(cgroupDir, "no memory usage file", { cause });
  }
  return () => {
    let sum = 0;
    for (const line of Deno.readTextFileSync(stat).split("\n")) {
      const [key, value] = line.split(" ");
      if (key === "anon" || key === "file") sum += Number(value);
    }
    return sum;
  };
}

/** Options for {@link PollingCgroupNotifier}. */
export interface PollingCgroupNotifierOptions {
  /** The cgroup, for messages. */
  cgroupDir: string;
  /** Bytes of usage. */
  threshold: number;
  /** Reads the usage now (usually {@link cgroupUsageReader}). */
  readUsage: () => number;
  /** Drives the polls. */
  clock: Clock;
  /** Time between two reads. */
  intervalMs: number;
  /** Where a failed read is logged (once, until a read works again). */
  log: Logger;
}

/**
 * The default poll interval: half the 1 s reaction we aim for, one small read each; at
 * 250 ms two notifiers' timer wake-ups alone cost ~0.26% of a core (docs/benchmarks.md).
 */
export const DEFAULT_POLL_INTERVAL_MS = 500;

/**
 * A threshold watched by reading usage every interval; crossings are reported as the
 * kernel reports them (usage ≥ threshold is above).
 */
export class PollingCgroupNotifier implements CgroupNotifier {
  readonly stopped: Promise<void>;
  readonly #opts: PollingCgroupNotifierOptions;
  #timer: Timer | undefined;
  #above: boolean | undefined;
  #failing = false;
  #done = false;
  #release!: () => void;

  /** @param opts the cgroup, threshold, reader and clock */
  constructor(opts: PollingCgroupNotifierOptions) {
    this.#opts = opts;
    this.stopped = new Promise((resolve) => this.#release = resolve);
  }

  start(onCrossed: () => void): void {
    if (this.#timer !== undefined || this.#done) return;
    this.#poll(() => {});
    this.#timer = this.#opts.clock.setInterval(() => this.#poll(onCrossed), this.#opts.intervalMs);
  }

  #poll(onCrossed: () => void): void {
    let usage: number;
    try {
      usage = this.#opts.readUsage();
    } catch (err) {
      if (!this.#failing) {
        this.#opts.log.error("Eviction manager: cannot read memory usage", err, {
          cgroup: this.#opts.cgroupDir,
        });
      }
      this.#failing = true;
      return;
    }
    this.#failing = false;
    const above = usage >= this.#opts.threshold;
    const crossed = this.#above !== undefined && above !== this.#above;
    this.#above = above;
    if (crossed) report(onCrossed, this.#opts.log, this.#opts.cgroupDir);
  }

  stop(): void {
    if (this.#done) return;
    this.#done = true;
    this.#timer?.cancel();
    this.#timer = undefined;
    this.#release();
  }
}
