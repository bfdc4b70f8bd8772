/**
 * GenericPleg: the relist loop around {@link diffPodSnapshots}, as upstream's
 * pkg/kubelet/pleg/generic.go.
 *
 * Every `periodMs` (sliding: measured from the end of the previous relist, so
 * relists never overlap) it takes a cheap snapshot of the runtime, diffs each
 * pod against the snapshot it last accepted, fetches the full status of pods
 * that changed into the {@link PodCache}, and delivers their events.
 *
 * ```
 *   listPods ──► diff per pod ──► events? ──no──► (skip, unless no cache entry
 *                                   │               or last fetch failed)
 *                                  yes
 *                                   ▼
 *                           getPodStatus(uid) ──fail──► cache error, keep old
 *                                   │                   snapshot (retry next relist)
 *                                   ▼
 *                 cache.set, accept snapshot, send events (ContainerChanged dropped)
 *   after all pods: cache.updateTime(relist start)
 * ```
 *
 * @module
 */

import { podKey } from "../api/pod.ts";
import type { RuntimePodStatus, RuntimeSandbox } from "../kuberuntime/types.ts";
import type { Clock, Timer } from "../util/clock.ts";
import { formatDuration } from "../util/duration.ts";
import { type Logger, silentLogger } from "../util/log.ts";
import { diffPod } from "./diff.ts";
import { EventChannel } from "./event_channel.ts";
import { type CachedPodStatus, PodCache } from "./pod_cache.ts";
import type { PodLifecycleEvent } from "./types.ts";
import { alignedDelay } from "../util/tick.ts";

/** Upstream's relist period (`genericPlegRelistPeriod`). */
export const DEFAULT_RELIST_PERIOD_MS = 1000;
/** Upstream's `genericPlegRelistThreshold`: health fails after 3 minutes without a relist. */
export const DEFAULT_RELIST_THRESHOLD_MS = 180_000;
/**
 * The least time between the starts of two relists that {@link GenericPleg.relistSoon}
 * asks for: a burst of exits (a node draining) relists at most five times a second.
 */
export const MIN_RELIST_GAP_MS = 200;
/**
 * How long {@link GenericPleg.containerExited} keeps relisting for a container the
 * runtime still lists as running (containerd's CRI marks it exited only after it has
 * handled the exit event itself); after that the period's relists take over.
 */
export const EXIT_SETTLE_MS = 2000;
/** Upstream's `plegChannelCapacity`. */
export const DEFAULT_EVENT_CAPACITY = 1000;

/** Options for {@link GenericPleg}. */
export interface GenericPlegOptions {
  /**
   * A cheap snapshot of every pod in the runtime, from CRI List calls only:
   * ids, states, createdAt and labels (exit codes and finishedAt are 0).
   */
  listPods: (signal: AbortSignal) => Promise<Map<string, RuntimePodStatus>>;
  /** The full status of one pod (per-container ContainerStatus calls). */
  getPodStatus: (uid: string, signal: AbortSignal) => Promise<RuntimePodStatus>;
  clock: Clock;
  /** Relist period; default 1s. */
  periodMs?: number;
  /** Rounds each relist's start to this grid (lib/util/tick.ts); 0 (default) disables. */
  tickGridMs?: number;
  /** Health threshold; default 3m. */
  relistThresholdMs?: number;
  /** Event buffer size; default 1000. */
  eventCapacity?: number;
  logger?: Logger;
  /** Called after each relist with how long it took (for a metric). */
  onRelistDuration?: (ms: number) => void;
}

/** The result of {@link GenericPleg.healthy}. */
export interface PlegHealth {
  ok: boolean;
  /** Why it is unhealthy, in upstream's words; "" when healthy. */
  message: string;
}

/** Carries a pod IP over to a status fetched after network teardown (upstream `getPodIPs`). */
function keepPodIps(
  fresh: RuntimePodStatus,
  previous: RuntimePodStatus | undefined,
): RuntimePodStatus {
  if (!previous) return fresh;
  if (fresh.sandboxes.some((s) => s.ip !== "" || s.state === "ready")) return fresh;
  const sandboxes = fresh.sandboxes.map((s): RuntimeSandbox => {
    const before = previous.sandboxes.find((p) => p.id === s.id && p.ip !== "");
    return before ? { ...s, ip: before.ip, additionalIps: [...before.additionalIps] } : s;
  });
  return { ...fresh, sandboxes };
}

