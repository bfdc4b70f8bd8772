/**
 * Makes sure a container's image is present before it starts, as upstream's
 * pkg/kubelet/images/image_manager.go: pull policy decides whether to pull,
 * failed pulls back off (10s doubling to 300s, keyed by pod and image), and
 * every failure carries the reason the container's waiting state shows.
 *
 * ```
 *   present? ─┬─ policy Never ── absent ──► ErrImageNeverPull
 *             ├─ IfNotPresent + present ──► use it
 *             └─ else: in backoff? ──yes──► ImagePullBackOff
 *                          │no
 *                        pull ──fail──► ErrImagePull (backoff grows)
 * ```
 *
 * A pull uses the credentials the pod's pull secrets hold for the image's registry
 * (`credentials.ts`), then the node's own docker config (`node_credentials.ts`), trying
 * each until one works, as upstream's PullImage; with none it pulls anonymously.
 *
 * @module
 */

import { podKey } from "../api/pod.ts";
import type { Container, Pod, PullPolicy } from "../api/types.ts";
import type { Secret } from "../api/cluster_types.ts";
import { defaultPullPolicy } from "../api/defaults.ts";
import type { AuthConfig, Image, PodSandboxConfig, RuntimeService } from "../cri/types.ts";
import { BackoffStore, isInBackoff } from "../util/backoff.ts";
import type { Clock } from "../util/clock.ts";
import { type Logger, silentLogger } from "../util/log.ts";
import { applyDefaultImageTag, parseImageReference } from "./reference.ts";
import { pullCredentials } from "./credentials.ts";
import type { NodeDockerConfig } from "./node_credentials.ts";
import { discardEvents, type EventRecorder } from "../events/types.ts";
import { EventMessage, EventReason } from "../events/reasons.ts";
import { podReference } from "../events/recorder.ts";
import { Slots } from "../util/slots.ts";

/** The reasons an image problem shows in a container's waiting state. */
export type ImageErrorReason =
  | "ErrImageNeverPull"
  | "ErrImagePull"
  | "ImagePullBackOff"
  | "InvalidImageName"
  | "ImageInspectError";

/** An image could not be made available; `reason` says how. */
export class ImageError extends Error {
  /** Upstream's reason string. */
  readonly reason: ImageErrorReason;
  /** The image as the container spec names it. */
  readonly image: string;

  /**
   * @param reason upstream's reason
   * @param image the image
   * @param message the message users see
   * @param options the underlying error
   */
  constructor(reason: ImageErrorReason, image: string, message: string, options?: ErrorOptions) {
    super(message, options);
    this.name = "ImageError";
    this.reason = reason;
    this.image = image;
  }
}

/** The image a container will run. */
export interface EnsuredImage {
  /** The runtime's image id, passed to CreateContainer. */
  imageRef: string;
  /** The image's user id when the runtime reports one (for runAsNonRoot). */
  uid?: number;
  /** True when this call pulled it. */
  pulled: boolean;
}

/** Options for {@link ImageManager}. */
export interface ImageManagerOptions {
  runtime: RuntimeService;
  clock: Clock;
  logger?: Logger;
  /** Pull one image at a time (upstream's default, `serializeImagePulls: true`). */
  serializeImagePulls?: boolean;
  /**
   * With `serializeImagePulls: false`, at most this many pulls at once (upstream's
   * `maxParallelImagePulls`; unset means no limit). Ignored when pulls are serialized.
   */
  maxParallelImagePulls?: number;
  /** Pull backoff table; a fresh one with upstream's 10s/300s by default. */
  backoff?: BackoffStore;
  /** Deadline for one pull, in ms; default 10 minutes. */
  pullTimeoutMs?: number;
  /** Pulling/Pulled/Failed/BackOff events about the pod's container; dropped when unset. */
  events?: EventRecorder;
  /** The node's own docker config files (tried after the pod's pull secrets). */
  nodeCredentials?: NodeDockerConfig;
}

