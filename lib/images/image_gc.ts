/**
 * Image garbage collection, as upstream's pkg/kubelet/images/image_gc_manager.go:
 * every image the runtime holds is tracked with the time it was first seen and
 * the last time a container used it; when the image filesystem is at or over
 * `imageGCHighThresholdPercent`, unused images are removed least recently used
 * first until usage is back at `imageGCLowThresholdPercent`, and with
 * `imageMaximumGCAge` an image unused for that long goes whatever the disk.
 *
 * ```
 *  every 5 min ─► detectImages ─► records {firstDetected, lastUsed, size, pinned}
 *  every 5 min ─► garbageCollect:
 *     eviction order = records − in use − pinned, by lastUsed then firstDetected
 *     ─► freeOldImages (maxAge, once the agent has run longer than maxAge)
 *     ─► usage ≥ high? ─► freeSpace(capacity·(100−low)% − available), skipping
 *        images younger than minAge ─► freed too little: FreeDiskSpaceFailed
 *  eviction (disk pressure) ─► deleteUnusedImages: freeSpace(everything)
 * ```
 *
 * "In use" is what upstream's GetPods(all) gives: the image of every container
 * the runtime lists, exited ones included (a sandbox is not a container).
 * Pinned images are never removed. containerd 1.6 pins nothing, not even its
 * sandbox image (containerd 1.7+ does), so the sandbox image its verbose CRI
 * Status names (`config.sandboxImage`) counts as pinned: removing it would
 * make the next sandbox pull it again.
 *
 * @module
 */

import type { Container, Image, ImageSpec, RuntimeService } from "../cri/types.ts";
import { discardEvents, type EventRecorder } from "../events/types.ts";
import { EventReason } from "../events/reasons.ts";
import { nodeReference } from "../events/recorder.ts";
import type { Clock, Timer } from "../util/clock.ts";
import { type Logger, silentLogger } from "../util/log.ts";
import { normalizeImage } from "./reference.ts";

/** Upstream's ImageGCPeriod, and its detection period. */
export const IMAGE_GC_PERIOD_MS = 5 * 60_000;

/** The CRI calls image GC makes. */
export type ImageGCRuntime = Pick<
  RuntimeService,
  "listImages" | "removeImage" | "listContainers" | "status"
>;

/** The image filesystem's size, as the stats provider reads it (statfs of its mountpoint). */
export interface ImageFsStats {
  capacityBytes?: number;
  availableBytes?: number;
}

/** When images are collected (upstream's ImageGCPolicy). */
export interface ImageGCPolicy {
  /** `imageGCHighThresholdPercent`: usage at or above this always collects (85). */
  highThresholdPercent: number;
  /** `imageGCLowThresholdPercent`: collection frees down to this usage (80). */
  lowThresholdPercent: number;
  /** `imageMinimumGCAge`, ms: a younger image is never collected for space (2 min). */
  minAgeMs: number;
  /** `imageMaximumGCAge`, ms: an image unused this long is collected; 0 turns it off. */
  maxAgeMs: number;
}

/** Why an image was removed (the `reason` label of upstream's image_garbage_collected_total). */
export type ImageGCReason = "age" | "space";

/** Options for {@link ImageGC}. */
export interface ImageGCOptions {
  runtime: ImageGCRuntime;
  /** The image filesystem's capacity and availability (StatsProvider.imageFsStats). */
  imageFsStats: (signal?: AbortSignal) => Promise<ImageFsStats>;
  policy: ImageGCPolicy;
  clock: Clock;
  /** The node the warning events are about. */
  nodeName: string;
  events?: EventRecorder;
  logger?: Logger;
  /** Called for each image removed (metrics). */
  onImageRemoved?: (reason: ImageGCReason) => void;
}

interface ImageRecord {
  /** Epoch ms. */
  firstDetected: number;
  /** Epoch ms; 0 when no container was ever seen using it. */
  lastUsed: number;
  size: number;
  pinned: boolean;
}

