/**
 * The apiserver pod source (upstream pkg/kubelet/config/apiserver.go and the
 * client-go reflector under it): lists the pods bound to this node, then
 * watches them, and hands the complete current set to the mux after every
 * change (upstream's UndeltaStore sends a SET too), so one merge rule in the
 * mux serves the file, URL and API sources alike.
 *
 * ```
 *        ┌──────── backoff (800ms → 30s, jitter) ◄──── list failed / watch failed
 *        ▼                                                  ▲
 *  list ?fieldSelector=spec.nodeName=N ──► SET ──► watch from RV ──┬── event → SET
 *        ▲                                          ▲              ├── BOOKMARK → RV only
 *        │                                          └──────────────┤ stream ended: re-watch
 *        └──── 410 Gone / ERROR event ─────────────────────────────┘
 * ```
 *
 * The first list reads from the apiserver's watch cache (`resourceVersion=0`),
 * later ones ask for data at least as fresh as the last resourceVersion seen;
 * a list answered with 410 is retried from etcd (no resourceVersion), as the
 * reflector does. Watches run 5–10 minutes (`timeoutSeconds`, random) with
 * bookmarks on, and a watch that ends normally resumes from the last
 * resourceVersion without a relist. A watch that ends within a second
 * without an event is treated as a failure so a misbehaving server is not
 * hammered. Every relist waits a backoff step, as the reflector's
 * BackoffUntil loop does; the backoff resets after two quiet minutes.
 *
 * @module
 */

import { API_SOURCE, podKey } from "../api/pod.ts";
import type { Pod } from "../api/types.ts";
import { ApiError, isGone, type KubeClient, type WatchEvent } from "../kubeapi/types.ts";
import type { Clock } from "../util/clock.ts";
import { realClock } from "../util/clock.ts";
import type { Logger } from "../util/log.ts";
import { silentLogger } from "../util/log.ts";
import type { PodSetSink } from "./types.ts";

/** The path the source lists and watches. */
export const PODS_PATH = "/api/v1/pods";
/** The reflector's minimum watch timeout; each watch asks for 1–2× this. */
export const MIN_WATCH_TIMEOUT_SECONDS = 300;
/** The reflector's backoff: first step, cap, and quiet time after which it starts over. */
export const API_BACKOFF = { initialMs: 800, maxMs: 30_000, resetMs: 120_000 } as const;
/** A watch shorter than this that delivered nothing counts as a failure. */
const SHORT_WATCH_MS = 1000;

/** Options for {@link startApiSource}. */
export interface ApiSourceOptions {
  /** The apiserver, authenticated as the node. */
  client: KubeClient;
  /** Pods with `spec.nodeName` equal to this are the node's. */
  nodeName: string;
  /** Receives the complete set of the node's pods after every change. */
  onPods: PodSetSink;
  clock?: Clock;
  logger?: Logger;
  /** Source of randomness in [0, 1) for watch timeouts and jitter; Math.random by default. */
  random?: () => number;
}

/** A running apiserver source. */
export interface ApiSource {
  /** Resolves once the first list has been handed over (or never, if stopped before). */
  readonly synced: Promise<void>;
  /** Resolves when the list/watch loop has ended after {@link ApiSource.stop}. */
  readonly done: Promise<void>;
  /** True once the first list has been handed over (upstream's HasSynced). */
  hasSynced(): boolean;
  /** The resourceVersion the next watch would start from. */
  resourceVersion(): string;
  /** Aborts the list or watch in flight and ends the loop; idempotent. */
  stop(): void;
}

/**
 * Starts listing and watching the pods bound to `nodeName`.
 * @param opts client, node name, sink, clock and logger
 * @returns the running source; it retries on its own until stopped
 */
export function startApiSource(opts: ApiSourceOptions): ApiSource {
  return new ApiPodSource(opts);
}

/** The reflector's exponential backoff with full jitter (factor 2, jitter 1.0). */
class Backoff {
  #next: number = API_BACKOFF.initialMs;
  #last = Number.NEGATIVE_INFINITY;

