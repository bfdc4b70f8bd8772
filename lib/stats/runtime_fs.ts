/**
 * The runtime's filesystem figures (ImageFsInfo: the image and container
 * filesystems; ListContainerStats: each container's writable layer), read on
 * their own loop so that no request waits on the runtime for them, as
 * cAdvisor keeps disk usage on a loop of its own (container/common/fsHandler.go)
 * apart from its 10 s cgroup housekeeping.
 *
 * The period is 10 s by default: upstream's eviction manager reads the Summary
 * with filesystem stats every 10 s (its monitoring interval), which is how
 * often an upstream kubelet asks the runtime for these figures in steady state,
 * and containerd itself re-measures them every 10 s (its CRI
 * `stats_collect_period`), so reading more often returns the same numbers.
 * cAdvisor's own disk loop (one minute, for `du` walks) is slower because a
 * walk costs more than this call. On failure the period doubles, up to 20
 * times, as cAdvisor's fsHandler backs off.
 *
 * ```
 *   timer ──► refresh() ◄── imageFsStats() (image GC)
 *                │  one call in flight at most: callers join it
 *                ▼
 *   ImageFsInfo + ListContainerStats ──► latest (each figure with the time it was read)
 *                                          │
 *                        snapshot({withFs}) reads it, never the runtime
 * ```
 *
 * @module
 */

import type { FilesystemUsage, RuntimeService } from "../cri/types.ts";
import type { Clock, Timer } from "../util/clock.ts";
import { type Logger, silentLogger } from "../util/log.ts";
import { alignedDelay } from "../util/tick.ts";

/** Upstream's eviction monitoring interval and containerd's stats_collect_period. */
export const DEFAULT_RUNTIME_FS_PERIOD_MS = 10_000;
/** cAdvisor fsHandler's maxBackoffFactor. */
const MAX_BACKOFF_FACTOR = 20;
const RUNTIME_CALL_MS = 5_000;

/** A figure the runtime reported, with when it was measured. */
export interface RuntimeFsFigure {
  usage: FilesystemUsage;
  /**
   * Epoch ms: the runtime's own timestamp of the figure when it gives one no
   * later than our call, otherwise when our call was made.
   */
  timeMs: number;
}

/** What one read returned; a part whose call failed is left out. */
export interface RuntimeFsFigures {
  imageFs?: RuntimeFsFigure;
  /** The container filesystem (the image filesystem when the runtime names none). */
  containerFs?: RuntimeFsFigure;
  /** Writable layers by container ID; undefined when ListContainerStats failed. */
  layers?: Map<string, RuntimeFsFigure>;
}

/** Options for {@link RuntimeFsCache}. */
export interface RuntimeFsCacheOptions {
  clock: Clock;
  runtime: RuntimeService;
  /** How often to read; {@link DEFAULT_RUNTIME_FS_PERIOD_MS}. ≤ 0: only on demand. */
  periodMs?: number;
  /** Rounds each deadline to this grid (lib/util/tick.ts); 0 = none. */
  tickGridMs?: number;
  logger?: Logger;
}

/** Keeps the runtime's last filesystem figures, read by one loop. */
export class RuntimeFsCache {
  readonly #clock: Clock;
  readonly #runtime: RuntimeService;
  readonly #periodMs: number;
  readonly #gridMs: number;
  readonly #log: Logger;
  #latest: RuntimeFsFigures = {};
  #inFlight: Promise<RuntimeFsFigures> | undefined;
  #delayMs: number;
  #timer: Timer | undefined;
  #stopped = true;

  /** @param opts clock, runtime, period */
  constructor(opts: RuntimeFsCacheOptions) {
    this.#clock = opts.clock;
    this.#runtime = opts.runtime;
    this.#periodMs = opts.periodMs ?? DEFAULT_RUNTIME_FS_PERIOD_MS;
    this.#gridMs = opts.tickGridMs ?? 0;
    this.#log = opts.logger ?? silentLogger;
    this.#delayMs = this.#periodMs;
  }