function imageUid(image: Image | undefined): number | undefined {
  if (image?.uid) return image.uid.value;
  // Images that name a numeric user report it as username.
  if (image?.username && /^\d+$/.test(image.username)) return Number(image.username);
  return undefined;
}

/**
 * Several errors in one message as apimachinery's aggregate prints them: one alone as it
 * is, else `[a, b]` with repeats dropped.
 */
function aggregateMessage(messages: readonly string[]): string {
  const unique = [...new Set(messages)];
  return messages.length === 1 || unique.length === 1 ? unique[0]! : `[${unique.join(", ")}]`;
}

/** Ensures images are present, honouring pull policy and pull backoff. */
export class ImageManager {
  readonly #runtime: RuntimeService;
  readonly #clock: Clock;
  readonly #logger: Logger;
  readonly #slots: Slots | undefined;
  readonly #pullTimeoutMs: number;
  readonly #events: EventRecorder;
  readonly #nodeCredentials: NodeDockerConfig | undefined;
  /** The pull backoff table, keyed `<podUID>_<image>` as upstream. */
  readonly backoff: BackoffStore;
  /** The last failed pull's error by backoff key, for the ImagePullBackOff message. */
  readonly #lastPullError = new Map<string, string>();

  /** @param opts runtime, clock and tuning */
  constructor(opts: ImageManagerOptions) {
    this.#runtime = opts.runtime;
    this.#clock = opts.clock;
    this.#logger = opts.logger ?? silentLogger;
    // Upstream's serial puller is a parallel one with one slot; no limit means no slots.
    const limit = (opts.serializeImagePulls ?? true) ? 1 : opts.maxParallelImagePulls;
    this.#slots = limit === undefined ? undefined : new Slots(limit);
    this.#pullTimeoutMs = opts.pullTimeoutMs ?? 10 * 60_000;
    this.#events = opts.events ?? discardEvents;
    this.#nodeCredentials = opts.nodeCredentials;
    this.backoff = opts.backoff ?? new BackoffStore();
  }

