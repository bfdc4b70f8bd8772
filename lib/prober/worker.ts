/**
 * One probe worker per (pod, container, probe type), with upstream's rules
 * (pkg/kubelet/prober/worker.go):
 *
 * ```
 *  start ──(jitter, only soon after the agent started)──► probe now, then every periodSeconds
 *
 *  each tick:
 *    no container yet ─────────────────────────────► wait
 *    new container id ──► drop old result, set the initial one, reset counters, leave hold
 *    on hold (liveness/startup failed) ────────────► wait for a new container
 *    container not running ──► result failure; exit if it will never restart
 *    pod deleting (liveness/startup) ──► result success, exit
 *    within initialDelaySeconds of its start ──────► wait
 *    startup: container started already ───────────► wait (keeps the worker for a restart)
 *    liveness/readiness: not started yet ──────────► wait (startup gates them)
 *    probe (retried while it cannot run, at most 3×)
 *    same result `threshold` times in a row ───────► publish it
 *    liveness/startup failure published ───────────► hold until a new container
 * ```
 *
 * A tick that finds the previous probe still running is remembered and runs
 * right after it (a worker never overlaps itself, and, like Go's ticker, drops
 * all but one missed tick). Each worker has its own timer and in-flight
 * promise, so a hung handler stalls nothing but its own worker.
 *
 * @module
 */

import type { Probe } from "../api/types.ts";
import type { RuntimeContainerState } from "../kuberuntime/types.ts";
import type { Clock, Timer } from "../util/clock.ts";
import type { Logger } from "../util/log.ts";
import {
  type ProbeOutcome,
  type ProbeResultKind,
  type ProbeRunner,
  type ProbeTarget,
  type ProbeTiming,
  probeTiming,
  type ProbeType,
} from "./types.ts";

/** Upstream's maxProbeRetries: a probe that cannot run is tried this many times per tick. */
export const MAX_PROBE_ATTEMPTS = 3;

/** The latest runtime view of the container a worker probes. */
export interface ContainerView {
  /** CRI container id. */
  id: string;
  state: RuntimeContainerState;
  /** Epoch ms the container started (0 when unknown). */
  startedAt: number;
  /** Exit code once exited. */
  exitCode: number;
}

/** What a worker needs from its manager. Every callback is synchronous and cheap. */
export interface WorkerHost {
  clock: Clock;
  logger: Logger;
  runProbe: ProbeRunner;
  /** The container's current instance, undefined while it has none. */
  container(): ContainerView | undefined;
  /** Whether the container has started: its startup probe passed, or it has none. */
  isStarted(containerId: string): boolean;
  /** True once the pod is being deleted. */
  deleting(): boolean;
  /** Whether an exited container will be started again (restart policy). */
  willRestart(): boolean;
  /** How to reach the container. */
  target(containerId: string): ProbeTarget;
  /** Caches a result; the manager tells listeners when it changed. */
  setResult(containerId: string, result: ProbeResultKind, output: string): void;
  /** Drops a container's cached result. */
  removeResult(containerId: string): void;
  /** Counts one probe for the metrics. */
  recordProbe(result: ProbeResultKind, seconds: number): void;
  /** Told of every failed or errored probe (the Unhealthy event). */
  onUnhealthy?(type: ProbeType, output: string, errored: boolean): void;
  /** Called once when the worker ends, by itself or by {@link ProbeWorker.stop}. */
  onStopped(): void;
}

const INITIAL_RESULT: Record<ProbeType, ProbeResultKind> = {
  Readiness: "failure",
  Liveness: "success",
  Startup: "unknown",
};

/** Probes one container periodically; see the module doc for the rules. */
export class ProbeWorker {
  /** Which probe. */
  readonly type: ProbeType;
  /** The probe as the spec gives it. */
  readonly spec: Probe;
  /** The probe's timing with defaults. */
  readonly timing: ProbeTiming;
  readonly #host: WorkerHost;
  readonly #abort = new AbortController();
  #timer: Timer | undefined;
  #containerId = "";
  #lastResult: ProbeResultKind | undefined;
  #resultRun = 0;
  #onHold = false;
  #inFlight: Promise<void> | undefined;
  #pending = false;
  #stopped = false;

  /**
   * @param type which probe
   * @param spec the probe from the container spec
   * @param host the manager's side
   */
  constructor(type: ProbeType, spec: Probe, host: WorkerHost) {
    this.type = type;
    this.spec = spec;
    this.timing = probeTiming(spec, type);
    this.#host = host;
  }

  /** The container id the worker last saw ("" before any). */
  get containerId(): string {
    return this.#containerId;
  }

  /** True after {@link stop} or after the worker ended by itself. */
  get stopped(): boolean {
    return this.#stopped;
  }

  /** True while a probe runs. */
  get busy(): boolean {
    return this.#inFlight !== undefined;
  }