  /** Reads right away, then every period until {@link stop}. */
  start(): void {
    if (!this.#stopped) return;
    this.#stopped = false;
    void this.#tick();
  }

  /** Stops the loop; a call in flight finishes but arms nothing. */
  stop(): void {
    this.#stopped = true;
    this.#timer?.cancel();
    this.#timer = undefined;
  }

  /**
   * The last figures read. Does not call the runtime; may be called
   * repeatedly; the caller must not mutate the result.
   * @returns the figures (empty before the first read finishes)
   */
  latest(): RuntimeFsFigures {
    return this.#latest;
  }

  /**
   * Reads the figures now, or joins the read in flight: never more than one
   * runtime call of each kind at a time.
   * @param signal stops waiting (the shared call itself runs on)
   * @returns the figures of that read
   */
  refresh(signal?: AbortSignal): Promise<RuntimeFsFigures> {
    this.#inFlight ??= this.#read().finally(() => (this.#inFlight = undefined));
    if (!signal) return this.#inFlight;
    signal.throwIfAborted();
    return new Promise((resolve, reject) => {
      const onAbort = () => reject(signal.reason);
      signal.addEventListener("abort", onAbort, { once: true });
      this.#inFlight!.then(resolve, reject).finally(() =>
        signal.removeEventListener("abort", onAbort)
      );
    });
  }

  async #tick(): Promise<void> {
    let failed = false;
    try {
      const figures = await this.refresh();
      failed = !figures.imageFs || !figures.layers;
    } catch (err) {
      failed = true;
      this.#log.error("reading the runtime's filesystem stats failed", err);
    }
    if (this.#stopped || this.#periodMs <= 0) return;
    this.#delayMs = failed
      ? Math.min(this.#delayMs * 2, this.#periodMs * MAX_BACKOFF_FACTOR)
      : this.#periodMs;
    const delay = alignedDelay(this.#clock.now(), this.#delayMs, this.#gridMs);
    this.#timer = this.#clock.setTimeout(() => void this.#tick(), delay);
  }

  async #read(): Promise<RuntimeFsFigures> {
    const readAt = this.#clock.now();
    const signal = AbortSignal.timeout(RUNTIME_CALL_MS);
    const [fsInfo, stats] = await Promise.allSettled([
      this.#runtime.imageFsInfo({ signal }),
      this.#runtime.listContainerStats({}, { signal }),
    ]);
    const figure = (usage: FilesystemUsage): RuntimeFsFigure => ({
      usage,
      timeMs: measuredAt(usage, readAt),
    });
    const out: RuntimeFsFigures = {};
    if (fsInfo.status === "fulfilled") {
      const image = fsInfo.value.imageFilesystems[0];
      const container = fsInfo.value.containerFilesystems[0] ?? image;
      if (image) out.imageFs = figure(image);
      if (container) out.containerFs = figure(container);
      if (!image) this.#log.error("ImageFsInfo failed", new Error("no image filesystem reported"));
    } else this.#log.error("ImageFsInfo failed", fsInfo.reason);
    if (stats.status === "fulfilled") {
      out.layers = new Map();
      for (const s of stats.value) {
        if (s.writableLayer) out.layers.set(s.attributes.id, figure(s.writableLayer));
      }
    } else this.#log.error("ListContainerStats failed", stats.reason);
    // A failed part keeps its previous figures (with their old times) rather than vanishing.
    this.#latest = {
      ...this.#latest,
      ...out,
    };
    return out;
  }
}

/**
 * When the runtime measured a figure: its timestamp (ns) when it gives one
 * that is not after our call (containerd stamps each snapshot's usage when its
 * own loop measured it), otherwise the time of our call.
 */
function measuredAt(usage: FilesystemUsage, readAtMs: number): number {
  const ms = usage.timestamp / 1e6;
  return ms > 0 && ms <= readAtMs ? ms : readAtMs;
}
