/**
 * Whether the container runtime answers, and its RuntimeReady and
 * NetworkReady conditions (upstream's updateRuntimeUp and runtimeState).
 * Polled on its own timer so that `/healthz`, the node status and the pod
 * syncs never wait on a CRI call.
 *
 * As upstream, a status call that fails or times out is not yet a runtime
 * that is down: only {@link RUNTIME_SYNC_THRESHOLD_MS} without a ready answer
 * is, so one slow call does not turn the node NotReady and back.
 *
 * @module
 */

import type { RuntimeCondition, RuntimeService } from "../cri/types.ts";
import type { Clock, Timer } from "../util/clock.ts";
import type { Logger } from "../util/log.ts";
import { everyAligned } from "../util/tick.ts";

/**
 * Upstream's maxWaitForContainerRuntime: how long the runtime may go without
 * a ready answer to its status checks before it counts as down.
 */
export const RUNTIME_SYNC_THRESHOLD_MS = 30_000;

/** Options for {@link RuntimeHealth}. */
export interface RuntimeHealthOptions {
  runtime: RuntimeService;
  clock: Clock;
  logger: Logger;
  /** How often to ask the runtime for its status (default 5s). */
  periodMs?: number;
  /** Aligns the checks to this grid (lib/util/tick.ts); 0 (default) disables. */
  tickGridMs?: number;
  /** Default {@link RUNTIME_SYNC_THRESHOLD_MS}. */
  syncThresholdMs?: number;
}

/**
 * A runtime condition as upstream prints it (`RuntimeCondition.String()`),
 * `<nil>` when the runtime did not report it.
 * @param c the condition
 * @returns e.g. "NetworkReady=false reason:NetworkPluginNotReady message:…"
 */
export function formatRuntimeCondition(c: RuntimeCondition | undefined): string {
  if (!c) return "<nil>";
  return `${c.type}=${c.status} reason:${c.reason} message:${c.message}`;
}

/** Upstream's ErrNetworkUnknown: the network state before the runtime first answered. */
const NETWORK_UNKNOWN = "network state unknown";

/** Tracks the runtime's reachability and its RuntimeReady and NetworkReady conditions. */
export class RuntimeHealth {
  #opts: RuntimeHealthOptions;
  #timer: Timer | undefined;
  /** When (monotonic) the runtime last answered RuntimeReady (upstream's lastBaseRuntimeSync); 0 = never. */
  #lastSync = 0;
  /** RuntimeReady was false in the last answer (upstream's runtimeError). */
  #notReady: string | undefined;
  /** The last status call's failure, undefined once one answers. */
  #failure: string | undefined;
  /** What {@link problem} said at the end of the last check, to log changes. */
  #reported: string | undefined = "runtime not checked yet";
  #network: string | undefined = NETWORK_UNKNOWN;
  #inFlight: Promise<void> | undefined;

  constructor(opts: RuntimeHealthOptions) {
    this.#opts = opts;
  }

  /**
   * Checks now and then every period.
   * @returns when the first check is over (it never throws)
   */
  start(): Promise<void> {
    const first = this.check();
    this.#timer = everyAligned(
      this.#opts.clock,
      this.#opts.periodMs ?? 5000,
      this.#opts.tickGridMs ?? 0,
      () => void this.check(),
    );
    return first;
  }

  stop(): void {
    this.#timer?.cancel();
  }

  /**
   * Undefined while the runtime answered RuntimeReady within the sync threshold and
   * its last answer said RuntimeReady; otherwise why not.
   */
  problem(): string | undefined {
    if (this.#notReady) return this.#notReady;
    if (this.#lastSync === 0) {
      return this.#failure
        ? `container runtime is down: ${this.#failure}`
        : "runtime not checked yet";
    }
    const threshold = this.#opts.syncThresholdMs ?? RUNTIME_SYNC_THRESHOLD_MS;
    if (this.#opts.clock.monotonic() - this.#lastSync <= threshold) return undefined;
    return `container runtime is down: ${this.#failure ?? "no status answer"}`;
  }

  /**
   * Undefined when the runtime's last status said NetworkReady; otherwise
   * upstream's "container runtime network not ready: NetworkReady=false
   * reason:… message:…" (or "network state unknown" before the first answer).
   */
  networkProblem(): string | undefined {
    return this.#network;
  }

  /** Asks the runtime once; never throws. A check while one runs joins it. */
  check(): Promise<void> {
    this.#inFlight ??= this.#check().finally(() => (this.#inFlight = undefined));
    return this.#inFlight;
  }

  async #check(): Promise<void> {
    const networkBefore = this.#network;
    const log = this.#opts.logger;
    try {
      const resp = await this.#opts.runtime.status({ timeoutMs: 2000 });
      this.#failure = undefined;
      const conditions = resp.status.conditions;
      const network = conditions.find((c) => c.type === "NetworkReady");
      this.#network = network?.status
        ? undefined
        : `container runtime network not ready: ${formatRuntimeCondition(network)}`;
      const ready = conditions.find((c) => c.type === "RuntimeReady");
      this.#notReady = ready?.status
        ? undefined
        : `container runtime not ready: ${formatRuntimeCondition(ready)}`;
      if (!this.#notReady) this.#lastSync = this.#opts.clock.monotonic();
    } catch (err) {
      // As upstream, a failed status call leaves the network and RuntimeReady states as
      // they were; only the sync threshold turns it into a runtime that is down.
      this.#failure = (err as Error).message;
      log.error("Container runtime sanity check failed", err);
    }
    const problem = this.problem();
    if (problem !== this.#reported) {
      if (problem) log.warn("Container runtime unhealthy", { reason: problem });
      else log.info("Container runtime is healthy");
      this.#reported = problem;
    }
    if (this.#network !== networkBefore) {
      if (this.#network) log.warn("Container runtime network not ready", { reason: this.#network });
      else log.info("Container runtime network is ready");
    }
  }
}
