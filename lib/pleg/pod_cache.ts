/**
 * The pod status cache PLEG writes and pod workers read, as upstream's
 * `kubecontainer.Cache`.
 *
 * Each entry is the full runtime status of one pod (or the error from fetching
 * it) stamped with the time the fetch began. The cache also carries a global
 * timestamp: the start of the last relist that refreshed every changed pod. A
 * reader asking for a status newer than T is satisfied by an entry modified
 * after T, or by any entry (or by "nothing runs for this pod") once the global
 * timestamp is after T, because that relist would have refreshed it had it
 * changed.
 *
 * @module
 */

import type { RuntimePodStatus } from "../kuberuntime/types.ts";

/** One cache entry as read by {@link PodCache.get}. */
export interface CachedPodStatus {
  /** The status; undefined when the runtime holds nothing for the pod. */
  status: RuntimePodStatus | undefined;
  /** When the fetch that produced it began (the clock's monotonic ms); 0 for a cache miss. */
  timestamp: number;
  /** Set when the last fetch failed. */
  error?: unknown;
}

/** The error {@link PodCache.waitNewerThan} rejects with when the last fetch failed. */
export class PodStatusUnavailableError extends Error {
  /** The pod. */
  readonly podUID: string;
  /**
   * @param podUID the pod
   * @param cause the fetch error
   */
  constructor(podUID: string, cause: unknown) {
    const why = cause instanceof Error ? cause.message : String(cause);
    super(`failed to get runtime status of pod "${podUID}": ${why}`, { cause });
    this.name = "PodStatusUnavailableError";
    this.podUID = podUID;
  }
}

interface Subscriber {
  minTime: number;
  resolve: (status: RuntimePodStatus | undefined) => void;
  reject: (err: unknown) => void;
}

/** Per-pod runtime status with the time it was observed. */
export class PodCache {
  #entries = new Map<string, CachedPodStatus>();
  #globalTimestamp = 0;
  #subscribers = new Map<string, Subscriber[]>();

  /**
   * The cached entry. A miss means the runtime held nothing for the pod at the
   * last relist, reported as `{ status: undefined, timestamp: 0 }`.
   * @param uid the pod
   * @returns the entry; the caller must not mutate it
   */
  get(uid: string): CachedPodStatus {
    return this.#entries.get(uid) ?? { status: undefined, timestamp: 0 };
  }

  /**
   * True when an entry exists (fetched or failed) for the pod.
   * @param uid the pod
   */
  has(uid: string): boolean {
    return this.#entries.has(uid);
  }

  /**
   * Stores the result of a status fetch and wakes readers it satisfies.
   * @param uid the pod
   * @param status the status (undefined on error)
   * @param error the fetch error, if any
   * @param timestamp monotonic ms when the fetch began
   */
  set(uid: string, status: RuntimePodStatus | undefined, error: unknown, timestamp: number): void {
    const entry: CachedPodStatus = { status, timestamp };
    if (error !== undefined) entry.error = error;
    this.#entries.set(uid, entry);
    this.#notify(uid);
  }

  /**
   * Forgets a pod (the runtime no longer holds anything for it).
   * @param uid the pod
   */
  delete(uid: string): void {
    this.#entries.delete(uid);
    this.#notify(uid);
  }

  /**
   * Raises the global timestamp after a relist and wakes readers it satisfies.
   * @param timestamp monotonic ms when that relist began
   */
  updateTime(timestamp: number): void {
    this.#globalTimestamp = timestamp;
    for (const uid of [...this.#subscribers.keys()]) this.#notify(uid);
  }

  /** The global timestamp (0 before the first relist). */
  get timestamp(): number {
    return this.#globalTimestamp;
  }

  /**
   * Resolves with the pod's status once the cache holds one observed after
   * `minTime` (upstream `GetNewerThan`).
   * @param uid the pod
   * @param minTime monotonic ms (Clock.monotonic); the answer must be strictly newer
   * @param signal aborts the wait
   * @returns the status, or undefined when the runtime holds nothing for the pod
   * @throws {PodStatusUnavailableError} when the satisfying entry is a failed fetch
   */
  waitNewerThan(
    uid: string,
    minTime: number,
    signal?: AbortSignal,
  ): Promise<RuntimePodStatus | undefined> {
    if (signal?.aborted) return Promise.reject(signal.reason);
    return new Promise((resolve, reject) => {
      const sub: Subscriber = {
        minTime,
        resolve: (s) => {
          signal?.removeEventListener("abort", onAbort);
          resolve(s);
        },
        reject: (e) => {
          signal?.removeEventListener("abort", onAbort);
          reject(e);
        },
      };
      const onAbort = () => {
        const subs = this.#subscribers.get(uid)?.filter((s) => s !== sub) ?? [];
        if (subs.length > 0) this.#subscribers.set(uid, subs);
        else this.#subscribers.delete(uid);
        reject(signal?.reason);
      };
      if (this.#answer(uid, sub)) return;
      signal?.addEventListener("abort", onAbort, { once: true });
      const subs = this.#subscribers.get(uid) ?? [];
      subs.push(sub);
      this.#subscribers.set(uid, subs);
    });
  }

  /** Settles `sub` if the cache can answer it now; true when it did. */
  #answer(uid: string, sub: Subscriber): boolean {
    const entry = this.#entries.get(uid);
    const globalIsNewer = this.#globalTimestamp > sub.minTime;
    if (!entry) {
      if (!globalIsNewer) return false;
      sub.resolve(undefined);
      return true;
    }
    if (!(entry.timestamp > sub.minTime || globalIsNewer)) return false;
    if (entry.error !== undefined) sub.reject(new PodStatusUnavailableError(uid, entry.error));
    else sub.resolve(entry.status);
    return true;
  }

  #notify(uid: string): void {
    const subs = this.#subscribers.get(uid);
    if (!subs) return;
    const waiting = subs.filter((sub) => !this.#answer(uid, sub));
    if (waiting.length > 0) this.#subscribers.set(uid, waiting);
    else this.#subscribers.delete(uid);
  }
}
