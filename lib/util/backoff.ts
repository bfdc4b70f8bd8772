/**
 * Exponential backoff by key, with upstream's `flowcontrol.Backoff`
 * semantics: the first delay is 10s, each retry doubles it up to 300s, and an
 * entry that has not been updated for twice the maximum (10 minutes) is
 * expired, so the next retry starts over at 10s. Container restarts
 * (CrashLoopBackOff, keyed by kuberuntime's `backoffKey`) and image pulls
 * (ImagePullBackOff) both use it.
 *
 * The container planner only reads {@link BackoffState}; the executor owns a
 * {@link BackoffStore} and calls {@link BackoffStore.next} each time it
 * restarts a container that has exited before (upstream `doBackOff` calls
 * `backOff.Next(key, finishedAt)` at that point).
 *
 * @module
 */

/** One backoff record. */
export interface BackoffEntry {
  /** Current delay in ms (10s doubling to 300s by default). */
  delayMs: number;
  /** Epoch ms of the last decision that used this entry. */
  lastUpdate: number;
}

/** The backoff state a planner reads; its owner updates it. */
export type BackoffState = ReadonlyMap<string, BackoffEntry>;

/** Upstream's initial container restart backoff (`backOffPeriod`), in ms. */
export const DEFAULT_BACKOFF_INITIAL_MS = 10_000;
/** Upstream's maximum container restart backoff (`MaxContainerBackOff`), in ms. */
export const DEFAULT_BACKOFF_MAX_MS = 300_000;

/** Backoff tuning; both default to upstream's values. */
export interface BackoffOptions {
  /** First delay, in ms (default {@link DEFAULT_BACKOFF_INITIAL_MS}). */
  initialMs?: number;
  /** Cap on the delay, in ms (default {@link DEFAULT_BACKOFF_MAX_MS}). */
  maxMs?: number;
}

function maxOf(options: BackoffOptions | undefined): number {
  return options?.maxMs ?? DEFAULT_BACKOFF_MAX_MS;
}

/**
 * Whether an entry last updated at `lastUpdate` no longer applies at
 * `eventTime`: a container that stayed up for twice the maximum delay is
 * considered stable, so its backoff starts over.
 * @param eventTime epoch ms of the event being judged
 * @param lastUpdate the entry's {@link BackoffEntry.lastUpdate}
 * @param options backoff tuning
 * @returns true when the entry has expired
 */
export function backoffExpired(
  eventTime: number,
  lastUpdate: number,
  options?: BackoffOptions,
): boolean {
  return eventTime - lastUpdate > 2 * maxOf(options);
}

/**
 * The entry that replaces `state.get(key)` after a restart: the initial delay
 * when there is none or it has expired, else double the delay up to the cap.
 * Pure: the caller stores the result.
 * @param state the current backoff state
 * @param key the entry's key
 * @param eventTime epoch ms when the restarted container last finished
 * @param now epoch ms of the restart decision (becomes `lastUpdate`)
 * @param options backoff tuning
 * @returns the new entry
 */
export function nextBackoff(
  state: BackoffState,
  key: string,
  eventTime: number,
  now: number,
  options?: BackoffOptions,
): BackoffEntry {
  const initial = options?.initialMs ?? DEFAULT_BACKOFF_INITIAL_MS;
  const entry = state.get(key);
  if (entry === undefined || backoffExpired(eventTime, entry.lastUpdate, options)) {
    return { delayMs: initial, lastUpdate: now };
  }
  return { delayMs: Math.min(entry.delayMs * 2, maxOf(options)), lastUpdate: now };
}

/**
 * Upstream `IsInBackOffSince`: whether a container that finished at
 * `eventTime` must still wait before it is restarted.
 * @param entry the container's entry, if any
 * @param eventTime epoch ms when the container last finished
 * @param now the current epoch ms
 * @param options backoff tuning
 * @returns true while `now - eventTime` is shorter than the entry's delay
 */
export function isInBackoff(
  entry: BackoffEntry | undefined,
  eventTime: number,
  now: number,
  options?: BackoffOptions,
): boolean {
  if (entry === undefined) return false;
  if (backoffExpired(eventTime, entry.lastUpdate, options)) return false;
  return now - eventTime < entry.delayMs;
}

/**
 * The executor's mutable backoff table. Its {@link BackoffStore.state} is
 * what the planner reads; it must not be mutated while a plan is computed.
 */
export class BackoffStore {
  readonly #entries = new Map<string, BackoffEntry>();
  readonly #options: BackoffOptions;

  /**
   * @param options backoff tuning (defaults are upstream's)
   */
  constructor(options: BackoffOptions = {}) {
    this.#options = options;
  }

  /** A read-only view for the planner. */
  get state(): BackoffState {
    return this.#entries;
  }

  /** Number of entries held. */
  get size(): number {
    return this.#entries.size;
  }

  /**
   * @param key the entry's key
   * @returns the entry, if any
   */
  get(key: string): BackoffEntry | undefined {
    return this.#entries.get(key);
  }

  /**
   * Replaces an entry.
   * @param key the entry's key
   * @param entry the new entry
   */
  set(key: string, entry: BackoffEntry): void {
    this.#entries.set(key, entry);
  }

  /**
   * Records a restart: stores and returns {@link nextBackoff}'s entry.
   * @param key the entry's key
   * @param eventTime epoch ms when the container last finished
   * @param now the current epoch ms
   * @returns the stored entry
   */
  next(key: string, eventTime: number, now: number): BackoffEntry {
    const entry = nextBackoff(this.#entries, key, eventTime, now, this.#options);
    this.#entries.set(key, entry);
    return entry;
  }

  /**
   * Forgets an entry (e.g. when its pod is removed).
   * @param key the entry's key
   */
  delete(key: string): void {
    this.#entries.delete(key);
  }

  /**
   * Drops entries not updated for twice the maximum delay, as upstream's
   * periodic `Backoff.GC` does; they would be treated as expired anyway.
   * @param now the current epoch ms
   * @returns how many entries were dropped
   */
  gc(now: number): number {
    let dropped = 0;
    for (const [key, entry] of this.#entries) {
      if (backoffExpired(now, entry.lastUpdate, this.#options)) {
        this.#entries.delete(key);
        dropped++;
      }
    }
    return dropped;
  }
}