/**
 * The generic (relisting) pod lifecycle event generator.
 *
 * Events are delivered through the bounded channel returned by
 * {@link GenericPleg.events}: the syncLoop awaits `events().next(signal)` (or
 * iterates it with `for await`). When the consumer falls behind and the buffer is
 * full, new events are dropped and logged, as upstream does; the periodic resync
 * is the safety net.
 */
export class GenericPleg {
  /** Full pod statuses, written by relists, read by pod workers. */
  readonly cache: PodCache = new PodCache();
  #opts: GenericPlegOptions;
  #log: Logger;
  #period: number;
  #threshold: number;
  #channel: EventChannel<PodLifecycleEvent>;
  /** The snapshot of each pod accepted by the last successful relist of it. */
  #records = new Map<string, RuntimePodStatus>();
  /** Pods whose last status fetch failed. */
  #reinspect = new Set<string>();
  /** Pods whose status changed without a lifecycle event (an in-place resize). */
  #requested = new Set<string>();
  /** Start of the last relist whose listing succeeded; 0 = never. */
  #relistTime = 0;
  #running = false;
  /** Bumped by start() so a loop left over from before a stop() ends quietly. */
  #generation = 0;
  #timer: Timer | undefined;
  /** The generation whose loop is relisting now (0: none), and whether to go again at once. */
  #relisting = 0;
  #again = false;
  /** Containers a runtime event said exited, until a relist lists them so: ID → when told. */
  #exited = new Map<string, number>();
  /** When the loop's last relist started, and when its timer fires (monotonic ms). */
  #lastStart = -Infinity;
  #timerDue = Infinity;
  #abort = new AbortController();
  #tail: Promise<void> = Promise.resolve();
  #dropped = 0;

  /** @param opts runtime readers, clock, period and threshold */
  constructor(opts: GenericPlegOptions) {
    this.#opts = opts;
    this.#log = opts.logger ?? silentLogger;
    this.#period = opts.periodMs ?? DEFAULT_RELIST_PERIOD_MS;
    this.#threshold = opts.relistThresholdMs ?? DEFAULT_RELIST_THRESHOLD_MS;
    this.#channel = new EventChannel(opts.eventCapacity ?? DEFAULT_EVENT_CAPACITY);
  }

  /**
   * The event stream. There is one stream and it is meant for one consumer (the
   * syncLoop); it stays open across stop/start.
   * @returns the channel
   */
  events(): EventChannel<PodLifecycleEvent> {
    return this.#channel;
  }