  /** Resolves when no probe is running (at once when idle). */
  get idle(): Promise<void> {
    return this.#inFlight ?? Promise.resolve();
  }

  /**
   * Starts the periodic probing: the first probe after `delayMs`, then one
   * every periodSeconds.
   * @param delayMs the start-up jitter (0 to probe at once)
   */
  start(delayMs: number): void {
    const begin = () => {
      if (this.#stopped) return;
      this.#timer = this.#host.clock.setInterval(
        () => this.trigger(),
        this.timing.periodSeconds * 1000,
      );
      this.trigger();
    };
    if (delayMs > 0) this.#timer = this.#host.clock.setTimeout(begin, delayMs);
    else begin();
  }

  /**
   * Probes now (a tick, or the manager asking for an early readiness probe);
   * when a probe is running, once more right after it.
   */
  trigger(): void {
    if (this.#stopped) return;
    if (this.#inFlight) {
      this.#pending = true;
      return;
    }
    this.#inFlight = this.#doProbe().then(
      (keepGoing) => this.#afterProbe(keepGoing),
      (err) => {
        // A bug in a handler or callback must not end probing of the container.
        this.#host.logger.error("Probe worker failed", err, { probeType: this.type });
        this.#afterProbe(true);
      },
    );
  }

  /** Stops the worker: no more probes, a running one is cancelled; idempotent. */
  stop(): void {
    if (this.#stopped) return;
    this.#stopped = true;
    this.#timer?.cancel();
    this.#timer = undefined;
    this.#abort.abort(new Error(`${this.type} probe worker stopped`));
    if (this.#containerId) this.#host.removeResult(this.#containerId);
    this.#host.onStopped();
  }

  #afterProbe(keepGoing: boolean): void {
    this.#inFlight = undefined;
    if (!keepGoing) return this.stop();
    if (this.#pending && !this.#stopped) {
      this.#pending = false;
      this.trigger();
    }
  }

  /** One tick; resolves to whether the worker should go on. */
  async #doProbe(): Promise<boolean> {
    const host = this.#host;
    const c = host.container();
    if (!c || !c.id) return true; // not created yet, or removed: wait
    if (c.id !== this.#containerId) {
      if (this.#containerId) host.removeResult(this.#containerId);
      this.#containerId = c.id;
      this.#lastResult = undefined;
      this.#resultRun = 0;
      this.#onHold = false;
      host.setResult(c.id, INITIAL_RESULT[this.type], "");
    }
    if (this.#onHold) return true;
    if (c.state !== "running") {
      host.setResult(c.id, "failure", "");
      return c.state !== "exited" || host.willRestart();
    }
    if (host.deleting() && this.type !== "Readiness") {
      // Let a pod being deleted shut down quietly: no liveness/startup kill.
      host.setResult(c.id, "success", "");
      return false;
    }
    const sinceStart = Math.floor((host.clock.now() - c.startedAt) / 1000);
    if (sinceStart < this.timing.initialDelaySeconds) return true;
    const started = host.isStarted(c.id);
    if (started ? this.type === "Startup" : this.type !== "Startup") return true;

    const began = host.clock.now();
    const outcome = await this.#probeWithRetries(c.id);
    if (this.#stopped) return false;
    host.recordProbe(outcome.result, (host.clock.now() - began) / 1000);
    if (outcome.result === "unknown") {
      // Upstream throws away the result of a probe that errored.
      host.logger.v(1).info("Probe errored", { probeType: this.type, output: outcome.output });
      host.onUnhealthy?.(this.type, outcome.output, true);
      return true;
    }
    if (outcome.result === "failure") {
      host.logger.v(1).info("Probe failed", { probeType: this.type, output: outcome.output });
      host.onUnhealthy?.(this.type, outcome.output, false);
    }
    if (this.#lastResult === outcome.result) this.#resultRun++;
    else {
      this.#lastResult = outcome.result;
      this.#resultRun = 1;
    }
    const threshold = outcome.result === "failure"
      ? this.timing.failureThreshold
      : this.timing.successThreshold;
    if (this.#resultRun < threshold) return true;
    host.setResult(c.id, outcome.result, outcome.output);
    if (this.type !== "Readiness" && outcome.result === "failure") {
      // The container will be killed: stop probing it until a new one appears.
      this.#onHold = true;
      this.#resultRun = 0;
    }
    return true;
  }

  async #probeWithRetries(containerId: string): Promise<ProbeOutcome> {
    let outcome: ProbeOutcome = { result: "unknown", output: "" };
    for (let attempt = 0; attempt < MAX_PROBE_ATTEMPTS && !this.#stopped; attempt++) {
      outcome = await this.#host.runProbe(
        this.spec,
        this.#host.target(containerId),
        this.#abort.signal,
      );
      if (outcome.result !== "unknown") break;
    }
    return outcome;
  }
}