  /**
   * Makes the container's image available according to its pull policy.
   * @param pod the pod (its UID keys the pull backoff)
   * @param container the container
   * @param signal cancels a pull that has not started or is in flight
   * @param sandboxConfig passed to PullImage, as upstream does
   * @param pullSecrets the pod's `imagePullSecrets` that could be read, in spec order
   * @returns the image reference to create the container with
   * @throws {ImageError} with reason ErrImageNeverPull, ErrImagePull, ImagePullBackOff,
   *   InvalidImageName or ImageInspectError
   */
  async ensureImage(
    pod: Pod,
    container: Container,
    signal?: AbortSignal,
    sandboxConfig?: PodSandboxConfig,
    pullSecrets: readonly Secret[] = [],
  ): Promise<EnsuredImage> {
    const spec = container.image ?? "";
    const ref = podReference(pod, { name: container.name });
    const normal = (reason: string, message: string) =>
      this.#events.event(ref, "Normal", reason, message);
    const warning = (reason: string, message: string) =>
      this.#events.event(ref, "Warning", reason, message);
    let image: string;
    let repository: string;
    try {
      image = applyDefaultImageTag(spec);
      const parsed = parseImageReference(image);
      repository = `${parsed.domain}/${parsed.path}`;
    } catch (err) {
      throw new ImageError(
        "InvalidImageName",
        spec,
        `Failed to apply default image tag "${spec}": ${(err as Error).message}`,
        { cause: err },
      );
    }
    const policy: PullPolicy = container.imagePullPolicy ?? defaultPullPolicy(container.image);
    const opts = signal ? { signal } : {};
    let present: Image | undefined;
    try {
      present = await this.#runtime.imageStatus({ image }, opts);
    } catch (err) {
      throw new ImageError(
        "ImageInspectError",
        spec,
        `Failed to inspect image "${spec}": ${(err as Error).message}`,
        { cause: err },
      );
    }
    if (present && policy !== "Always") {
      normal(EventReason.pulled, EventMessage.alreadyPresent(spec));
      const uid = imageUid(present);
      return { imageRef: present.id, pulled: false, ...(uid !== undefined ? { uid } : {}) };
    }
    if (policy === "Never") {
      warning(EventReason.errImageNeverPull, EventMessage.neverPull(spec));
      throw new ImageError(
        "ErrImageNeverPull",
        spec,
        `Container image "${spec}" is not present with pull policy of Never`,
      );
    }
    const key = `${pod.metadata.uid ?? ""}_${spec}`;
    const now = this.#clock.now();
    const entry = this.backoff.get(key);
    if (entry && isInBackoff(entry, entry.lastUpdate, now)) {
      normal(EventReason.backOff, EventMessage.backOffPull(spec));
      warning(EventReason.failed, EventMessage.error("ImagePullBackOff"));
      // As upstream, the waiting message carries the failed pull's error.
      const previous = this.#lastPullError.get(key);
      throw new ImageError(
        "ImagePullBackOff",
        spec,
        `${EventMessage.backOffPull(spec)}${previous ? `: ErrImagePull: ${previous}` : ""}`,
      );
    }
    this.#lastPullError.delete(key);
    let credentials: AuthConfig[];
    try {
      const node = await this.#nodeCredentials?.entries();
      credentials = pullCredentials(pullSecrets, repository, node);
    } catch (err) {
      throw new ImageError("ErrImagePull", spec, (err as Error).message, { cause: err });
    }
    normal(EventReason.pulling, EventMessage.pulling(spec));
    const pullStart = this.#clock.now();
    try {
      const pulledRef = await this.#pull(image, signal, sandboxConfig, credentials);
      // As upstream, a success only sweeps stale entries; this key expires on its own.
      this.backoff.gc(this.#clock.now());
      const after = await this.#runtime.imageStatus({ image }, opts).catch(() => undefined);
      const uid = imageUid(after);
      const took = this.#clock.now() - pullStart;
      normal(EventReason.pulled, EventMessage.pulled(spec, took, took, Number(after?.size ?? 0)));
      return {
        imageRef: after?.id || pulledRef,
        pulled: true,
        ...(uid !== undefined ? { uid } : {}),
      };
    } catch (err) {
      if (signal?.aborted) throw err;
      const at = this.#clock.now();
      this.backoff.next(key, at, at);
      this.#lastPullError.set(key, (err as Error).message);
      warning(EventReason.failed, EventMessage.failedToPull(spec, (err as Error).message));
      warning(EventReason.failed, EventMessage.error("ErrImagePull"));
      this.#logger.warn("Failed to pull image", {
        image: spec,
        pod: podKey(pod),
        err: (err as Error).message,
      });
      // Upstream's waiting message is the runtime's error as it is.
      throw new ImageError("ErrImagePull", spec, (err as Error).message, { cause: err });
    }
  }

  #pull(
    image: string,
    signal: AbortSignal | undefined,
    sandboxConfig: PodSandboxConfig | undefined,
    credentials: readonly AuthConfig[],
  ): Promise<string> {
    const run = async () => {
      signal?.throwIfAborted();
      const opts = { timeoutMs: this.#pullTimeoutMs, ...(signal ? { signal } : {}) };
      this.#logger.info("Pulling image", { image, credentials: credentials.length });
      if (credentials.length === 0) {
        return await this.#runtime.pullImage({ image }, undefined, sandboxConfig, opts);
      }
      const errors: string[] = [];
      for (const auth of credentials) {
        try {
          return await this.#runtime.pullImage({ image }, auth, sandboxConfig, opts);
        } catch (err) {
          if (signal?.aborted) throw err;
          errors.push((err as Error).message);
        }
      }
      throw new Error(aggregateMessage(errors));
    };
    return this.#slots ? this.#slots.run(run) : run();
  }
}