  /**
   * The pods the last relist saw in the runtime (cheap snapshots), for
   * housekeeping to find orphans without another List call.
   * @returns snapshots the caller must not mutate
   */
  runningPods(): RuntimePodStatus[] {
    return [...this.#records.values()];
  }

  /** How many events were dropped because the buffer was full. */
  get droppedEvents(): number {
    return this.#dropped;
  }

  /** Starts relisting now and then every period. Idempotent. */
  start(): void {
    if (this.#running) return;
    this.#running = true;
    this.#again = false;
    if (this.#abort.signal.aborted) this.#abort = new AbortController();
    void this.#loop(++this.#generation);
  }

  /**
   * Stops relisting and aborts an in-flight relist.
   * @returns resolves once no relist runs any more
   */
  stop(): Promise<void> {
    this.#running = false;
    this.#timer?.cancel();
    this.#timer = undefined;
    this.#timerDue = Infinity;
    this.#abort.abort(new Error("PLEG stopped"));
    return this.#tail;
  }

  /**
   * Health as upstream reports it: bad before the first successful relist and
   * when none succeeded within the threshold (a hung relist blocks later ones).
   * @returns ok, and upstream's message when not
   */
  healthy(): PlegHealth {
    if (this.#relistTime === 0) return { ok: false, message: "pleg has yet to be successful" };
    const elapsed = this.#opts.clock.monotonic() - this.#relistTime;
    if (elapsed > this.#threshold) {
      return {
        ok: false,
        message: `pleg was last seen active ${formatDuration(elapsed)} ago; threshold is ${
          formatDuration(this.#threshold)
        }`,
      };
    }
    return { ok: true, message: "" };
  }

  /**
   * The cached full status of a pod.
   * @param uid the pod
   * @returns status (undefined when the runtime holds nothing) and its timestamp
   */
  getPodStatus(uid: string): CachedPodStatus {
    return this.cache.get(uid);
  }

  /**
   * Fetches the pod's status again at the next relist even without a
   * lifecycle event (upstream `RequestPodReinspect`): after an in-place
   * resize, whose new resources no container event announces.
   * @param uid the pod
   */
  requestReinspect(uid: string): void {
    this.#requested.add(uid);
  }

  /**
   * Waits for a status observed after `minTime` (upstream `GetNewerThan`).
   * @param uid the pod
   * @param minTime monotonic ms (Clock.monotonic), usually the end of the worker's last sync
   * @param signal aborts the wait
   * @returns the status, or undefined when the runtime holds nothing for the pod
   * @throws {import("./pod_cache.ts").PodStatusUnavailableError} when the fetch failed
   */
  waitNewerThan(
    uid: string,
    minTime: number,
    signal?: AbortSignal,
  ): Promise<RuntimePodStatus | undefined> {
    return this.cache.waitNewerThan(uid, minTime, signal);
  }

  /**
   * Runs one relist, after any in-flight one (relists never overlap). Never
   * rejects: a failing runtime is logged and retried by the next relist. Does
   * nothing between {@link stop} and the next {@link start}.
   */
  relist(): Promise<void> {
    this.#tail = this.#tail.then(() => this.#relistOnce()).catch((err) => {
      this.#log.error("GenericPLEG: relist failed", err);
    });
    return this.#tail;
  }

  /**
   * Relists now rather than at the end of the period (a runtime event said a container
   * ended), or again right after the relist in flight, which may have listed before it;
   * either way no sooner than {@link MIN_RELIST_GAP_MS} after the last relist started.
   * The period then starts over. Calls while one is pending add nothing. Does nothing
   * while stopped.
   */
  relistSoon(): void {
    if (!this.#running) return;
    if (this.#relisting === this.#generation) {
      this.#again = true;
      return;
    }
    const { clock } = this.#opts;
    const now = clock.monotonic();
    const at = Math.max(now, this.#lastStart + MIN_RELIST_GAP_MS);
    if (this.#timerDue <= at) return;
    this.#timer?.cancel();
    this.#timer = undefined;
    this.#timerDue = Infinity;
    const generation = this.#generation;
    if (at === now) void this.#loop(generation);
    else this.#schedule(generation, at - now);
  }

  /**
   * A runtime event said container (or sandbox) `id` exited: relists soon (see
   * {@link relistSoon}), and again each gap while the runtime still lists it running,
   * for up to {@link EXIT_SETTLE_MS}.
   * @param id the container's or sandbox's ID
   */
  containerExited(id: string): void {
    if (!this.#running) return;
    this.#exited.set(id, this.#opts.clock.monotonic());
    this.relistSoon();
  }

  /** Forgets the exits a listing shows (or that waited too long); relists again for the rest. */
  #settleExits(current: Map<string, RuntimePodStatus>, now: number): void {
    const running = new Set<string>();
    for (const pod of current.values()) {
      for (const c of pod.containers) if (c.state === "running") running.add(c.id);
      for (const sb of pod.sandboxes) if (sb.state === "ready") running.add(sb.id);
    }
    for (const [id, at] of this.#exited) {
      if (!running.has(id) || now - at > EXIT_SETTLE_MS) this.#exited.delete(id);
    }
    if (this.#exited.size > 0) this.#again = true;
  }

  async #loop(generation: number): Promise<void> {
    const { clock, tickGridMs = 0 } = this.#opts;
    this.#timerDue = Infinity;
    this.#relisting = generation;
    do {
      if (this.#again) {
        this.#again = false;
        const wait = this.#lastStart + MIN_RELIST_GAP_MS - clock.monotonic();
        if (wait > 0) await clock.sleep(wait);
        if (!this.#running || generation !== this.#generation) break;
      }
      this.#lastStart = clock.monotonic();
      await this.relist();
    } while (this.#again && this.#running && generation === this.#generation);
    if (this.#relisting === generation) this.#relisting = 0;
    if (!this.#running || generation !== this.#generation) return;
    this.#schedule(generation, alignedDelay(clock.now(), this.#period, tickGridMs));
  }

  #schedule(generation: number, ms: number): void {
    const { clock } = this.#opts;
    this.#timerDue = clock.monotonic() + ms;
    this.#timer = clock.setTimeout(() => void this.#loop(generation), ms);
  }

  async #relistOnce(): Promise<void> {
    const { clock } = this.#opts;
    const signal = this.#abort.signal;
    // A relist queued behind one that stop() aborted has nothing left to do.
    if (signal.aborted) return;
    // Relist times order the cache against pod workers' sync times: monotonic, so a
    // step of the wall clock neither stalls the workers nor fails health.
    const timestamp = clock.monotonic();
    let current: Map<string, RuntimePodStatus>;
    try {
      current = await this.#opts.listPods(signal);
    } catch (err) {
      if (!signal.aborted) this.#log.error("GenericPLEG: Unable to retrieve pods", err);
      this.#opts.onRelistDuration?.(clock.monotonic() - timestamp);
      return;
    }
    this.#relistTime = timestamp;
    if (this.#exited.size > 0) this.#settleExits(current, timestamp);

    const reinspectNext = new Set<string>();
    const requested = this.#requested;
    this.#requested = new Set();
    // A pod whose first fetch failed has no record yet; visiting it again lets
    // its stale cache entry go once it has vanished.
    const uids = new Set([...current.keys(), ...this.#records.keys(), ...this.#reinspect]);
    for (const uid of uids) {
      if (signal.aborted) return;
      const pod = current.get(uid);
      const events = diffPod(uid, this.#records.get(uid), pod);
      const mustFetch = this.#reinspect.has(uid) || requested.has(uid) ||
        (pod !== undefined && !this.cache.has(uid));
      if (events.length === 0 && !mustFetch) continue;

      let status: RuntimePodStatus | undefined;
      if (pod === undefined) {
        // Nothing of the pod is left in the runtime.
        this.cache.delete(uid);
        this.#records.delete(uid);
      } else {
        const fetchedAt = clock.monotonic();
        try {
          status = await this.#opts.getPodStatus(uid, signal);
        } catch (err) {
          if (signal.aborted) return;
          // Keep the old snapshot so the same events are computed again next time.
          this.#log.error("PLEG: Write status", err, {
            pod: podKey(pod),
            podUID: uid,
          });
          this.cache.set(uid, undefined, err, fetchedAt);
          reinspectNext.add(uid);
          continue;
        }
        status = keepPodIps(status, this.cache.get(uid).status);
        this.cache.set(uid, status, undefined, fetchedAt);
        this.#records.set(uid, pod);
      }
      this.#deliver(events, status);
    }
    // Only now is every changed pod refreshed, so readers may trust the cache up to here.
    this.cache.updateTime(timestamp);
    this.#reinspect = reinspectNext;
    this.#opts.onRelistDuration?.(clock.monotonic() - timestamp);
  }

  #deliver(events: PodLifecycleEvent[], status: RuntimePodStatus | undefined): void {
    for (const event of events) {
      // Upstream computes ContainerChanged but finds it too unreliable to act on.
      if (event.type === "ContainerChanged") continue;
      if (!this.#channel.send(event)) {
        this.#dropped++;
        this.#log.error("Event channel is full, discard this relist() cycle event", undefined, {
          podUID: event.podUID,
          event: event.type,
          containerID: event.data,
        });
      }
      if (event.type === "ContainerDied" && status) {
        const c = status.containers.find((c) => c.id === event.data);
        if (c) {
          this.#log.v(2).info("Generic (PLEG): container finished", {
            podID: event.podUID,
            containerID: c.id,
            exitCode: c.exitCode,
          });
        }
      }
    }
  }
}
