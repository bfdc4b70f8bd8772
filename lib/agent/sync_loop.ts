/**
 * The kubelet's sync loop (upstream `syncLoop`/`syncLoopIteration`): every
 * input the loop reacts to, and the one dispatch that hands each to its
 * handler. The handlers live on {@link import("./kubelet.ts").Kubelet}.
 *
 * | input          | from                                  | handler              |
 * | -------------- | ------------------------------------- | -------------------- |
 * | `config`       | the config mux's updates              | `handlePodUpdate`    |
 * | `pleg`         | PLEG's event channel                  | `handlePlegEvent`    |
 * | `sync`         | every 1s                              | `handleSyncTick`     |
 * | `housekeeping` | every 2s                              | `handleHousekeeping` |
 * | `probe`        | a changed probe result                | `handleProbeResult`  |
 *
 * Upstream selects over Go channels; here each input's producer calls
 * {@link SyncLoop.dispatch}, which runs its handler synchronously, so two
 * inputs never interleave. The loop is alive while inputs keep arriving: the
 * 1s sync tick alone marks it alive at least once a second.
 *
 * @module
 */

import type { PodUpdate } from "../config/mod.ts";
import type { PodLifecycleEvent } from "../pleg/mod.ts";
import type { ProbeResultUpdate } from "../prober/mod.ts";
import type { Clock, Timer } from "../util/clock.ts";
import type { Logger } from "../util/log.ts";
import { everyAligned } from "../util/tick.ts";

/** How often the loop looks for pods due a resync (upstream: 1s). */
export const SYNC_TICK_MS = 1000;
/** How often the loop runs housekeeping (upstream: 2s). */
export const HOUSEKEEPING_MS = 2000;
/** The loop is unhealthy once no input has arrived for this long. */
const HEALTHY_WITHIN_MS = 10 * HOUSEKEEPING_MS;

/** One input of the loop. */
export type SyncLoopInput =
  | { kind: "config"; update: PodUpdate }
  | { kind: "pleg"; event: PodLifecycleEvent }
  | { kind: "sync" }
  | { kind: "housekeeping" }
  | { kind: "probe"; update: ProbeResultUpdate };

/** What the loop does with each input. */
export interface SyncLoopHandlers {
  /** ADD/UPDATE/DELETE/REMOVE/RECONCILE from the pod sources. */
  config(update: PodUpdate): void;
  /** A pod's containers changed in the runtime. */
  pleg(event: PodLifecycleEvent): void;
  /** Resync the pods whose resync (or retry) is due. */
  sync(): void;
  /** Clean up what no source wants any more. */
  housekeeping(): void;
  /** A probe result changed. */
  probe(update: ProbeResultUpdate): void;
}

/** Where the inputs come from. */
export interface SyncLoopSources {
  /** The config mux's updates. */
  updates: AsyncIterable<PodUpdate>;
  /** PLEG's events; `next(signal)` rejects once the signal aborts. */
  plegEvents: { next(signal: AbortSignal): Promise<IteratorResult<PodLifecycleEvent>> };
  /** Subscribes to probe results; returns the unsubscribe function. */
  probeResults?: (listener: (update: ProbeResultUpdate) => void) => () => void;
}

/** Options for {@link SyncLoop}. */
export interface SyncLoopOptions {
  clock: Clock;
  logger: Logger;
  handlers: SyncLoopHandlers;
  /** Aligns the sync and housekeeping ticks to this grid (lib/util/tick.ts); 0 disables. */
  tickGridMs?: number;
}

/** Feeds every input to its handler and tells whether the loop still runs. */
export class SyncLoop {
  #o: SyncLoopOptions;
  #lastActivity = 0;
  #timers: Timer[] = [];
  #stopping = new AbortController();
  #unsubscribe: (() => void) | undefined;

  /** @param opts clock, logger, handlers and the tick grid */
  constructor(opts: SyncLoopOptions) {
    this.#o = opts;
  }

  /**
   * Starts reading every input.
   * @param sources the config updates, PLEG events and probe results
   */
  start(sources: SyncLoopSources): void {
    const { clock, tickGridMs: grid = 0 } = this.#o;
    this.#lastActivity = clock.monotonic();
    const signal = this.#stopping.signal;
    const updates = sources.updates[Symbol.asyncIterator]();
    void this.#read({ next: () => updates.next() }, signal, (update) => ({
      kind: "config",
      update,
    }));
    void this.#read(sources.plegEvents, signal, (event) => ({ kind: "pleg", event }));
    this.#timers.push(
      everyAligned(clock, SYNC_TICK_MS, grid, () => this.dispatch({ kind: "sync" })),
      everyAligned(clock, HOUSEKEEPING_MS, grid, () => this.dispatch({ kind: "housekeeping" })),
    );
    this.#unsubscribe = sources.probeResults?.((update) =>
      this.dispatch({ kind: "probe", update })
    );
  }

  /** Stops reading inputs; a handler already running finishes. */
  stop(): void {
    for (const t of this.#timers) t.cancel();
    this.#timers = [];
    this.#stopping.abort();
    this.#unsubscribe?.();
    this.#unsubscribe = undefined;
  }

  /**
   * One iteration (upstream `syncLoopIteration`): marks the loop alive and
   * runs the input's handler. A failing handler is logged; the loop goes on.
   * @param input what arrived
   */
  dispatch(input: SyncLoopInput): void {
    this.#lastActivity = this.#o.clock.monotonic();
    const h = this.#o.handlers;
    try {
      switch (input.kind) {
        case "config":
          return h.config(input.update);
        case "pleg":
          return h.pleg(input.event);
        case "sync":
          return h.sync();
        case "housekeeping":
          return h.housekeeping();
        case "probe":
          return h.probe(input.update);
      }
    } catch (err) {
      this.#o.logger.error("Sync loop handler failed", err, { input: input.kind });
    }
  }

  /** Healthy while the loop has run within the last few ticks; undefined when fine. */
  health(): string | undefined {
    const age = this.#o.clock.monotonic() - this.#lastActivity;
    if (age <= HEALTHY_WITHIN_MS) return undefined;
    return `sync loop took too long to respond: last activity ${Math.round(age / 1000)}s ago`;
  }

  /** Dispatches everything a stream yields until it ends or the loop stops. */
  async #read<T>(
    stream: { next(signal: AbortSignal): Promise<IteratorResult<T>> },
    signal: AbortSignal,
    input: (value: T) => SyncLoopInput,
  ): Promise<void> {
    const stopped = new Promise<IteratorResult<T>>((resolve) => {
      signal.addEventListener("abort", () => resolve({ done: true, value: undefined }), {
        once: true,
      });
    });
    while (!signal.aborted) {
      let next: IteratorResult<T>;
      try {
        next = await Promise.race([stream.next(signal), stopped]);
      } catch {
        return; // aborted by stop()
      }
      if (next.done || signal.aborted) return;
      this.dispatch(input(next.value));
    }
  }
}