interface EvictionCandidate extends ImageRecord {
  id: string;
}

/**
 * Image GC failed: the capacity is unknown, it freed less than needed
 * (upstream's FreeDiskSpaceFailed), or removals failed (their errors in `cause`).
 */
export class ImageGCError extends Error {
  /**
   * @param message what failed
   * @param options the underlying error(s)
   */
  constructor(message: string, options?: ErrorOptions) {
    super(message, options);
    this.name = "ImageGCError";
  }
}

/**
 * Checks a policy as upstream's NewImageGCManager.
 * @param policy the policy
 * @throws {RangeError} when a threshold is outside [0, 100] or low > high
 */
export function validateImageGCPolicy(policy: ImageGCPolicy): void {
  const { highThresholdPercent: high, lowThresholdPercent: low } = policy;
  if (!(high >= 0 && high <= 100)) {
    throw new RangeError(`invalid HighThresholdPercent ${high}, must be in range [0-100]`);
  }
  if (!(low >= 0 && low <= 100)) {
    throw new RangeError(`invalid LowThresholdPercent ${low}, must be in range [0-100]`);
  }
  if (low > high) {
    throw new RangeError(
      `LowThresholdPercent ${low} can not be higher than HighThresholdPercent ${high}`,
    );
  }
}

/**
 * A size as upstream's formatSize prints it: `512 B`, `1.5 KiB`, `10.0 GiB`.
 * @param bytes the size
 * @returns the human-readable size
 */
export function formatSize(bytes: number): string {
  const units = ["KiB", "MiB", "GiB", "TiB"];
  if (bytes < 1024) return `${Math.trunc(bytes)} B`;
  let value = bytes / 1024;
  let unit = 0;
  while (value >= 1024 && unit < units.length - 1) {
    value /= 1024;
    unit++;
  }
  return `${value.toFixed(1)} ${units[unit]}`;
}

/** Go's errors.NewAggregate(...).Error(): one message, or `[a, b]`. */
function aggregate(errors: readonly unknown[]): string {
  const msgs = errors.map((e) => e instanceof Error ? e.message : String(e));
  return msgs.length === 1 ? msgs[0]! : `[${msgs.join(", ")}]`;
}

/**
 * The image a CRI container runs. Upstream prefers CRI's `image_id` (v1.30) and falls back
 * to `image_ref`; containerd 1.6 sends only `image_ref`, the image's id.
 */
function containerImageId(c: Container): string {
  return c.imageRef;
}

/**
 * Tracks the runtime's images and removes the unused ones; see the module doc.
 *
 * Contract: every method may be called concurrently (the periodic rounds, the
 * eviction manager's reclaim); removing an image twice is harmless, as CRI
 * RemoveImage of an absent image succeeds.
 */
export class ImageGC {
  readonly #opts: ImageGCOptions;
  readonly #policy: ImageGCPolicy;
  readonly #log: Logger;
  readonly #events: EventRecorder;
  readonly #records = new Map<string, ImageRecord>();
  #timers: Timer[] = [];
  #rounds = new Set<Promise<void>>();
  #abort = new AbortController();
  #beganGC = 0;
  #prevFailed = false;

  /**
   * @param opts the runtime, the image filesystem's stats, the policy, clock and node
   * @throws {RangeError} for an invalid policy ({@link validateImageGCPolicy})
   */
  constructor(opts: ImageGCOptions) {
    validateImageGCPolicy(opts.policy);
    this.#opts = opts;
    this.#policy = opts.policy;
    this.#log = (opts.logger ?? silentLogger).with({ component: "image-gc" });
    this.#events = opts.events ?? discardEvents;
  }

