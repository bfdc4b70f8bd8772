/**
 * List and watch one kind of object into a local store (client-go's reflector
 * and the informer store over it): the apiserver pod source and the Service
 * lister both run on it.
 *
 * ```
 *        ┌──────── backoff (800ms → 30s, jitter) ◄──── list failed / watch failed
 *        ▼                                                  ▲
 *  list ?query ──► store, onChange ──► watch from RV ──┬── event → store, onChange
 *        ▲                                 ▲           ├── BOOKMARK → RV only
 *        │                                 └───────────┤ stream ended: re-watch
 *        └──── 410 Gone / ERROR event ─────────────────┘
 * ```
 *
 * The first list reads from the apiserver's watch cache (`resourceVersion=0`),
 * later ones ask for data at least as fresh as the last resourceVersion seen;
 * a list answered with 410 is retried from etcd (no resourceVersion), as the
 * reflector does. Watches run 5–10 minutes (`timeoutSeconds`, random) with
 * bookmarks on, and a watch that ends normally resumes from the last
 * resourceVersion without a relist, and so does one whose stream broke
 * after the apiserver accepted it (a reset, a proxy cutting it), as
 * client-go's StreamWatcher ends it quietly. A watch that ends within a second
 * without an event is treated as a failure so a misbehaving server is not
 * hammered. Every relist waits a backoff step, as the reflector's
 * BackoffUntil loop does; the backoff resets after two quiet minutes.
 *
 * @module
 */

import type { ObjectMeta } from "../api/types.ts";
import type { Clock } from "../util/clock.ts";
import { realClock } from "../util/clock.ts";
import type { Logger } from "../util/log.ts";
import { silentLogger } from "../util/log.ts";
import { ApiError, isGone, type KubeClient, type WatchEvent, WatchStreamError } from "./types.ts";

/** The reflector's minimum watch timeout; each watch asks for 1–2× this. */
export const MIN_WATCH_TIMEOUT_SECONDS = 300;
/** The reflector's backoff: first step, cap, and quiet time after which it starts over. */
export const API_BACKOFF = { initialMs: 800, maxMs: 30_000, resetMs: 120_000 } as const;
/** A watch shorter than this that delivered nothing counts as a failure. */
const SHORT_WATCH_MS = 1000;

/** Options for {@link Reflector}. */
export interface ReflectorOptions<T> {
  client: KubeClient;
  /** The collection listed and watched, e.g. `/api/v1/services`. */
  path: string;
  /** The plural resource name in logs ("pods", "services"). */
  resource: string;
  /** Selectors every list and watch carries (`fieldSelector`, `labelSelector`). */
  query?: Record<string, string>;
  /**
   * Told the store's whole content after the first list, every relist and every
   * burst of watch events (the events of one chunk arrive together, one call
   * follows). May throw: the error is logged and the reflector keeps going.
   */
  onChange?: (items: T[]) => void;
  clock?: Clock;
  logger?: Logger;
  /** Source of randomness in [0, 1) for watch timeouts and jitter; Math.random by default. */
  random?: () => number;
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

/** The store key of an object: `namespace/name`, or `name` for a cluster-scoped one. */
function storeKey(meta: ObjectMeta | undefined): string {
  const ns = meta?.namespace;
  return ns ? `${ns}/${meta?.name ?? ""}` : meta?.name ?? "";
}

/**
 * One list-and-watch loop and the store it keeps; it starts on construction
 * and retries on its own until {@link Reflector.stop}.
 */
export class Reflector<T extends { metadata?: ObjectMeta }> {
  /** Resolves once the first list is in the store (or never, if stopped before). */
  readonly synced: Promise<void>;
  /** Resolves when the list/watch loop has ended after {@link Reflector.stop}. */
  readonly done: Promise<void>;
  readonly #opts: ReflectorOptions<T>;
  readonly #clock: Clock;
  readonly #log: Logger;
  readonly #random: () => number;
  readonly #stop = new AbortController();
  readonly #backoff = new Backoff();
  readonly #query: Record<string, string>;
  #store = new Map<string, T>();
  #rv = "";
  #synced = false;
  #markSynced: () => void = () => {};
  #changeQueued = false;