  delay(now: number, random: () => number): number {
    if (now - this.#last > API_BACKOFF.resetMs) this.#next = API_BACKOFF.initialMs;
    this.#last = now;
    const base = this.#next;
    this.#next = Math.min(base * 2, API_BACKOFF.maxMs);
    return base + base * random();
  }
}

/** Why a watch loop handed control back to the list. */
type WatchOutcome = "stopped" | "expired" | "failed";

/** Errors worth re-watching from the same resourceVersion: the server was unreachable or busy. */
function watchRetriable(err: unknown): boolean {
  if (!(err instanceof ApiError)) return true;
  return err.status === 429 || err.status >= 500;
}

class ApiPodSource implements ApiSource {
  readonly synced: Promise<void>;
  readonly done: Promise<void>;
  readonly #opts: ApiSourceOptions;
  readonly #clock: Clock;
  readonly #log: Logger;
  readonly #random: () => number;
  readonly #stop = new AbortController();
  readonly #backoff = new Backoff();
  readonly #query: Record<string, string>;
  #store = new Map<string, Pod>();
  #rv = "";
  #synced = false;
  #markSynced: () => void = () => {};
  #emitQueued = false;

  constructor(opts: ApiSourceOptions) {
    this.#opts = opts;
    this.#clock = opts.clock ?? realClock;
    this.#random = opts.random ?? Math.random;
    this.#query = { fieldSelector: `spec.nodeName=${opts.nodeName}` };
    this.#log = (opts.logger ?? silentLogger).with({ source: API_SOURCE, path: PODS_PATH });
    this.synced = new Promise((resolve) => (this.#markSynced = resolve));
    this.done = this.#run();
  }

  hasSynced(): boolean {
    return this.#synced;
  }

  resourceVersion(): string {
    return this.#rv;
  }

  stop(): void {
    this.#stop.abort(new Error(`pod source for node "${this.#opts.nodeName}" stopped`));
  }

  get #stopped(): boolean {
    return this.#stop.signal.aborted;
  }

  async #run(): Promise<void> {
    // "0": the first list may come from the watch cache, as the reflector's does.
    let listRv: string | undefined = "0";
    let first = true;
    while (!this.#stopped) {
      if (!first && !(await this.#waitBackoff())) return;
      first = false;
      try {
        await this.#list(listRv);
      } catch (err) {
        if (this.#stopped) return;
        // Too old even for "not older than": read from etcd next time.
        if (isGone(err)) listRv = undefined;
        this.#log.error("Failed to list pods", err, { fieldSelector: this.#query.fieldSelector });
        continue;
      }
      const outcome = await this.#watchUntilRelist();
      if (outcome === "stopped") return;
      // A relist asks for data at least as fresh as what was already seen.
      listRv = this.#rv || undefined;
    }
  }

  async #list(resourceVersion: string | undefined): Promise<void> {
    const query = { ...this.#query, ...(resourceVersion ? { resourceVersion } : {}) };
    const list = await this.#opts.client.list<Pod>(PODS_PATH, {
      query,
      signal: this.#stop.signal,
    });
    if (this.#stopped) return;
    const store = new Map<string, Pod>();
    for (const pod of list.items ?? []) store.set(podKey(pod), pod);
    this.#store = store;
    this.#rv = list.metadata?.resourceVersion ?? "";
    this.#log.v(4).info("Listed pods", { pods: store.size, resourceVersion: this.#rv });
    this.#emit();
    if (!this.#synced) {
      this.#synced = true;
      this.#markSynced();
    }
  }

  /** Watches (and re-watches) until a relist is needed or the source stops. */
  async #watchUntilRelist(): Promise<WatchOutcome> {
    while (!this.#stopped) {
      const outcome = await this.#watchOnce();
      if (outcome === "again") continue;
      if (outcome === "retry") {
        if (!(await this.#waitBackoff())) return "stopped";
        continue;
      }
      return outcome;
    }
    return "stopped";
  }

  /**
   * One watch request. "again": the stream ended normally, resume at once;
   * "retry": the server was unreachable or busy, resume after a backoff step.
   */
  async #watchOnce(): Promise<WatchOutcome | "again" | "retry"> {
    const timeoutSeconds = Math.floor(MIN_WATCH_TIMEOUT_SECONDS * (1 + this.#random()));
    const query: Record<string, string> = {
      ...this.#query,
      allowWatchBookmarks: "true",
      timeoutSeconds: String(timeoutSeconds),
      ...(this.#rv ? { resourceVersion: this.#rv } : {}),
    };
    const ended = new AbortController();
    const signal = AbortSignal.any([this.#stop.signal, ended.signal]);
    const started = this.#clock.now();
    let events = 0;
    let errorEvent: WatchEvent<Pod>["object"] | undefined;
    const onEvent = (event: WatchEvent<Pod>) => {
      if (signal.aborted) return;
      events++;
      if (event.type === "ERROR") {
        errorEvent = event.object;
        // The server ends the stream after an ERROR; do not wait for it.
        ended.abort();
        return;
      }
      this.#apply(event);
    };
    try {
      await this.#opts.client.watch<Pod>(PODS_PATH, onEvent, { query, signal });
    } catch (err) {
      if (this.#stopped) return "stopped";
      if (errorEvent === undefined) {
        if (isGone(err)) {
          this.#log.v(2).info("Watch of pods closed: resourceVersion too old, relisting", {
            resourceVersion: this.#rv,
          });
          return "expired";
        }
        this.#log.error("Failed to watch pods", err, { resourceVersion: this.#rv });
        return watchRetriable(err) ? "retry" : "failed";
      }
    }
    if (this.#stopped) return "stopped";
    if (errorEvent !== undefined) {
      if (errorEvent.code === 410) {
        this.#log.v(2).info("Watch of pods closed: resourceVersion too old, relisting", {
          resourceVersion: this.#rv,
          reason: errorEvent.reason,
        });
        return "expired";
      }
      this.#log.error(
        "Watch of pods ended with an error",
        new ApiError(
          `watch ${PODS_PATH}: ${errorEvent.message ?? "error event"}`,
          errorEvent.code ?? 500,
          errorEvent.reason ?? "",
        ),
        { resourceVersion: this.#rv },
      );
      return "failed";
    }
    if (events === 0 && this.#clock.now() - started < SHORT_WATCH_MS) {
      this.#log.error(
        "Watch of pods ended early",
        new Error(
          `very short watch of ${PODS_PATH}: the stream closed within a second without any event`,
        ),
        { resourceVersion: this.#rv },
      );
      return "failed";
    }
    this.#log.v(4).info("Watch of pods ended, resuming", { resourceVersion: this.#rv });
    return "again";
  }

  #apply(event: WatchEvent<Pod>): void {
    const rv = event.object?.metadata?.resourceVersion;
    if (rv) this.#rv = rv;
    switch (event.type) {
      case "ADDED":
      case "MODIFIED":
        this.#store.set(podKey(event.object), event.object);
        break;
      case "DELETED":
        this.#store.delete(podKey(event.object));
        break;
      default:
        // BOOKMARK: only the resourceVersion moves.
        return;
    }
    this.#scheduleEmit();
  }

  /** One SET per burst: the events of one chunk arrive synchronously, the set goes out after. */
  #scheduleEmit(): void {
    if (this.#emitQueued) return;
    this.#emitQueued = true;
    queueMicrotask(() => {
      this.#emitQueued = false;
      if (!this.#stopped) this.#emit();
    });
  }

  #emit(): void {
    try {
      this.#opts.onPods([...this.#store.values()]);
    } catch (err) {
      // The sink is the mux and the sync loop; a bug there must not end the watch.
      this.#log.error("Pod sink failed on the apiserver pod set", err);
    }
  }

  /** Waits one backoff step; false when stopped meanwhile. */
  async #waitBackoff(): Promise<boolean> {
    const ms = this.#backoff.delay(this.#clock.now(), this.#random);
    try {
      await this.#clock.sleep(ms, this.#stop.signal);
      return true;
    } catch {
      return false;
    }
  }
}