  /**
   * Whether the periodic collection runs at all: upstream stubs it out when the
   * high threshold is 100 and there is no maximum age.
   */
  get enabled(): boolean {
    return !(this.#policy.highThresholdPercent === 100 && this.#policy.maxAgeMs === 0);
  }

  /**
   * Starts detection and (when {@link enabled}) collection: each runs now and then
   * every {@link IMAGE_GC_PERIOD_MS}, as upstream's imageManager.Start and
   * StartGarbageCollection. A round still running when the next is due is not doubled.
   */
  start(): void {
    if (this.#timers.length > 0) return;
    const every = (fn: () => Promise<void>) => {
      let running: Promise<void> | undefined;
      const tick = () => {
        running ??= this.#track(fn()).finally(() => (running = undefined));
      };
      tick();
      this.#timers.push(this.#opts.clock.setInterval(tick, IMAGE_GC_PERIOD_MS));
    };
    every(async () => {
      try {
        await this.detectImages(this.#abort.signal);
      } catch (err) {
        if (!this.#abort.signal.aborted) {
          this.#log.info("Failed to monitor images", { err: `${err}` });
        }
      }
    });
    if (!this.enabled) {
      this.#log.v(2).info(
        "ImageGCHighThresholdPercent is set 100 and ImageMaximumGCAge is 0, Disable image GC",
      );
      return;
    }
    this.#beganGC = this.#opts.clock.now();
    every(() => this.#periodicCollect());
  }

  /** Stops the rounds, cancels their runtime calls and waits for them to end. */
  async stop(): Promise<void> {
    for (const t of this.#timers) t.cancel();
    this.#timers = [];
    this.#abort.abort(new Error("image GC stopped"));
    await Promise.allSettled([...this.#rounds]);
    this.#abort = new AbortController();
  }

  /**
   * Reads the runtime's images and containers and updates the records: a new
   * image is first detected now, an image a container uses was last used now.
   * @param signal cancels the runtime calls
   * @returns the ids of the images in use
   * @throws the runtime's error when a list fails
   */
  detectImages(signal?: AbortSignal): Promise<Set<string>> {
    return this.#detect(this.#opts.clock.now(), signal);
  }

  async #detect(now: number, signal?: AbortSignal): Promise<Set<string>> {
    const opts = signal ? { signal } : {};
    const [images, containers, sandboxImage] = await Promise.all([
      this.#opts.runtime.listImages(undefined, opts),
      this.#opts.runtime.listContainers(undefined, opts),
      this.#sandboxImage(signal),
    ]);
    // Image volumes would count too (upstream's handleImageVolumes); denolet refuses them.
    const inUse = new Set(containers.map(containerImageId).filter((id) => id !== ""));
    const current = new Set<string>();
    for (const image of images) {
      current.add(image.id);
      let record = this.#records.get(image.id);
      if (!record) {
        this.#log.v(5).info("Image ID is new", { imageID: image.id });
        record = { firstDetected: now, lastUsed: 0, size: 0, pinned: false };
        this.#records.set(image.id, record);
      }
      if (inUse.has(image.id)) record.lastUsed = now;
      record.size = image.size;
      record.pinned = image.pinned || isSandboxImage(image, sandboxImage);
    }
    for (const id of this.#records.keys()) {
      if (!current.has(id)) this.#records.delete(id);
    }
    return inUse;
  }

  /**
   * One collection (upstream's GarbageCollect): images unused for longer than
   * the maximum age, then, when usage is at or over the high threshold, unused
   * images least recently used first until usage is back at the low threshold.
   * @param signal cancels the runtime calls
   * @throws {ImageGCError} when the capacity is unknown (with an InvalidDiskCapacity
   *   event), removals failed, or too little was freed (with a FreeDiskSpaceFailed event)
   * @throws the runtime's or the stats' error when a read fails
   */
  async garbageCollect(signal?: AbortSignal): Promise<void> {
    const freeTime = this.#opts.clock.now();
    let images = await this.#imagesInEvictionOrder(freeTime, signal);
    images = await this.#freeOldImages(images, freeTime, signal);

    const fs = await this.#opts.imageFsStats(signal);
    const capacity = fs.capacityBytes ?? 0;
    let available = fs.availableBytes ?? 0;
    if (available > capacity) {
      this.#log.info("Availability is larger than capacity", { available, capacity });
      available = capacity;
    }
    if (capacity === 0) {
      const message = "invalid capacity 0 on image filesystem";
      this.#warn(EventReason.invalidDiskCapacity, message);
      throw new ImageGCError(message);
    }
    const { highThresholdPercent: high, lowThresholdPercent: low } = this.#policy;
    const usagePercent = 100 - Math.trunc(available * 100 / capacity);
    if (usagePercent < high) return;
    const amountToFree = Math.trunc(capacity * (100 - low) / 100) - available;
    this.#log.info(
      "Disk usage on image filesystem is over the high threshold, trying to free bytes down to the low threshold",
      { usage: usagePercent, highThreshold: high, amountToFree, lowThreshold: low },
    );
    const freed = await this.#freeSpace(amountToFree, freeTime, images, signal);
    if (freed < amountToFree) {
      const message =
        `Insufficient free disk space on the node's image filesystem (${usagePercent}% of ${
          formatSize(capacity)
        } used). Failed to free sufficient space by deleting unused images (freed ${freed} bytes). Investigate disk usage, as it could be used by active images, logs, volumes, or other data.`;
      this.#warn(EventReason.freeDiskSpaceFailed, message);
      throw new ImageGCError(message);
    }
  }

  /**
   * Removes every unused image old enough to go (the eviction manager's
   * node-level reclaim under disk pressure; upstream's DeleteUnusedImages).
   * @param signal cancels the runtime calls
   * @throws {ImageGCError} when removals failed
   * @throws the runtime's error when a list fails
   */
  async deleteUnusedImages(signal?: AbortSignal): Promise<void> {
    this.#log.info("Attempting to delete unused images");
    const freeTime = this.#opts.clock.now();
    const images = await this.#imagesInEvictionOrder(freeTime, signal);
    await this.#freeSpace(Number.POSITIVE_INFINITY, freeTime, images, signal);
  }

  #track(round: Promise<void>): Promise<void> {
    this.#rounds.add(round);
    return round.finally(() => this.#rounds.delete(round));
  }

  /** The periodic round: upstream logs a first failure and warns on repeated ones. */
  async #periodicCollect(): Promise<void> {
    try {
      await this.garbageCollect(this.#abort.signal);
      this.#log.v(this.#prevFailed ? 1 : 4).info("Image garbage collection succeeded");
      this.#prevFailed = false;
    } catch (err) {
      if (this.#abort.signal.aborted) return;
      if (this.#prevFailed) {
        this.#log.error("Image garbage collection failed multiple times in a row", err);
        this.#warn(EventReason.imageGCFailed, err instanceof Error ? err.message : String(err));
      } else {
        this.#log.error(
          "Image garbage collection failed once. Stats initialization may not have completed yet",
          err,
        );
      }
      this.#prevFailed = true;
    }
  }

  #warn(reason: string, message: string): void {
    this.#events.event(nodeReference(this.#opts.nodeName), "Warning", reason, message);
  }

  /** The runtime's sandbox image when its verbose Status names one (containerd's config). */
  async #sandboxImage(signal?: AbortSignal): Promise<string | undefined> {
    try {
      const { info } = await this.#opts.runtime.status({
        verbose: true,
        ...signal ? { signal } : {},
      });
      const config = info["config"];
      if (config === undefined) return undefined;
      const image = (JSON.parse(config) as { sandboxImage?: unknown }).sandboxImage;
      return typeof image === "string" && image !== "" ? image : undefined;
    } catch (err) {
      this.#log.v(4).info("Cannot read the runtime's sandbox image", { err: `${err}` });
      return undefined;
    }
  }