  /** @param opts the client, what to list and watch, and who is told of changes */
  constructor(opts: ReflectorOptions<T>) {
    this.#opts = opts;
    this.#clock = opts.clock ?? realClock;
    this.#random = opts.random ?? Math.random;
    this.#query = opts.query ?? {};
    this.#log = (opts.logger ?? silentLogger).with({ path: opts.path });
    this.synced = new Promise((resolve) => (this.#markSynced = resolve));
    this.done = this.#run();
  }

  /** True once the first list is in the store (upstream's HasSynced). */
  hasSynced(): boolean {
    return this.#synced;
  }

  /** The objects in the store; callers must not mutate them. */
  list(): T[] {
    return [...this.#store.values()];
  }

  /** The resourceVersion the next watch would start from. */
  resourceVersion(): string {
    return this.#rv;
  }

  /** Aborts the list or watch in flight and ends the loop; idempotent. */
  stop(): void {
    this.#stop.abort(new Error(`list and watch of ${this.#opts.resource} stopped`));
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
        this.#log.error(`Failed to list ${this.#opts.resource}`, err, this.#query);
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
    const list = await this.#opts.client.list<T>(this.#opts.path, {
      query,
      signal: this.#stop.signal,
    });
    if (this.#stopped) return;
    const store = new Map<string, T>();
    for (const item of list.items ?? []) store.set(storeKey(item.metadata), item);
    this.#store = store;
    this.#rv = list.metadata?.resourceVersion ?? "";
    this.#log.v(4).info(`Listed ${this.#opts.resource}`, {
      items: store.size,
      resourceVersion: this.#rv,
    });
    this.#changed();
    if (!this.#synced) {
      this.#synced = true;
      this.#markSynced();
    }
  }

  /** Watches (and re-watches) until a relist is needed or the reflector stops. */
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
    const { path, resource } = this.#opts;
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
    let errorEvent: WatchEvent<T>["object"] | undefined;
    const onEvent = (event: WatchEvent<T>) => {
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
      await this.#opts.client.watch<T>(path, onEvent, { query, signal });
    } catch (err) {
      if (this.#stopped) return "stopped";
      if (err instanceof WatchStreamError) {
        // The stream the apiserver had accepted broke: an end like any other (below).
        this.#log.v(4).info(`Watch of ${resource} broke`, {
          resourceVersion: this.#rv,
          err: err.message,
        });
      } else if (errorEvent === undefined) {
        if (isGone(err)) {
          this.#log.v(2).info(`Watch of ${resource} closed: resourceVersion too old, relisting`, {
            resourceVersion: this.#rv,
          });
          return "expired";
        }
        this.#log.error(`Failed to watch ${resource}`, err, { resourceVersion: this.#rv });
        return watchRetriable(err) ? "retry" : "failed";
      }
    }
    if (this.#stopped) return "stopped";
    if (errorEvent !== undefined) {
      if (errorEvent.code === 410) {
        this.#log.v(2).info(`Watch of ${resource} closed: resourceVersion too old, relisting`, {
          resourceVersion: this.#rv,
          reason: errorEvent.reason,
        });
        return "expired";
      }
      this.#log.error(
        `Watch of ${resource} ended with an error`,
        new ApiError(
          `watch ${path}: ${errorEvent.message ?? "error event"}`,
          errorEvent.code ?? 500,
          errorEvent.reason ?? "",
        ),
        { resourceVersion: this.#rv },
      );
      return "failed";
    }
    if (events === 0 && this.#clock.now() - started < SHORT_WATCH_MS) {
      this.#log.error(
        `Watch of ${resource} ended early`,
        new Error(
          `very short watch of ${path}: the stream closed within a second without any event`,
        ),
        { resourceVersion: this.#rv },
      );
      return "failed";
    }
    this.#log.v(4).info(`Watch of ${resource} ended, resuming`, { resourceVersion: this.#rv });
    return "again";
  }

  #apply(event: WatchEvent<T>): void {
    const rv = event.object?.metadata?.resourceVersion;
    if (rv) this.#rv = rv;
    switch (event.type) {
      case "ADDED":
      case "MODIFIED":
        this.#store.set(storeKey(event.object.metadata), event.object);
        break;
      case "DELETED":
        this.#store.delete(storeKey(event.object.metadata));
        break;
      default:
        // BOOKMARK: only the resourceVersion moves.
        return;
    }
    this.#scheduleChange();
  }

  /** One change per burst: the events of one chunk arrive synchronously, the call goes out after. */
  #scheduleChange(): void {
    if (this.#changeQueued) return;
    this.#changeQueued = true;
    queueMicrotask(() => {
      this.#changeQueued = false;
      if (!this.#stopped) this.#changed();
    });
  }

  #changed(): void {
    if (!this.#opts.onChange) return;
    try {
      this.#opts.onChange(this.list());
    } catch (err) {
      // The receiver is another part of the kubelet; a bug there must not end the watch.
      this.#log.error(`Receiver of ${this.#opts.resource} failed`, err);
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
