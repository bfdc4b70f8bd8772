/**
 * Whether the container runtime answers, and its RuntimeReady and
 * NetworkReady conditions (upstream's updateRuntimeUp and runtimeState).
 * Polled on its own timer so that `/healthz`, the node status and the pod
 * syncs never wait on a CRI call.
 *
 * @module
 */

import type { RuntimeCondition, RuntimeService } from "../cri/types.ts";
import type { Clock, Timer } from "../util/clock.ts";
import type { Logger } from "../util/log.ts";
import { everyAligned } from "../util/tick.ts";

/** Options for {@link RuntimeHealth}. */
export interface RuntimeHealthOptions {
  runtime: RuntimeService;
  clock: Clock;
  logger: Logger;
  /** How often to ask the runtime for its status (default 5s). */
  periodMs?: number;
  /** Aligns the checks to this grid (lib/util/tick.ts); 0 (default) disables. */
  tickGridMs?: number;
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
  #problem: string | undefined = "runtime not checked yet";
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

  /** Undefined when the runtime answered its last status call and is RuntimeReady. */
  problem(): string | undefined {
    return this.#problem;
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
    const before = this.#problem;
    const networkBefore = this.#network;
    try {
      const resp = await this.#opts.runtime.status({ timeoutMs: 2000 });
      const conditions = resp.status.conditions;
      const network = conditions.find((c) => c.type === "NetworkReady");
      this.#network = network?.status
        ? undefined
        : `container runtime network not ready: ${formatRuntimeCondition(network)}`;
      const ready = conditions.find((c) => c.type === "RuntimeReady");
      this.#problem = ready?.status
        ? undefined
        : `container runtime not ready: ${formatRuntimeCondition(ready)}`;
    } catch (err) {
      // As upstream, a failed status call leaves the network state as it was.
      this.#problem = `container runtime is down: ${(err as Error).message}`;
    }
    const log = this.#opts.logger;
    if (this.#problem !== before) {
      if (this.#problem) log.warn("Container runtime unhealthy", { reason: this.#problem });
      else log.info("Container runtime is healthy");
    }
    if (this.#network !== networkBefore) {
      if (this.#network) log.warn("Container runtime network not ready", { reason: this.#network });
      else log.info("Container runtime network is ready");
    }
  }
}