  /** Unused, unpinned images: least recently used first, ties by first detection. */
  async #imagesInEvictionOrder(
    freeTime: number,
    signal?: AbortSignal,
  ): Promise<EvictionCandidate[]> {
    const inUse = await this.#detect(freeTime, signal);
    const out: EvictionCandidate[] = [];
    for (const [id, record] of this.#records) {
      if (inUse.has(id)) {
        this.#log.v(5).info("Image ID is being used", { imageID: id });
        continue;
      }
      if (record.pinned) {
        this.#log.v(5).info("Image is pinned, skipping garbage collection", { imageID: id });
        continue;
      }
      out.push({ id, ...record });
    }
    return out.sort((a, b) =>
      a.lastUsed === b.lastUsed ? a.firstDetected - b.firstDetected : a.lastUsed - b.lastUsed
    );
  }

  /** Removes images unused for longer than maxAge, once the agent has run that long. */
  async #freeOldImages(
    images: EvictionCandidate[],
    freeTime: number,
    signal?: AbortSignal,
  ): Promise<EvictionCandidate[]> {
    const { maxAgeMs } = this.#policy;
    // Before maxAge has passed since start, lastUsed means too little to act on.
    if (maxAgeMs === 0 || freeTime - this.#beganGC <= maxAgeMs) return images;
    const errors: unknown[] = [];
    const remaining: EvictionCandidate[] = [];
    for (const image of images) {
      if (freeTime - image.lastUsed > maxAgeMs) {
        try {
          await this.#freeImage(image, "age", signal);
          continue;
        } catch (err) {
          errors.push(err);
        }
      }
      remaining.push(image);
    }
    if (errors.length > 0) {
      throw new ImageGCError(
        `wanted to free images older than ${
          maxAgeMs / 1000
        }s, encountered errors in image deletion: ${aggregate(errors)}`,
        { cause: errors },
      );
    }
    return remaining;
  }

  /**
   * Removes images in order until `bytesToFree` are freed (by their reported
   * sizes), skipping images used at `freeTime` or younger than minAge.
   * @returns the bytes freed
   */
  async #freeSpace(
    bytesToFree: number,
    freeTime: number,
    images: EvictionCandidate[],
    signal?: AbortSignal,
  ): Promise<number> {
    const errors: unknown[] = [];
    let freed = 0;
    for (const image of images) {
      if (image.lastUsed >= freeTime) {
        this.#log.v(5).info("Image ID was used too recently, not eligible for garbage collection", {
          imageID: image.id,
        });
        continue;
      }
      // Just pulled, maybe about to be used by a container.
      if (freeTime - image.firstDetected < this.#policy.minAgeMs) {
        this.#log.v(5).info(
          "Image ID's age is less than the policy's minAge, not eligible for garbage collection",
          { imageID: image.id, ageMs: freeTime - image.firstDetected },
        );
        continue;
      }
      try {
        await this.#freeImage(image, "space", signal);
      } catch (err) {
        errors.push(err);
        continue;
      }
      freed += image.size;
      if (freed >= bytesToFree) break;
    }
    if (errors.length > 0) {
      throw new ImageGCError(
        `wanted to free ${
          Number.isFinite(bytesToFree) ? bytesToFree : "9223372036854775807"
        } bytes, but freed ${freed} bytes space with errors in image deletion: ${
          aggregate(errors)
        }`,
        { cause: errors },
      );
    }
    return freed;
  }

  async #freeImage(image: EvictionCandidate, reason: ImageGCReason, signal?: AbortSignal) {
    this.#log.info("Removing image to free bytes", { imageID: image.id, size: image.size });
    const spec: ImageSpec = { image: image.id };
    await this.#opts.runtime.removeImage(spec, signal ? { signal } : {});
    this.#records.delete(image.id);
    this.#opts.onImageRemoved?.(reason);
  }
}

/** Whether `image` is the runtime's sandbox image (by tag, digest or id). */
function isSandboxImage(image: Image, sandboxImage: string | undefined): boolean {
  if (sandboxImage === undefined) return false;
  if (image.id === sandboxImage) return true;
  let wanted: string;
  try {
    wanted = normalizeImage(sandboxImage);
  } catch {
    return false;
  }
  return [...image.repoTags, ...image.repoDigests].some((ref) => {
    try {
      return normalizeImage(ref) === wanted;
    } catch {
      return false;
    }
  });
}
